package io.jrdma.engine.core;

import jdk.jfr.Category;
import jdk.jfr.Description;
import jdk.jfr.Event;
import jdk.jfr.Label;
import jdk.jfr.Name;
import jdk.jfr.StackTrace;

/**
 * JFR: a queue pair's life (each state it is moved to: connected at RTS, ERROR with the reason, destroyed).
 * Control and error paths only, never per packet ({@code jfr print --events jrdma.QueuePair}).
 */
@Name("jrdma.QueuePair")
@Label("RDMA Queue Pair")
@Category({"jrdma", "Connections"})
@Description("A jrdma queue pair changed state: modified by the application, moved to ERROR by the engine, or destroyed")
@StackTrace(false)
final class QpEvent extends Event {
    @Label("Device")
    String device;
    @Label("QP Number")
    int qpn;
    @Label("Destination QP Number")
    int destQpn;
    @Label("From")
    String from;
    @Label("To")
    String to;
    @Label("Reason")
    String reason;

    static void changed(Qp qp, Object from, Object to, String reason) {
        QpEvent e = new QpEvent();
        if (e.isEnabled()) {
            e.device = qp.context.device.name();
            e.qpn = qp.qpn;
            e.destQpn = qp.destQpn;
            e.from = String.valueOf(from);
            e.to = String.valueOf(to);
            e.reason = reason;
            e.commit();
        }
    }

    /** Called by {@code Engine.enterError}: the reason is the engine method that moved the QP (its caller). */
    static void enteredError(Qp qp) {
        QpEvent e = new QpEvent();
        if (e.isEnabled()) {
            e.device = qp.context.device.name();
            e.qpn = qp.qpn;
            e.destQpn = qp.destQpn;
            e.from = String.valueOf(qp.state);
            e.to = "ERROR";
            e.reason = StackWalker.getInstance().walk(f -> f.skip(2).findFirst()
                    .map(x -> x.getClassName().substring(x.getClassName().lastIndexOf('.') + 1) + "." + x.getMethodName())
                    .orElse("?"));
            e.commit();
        }
    }
}

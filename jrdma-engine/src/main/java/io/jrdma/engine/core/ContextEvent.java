package io.jrdma.engine.core;

import jdk.jfr.Category;
import jdk.jfr.Description;
import jdk.jfr.Event;
import jdk.jfr.Label;
import jdk.jfr.Name;
import jdk.jfr.StackTrace;

/** JFR: a device context opened or closed (control path; {@code jfr print --events jrdma.Context}). */
@Name("jrdma.Context")
@Label("RDMA Device Context")
@Category({"jrdma", "Connections"})
@Description("A jrdma device context opened or closed, with its counters file")
@StackTrace(false)
final class ContextEvent extends Event {
    @Label("Device")
    String device;
    @Label("Action")
    String action;
    @Label("Counters File")
    String countersFile;

    static void opened(Context c) {
        ContextEvent e = new ContextEvent();
        if (e.isEnabled()) {
            e.device = c.device.name();
            e.action = "opened";
            e.countersFile = String.valueOf(c.counters.path());
            e.commit();
        }
    }

    static void closed(Context c) {
        ContextEvent e = new ContextEvent();
        if (e.isEnabled()) {
            e.device = c.device.name();
            e.action = "closed";
            e.countersFile = String.valueOf(c.counters.path());
            e.commit();
        }
    }
}

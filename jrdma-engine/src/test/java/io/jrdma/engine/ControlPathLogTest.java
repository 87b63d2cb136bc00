package io.jrdma.engine;

import io.jrdma.soft.SoftRoceOptions;

import io.jrdma.engine.iwarp.SoftIwarpDevice;
import io.jrdma.engine.roce.SoftRoceDevice;
import io.jrdma.verbs.Access;
import io.jrdma.verbs.CompletionQueue;
import io.jrdma.verbs.ConnParam;
import io.jrdma.verbs.ConnectionManager.Connection;
import io.jrdma.verbs.ConnectionRejectedException;
import io.jrdma.verbs.Device;
import io.jrdma.verbs.DeviceContext;
import io.jrdma.verbs.DeviceOptions;
import io.jrdma.verbs.MemoryRegion;
import io.jrdma.verbs.ProtectionDomain;
import io.jrdma.verbs.QpInitAttr;
import io.jrdma.verbs.QueuePair;
import io.jrdma.verbs.RdmaException;
import io.jrdma.verbs.SendFlags;
import io.jrdma.verbs.SendWorkRequest;
import io.jrdma.verbs.ThreadingMode;
import io.jrdma.verbs.WcStatus;
import io.jrdma.verbs.WorkCompletion;
import io.jrdma.verbs.WrOpcode;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.logging.Handler;
import java.util.logging.Level;
import java.util.logging.LogRecord;
import java.util.logging.Logger;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Control-path events reach System.Logger (here the JDK's java.util.logging behind it): a context
 * opening and closing, connections established, rejected, failed and closed, a QP moving to ERROR
 * with its cause; and nothing is logged on the data path. All at DEBUG (FINE): a default
 * configuration (INFO) prints none of them.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class ControlPathLogTest {
    private static final InetAddress LO = InetAddress.getLoopbackAddress();
    /** held strongly: java.util.logging keeps loggers weakly, and with them their level */
    private static final Logger ENGINE = Logger.getLogger("io.jrdma.engine");

    private final List<LogRecord> records = new CopyOnWriteArrayList<>();
    private final Handler handler = new Handler() {
        @Override
        public void publish(LogRecord r) {
            records.add(r);
        }

        @Override
        public void flush() {
        }

        @Override
        public void close() {
        }
    };
    private Level oldLevel;

    @BeforeEach
    void capture() {
        oldLevel = ENGINE.getLevel();
        ENGINE.setLevel(Level.FINE);
        ENGINE.addHandler(handler);
    }

    @AfterEach
    void release() {
        ENGINE.removeHandler(handler);
        ENGINE.setLevel(oldLevel);
    }

    private List<String> messages() {
        return records.stream().map(r -> (String) (r.getLevel() + " " + r.getLoggerName() + ": " + r.getMessage())).toList();
    }

    private boolean logged(String logger, String text) {
        return records.stream().anyMatch(r -> r.getLoggerName().startsWith(logger) && r.getMessage().contains(text)
                && r.getLevel() == Level.FINE);
    }

    @Test
    void roceContextConnectionAndQpEventsAreLogged() throws Exception {
        exercise(SoftRoceDevice.forTest("lo", () -> List.of(LO)), "io.jrdma.engine.cm.TcpConnectionManager");
    }

    @Test
    void iwarpContextConnectionAndQpEventsAreLogged() throws Exception {
        exercise(SoftIwarpDevice.forTest("lo", () -> List.of(LO)), "io.jrdma.engine.iwarp.IwarpConnectionManager");
    }

    private void exercise(Device dev, String cmLogger) throws Exception {
        DeviceOptions opts = DeviceOptions.defaults().withThreadingMode(ThreadingMode.INVOKER)
                .with(SoftRoceOptions.defaults().withUdpPort(0, true));
        try (Arena arena = Arena.ofShared()) {
            DeviceContext server = dev.open(opts);
            DeviceContext client = dev.open(opts);
            assertTrue(logged("io.jrdma.engine", "opened " + server), messages().toString());
            ProtectionDomain spd = server.allocPd();
            CompletionQueue scq = server.createCq(16);
            QueuePair sqp = spd.createQp(QpInitAttr.rc(scq));
            MemorySegment sbuf = arena.allocate(4096, 4096);
            MemoryRegion smr = spd.register(sbuf, Access.LOCAL_WRITE | Access.REMOTE_WRITE);
            ProtectionDomain cpd = client.allocPd();
            CompletionQueue ccq = client.createCq(16);
            QueuePair cqp = cpd.createQp(QpInitAttr.rc(ccq));
            QueuePair rejectedQp = cpd.createQp(QpInitAttr.rc(ccq));
            MemorySegment cbuf = arena.allocate(4096, 4096);
            MemoryRegion cmr = cpd.register(cbuf, Access.LOCAL_WRITE);
            var listener = server.connectionManager().listen(new InetSocketAddress(LO, 0));
            InetSocketAddress at = new InetSocketAddress(LO, listener.address().getPort());
            try {
                // rejected
                var rejecting = CompletableFuture.runAsync(() -> listener.poll(Duration.ofSeconds(10)).reject(new byte[0]));
                assertThrows(ConnectionRejectedException.class,
                        () -> client.connectionManager().connect(rejectedQp, at, ConnParam.defaults(), Duration.ofSeconds(10)));
                rejecting.get(10, TimeUnit.SECONDS);
                assertTrue(logged(cmLogger, "rejected"), messages().toString());

                // established
                var accepted = CompletableFuture.supplyAsync(() -> listener.poll(Duration.ofSeconds(10))
                        .accept(sqp, ConnParam.defaults(), Duration.ofSeconds(10)));
                Connection conn = client.connectionManager().connect(cqp, at, ConnParam.defaults(), Duration.ofSeconds(10));
                Connection serverConn = accepted.get(10, TimeUnit.SECONDS);
                assertTrue(logged(cmLogger, "connection established: QP 0x" + Integer.toHexString(cqp.qpn())),
                        messages().toString());
                assertTrue(logged(cmLogger, "connection established: QP 0x" + Integer.toHexString(sqp.qpn())),
                        messages().toString());

                // the data path logs nothing
                int before = records.size();
                SendWorkRequest wr = new SendWorkRequest();
                WorkCompletion wc = new WorkCompletion();
                for (int i = 0; i < 100; i++) {
                    assertEquals(0, cqp.postSend(wr.reset().wrId(i).opcode(WrOpcode.RDMA_WRITE).flags(SendFlags.SIGNALED)
                            .sge(0, cmr, 0, 64).remote(smr.address(), smr.rkey())));
                    while (ccq.poll(wc) == 0) {
                        server.progress();
                    }
                    assertEquals(WcStatus.SUCCESS, wc.status());
                }
                assertEquals(before, records.size(), messages().subList(before, records.size()).toString());

                // closed: the QP moves to ERROR with its cause
                conn.close();
                assertTrue(logged(cmLogger, "connection closed"), messages().toString());
                assertTrue(logged("io.jrdma.engine", "QP 0x" + Integer.toHexString(cqp.qpn()) + " of " + client
                        + " moves from RTS to ERROR ("), messages().toString());
                serverConn.close();

                // failed: nobody listens any more
                listener.close();
                QueuePair lateQp = cpd.createQp(QpInitAttr.rc(ccq));
                assertThrows(RdmaException.class,
                        () -> client.connectionManager().connect(lateQp, at, ConnParam.defaults(), Duration.ofSeconds(5)));
                assertTrue(logged(cmLogger, "connection failed: "), messages().toString());
                lateQp.close();
            } finally {
                listener.close();
            }
            rejectedQp.close();
            cqp.close();
            cmr.close();
            ccq.close();
            cpd.close();
            sqp.close();
            smr.close();
            scq.close();
            spd.close();
            String name = client.toString();
            client.close();
            server.close();
            assertTrue(logged("io.jrdma.engine", "closed " + name), messages().toString());
        }
        // nothing above DEBUG: a normal run prints none of this
        assertTrue(records.stream().noneMatch(r -> r.getLevel().intValue() > Level.FINE.intValue()), messages().toString());
    }
}

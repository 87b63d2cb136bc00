package io.jrdma.engine.roce;

import io.jrdma.verbs.Mtu;
import io.jrdma.verbs.QpAttr;
import io.jrdma.verbs.QpState;
import jdk.jfr.Recording;
import jdk.jfr.consumer.RecordedEvent;
import jdk.jfr.consumer.RecordingFile;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertTrue;

/** JFR events of a context's and its QPs' lives: opened, connected (RTS), ERROR with its reason, destroyed, closed. */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class JfrEventsTest {
    @Test
    void contextAndQueuePairLivesAreRecorded(@TempDir Path dir) throws Exception {
        Path file = dir.resolve("jrdma.jfr");
        int qpn;
        try (Recording r = new Recording()) {
            r.enable("jrdma.Context");
            r.enable("jrdma.QueuePair");
            r.start();
            try (UdpPair p = new UdpPair(1 << 16, Mtu.MTU_1024)) {
                qpn = p.a.qp.qpn();
                p.a.qp.modify(new QpAttr().state(QpState.ERROR));
            }
            r.stop();
            r.dump(file);
        }
        List<RecordedEvent> events = RecordingFile.readAllEvents(file);
        assertTrue(events.stream().anyMatch(e -> e.getEventType().getName().equals("jrdma.Context")
                && "opened".equals(e.getString("action"))), events.toString());
        assertTrue(events.stream().anyMatch(e -> e.getEventType().getName().equals("jrdma.Context")
                && "closed".equals(e.getString("action"))), events.toString());
        for (String to : new String[] {"RTS", "ERROR", "DESTROYED"}) {
            assertTrue(events.stream().anyMatch(e -> e.getEventType().getName().equals("jrdma.QueuePair")
                    && e.getInt("qpn") == qpn && to.equals(e.getString("to"))), "QP to " + to + ": " + events);
        }
    }
}

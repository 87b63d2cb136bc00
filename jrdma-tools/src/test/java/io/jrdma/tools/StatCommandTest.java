package io.jrdma.tools;

import io.jrdma.verbs.CompletionQueue;
import io.jrdma.verbs.DeviceContext;
import io.jrdma.verbs.DeviceOptions;
import io.jrdma.verbs.ProtectionDomain;
import io.jrdma.verbs.QpInitAttr;
import io.jrdma.verbs.QueuePair;
import io.jrdma.verbs.Rdma;
import io.jrdma.verbs.ThreadingMode;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.net.InetAddress;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** {@code jrdma stat}: reads the counters files of open contexts, as another process would. */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class StatCommandTest {
    private static int run(List<String> args, StringBuilder output) {
        ByteArrayOutputStream o = new ByteArrayOutputStream();
        ByteArrayOutputStream e = new ByteArrayOutputStream();
        int rc = StatCommand.run(args, new PrintStream(o, true, StandardCharsets.UTF_8),
                new PrintStream(e, true, StandardCharsets.UTF_8));
        output.append(o.toString(StandardCharsets.UTF_8)).append(e.toString(StandardCharsets.UTF_8));
        return rc;
    }

    @Test
    void listsAnOpenContextWithItsQpsAndForgetsItWhenClosed() throws Exception {
        String pid = Long.toString(ProcessHandle.current().pid());
        var dev = Rdma.resolve(InetAddress.getByName("127.0.0.1"), io.jrdma.verbs.Transport.ROCE_V2).device();
        int qpn;
        try (DeviceContext ctx = dev.open(DeviceOptions.defaults().withThreadingMode(ThreadingMode.INVOKER));
             ProtectionDomain pd = ctx.allocPd();
             CompletionQueue cq = ctx.createCq(16);
             QueuePair qp = pd.createQp(QpInitAttr.rc(cq))) {
            qpn = qp.qpn();
            StringBuilder out = new StringBuilder();
            assertEquals(0, run(List.of("--pid", pid, "--qp", "-a"), out), out.toString());
            assertTrue(out.toString().contains("link " + dev.name() + "/1 pid " + pid), out.toString());
            assertTrue(out.toString().contains("qp 0x" + Integer.toHexString(qpn)), out.toString());
            assertTrue(out.toString().contains("rcvd_bad_key 0"), out.toString());
            StringBuilder watched = new StringBuilder();
            assertEquals(0, run(List.of("--pid", pid, "--watch", "0.05", "--count", "2"), watched), watched.toString());
            assertTrue(watched.toString().contains("/s)") || watched.toString().contains("(all counters 0)"),
                    watched.toString());
        }
        StringBuilder after = new StringBuilder();
        assertEquals(0, run(List.of("--pid", pid, "--qp"), after), after.toString());
        assertFalse(after.toString().contains("qp 0x" + Integer.toHexString(qpn)), after.toString());
    }

    @Test
    void badArgumentsAreExit2WithTheReason() {
        StringBuilder out = new StringBuilder();
        assertEquals(2, run(List.of("--pid"), out));
        assertTrue(out.toString().contains("--pid needs a value"), out.toString());
        StringBuilder out2 = new StringBuilder();
        assertEquals(2, run(List.of("--watch", "-1"), out2));
        StringBuilder out3 = new StringBuilder();
        assertEquals(2, run(List.of("--bogus"), out3));
        assertTrue(out3.toString().contains("unexpected argument '--bogus'"), out3.toString());
    }
}

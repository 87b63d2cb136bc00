package io.jrdma.rdmacore;

import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.StructLayout;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import static io.jrdma.rdmacore.LibRdmacm.RDMA_CM_EVENT;
import static io.jrdma.rdmacore.LibRdmacm.RDMA_CM_ID;
import static io.jrdma.rdmacore.LibRdmacm.RDMA_CONN_PARAM;
import static io.jrdma.rdmacore.LibRdmacm.off;
import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The rdma_cma.h layouts: every size and offset pinned to what gcc gives for rdma-core 44's headers on x86-64
 * (sizeof/offsetof), the same checked again against gcc on this host when gcc and librdmacm-dev are installed,
 * and the run-time checks that name a field the library did not write where the layout says.
 */
@Timeout(60)
class RdmaCmLayoutTest {
    /** What the layouts say, by the C expression gcc evaluates for it. */
    private static Map<String, Long> ours() {
        Map<String, Long> m = new LinkedHashMap<>();
        m.put("sizeof(struct rdma_cm_id)", RDMA_CM_ID.byteSize());
        for (String f : new String[]{"verbs", "channel", "context", "qp", "route", "ps", "port_num", "event", "pd",
                "qp_type"}) {
            m.put("offsetof(struct rdma_cm_id, " + f + ")", off(RDMA_CM_ID, f));
        }
        m.put("offsetof(struct rdma_cm_id, route.addr.src_addr)", LibRdmacm.ID_SRC_ADDR);
        m.put("offsetof(struct rdma_cm_id, route.addr.dst_addr)", LibRdmacm.ID_DST_ADDR);
        m.put("sizeof(struct rdma_route)", LibRdmacm.RDMA_ROUTE.byteSize());
        m.put("sizeof(struct rdma_addr)", LibRdmacm.RDMA_ADDR.byteSize());
        m.put("sizeof(struct rdma_cm_event)", RDMA_CM_EVENT.byteSize());
        for (String f : new String[]{"id", "listen_id", "event", "status", "param"}) {
            m.put("offsetof(struct rdma_cm_event, " + f + ")", off(RDMA_CM_EVENT, f));
        }
        m.put("sizeof(struct rdma_conn_param)", RDMA_CONN_PARAM.byteSize());
        for (String f : new String[]{"private_data", "private_data_len", "responder_resources", "initiator_depth",
                "flow_control", "retry_count", "rnr_retry_count", "srq", "qp_num"}) {
            m.put("offsetof(struct rdma_conn_param, " + f + ")", off(RDMA_CONN_PARAM, f));
        }
        m.put("sizeof(struct rdma_ud_param)", 56L);
        m.put("sizeof(struct rdma_event_channel)", 4L);
        m.put("sizeof(struct sockaddr_in)", LibRdmacm.SOCKADDR_IN.byteSize());
        m.put("offsetof(struct sockaddr_in, sin_port)", off(LibRdmacm.SOCKADDR_IN, "sin_port"));
        m.put("offsetof(struct sockaddr_in, sin_addr)", off(LibRdmacm.SOCKADDR_IN, "sin_addr"));
        m.put("sizeof(struct sockaddr_in6)", LibRdmacm.SOCKADDR_IN6.byteSize());
        m.put("offsetof(struct sockaddr_in6, sin6_port)", off(LibRdmacm.SOCKADDR_IN6, "sin6_port"));
        m.put("offsetof(struct sockaddr_in6, sin6_addr)", off(LibRdmacm.SOCKADDR_IN6, "sin6_addr"));
        m.put("offsetof(struct sockaddr_in6, sin6_scope_id)", off(LibRdmacm.SOCKADDR_IN6, "sin6_scope_id"));
        m.put("sizeof(struct sockaddr_storage)", LibRdmacm.SOCKADDR_STORAGE.byteSize());
        m.put("RDMA_PS_TCP", (long) LibRdmacm.RDMA_PS_TCP);
        m.put("AF_INET", (long) LibRdmacm.AF_INET);
        m.put("AF_INET6", (long) LibRdmacm.AF_INET6);
        m.put("RDMA_CM_EVENT_CONNECT_REQUEST", (long) LibRdmacm.CONNECT_REQUEST);
        m.put("RDMA_CM_EVENT_CONNECT_RESPONSE", (long) LibRdmacm.CONNECT_RESPONSE);
        m.put("RDMA_CM_EVENT_REJECTED", (long) LibRdmacm.REJECTED);
        m.put("RDMA_CM_EVENT_ESTABLISHED", (long) LibRdmacm.ESTABLISHED);
        m.put("RDMA_CM_EVENT_DISCONNECTED", (long) LibRdmacm.DISCONNECTED);
        m.put("RDMA_CM_EVENT_TIMEWAIT_EXIT", (long) LibRdmacm.TIMEWAIT_EXIT);
        return m;
    }

    private static void at(StructLayout l, String field, long expected) {
        assertEquals(expected, off(l, field), l.name().orElse("?") + "." + field);
    }

    @Test
    void pinnedToRdmaCore44OnX8664() {
        assertEquals(416, RDMA_CM_ID.byteSize());
        at(RDMA_CM_ID, "verbs", 0);
        at(RDMA_CM_ID, "channel", 8);
        at(RDMA_CM_ID, "context", 16);
        at(RDMA_CM_ID, "qp", 24);
        at(RDMA_CM_ID, "route", 32);
        assertEquals(32, LibRdmacm.ID_SRC_ADDR);
        assertEquals(160, LibRdmacm.ID_DST_ADDR);
        at(RDMA_CM_ID, "ps", 344);
        at(RDMA_CM_ID, "port_num", 348);
        at(RDMA_CM_ID, "event", 352);
        at(RDMA_CM_ID, "pd", 400);
        at(RDMA_CM_ID, "qp_type", 408);
        assertEquals(312, LibRdmacm.RDMA_ROUTE.byteSize());
        assertEquals(80, RDMA_CM_EVENT.byteSize());
        at(RDMA_CM_EVENT, "listen_id", 8);
        at(RDMA_CM_EVENT, "event", 16);
        at(RDMA_CM_EVENT, "status", 20);
        at(RDMA_CM_EVENT, "param", 24);
        assertEquals(24, RDMA_CONN_PARAM.byteSize());
        at(RDMA_CONN_PARAM, "private_data_len", 8);
        at(RDMA_CONN_PARAM, "responder_resources", 9);
        at(RDMA_CONN_PARAM, "initiator_depth", 10);
        at(RDMA_CONN_PARAM, "retry_count", 12);
        at(RDMA_CONN_PARAM, "rnr_retry_count", 13);
        at(RDMA_CONN_PARAM, "srq", 14);
        at(RDMA_CONN_PARAM, "qp_num", 16);
        assertEquals(16, LibRdmacm.SOCKADDR_IN.byteSize());
        assertEquals(28, LibRdmacm.SOCKADDR_IN6.byteSize());
        assertEquals(128, LibRdmacm.SOCKADDR_STORAGE.byteSize());
    }

    @Test
    void sameAsGccOnThisHost() throws IOException, InterruptedException {
        Path gcc = Path.of("/usr/bin/gcc");
        Assumptions.assumeTrue(Files.isExecutable(gcc), "skipped: no gcc on this host (the pinned values still run)");
        Assumptions.assumeTrue(Files.exists(Path.of("/usr/include/rdma/rdma_cma.h")),
                "skipped: no rdma/rdma_cma.h here: apt-get install librdmacm-dev to check the layouts against it");
        Map<String, Long> ours = ours();
        StringBuilder c = new StringBuilder("#include <stdio.h>\n#include <stddef.h>\n#include <rdma/rdma_cma.h>\n"
                + "int main(void) {\n");
        for (String expr : ours.keySet()) {
            c.append("  printf(\"%ld\\n\", (long) (").append(expr).append("));\n");
        }
        c.append("  return 0;\n}\n");
        Path dir = Files.createTempDirectory("rdmacm-layout");
        try {
            Files.writeString(dir.resolve("l.c"), c);
            Process cc = new ProcessBuilder(gcc.toString(), "-o", dir.resolve("l").toString(), dir.resolve("l.c").toString())
                    .redirectErrorStream(true).start();
            String ccOut = new String(cc.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
            assertTrue(cc.waitFor(50, TimeUnit.SECONDS) && cc.exitValue() == 0, "gcc: " + ccOut);
            Process run = new ProcessBuilder(dir.resolve("l").toString()).redirectErrorStream(true).start();
            String[] lines = new String(run.getInputStream().readAllBytes(), StandardCharsets.UTF_8).strip().split("\n");
            assertTrue(run.waitFor(10, TimeUnit.SECONDS));
            int i = 0;
            StringBuilder diff = new StringBuilder();
            for (Map.Entry<String, Long> e : ours.entrySet()) {
                long gccSays = Long.parseLong(lines[i++].strip());
                if (gccSays != e.getValue()) {
                    diff.append(e.getKey()).append(": gcc ").append(gccSays).append(", layout ").append(e.getValue())
                            .append('\n');
                }
            }
            assertEquals("", diff.toString(), "layouts that differ from this host's rdma_cma.h");
        } finally {
            try (var s = Files.list(dir)) {
                for (Path p : s.toList()) {
                    Files.delete(p);
                }
            }
            Files.delete(dir);
        }
    }

    @Test
    void anIdWhoseFieldsAreNotWhereTheLayoutSaysIsNamed() {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment id = a.allocate(RDMA_CM_ID);
            MemorySegment ch = a.allocate(8);
            id.set(ADDRESS, LibRdmacm.ID_CHANNEL, ch);
            id.set(ADDRESS, LibRdmacm.ID_CONTEXT, MemorySegment.ofAddress(77));
            id.set(JAVA_INT, LibRdmacm.ID_PS, LibRdmacm.RDMA_PS_TCP);
            LibRdmacm.checkId(id, ch, 77); // as rdma_create_id leaves it

            var e = assertThrows(LibIbverbs.LayoutMismatchException.class, () -> LibRdmacm.checkId(id, ch, 78));
            assertTrue(e.getMessage().startsWith("struct rdma_cm_id: context at offset 16 reads 0x4d"), e.getMessage());
            id.set(JAVA_INT, LibRdmacm.ID_PS, 0x0111);
            e = assertThrows(LibIbverbs.LayoutMismatchException.class, () -> LibRdmacm.checkId(id, ch, 77));
            assertEquals("struct rdma_cm_id: ps at offset 344 reads 0x111, not RDMA_PS_TCP (0x106)", e.getMessage());
            id.set(ADDRESS, LibRdmacm.ID_CHANNEL, MemorySegment.NULL);
            e = assertThrows(LibIbverbs.LayoutMismatchException.class, () -> LibRdmacm.checkId(id, ch, 77));
            assertTrue(e.getMessage().startsWith("struct rdma_cm_id: channel at offset 8 reads 0x0"), e.getMessage());
        }
    }

    @Test
    void anEventForAnotherIdOrOfNoKnownTypeIsNamed() {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment id = a.allocate(RDMA_CM_ID);
            MemorySegment ev = a.allocate(RDMA_CM_EVENT);
            ev.set(ADDRESS, LibRdmacm.EV_ID, id);
            ev.set(JAVA_INT, LibRdmacm.EV_EVENT, LibRdmacm.ESTABLISHED);
            LibRdmacm.checkEvent(ev, id);
            ev.set(JAVA_INT, LibRdmacm.EV_EVENT, LibRdmacm.CONNECT_REQUEST); // a request names the listener in listen_id
            var e = assertThrows(LibIbverbs.LayoutMismatchException.class, () -> LibRdmacm.checkEvent(ev, id));
            assertTrue(e.getMessage().startsWith("struct rdma_cm_event: listen_id at offset 8 of a CONNECT_REQUEST"),
                    e.getMessage());
            ev.set(ADDRESS, LibRdmacm.EV_LISTEN_ID, id);
            LibRdmacm.checkEvent(ev, id);
            ev.set(JAVA_INT, LibRdmacm.EV_EVENT, 4711);
            e = assertThrows(LibIbverbs.LayoutMismatchException.class, () -> LibRdmacm.checkEvent(ev, id));
            assertEquals("struct rdma_cm_event: event at offset 16 reads 4711, not an enum rdma_cm_event_type",
                    e.getMessage());
        }
    }

    @Test
    void socketAddressesRoundTrip() throws Exception {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment s = a.allocate(LibRdmacm.SOCKADDR_STORAGE);
            InetSocketAddress v4 = new InetSocketAddress(InetAddress.getByName("10.77.1.11"), 7174);
            LibRdmacm.writeSockaddr(s, v4);
            assertEquals(2, s.get(java.lang.foreign.ValueLayout.JAVA_SHORT, 0));
            assertEquals((byte) 0x1c, s.get(java.lang.foreign.ValueLayout.JAVA_BYTE, 2)); // 7174 = 0x1c06, big-endian
            assertEquals((byte) 0x06, s.get(java.lang.foreign.ValueLayout.JAVA_BYTE, 3));
            assertEquals(v4, LibRdmacm.readSockaddr(s, 0));
            InetSocketAddress v6 = new InetSocketAddress(java.net.Inet6Address.getByAddress(null,
                    InetAddress.getByName("fe80::5054:ff:fe77:11").getAddress(), 3), 18515);
            LibRdmacm.writeSockaddr(s, v6);
            assertEquals(10, s.get(java.lang.foreign.ValueLayout.JAVA_SHORT, 0));
            assertEquals(3, s.get(JAVA_INT, 24), "sin6_scope_id");
            assertEquals(v6, LibRdmacm.readSockaddr(s, 0));
        }
    }
}

package io.jrdma.wire;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestFactory;

/**
 * Every RoCEv2 packet of every roce-*.pcap in the capture folder (testdata/pcaps): decode,
 * re-encode, ICRC. Fails (does not skip) when the folder is missing; -Djrdma.pcaps=DIR overrides it.
 */
class GoldenCapturesTest {

    /** RoCEv2 packet counts per capture (interop/harness/results/icrc.txt). */
    static final Map<String, Integer> EXPECTED = Map.of(
            "roce-ib_atomic_bw_cmp_swap.pcap", 32,
            "roce-ib_atomic_bw_fetch_add.pcap", 32,
            "roce-ib_read_bw.pcap", 80,
            "roce-ib_read_lat.pcap", 22,
            "roce-ib_send_bw.pcap", 80,
            "roce-ib_write_bw.pcap", 80,
            "roce-ib_write_lat.pcap", 46,
            "roce-rc_pingpong.pcap", 116,
            "roce-rdma_cm_ib_write_lat.pcap", 90);

    @TestFactory
    Stream<DynamicTest> everyRocePacket() {
        List<Path> files = Captures.list("roce-");
        return files.stream().map(f -> DynamicTest.dynamicTest(f.getFileName().toString(), () -> {
            RoceChecker.Result r = RoceChecker.check(Captures.PcapFile.read(f));
            assertTrue(r.packets().size() > 0, f + ": no RoCEv2 packets");
            Integer expected = EXPECTED.get(r.file());
            if (expected != null) {
                assertEquals(expected, r.packets().size(), f + ": RoCEv2 packet count");
            }
        }));
    }

    @Test
    void allKnownCapturesPresent() throws Exception {
        int total = 0;
        for (String name : EXPECTED.keySet()) {
            total += RoceChecker.check(Captures.read(name)).packets().size();
        }
        assertEquals(578, total);
    }
}

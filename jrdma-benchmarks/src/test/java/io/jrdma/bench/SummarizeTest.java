package io.jrdma.bench;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The tables of bench/compare.sh: the shared-memory section with and without its provider. */
class SummarizeTest {
    @TempDir
    Path dir;

    private String summarize(String raw, String... options) throws Exception {
        Path f = dir.resolve("raw.txt");
        Files.writeString(f, raw);
        String[] args = new String[options.length + 1];
        args[0] = f.toString();
        System.arraycopy(options, 0, args, 1, options.length);
        PrintStream old = System.out;
        ByteArrayOutputStream buf = new ByteArrayOutputStream();
        System.setOut(new PrintStream(buf, true, StandardCharsets.UTF_8));
        try {
            Summarize.main(args);
        } finally {
            System.setOut(old);
        }
        return buf.toString(StandardCharsets.UTF_8);
    }

    /** @return the table line of the given section whose first cell is {@code label} */
    private static String line(String out, String section, String label) {
        int at = out.indexOf(section);
        assertTrue(at >= 0, "no section '" + section + "' in:\n" + out);
        int end = out.indexOf("\n**", at + section.length());
        String part = out.substring(at, end < 0 ? out.length() : end);
        for (String l : part.split("\n")) {
            if (l.startsWith("| " + label + " |")) {
                return l;
            }
        }
        throw new AssertionError("no row '" + label + "' in section '" + section + "':\n" + part);
    }

    private static final String BASELINES = """
            loadavg 2.0
            mapped.8 0.10
            mapped.8 0.20
            mapped.8 0.12
            ucx.posix.put_lat.8 0.05
            ucx.posix.put_lat.8 0.07
            aeron.ipc.pingpong.8 0.30
            memcopy.65536 30
            memcopy.1048576 15
            memcopy_hot.65536 30
            memcopy_hot.1048576 20
            ucx.posix.put_bw.65536 40
            ucx.posix.put_bw.1048576 36
            """;

    @Test
    void withoutTheProviderTheShmRowsSayProviderAbsentAndTheBaselinesStillCompare() throws Exception {
        String out = summarize(BASELINES + "shm.absent 1\n", "--shm");
        String shm = "Shared memory (";
        String w = line(out, shm, "WRITE 8 B lat (vs floor)");
        assertTrue(w.contains("| provider absent |"), w);
        assertTrue(w.contains("0.120 µs (0.100–0.200)"), "the floor's median and min–max: " + w);
        assertTrue(w.endsWith("| n/a | n/a | ≤ 1.50× | skipped |"), w);
        String fa = line(out, shm, "FETCH_ADD 8 B lat");
        assertTrue(fa.contains("| provider absent | jrdma shm0 WRITE 8 B (one-way, as printed) | provider absent |"), fa);
        String among = "Shared-memory baselines among themselves";
        assertTrue(out.contains("| metric | figure median (min–max) | baseline |"), out);
        String ucx = line(out, among, "ucx_perftest ucp_put_lat 8 B, posix");
        assertTrue(ucx.contains("| 0.50× | 0.50× (0.50–0.50) |"), "0.06 / 0.12, and in its one round 0.05 / 0.10: " + ucx);
        assertTrue(line(out, among, "ucx_perftest ucp_put_bw 1 MiB, posix").contains("| 2.40× |"));
        // --shm: the network tables are left out, as is an extra figure nobody measured
        assertFalse(out.contains("**Latency"), out);
        assertFalse(out.contains("**Peers"), out);
        assertFalse(out.contains("**iWARP"), out);
        assertFalse(out.contains("engine heap per connected QP"), out);
        assertTrue(out.contains("| load average (1 min) at the start of each round | 2.00 (2.00–2.00) |"), out);
    }

    @Test
    void withTheProviderTheRatiosAreJudgedAgainstIssue13sTargets() throws Exception {
        String out = summarize(BASELINES + """
                shm.write_lat.8 0.15
                shm.write_lat.8 0.17
                shm.atomic_lat.8 0.40
                shm.atomic_lat.8 0.20
                shm.send_lat.8 0.25
                shm.write_bw.65536 28
                shm.read_bw.1048576 10
                """);
        String shm = "Shared memory (";
        assertTrue(line(out, shm, "WRITE 8 B lat").contains("| 0.160 µs (0.150–0.170) | ucx_perftest ucp_put_lat 8 B, posix | 0.060 µs (0.050–0.070) | 2.67× | 3.00× (3.00–3.00) | ≤ 1.0× | **no** |"),
                line(out, shm, "WRITE 8 B lat"));
        assertTrue(line(out, shm, "WRITE 8 B lat (vs floor)").endsWith("| 1.33× | 1.50× (1.50–1.50) | ≤ 1.50× | yes |"));
        assertTrue(line(out, shm, "WRITE 64 KiB bw").endsWith("| 0.93× | 0.93× (0.93–0.93) | ≥ 0.90× | yes |"));
        assertTrue(line(out, shm, "WRITE 64 KiB bw (vs copy over 4 MiB)").endsWith("| 0.93× | 0.93× (0.93–0.93) | – | – |"));
        assertTrue(line(out, shm, "READ 1 MiB bw").endsWith("| 0.50× | 0.50× (0.50–0.50) | ≥ 0.90× | **no** |"));
        assertTrue(line(out, shm, "SEND 8 B lat").endsWith("| 0.83× | 0.83× (0.83–0.83) | ≤ 1.0× | yes |"));
        assertTrue(line(out, shm, "FETCH_ADD 8 B lat").endsWith("| 1.88× | 2.67× (2.67–2.67) | ≤ 2.0× | yes |"));
        // a figure that did not come (no provider note, just no result) is n/a, not "provider absent"
        String r = line(out, shm, "READ 64 KiB bw");
        assertTrue(r.contains("| n/a |") && !r.contains("provider absent"), r);
        // without --shm every table is printed, the network ones too (n/a where nothing ran)
        assertTrue(line(out, "Peers", "WRITE 1 MiB bw").contains("| n/a | ucx_perftest ucp_put_bw, posix (shm) | 36.0 GB/s (36.0–36.0) | n/a | n/a |"),
                line(out, "Peers", "WRITE 1 MiB bw"));
        assertTrue(out.contains("**Latency"), out);
    }

    @Test
    void perRoundRatiosPairTheFiguresOfEachRound() throws Exception {
        // round 1 fast, round 2 slow, round 3 in between: the ratio within each round stays near 1.1
        String out = summarize("""
                loadavg 1
                mapped.8 0.10
                shm.write_lat.8 0.11
                loadavg 5
                mapped.8 0.30
                shm.write_lat.8 0.36
                loadavg 3
                mapped.8 0.20
                shm.write_lat.8 0.20
                """, "--shm");
        String w = line(out, "Shared memory (", "WRITE 8 B lat (vs floor)");
        assertTrue(w.contains("| 0.200 µs (0.110–0.360) | mapped-file flag ping-pong 8 B, two JVMs, its faster wait | 0.200 µs (0.100–0.300) | 1.00× | 1.10× (1.00–1.20) | ≤ 1.50× | yes |"), w);
        // a round that lacks one of the two figures is left out of the pairs
        String f = line(out, "Shared memory (", "WRITE 8 B lat");
        assertTrue(f.contains("| n/a | n/a | ≤ 1.0× | n/a |"), f);
    }
}

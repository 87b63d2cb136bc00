package io.jrdma.tools.perf;

import org.junit.jupiter.api.Test;

import java.util.HexFormat;

import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * The table perftest 4.5 prints, against what ib_*_bw/lat printed between two Linux rxe peers
 * (interop/harness/results/roce-ib_*.txt, copied here so the test stands alone).
 */
class PerftestReportTest {
    private static final String L = "-".repeat(87) + "\n";

    @Test
    void writeBwClientHeaderAsRxePrintedIt() {
        String expected = L
                + "                    RDMA_Write BW Test\n"
                + " Dual-port       : OFF\t\tDevice         : rxe0\n"
                + " Number of qps   : 1\t\tTransport type : IB\n"
                + " Connection type : RC\t\tUsing SRQ      : OFF\n"
                + " PCIe relax order: ON\n"
                + " ibv_wr* API     : OFF\n"
                + " TX depth        : 16\n"
                + " CQ Moderation   : 16\n"
                + " Mtu             : 1024[B]\n"
                + " Link type       : Ethernet\n"
                + " GID index       : 1\n"
                + " Max inline data : 0[B]\n"
                + " rdma_cm QPs\t : OFF\n"
                + " Data ex. method : Ethernet\n"
                + "-".repeat(87);
        assertEquals(expected, PerftestReport.header(new PerftestReport.Info(PerfTest.WRITE_BW, false, "rxe0", 1,
                false, true, 16, 1, 16, 1024, 1, 0, 1)));
    }

    @Test
    void sendBwServerAndLatencyHeaders() {
        String send = PerftestReport.header(new PerftestReport.Info(PerfTest.SEND_BW, false, "rxe0", 1, false, false,
                16, 16, 16, 1024, 1, 0, 1));
        assertEquals(L + "                    Send BW Test\n"
                + " Dual-port       : OFF\t\tDevice         : rxe0\n"
                + " Number of qps   : 1\t\tTransport type : IB\n"
                + " Connection type : RC\t\tUsing SRQ      : OFF\n"
                + " PCIe relax order: ON\n"
                + " ibv_wr* API     : OFF\n"
                + " RX depth        : 16\n"
                + " CQ Moderation   : 16\n"
                + " Mtu             : 1024[B]\n"
                + " Link type       : Ethernet\n"
                + " GID index       : 1\n"
                + " Max inline data : 0[B]\n"
                + " rdma_cm QPs\t : OFF\n"
                + " Data ex. method : Ethernet\n" + "-".repeat(87), send);
        String writeLatServer = PerftestReport.header(new PerftestReport.Info(PerfTest.WRITE_LAT, false, "rxe0", 1,
                true, false, 1, 1, 1, 1024, 1, 0, 1));
        assertEquals(L + "                    RDMA_Write Latency Test\n"
                + " Dual-port       : OFF\t\tDevice         : rxe0\n"
                + " Number of qps   : 1\t\tTransport type : IB\n"
                + " Connection type : RC\t\tUsing SRQ      : OFF\n"
                + " PCIe relax order: OFF\n"
                + " ibv_wr* API     : OFF\n"
                + " Mtu             : 1024[B]\n"
                + " Link type       : Ethernet\n"
                + " GID index       : 1\n"
                + " Max inline data : 0[B]\n"
                + " rdma_cm QPs\t : OFF\n"
                + " Data ex. method : Ethernet\n" + "-".repeat(87), writeLatServer);
        String readLatClient = PerftestReport.header(new PerftestReport.Info(PerfTest.READ_LAT, false, "rxe0", 1,
                false, true, 1, 1, 1, 1024, 1, 0, 128));
        assertEquals(L + "                    RDMA_Read Latency Test\n"
                + " Dual-port       : OFF\t\tDevice         : rxe0\n"
                + " Number of qps   : 1\t\tTransport type : IB\n"
                + " Connection type : RC\t\tUsing SRQ      : OFF\n"
                + " PCIe relax order: ON\n"
                + " ibv_wr* API     : OFF\n"
                + " TX depth        : 1\n"
                + " Mtu             : 1024[B]\n"
                + " Link type       : Ethernet\n"
                + " GID index       : 1\n"
                + " Outstand reads  : 128\n"
                + " rdma_cm QPs\t : OFF\n"
                + " Data ex. method : Ethernet\n" + "-".repeat(87), readLatClient);
        String cas = PerftestReport.header(new PerftestReport.Info(PerfTest.ATOMIC_BW, true, "rxe0", 1, false, true,
                16, 1, 16, 1024, 1, 0, 128));
        assertEquals("                    Atomic CMP_AND_SWAP BW Test", cas.lines().toList().get(1));
    }

    @Test
    void addressLinesAsRxePrintedThem() {
        byte[] g11 = HexFormat.of().parseHex("00000000000000000000ffff0a4d000b");
        PerftestWire.Dest read = new PerftestWire.Dest(0, 128, 0x15, 0x4e98c, 0x64b, 0x55bc44d8b000L, g11, 0);
        assertEquals(" local address: LID 0000 QPN 0x0015 PSN 0x4e98c OUT 0x80 RKey 0x00064b VAddr 0x0055bc44d8b000\n"
                + " GID: 00:00:00:00:00:00:00:00:00:00:255:255:10:77:00:11",
                PerftestReport.address("local", read, PerfTest.READ_BW));
        PerftestWire.Dest write = new PerftestWire.Dest(0, 1, 0x13, 0xd5d4f1, 0x4ce, 0x560103e8b000L, g11, 0);
        assertEquals(" remote address: LID 0000 QPN 0x0013 PSN 0xd5d4f1 RKey 0x0004ce VAddr 0x00560103e8b000\n"
                + " GID: 00:00:00:00:00:00:00:00:00:00:255:255:10:77:00:11",
                PerftestReport.address("remote", write, PerfTest.WRITE_BW));
        PerftestWire.Dest atomic = new PerftestWire.Dest(0, 128, 0x17, 0xabfa2c, 0x8d2, 0x5645fec1a000L, g11, 0);
        assertEquals(" local address: LID 0000 QPN 0x0017 PSN 0xabfa2c\n"
                + " GID: 00:00:00:00:00:00:00:00:00:00:255:255:10:77:00:11",
                PerftestReport.address("local", atomic, PerfTest.ATOMIC_BW));
        byte[] link = HexFormat.of().parseHex("fe8000000000000000fc00fffe000001");
        PerftestWire.Dest send = new PerftestWire.Dest(0x12b7, 1, 0xabcdef, 0x1, 0x8a3bc1d2, 0x7f1234567000L, link, 0);
        assertEquals(" local address: LID 0x12b7 QPN 0xabcdef PSN 0x0001\n"
                + " GID: 254:128:00:00:00:00:00:00:00:252:00:255:254:00:00:01",
                PerftestReport.address("local", send, PerfTest.SEND_LAT));
    }

    /** perftest -R on Linux siw (interop/harness/results/iwarp-ib_write_bw.txt and iwarp-ib_send_bw.txt). */
    @Test
    void rdmaCmHeadersAndAddressesAsSiwPrintedThem() {
        assertEquals(L + "                    RDMA_Write BW Test\n"
                + " Dual-port       : OFF\t\tDevice         : siw0\n"
                + " Number of qps   : 1\t\tTransport type : IW\n"
                + " Connection type : RC\t\tUsing SRQ      : OFF\n"
                + " PCIe relax order: ON\n"
                + " ibv_wr* API     : OFF\n"
                + " TX depth        : 16\n"
                + " CQ Moderation   : 16\n"
                + " Mtu             : 1024[B]\n"
                + " Link type       : Ethernet\n"
                + " GID index       : 0\n"
                + " Max inline data : 0[B]\n"
                + " rdma_cm QPs\t : ON\n"
                + " Data ex. method : rdma_cm\n"
                + "-".repeat(87), PerftestReport.header(new PerftestReport.Info(PerfTest.WRITE_BW, false, "siw0", 1,
                false, true, 16, 1, 16, 1024, 0, 0, 1, true)));
        assertEquals(L + "                    Send BW Test\n"
                + " Dual-port       : OFF\t\tDevice         : siw0\n"
                + " Number of qps   : 1\t\tTransport type : IW\n"
                + " Connection type : RC\t\tUsing SRQ      : OFF\n"
                + " PCIe relax order: ON\n"
                + " ibv_wr* API     : OFF\n"
                + " RX depth        : 16\n"
                + " CQ Moderation   : 16\n"
                + " Mtu             : 1024[B]\n"
                + " Link type       : Ethernet\n"
                + " GID index       : 0\n"
                + " Max inline data : 0[B]\n"
                + " rdma_cm QPs\t : ON\n"
                + " Data ex. method : rdma_cm\n"
                + L
                + " Waiting for client rdma_cm QP to connect\n"
                + " Please run the same command with the IB/RoCE interface IP\n"
                + "-".repeat(87), PerftestReport.header(new PerftestReport.Info(PerfTest.SEND_BW, false, "siw0", 1,
                false, false, 16, 16, 16, 1024, 0, 0, 1, true)));
        byte[] g = HexFormat.of().parseHex("52540077011200000000000000000000");
        PerftestWire.Dest write = new PerftestWire.Dest(0, 1, 2, 0x5780f7, 0x1234, 0x55bc73031000L, g, 0);
        assertEquals(" local address: LID 0000 QPN 0x0002 PSN 0x5780f7\n"
                + " GID: 82:84:00:119:01:18:00:00:00:00:00:00:00:00:00:00",
                PerftestReport.address("local", write, PerfTest.WRITE_BW, true));
        PerftestWire.Dest read = new PerftestWire.Dest(0, 128, 2, 0xe3aa9, 0x1234, 0x55bc73031000L, g, 0);
        assertEquals(" remote address: LID 0000 QPN 0x0002 PSN 0xe3aa9\n"
                + " GID: 82:84:00:119:01:18:00:00:00:00:00:00:00:00:00:00",
                PerftestReport.address("remote", read, PerfTest.READ_BW, true), "no OUT, RKey, VAddr with -R");
    }

    @Test
    void rowsAsRxePrintedThem() {
        assertEquals(" #bytes     #iterations    BW peak[MB/sec]    BW average[MB/sec]   MsgRate[Mpps]",
                PerftestReport.bwColumns(false));
        assertEquals(" 4096       16               1.11               1.04   \t\t   0.000265",
                PerftestReport.bwRow(4096, 16, 1.11, 1.04, 0.000265, false));
        assertEquals(" 8          16               0.01               0.01   \t\t   0.001590",
                PerftestReport.bwRow(8, 16, 0.0123, 0.0096, 0.00159, false));
        assertEquals(" #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]    t_avg[usec]    "
                + "t_stdev[usec]   99% percentile[usec]   99.9% percentile[usec] ", PerftestReport.RESULT_FMT_LAT);
        assertEquals(" 2       10          481.60         13452.76      3409.21  \t       4326.30     \t3797.16\t\t"
                + "13452.76 \t\t13452.76",
                PerftestReport.latRow(2, 10, 481.60, 13452.76, 3409.21, 4326.30, 3797.16, 13452.76, 13452.76));
        assertEquals(2, PerftestReport.LAT_DECIMALS, "perftest's 2 decimals unless -Djrdma.perf.decimals says more");
        // -Djrdma.perf.decimals=3: the same columns, each figure with 3 decimals (a nanosecond)
        assertEquals(" 8       200000          0.041          33.342       0.055    \t       0.081       \t0.130  \t\t"
                + "0.103   \t\t0.160  ",
                PerftestReport.latRow(8, 200000, 0.0405, 33.3417, 0.0551, 0.0814, 0.13, 0.1026, 0.16, 3));
        // REPORT_FMT_EXT in Gb/s below 0.1 Gb/s
        assertEquals(" 8          16           0.012000            0.009000            0.001590",
                PerftestReport.bwRow(8, 16, 0.012, 0.009, 0.00159, true));
    }

    @Test
    void latencyStatisticsArePerftests() {
        long t0 = 5_000_000_000L;
        long[] t = new long[10];
        t[0] = t0;
        for (int i = 1; i < 10; i++) {
            t[i] = t[i - 1] + i * 1000L; // gaps of 1..9 us
        }
        // 9 gaps, sorted, less the 2 largest: 1..7 us; median delta[3] = 4; average 4; perftest's stdev
        // truncates each term: 3,2,1,0,-1,-2,-3 -> sqrt(28/7) = 2; max = delta[7] = 8; 99% and 99.9% = delta[7]
        assertEquals(PerftestReport.latRow(2, 10, 1, 8, 4, 4, 2, 8, 8), PerftestReport.latRow(2, 10, t, 1));
        // write/send: half the round trip; the truncated terms are 1,1,0,0,0,-1,-1: sqrt(4/7)
        assertEquals(PerftestReport.latRow(2, 10, 0.5, 4, 2, 2, Math.sqrt(4.0 / 7), 4, 4),
                PerftestReport.latRow(2, 10, t, 2));
    }

    @Test
    void bandwidthIsPerftests() {
        long b = 7_000_000_000L;
        long[] posted = {b, b + 1000, b + 2000, b + 3000};
        long[] completed = {0, b + 4000, 0, b + 10000}; // cq_mod 2: completions at index 1 and 3
        PerftestReport.Bw r = PerftestReport.bw(1 << 20, 4, posted, completed, 2, false, false);
        assertEquals(500000.0, r.peak(), 1e-6); // best window: posts 0..1 in 2000 ns per message
        assertEquals(400000.0, r.avg(), 1e-6);  // 4 MiB in 10 us
        assertEquals(0.4, r.msgRate(), 1e-12);
        PerftestReport.Bw server = PerftestReport.bw(1 << 20, 4, new long[] {b}, new long[] {b + 10000}, 2, true,
                false);
        assertEquals(0.0, server.peak());
        assertEquals(400000.0, server.avg(), 1e-6);
    }

    /**
     * print_report_lat_duration: REPORT_FMT_LAT_DUR (" %-7lu       %lu            %-7.2f        %-7.2f") of the
     * sampled iterations, t_avg = span[usec] / rtt_factor / iterations and tps = iterations / span[s]; and
     * print_report_bw in duration mode: the sampled iterations over SAMPLE's span, no peak.
     */
    @Test
    void durationReports() {
        assertEquals(" 2             28074            35.62          28074.00",
                PerftestReport.latDurationRow(2, 28074, 1_000_000_000L, 1));
        assertEquals(" 65536         1000            1000.00        500.00 ",
                PerftestReport.latDurationRow(65536, 1000, 2_000_000_000L, 2), "write/send: half the round trip");
        assertEquals(" #bytes        #iterations       t_avg[usec]    tps average", PerftestReport.RESULT_FMT_LAT_DUR);
        PerftestReport.Bw bw = PerftestReport.bw(4096, 25600, new long[] {5_000_000_000L},
                new long[] {7_000_000_000L}, 100, true, false);
        assertEquals(25600, bw.iters());
        assertEquals(0.0, bw.peak());
        assertEquals(4096.0 * 25600 / 2 / (1 << 20), bw.avg(), 1e-9, "MB/s over the 2 s sampled");
        assertEquals(0.0128, bw.msgRate(), 1e-12);
        assertEquals(" 4096       25600            0.00               50.00  \t\t   0.012800", bw.row(false));
    }
}

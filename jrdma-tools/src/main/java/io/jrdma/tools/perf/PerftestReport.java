package io.jrdma.tools.perf;

import io.jrdma.tools.oob.CFormat;

import java.util.Arrays;

/**
 * What perftest 4.5 prints, character for character ({@code src/perftest_parameters.c}:
 * {@code ctx_print_test_info}, {@code print_full_bw_report}, {@code print_report_lat},
 * {@code print_report_lat_duration}; formats from {@code perftest_parameters.h};
 * {@code ctx_print_pingpong_data} in {@code perftest_communication.c}), and its statistics,
 * computed the same way from nanosecond timestamps instead of CPU cycles.
 */
final class PerftestReport {
    static final String RESULT_LINE = "-".repeat(87);
    static final String RESULT_FMT = " #bytes     #iterations    BW peak[MB/sec]    BW average[MB/sec]   MsgRate[Mpps]";
    static final String RESULT_FMT_G = " #bytes     #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   MsgRate[Mpps]";
    static final String RESULT_FMT_LAT = " #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]    t_avg[usec]"
            + "    t_stdev[usec]   99% percentile[usec]   99.9% percentile[usec] ";
    /** RESULT_FMT_LAT_DUR: the columns of a latency test's duration mode. */
    static final String RESULT_FMT_LAT_DUR = " #bytes        #iterations       t_avg[usec]    tps average";
    static final String BANNER = "\n************************************\n* Waiting for client to connect... *\n"
            + "************************************";

    private PerftestReport() {
    }

    /**
     * What the test header shows; {@code rdmaCm}: {@code -R} over iWARP; {@code useSrq}: {@code --use-srq};
     * {@code events}: {@code -e}.
     */
    record Info(PerfTest test, boolean cmpSwap, String device, int numQps, boolean disablePcir, boolean client,
                int txDepth, int rxDepth, int cqMod, int mtuBytes, int gidIndex, int inline, int outReads,
                boolean rdmaCm, boolean useSrq, boolean events) {
        Info(PerfTest test, boolean cmpSwap, String device, int numQps, boolean disablePcir, boolean client,
             int txDepth, int rxDepth, int cqMod, int mtuBytes, int gidIndex, int inline, int outReads, boolean rdmaCm,
             boolean useSrq) {
            this(test, cmpSwap, device, numQps, disablePcir, client, txDepth, rxDepth, cqMod, mtuBytes, gidIndex,
                    inline, outReads, rdmaCm, useSrq, false);
        }

        Info(PerfTest test, boolean cmpSwap, String device, int numQps, boolean disablePcir, boolean client,
             int txDepth, int rxDepth, int cqMod, int mtuBytes, int gidIndex, int inline, int outReads, boolean rdmaCm) {
            this(test, cmpSwap, device, numQps, disablePcir, client, txDepth, rxDepth, cqMod, mtuBytes, gidIndex,
                    inline, outReads, rdmaCm, false);
        }

        Info(PerfTest test, boolean cmpSwap, String device, int numQps, boolean disablePcir, boolean client,
             int txDepth, int rxDepth, int cqMod, int mtuBytes, int gidIndex, int inline, int outReads) {
            this(test, cmpSwap, device, numQps, disablePcir, client, txDepth, rxDepth, cqMod, mtuBytes, gidIndex,
                    inline, outReads, false);
        }
    }

    /** {@code ctx_print_test_info}. */
    static String header(Info i) {
        PerfTest t = i.test();
        StringBuilder sb = new StringBuilder();
        sb.append(RESULT_LINE).append('\n');
        sb.append("                    ").append(verb(t)).append(' ');
        if (t.isAtomic()) {
            sb.append(i.cmpSwap() ? "CMP_AND_SWAP" : "FETCH_AND_ADD").append(' ');
        }
        sb.append(t.isBw() ? "BW " : "Latency ").append("Test\n");
        if (i.events()) {
            sb.append(" Test with events. Using ").append(i.device()).append("_comp0\n"); // perftest's eq_num: 0
        }
        sb.append(" Dual-port       : OFF\t\tDevice         : ").append(i.device()).append('\n');
        sb.append(" Number of qps   : ").append(i.numQps()).append("\t\tTransport type : ")
                .append(i.rdmaCm() && !i.device().startsWith("roce_") ? "IW" : "IB").append('\n'); // -R over RoCE: IB
        sb.append(" Connection type : RC\t\tUsing SRQ      : ").append(i.useSrq() ? "ON" : "OFF").append('\n');
        sb.append(" PCIe relax order: ").append(i.disablePcir() ? "OFF" : "ON").append('\n');
        sb.append(" ibv_wr* API     : OFF\n");
        if (i.client()) {
            sb.append(" TX depth        : ").append(i.txDepth()).append('\n');
        }
        if (t.isSend() && !i.client()) {
            sb.append(" RX depth        : ").append(i.rxDepth()).append('\n');
        }
        if (t.isBw()) {
            sb.append(" CQ Moderation   : ").append(i.cqMod()).append('\n');
        }
        sb.append(" Mtu             : ").append(i.mtuBytes()).append("[B]\n");
        sb.append(" Link type       : Ethernet\n");
        sb.append(" GID index       : ").append(i.gidIndex()).append('\n');
        if (!t.opcode.isReadOrAtomic()) {
            sb.append(" Max inline data : ").append(i.inline()).append("[B]\n");
        } else {
            sb.append(" Outstand reads  : ").append(i.outReads()).append('\n');
        }
        sb.append(" rdma_cm QPs\t : ").append(i.rdmaCm() ? "ON" : "OFF").append('\n');
        sb.append(" Data ex. method : ").append(i.rdmaCm() ? "rdma_cm" : "Ethernet").append('\n');
        if (i.rdmaCm() && !i.client()) {
            sb.append(RESULT_LINE).append('\n');
            sb.append(" Waiting for client rdma_cm QP to connect\n");
            sb.append(" Please run the same command with the IB/RoCE interface IP\n");
        }
        sb.append(RESULT_LINE);
        return sb.toString();
    }

    /** perftest's {@code testsStr}. */
    static String verb(PerfTest t) {
        return switch (t.opcode) {
            case SEND -> "Send";
            case RDMA_WRITE -> "RDMA_Write";
            case RDMA_READ -> "RDMA_Read";
            default -> "Atomic";
        };
    }

    /** {@code ctx_print_pingpong_data}: the address line and its GID line. */
    static String address(String side, PerftestWire.Dest d, PerfTest t) {
        return address(side, d, t, false);
    }

    /**
     * As {@link #address(String, PerftestWire.Dest, PerfTest)}; with {@code -R} perftest prints with
     * the comm QP's verb (SEND), so without OUT, RKey and VAddr.
     */
    static String address(String side, PerftestWire.Dest d, PerfTest t, boolean rdmaCm) {
        StringBuilder sb = new StringBuilder(" ").append(side).append(" address: LID ")
                .append(CFormat.hashHex(d.lid() & 0xffffffffL, 4)).append(" QPN ")
                .append(CFormat.hashHex(d.qpn() & 0xffffffffL, 6)).append(" PSN ")
                .append(CFormat.hashHex(d.psn() & 0xffffffffL, 6));
        if (t.opcode == io.jrdma.verbs.WrOpcode.RDMA_READ && !rdmaCm) {
            sb.append(" OUT ").append(CFormat.hashHex(d.outReads() & 0xffffffffL, 4));
        }
        if ((t.opcode == io.jrdma.verbs.WrOpcode.RDMA_READ || t.opcode == io.jrdma.verbs.WrOpcode.RDMA_WRITE)
                && !rdmaCm) {
            sb.append(" RKey ").append(CFormat.hashHex(d.rkey() & 0xffffffffL, 8)).append(" VAddr ")
                    .append(CFormat.hashHex(d.vaddr(), 16));
        }
        sb.append("\n GID: ");
        byte[] g = d.gid();
        for (int i = 0; i < 16; i++) {
            int v = g[i] & 0xff;
            sb.append(i == 0 ? "" : ":").append(v < 10 ? "0" + v : String.valueOf(v));
        }
        return sb.toString();
    }

    static String bwColumns(boolean gbits) {
        return gbits ? RESULT_FMT_G : RESULT_FMT;
    }

    /** {@code print_full_bw_report}: REPORT_FMT, or REPORT_FMT_EXT when below 0.1 Gb/s in Gb/s units. */
    static String bwRow(long size, long iters, double peak, double avg, double rate, boolean gbits) {
        if (avg < 0.1 && gbits) {
            return " " + CFormat.left(Long.toUnsignedString(size), 7) + "    " + Long.toUnsignedString(iters)
                    + "           " + CFormat.fixedLeft(peak, 7, 6) + "            " + CFormat.fixedLeft(avg, 7, 6)
                    + "            " + CFormat.fixedLeft(rate, 7, 6);
        }
        return " " + CFormat.left(Long.toUnsignedString(size), 7) + "    " + CFormat.left(Long.toUnsignedString(iters), 10)
                + "       " + CFormat.fixedLeft(peak, 7, 2) + "            " + CFormat.fixedLeft(avg, 7, 2)
                + "\t\t   " + CFormat.fixedLeft(rate, 7, 6);
    }

    /** A bandwidth result: {@code struct bw_report_data}'s printed part. */
    record Bw(long size, long iters, double peak, double avg, double msgRate) {
        String row(boolean gbits) {
            return bwRow(size, iters, peak, avg, msgRate, gbits);
        }
    }

    /**
     * {@code print_report_bw} for {@code run_iter_bw} timestamps in nanoseconds.
     *
     * @param tposted    post times; index 0 only when {@code noPeak}
     * @param tcompleted completion times of the signaled requests (index {@code k cqMod - 1}, and the last);
     *                   index 0 only when {@code noPeak}
     * @param n          messages, all QPs together
     */
    static Bw bw(long size, long n, long[] tposted, long[] tcompleted, int cqMod, boolean noPeak, boolean gbits) {
        long optDelta = tcompleted[0] - tposted[0];
        if (!noPeak) {
            if ((double) n * n / cqMod <= 4e8) {
                for (int i = 0; i < n; i++) {
                    long ti = tposted[i];
                    for (long j = roundUp(i + 1, cqMod) - 1; j < n; j += cqMod) {
                        long t = Long.divideUnsigned(tcompleted[(int) j] - ti, j - i + 1);
                        if (Long.compareUnsigned(t, optDelta) < 0) {
                            optDelta = t;
                        }
                    }
                    if (n % cqMod != 0) {
                        long j = n - 1;
                        long t = Long.divideUnsigned(tcompleted[(int) j] - ti, j - i + 1);
                        if (Long.compareUnsigned(t, optDelta) < 0) {
                            optDelta = t;
                        }
                    }
                }
            } else {
                // too many pairs to try all (perftest would): the windows starting at each signaled completion
                for (long i = 0; i < n; i += cqMod) {
                    for (long j = roundUp(i + 1, cqMod) - 1; j < n; j += cqMod) {
                        long t = Long.divideUnsigned(tcompleted[(int) j] - tposted[(int) i], j - i + 1);
                        if (Long.compareUnsigned(t, optDelta) < 0) {
                            optDelta = t;
                        }
                    }
                }
            }
        }
        double unitsPerSec = 1e9;
        double format = gbits ? 125000000 : 0x100000;
        int last = noPeak ? 0 : (int) (n - 1);
        double sum = (double) (tcompleted[last] - tposted[0]);
        double avg = (double) size * n * unitsPerSec / (sum * format);
        double rate = (double) n * unitsPerSec / (sum * 1000000);
        double peakUp = noPeak ? 0 : (double) size * unitsPerSec;
        double peakDown = (double) optDelta * format;
        return new Bw(size, n, peakUp / peakDown, avg, rate);
    }

    private static long roundUp(long v, long a) {
        return v % a == 0 ? v : a * (v / a + 1);
    }

    /**
     * {@code print_report_lat}: the gaps between consecutive posts, sorted, less the two
     * largest; typical = median, and perftest's standard deviation (whose terms it truncates
     * to whole microseconds before squaring).
     *
     * @param tposted   {@code iters} post times in nanoseconds
     * @param rttFactor 2 for write/send (half the round trip), 1 for read/atomic
     */
    static String latRow(long size, long iters, long[] tposted, int rttFactor) {
        int measure = (int) iters - 1;
        long[] delta = new long[measure];
        for (int i = 0; i < measure; i++) {
            delta[i] = tposted[i + 1] - tposted[i];
        }
        double q = 1000.0 * rttFactor;
        Arrays.sort(delta);
        measure -= 2;
        long median = (measure - 1) % 2 != 0 ? (delta[measure / 2] + delta[measure / 2 - 1]) / 2 : delta[measure / 2];
        double sum = 0;
        for (int i = 0; i < measure; i++) {
            sum += delta[i] / q;
        }
        double average = sum / measure;
        double stdevSum = 0;
        for (int i = 0; i < measure; i++) {
            int tempVar = (int) (average - delta[i] / q);
            int powVar = (int) Math.pow(tempVar, 2);
            stdevSum += powVar;
        }
        double latency = median / q;
        double stdev = Math.sqrt(stdevSum / measure);
        int i99 = (int) Math.ceil(measure * 0.99);
        int i999 = (int) Math.ceil(measure * 0.999);
        return latRow(size, iters, delta[0] / q, delta[measure] / q, latency, average, stdev, delta[i99] / q,
                delta[i999] / q);
    }

    /**
     * The decimals of the latency columns: perftest's 2 unless {@code -Djrdma.perf.decimals=N} (2 to 6) asks for
     * more, for latencies of a few tens of nanoseconds, where 0.01 µs is a sixth of the figure (docs/tools.md).
     */
    static final int LAT_DECIMALS = Math.clamp(Integer.getInteger("jrdma.perf.decimals", 2), 2, 6);

    /** REPORT_FMT_LAT (with {@link #LAT_DECIMALS}). */
    static String latRow(long size, long iters, double min, double max, double typical, double avg, double stdev,
                         double p99, double p999) {
        return latRow(size, iters, min, max, typical, avg, stdev, p99, p999, LAT_DECIMALS);
    }

    /** REPORT_FMT_LAT with {@code d} decimals in place of its 2. */
    static String latRow(long size, long iters, double min, double max, double typical, double avg, double stdev,
                         double p99, double p999, int d) {
        return " " + CFormat.left(Long.toUnsignedString(size), 7) + " " + Long.toUnsignedString(iters) + "          "
                + CFormat.fixedLeft(min, 7, d) + "        " + CFormat.fixedLeft(max, 7, d) + "      "
                + CFormat.fixedLeft(typical, 7, d) + "  \t       " + CFormat.fixedLeft(avg, 7, d) + "     \t"
                + CFormat.fixedLeft(stdev, 7, d) + "\t\t" + CFormat.fixedLeft(p99, 7, d) + " \t\t"
                + CFormat.fixedLeft(p999, 7, d);
    }

    /**
     * {@code print_report_lat_duration}: the iterations counted while sampling, the average latency over the sampled
     * span (halved for write and send, as {@code rttFactor} 2) and the iterations per second (REPORT_FMT_LAT_DUR).
     */
    static String latDurationRow(long size, long iters, long sampleNanos, int rttFactor) {
        double latency = sampleNanos / 1000.0 / rttFactor / iters;
        double tps = iters / (sampleNanos / 1e9);
        return " " + CFormat.left(Long.toUnsignedString(size), 7) + "       " + Long.toUnsignedString(iters)
                + "            " + CFormat.fixedLeft(latency, 7, 2) + "        " + CFormat.fixedLeft(tps, 7, 2);
    }
}

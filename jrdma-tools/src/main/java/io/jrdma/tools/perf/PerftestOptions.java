package io.jrdma.tools.perf;

import io.jrdma.verbs.QpType;

import io.jrdma.tools.ArgParser;
import io.jrdma.tools.pingpong.PingpongCommand;

import java.util.List;

/**
 * A {@code jrdma perf} command line in the perftest exchange (the default), as perftest 4.5's
 * {@code parser} reads it ({@code src/perftest_parameters.c}): its flags, its defaults, and the
 * adjustments of {@code force_dependecies} that do not depend on the device.
 *
 * @param test        the benchmark
 * @param cmpSwap     {@code -A CMP_AND_SWAP} (else FETCH_AND_ADD), atomic tests
 * @param size        {@code -s} (default 65536 bw, 2 lat, 8 atomic)
 * @param all         {@code -a}: sizes 2 .. 2^23
 * @param iters       {@code -n} (default 5000 for write_bw, else 1000)
 * @param txDepth     {@code -t} (default 128 bw, 1 lat), at most {@code iters}
 * @param cqMod       {@code -Q} (default 100; 1 for messages above 8 KiB without -a), at most {@code txDepth}
 * @param cqModAsked  {@code -Q} was given
 * @param rxDepth     {@code -r} (SEND: default 512, at most {@code iters}, made even; else 1)
 * @param inline      {@code -I}, or -1 for the default (jrdma follows perftest's defaults for a
 *                    device it recognizes: 220 B for write_lat, 236 B for send_lat, else 0)
 * @param outReads    {@code -o}, or 0 for the device's maximum (READ and atomics)
 * @param numQps      {@code -q} (bw tests)
 * @param mtu         {@code -m} in bytes, or 0 for the port's active MTU
 * @param port        {@code -p} (default 18515; 0 = any, with --loopback)
 * @param device      {@code -d}, or null
 * @param ibPort      {@code -i} (default 1): the device's port whose GID table {@code -x} indexes, whose active MTU
 *                    the MTU exchange starts from, that the QPs move to INIT on and that UD's address handles send
 *                    from; checked against the device's ports once it is open. With {@code -R} rdma_cm picks the port
 *                    (the {@code rdma_cm_id}'s), as perftest
 * @param gidIndex    {@code -x}, or -1 for perftest's choice (IPv4 first, IPv6 with {@code --ipv6})
 * @param ipv6        {@code --ipv6}
 * @param qpTimeout   {@code -u} (default 14)
 * @param sl          {@code -S} (accepted; RoCE here carries no service level)
 * @param noPeak      {@code -N}
 * @param gbits       {@code --report_gbits}
 * @param disablePcir {@code --disable_pcie_relaxed} (write_lat always)
 * @param host        the server, or null to be the server
 * @param loopback    {@code --loopback}: both ends in this process
 * @param timeoutSec  {@code --timeout}
 * @param waitClient  the server gives up after {@code timeoutSec} without a client (else waits like perftest)
 * @param rdmaCm      {@code -R}: the exchange and the QPs go through rdma_cm (jrdma: over iWARP only)
 * @param useSrq      {@code --use-srq}: the QPs take their receives from one shared receive queue (send tests)
 * @param warmUp      {@code --perform_warm_up}: a write, read or atomic bw client posts tx_depth requests per QP and
 *                    waits for them before each measured run (perftest's {@code perform_warm_up}); accepted and
 *                    unused elsewhere, as by perftest
 * @param durationSec {@code -D}: perftest's duration mode, SEC seconds per run (0: {@code iters} iterations)
 * @param marginSec   {@code --margin}: with -D, the seconds at each end of the run that are not measured (perftest:
 *                    default duration/4)
 * @param events      {@code -e}: each wait for a completion sleeps on the CQs' completion channel instead of polling
 *                    (perftest's {@code use_event}); not with the WRITE tests or {@code -D}, as perftest
 * @param pause       {@code --pause}: each turn of a latency test's busy wait (on memory or on a CQ) runs
 *                    {@link Thread#onSpinWait} (x86 PAUSE); perftest's loops do not, and jrdma's do not unless asked
 */
public record PerftestOptions(PerfTest test, boolean cmpSwap, long size, boolean all, long iters, int txDepth,
                              int cqMod, boolean cqModAsked, int rxDepth, int inline, int outReads, int numQps,
                              int mtu, int port, String device, int ibPort, int gidIndex, boolean ipv6, int qpTimeout, int sl,
                              boolean noPeak, boolean gbits, boolean disablePcir, String host, boolean loopback,
                              int timeoutSec, boolean waitClient, boolean rdmaCm, QpType connection, boolean useSrq,
                              boolean warmUp, int durationSec, int marginSec, boolean events, boolean pause) {
    /** perftest's MAX_SIZE: the top of {@code -a}, and the buffer size it uses then. */
    static final long MAX_SIZE = 8L << 20;
    /** jrdma's limit for {@code -s} (perftest's is 2 GiB); the buffer is twice the size per QP. */
    static final long MAX_MSG = 1L << 30;
    /** rxe's {@code max_qp_rd_atom}, which jrdma's engine also serves. */
    static final int DEVICE_MAX_READS = 128;
    static final int DEF_CQ_MOD = 100;
    static final int MSG_SIZE_CQ_MOD_LIMIT = 8192;
    /** perftest's DEF_DURATION: the duration its margin check assumes without -D. */
    static final int DEFAULT_DURATION = 5;

    /** @return the sizes to run: 2 .. 2^23 with -a, else the one */
    List<Long> sizes() {
        if (!all) {
            return List.of(size);
        }
        Long[] s = new Long[23];
        for (int i = 1; i < 24; i++) {
            s[i - 1] = 1L << i;
        }
        return List.of(s);
    }

    /** @return the size the buffers are made for ({@code ctx->size}: MAX_SIZE with -a) */
    long bufferSize() {
        return all ? MAX_SIZE : size;
    }

    boolean bw() {
        return test.isBw();
    }

    /** @return true on the server side (no host) */
    boolean server() {
        return host == null;
    }

    /** @return the inline size the test uses, as perftest's {@code ctx_set_max_inline} for a recognized device */
    int inlineSize() {
        if (test.opcode.isReadOrAtomic()) {
            return 0;
        }
        if (inline >= 0) {
            return inline;
        }
        if (!bw()) {
            return test == PerfTest.WRITE_LAT ? 220 : 236;
        }
        return 0;
    }

    /** @return {@code out_reads}: READ and atomics the device maximum unless -o, else 1 */
    int outstandingReads() {
        if (!test.opcode.isReadOrAtomic()) {
            return 1;
        }
        return outReads <= 0 || outReads > DEVICE_MAX_READS ? DEVICE_MAX_READS : outReads;
    }

    /** @return perftest's noPeak for this side: -N, -D, a SEND bw server, or more than 20000 iterations */
    boolean noPeakFor(boolean server) {
        return noPeak || duration() || (test == PerfTest.SEND_BW && server) || (bw() && iters > 20000);
    }

    /** @return true in perftest's duration mode ({@code -D}) */
    boolean duration() {
        return durationSec > 0;
    }

    /**
     * perftest's warning (its parser prints it, since perftest 24.01; 4.5 prints none) when -D leaves a bw test
     * without its peak.
     */
    static final String NO_PEAK_WARNING = " WARNING: BW peak won't be measured in this run.";

    /** @return these options with another role or port (loopback, tests) */
    PerftestOptions with(String newHost, int newPort, boolean newLoopback) {
        return new PerftestOptions(test, cmpSwap, size, all, iters, txDepth, cqMod, cqModAsked, rxDepth, inline,
                outReads, numQps, mtu, newPort, device, ibPort, gidIndex, ipv6, qpTimeout, sl, noPeak, gbits, disablePcir,
                newHost, newLoopback, timeoutSec, waitClient || newLoopback, rdmaCm, connection, useSrq, warmUp, durationSec,
                marginSec, events, pause);
    }

    /** @return one side of a {@code --loopback} run: the device named, the server bounded in its wait for the client */
    PerftestOptions side(String newDevice, String newHost, int newPort) {
        return new PerftestOptions(test, cmpSwap, size, all, iters, txDepth, cqMod, cqModAsked, rxDepth, inline,
                outReads, numQps, mtu, newPort, newDevice, ibPort, gidIndex, ipv6, qpTimeout, sl, noPeak, gbits, disablePcir,
                newHost, false, timeoutSec, true, rdmaCm, connection, useSrq, warmUp, durationSec, marginSec, events, pause);
    }

    /** Why {@code -R} is refused on a device that is neither iWARP nor RoCE, or when no iWARP device is there. */
    static final String RDMA_CM_NEEDS_IWARP = "option -R/--rdma_cm: jrdma speaks rdma_cm over iWARP (-d iwarp_<if>:"
            + " MPA) and RoCE (-d roce_<if>: the InfiniBand CM); without -d, -R picks the iWARP device";

    /** The options only {@code --jrdma-cm} has. */
    static final List<String> CM_ONLY = List.of("verify", "no-warmup");
    /** The options only the perftest exchange has. */
    static final List<String> PERFTEST_ONLY = List.of("qp", "inline_size", "atomic_type", "CPU-freq", "cq-mod",
            "rx-depth", "outs", "qp-timeout", "sl", "noPeak", "connection", "ib-port", "ipv6", "report_gbits",
            "disable_pcie_relaxed", "use_old_post_send", "use-srq", "perform_warm_up", "margin", "pause");

    /** Reads a parsed command line; throws a usage error naming the flag. */
    static PerftestOptions of(ArgParser.Parsed p) throws ArgParser.UsageException {
        for (String o : CM_ONLY) {
            if (p.has(o)) {
                throw new ArgParser.UsageException("option --" + o + " is a jrdma perf feature: use it with --jrdma-cm"
                        + " (perftest's exchange has no way to tell the peer)");
            }
        }
        if (p.has("comm_rdma_cm")) {
            throw new ArgParser.UsageException("option -z/--comm_rdma_cm is not supported: use -R (rdma_cm for the"
                    + " exchange and the QPs, over iWARP), or neither (perftest's TCP exchange, over RoCE)");
        }
        boolean rdmaCm = p.has("rdma_cm");
        if (p.has("bidirectional")) {
            throw new ArgParser.UsageException("option -b/--bidirectional is not supported yet");
        }
        if (p.has("dont_xchg_versions")) {
            throw new ArgParser.UsageException("option --dont_xchg_versions is not supported: perftest 4.5 then"
                    + " refuses its peer's (unsent) version itself");
        }
        List<String> pos = p.positionals();
        if (pos.isEmpty()) {
            throw new ArgParser.UsageException("missing test name (one of " + PerfTest.names() + ")");
        }
        PerfTest test = PerfTest.byName(pos.getFirst());
        if (p.has("use-srq") && test != PerfTest.SEND_BW && test != PerfTest.SEND_LAT) {
            throw new ArgParser.UsageException("option --use-srq: only the send tests (send_bw, send_lat) take"
                    + " receives, so only they can take them from an SRQ (perftest: the same)");
        }
        if (test == null) {
            throw new ArgParser.UsageException("unknown test '" + pos.getFirst() + "' (one of " + PerfTest.names()
                    + ")");
        }
        if (pos.size() > 2) {
            throw new ArgParser.UsageException("unexpected argument '" + pos.get(2) + "' (give at most one host)");
        }
        String host = pos.size() == 2 ? pos.get(1) : null;
        boolean loopback = p.has("loopback");
        if (loopback && host != null) {
            throw new ArgParser.UsageException("--loopback runs both sides here: do not give a host ('" + host + "')");
        }
        boolean atomic = test.isAtomic();
        boolean bw = test.isBw();
        boolean send = test.isSend();
        boolean readOrAtomic = test.opcode.isReadOrAtomic();
        QpType connection = QpType.RC;
        if (p.has("connection")) {
            connection = switch (p.value("connection")) {
                case "RC" -> QpType.RC;
                case "UC" -> QpType.UC;
                case "UD" -> QpType.UD;
                default -> throw new ArgParser.UsageException("option -c/--connection: RC, UC or UD, not '"
                        + p.value("connection") + "' (jrdma has no XRC, DC or SRD)");
            };
        }
        if (connection == QpType.UC && readOrAtomic) {
            throw new ArgParser.UsageException("option -c/--connection UC: UC has no RDMA READ or atomics; run "
                    + "write_bw/write_lat/send_bw/send_lat, or -c RC");
        }
        if (connection == QpType.UD && !send) {
            throw new ArgParser.UsageException("option -c/--connection UD: UD carries SENDs only; run send_bw or "
                    + "send_lat, or -c RC");
        }
        if (connection != QpType.RC && p.has("rdma_cm")) {
            throw new ArgParser.UsageException("option -c/--connection " + connection + " with -R/--rdma_cm: jrdma's"
                    + " rdma_cm runs over iWARP, which has RC only");
        }
        if (p.has("post_list") && num(p, "post_list", 'l', 1, 1, 1) != 1) {
            throw new ArgParser.UsageException("option -l/--post_list: only 1 is supported");
        }
        boolean cmpSwap = false;
        if (p.has("atomic_type")) {
            if (!atomic) {
                throw new ArgParser.UsageException("option -A/--atomic_type: You are not running the atomic_lat/bw"
                        + " test!");
            }
            switch (p.value("atomic_type")) {
                case "CMP_AND_SWAP" -> cmpSwap = true;
                case "FETCH_AND_ADD" -> cmpSwap = false;
                default -> throw new ArgParser.UsageException("option -A/--atomic_type: Invalid Atomic type! please"
                        + " choose from {CMP_AND_SWAP,FETCH_AND_ADD}");
            }
        }
        boolean all = p.has("all");
        if (all && p.has("size")) {
            throw new ArgParser.UsageException("-a runs every size: do not combine it with -s");
        }
        long size = atomic ? 8 : bw ? 65536 : 2;
        if (p.has("size")) {
            size = size(p.value("size"));
        }
        if (atomic && (size != 8 || all)) {
            throw new ArgParser.UsageException("Message size cannot be changed for Atomic tests");
        }
        if (p.has("qp") && !bw) {
            throw new ArgParser.UsageException("option -q/--qp: Multiple QPs only available on bw tests");
        }
        int numQps = (int) num(p, "qp", 'q', 1, 16384, 1);
        boolean duration = p.has("duration");
        int durationSec = 0;
        int marginSec = 0;
        if (duration) {
            if (p.has("iters")) {
                throw new ArgParser.UsageException("-D (duration) and -n (iterations) are exclusive: -D runs for SEC"
                        + " seconds and counts the iterations of its measured part");
            }
            if (all) {
                throw new ArgParser.UsageException("option -D/--duration: Duration mode currently doesn't support"
                        + " running on all sizes.");
            }
            durationSec = (int) num(p, "duration", 'D', 1, 86_400, 0);
        }
        if (p.has("margin")) {
            marginSec = (int) num(p, "margin", 'f', 0, 86_400, 0);
        } else if (duration) {
            marginSec = durationSec / 4; // perftest: the default margin is a quarter of the duration
        }
        // perftest checks this with its default duration (5 s) when -D is not given
        if (!((duration ? durationSec : DEFAULT_DURATION) > 2L * marginSec)) {
            throw new ArgParser.UsageException("option -f/--margin: please check that DURATION > 2*MARGIN (-D "
                    + (duration ? durationSec : DEFAULT_DURATION) + ", --margin " + marginSec + ")");
        }
        long iters = num(p, "iters", 'n', 5, 100_000_000, bw && test == PerfTest.WRITE_BW ? 5000 : 1000);
        int tx = (int) num(p, "tx-depth", 't', 1, 15000, bw ? 128 : 1);
        if (tx > iters && !duration) { // perftest: iterations bound the depths in its iterations mode only
            tx = (int) iters;
        }
        if (p.has("inline_size") && readOrAtomic) {
            throw new ArgParser.UsageException("option -I/--inline_size: Inline feature not available on READ/Atomic"
                    + " verbs");
        }
        int inline = (int) num(p, "inline_size", 'I', 0, 912, -1);
        if (p.has("outs") && !readOrAtomic) {
            throw new ArgParser.UsageException("option -o/--outs: Setting Outstanding reads only available on READ"
                    + " verb");
        }
        int outs = (int) num(p, "outs", 'o', Integer.MIN_VALUE, Integer.MAX_VALUE, 0);
        int rx = (int) num(p, "rx-depth", 'r', 1, 16384, send ? 512 : 1);
        if (!send && rx > 1) {
            throw new ArgParser.UsageException("option -r/--rx-depth: On RDMA verbs rx depth can be only 1");
        }
        if (send && rx > iters && !duration) {
            rx = (int) iters;
        }
        if (send && rx % 2 == 1 && !all) {
            rx++; // perftest: "WA for a bug when rx_depth is odd in SEND"
        }
        boolean events = p.has("events");
        if (events && test.opcode == io.jrdma.verbs.WrOpcode.RDMA_WRITE) {
            throw new ArgParser.UsageException("option -e/--events: Events feature not available on WRITE verb (as"
                    + " perftest: write_lat and write_bw wait on memory or poll; run send_*, read_* or atomic_* with -e)");
        }
        if (events && duration) {
            throw new ArgParser.UsageException("option -e/--events: Duration mode doesn't work with events (as"
                    + " perftest): give -n instead of -D");
        }
        boolean cqModAsked = p.has("cq-mod");
        int cqMod = (int) num(p, "cq-mod", 'Q', 1, 1024, DEF_CQ_MOD);
        // perftest keeps its CQ moderation with -e ("a lot of processes with use_event leads to bugs")
        if (size > MSG_SIZE_CQ_MOD_LIMIT && !all && !cqModAsked && !events) {
            cqMod = 1;
        }
        if (cqMod > tx) {
            cqMod = tx;
        }
        int mtu = 0;
        if (p.has("mtu")) {
            mtu = (int) num(p, "mtu", 'm', 0, Integer.MAX_VALUE, 0);
            if (mtu != 256 && mtu != 512 && mtu != 1024 && mtu != 2048 && mtu != 4096) {
                throw new ArgParser.UsageException("option -m/--mtu: Invalid MTU - " + mtu + " (choose from"
                        + " {256,512,1024,2048,4096})");
            }
        }
        int port = (int) num(p, "port", 'p', 0, 65535, loopback ? 0 : PerfCommand.DEFAULT_PORT);
        if (port == 0 && host != null) {
            throw new ArgParser.UsageException("option -p/--port: a client needs the server's port, not 0");
        }
        int ibPort = (int) num(p, "ib-port", 'i', 1, 255, 1); // the device's own range is checked once it is open
        if (p.has("ib-port") && rdmaCm) {
            throw new ArgParser.UsageException("option -i/--ib-port with -R/--rdma_cm: rdma_cm puts the QPs on the"
                    + " port the address resolves to (its rdma_cm_id's); drop -i, or choose the port by the address"
                    + " (see 'jrdma devices --resolve ADDRESS')");
        }
        String device = p.value("ib-dev");
        if (device != null && device.isBlank()) {
            throw new ArgParser.UsageException("option -d/--ib-dev: empty device name");
        }
        int gid = (int) num(p, "gid-index", 'x', 0, 64, -1);
        int qpTimeout = (int) num(p, "qp-timeout", 'u', 0, 31, 14);
        int sl = (int) num(p, "sl", 'S', 0, 15, 0);
        if (p.has("noPeak") && !bw) {
            throw new ArgParser.UsageException("option -N/--noPeak: NoPeak only valid for BW tests");
        }
        int timeout = (int) num(p, "timeout", (char) 0, 1, 86_400, PerfCommand.DEFAULT_TIMEOUT);
        return new PerftestOptions(test, cmpSwap, size, all, iters, tx, cqMod, cqModAsked, rx, inline, outs, numQps,
                mtu, port, device, ibPort, gid, p.has("ipv6"), qpTimeout, sl, p.has("noPeak"), p.has("report_gbits"),
                p.has("disable_pcie_relaxed") || test == PerfTest.WRITE_LAT, host, loopback, timeout,
                p.has("timeout") || loopback, rdmaCm, connection, p.has("use-srq"), p.has("perform_warm_up"), durationSec, marginSec, events,
                p.has("pause"));
    }

    /** perftest's {@code -s}: a C integer with an optional K or M suffix. */
    static long size(String v) throws ArgParser.UsageException {
        String s = v.trim();
        long factor = 1;
        if (s.endsWith("K")) {
            factor = 1024;
            s = s.substring(0, s.length() - 1);
        } else if (s.endsWith("M")) {
            factor = 1024 * 1024;
            s = s.substring(0, s.length() - 1);
        }
        long n;
        try {
            n = PingpongCommand.parseC(s) * factor;
        } catch (NumberFormatException e) {
            throw new ArgParser.UsageException("option -s/--size: '" + v + "' is not a number");
        }
        if (n < 1 || n > MAX_MSG) {
            throw new ArgParser.UsageException("option -s/--size: Message Size should be between 1 and " + MAX_MSG
                    + " (not " + n + ")");
        }
        return n;
    }

    private static long num(ArgParser.Parsed p, String name, char shortName, long min, long max, long dflt)
            throws ArgParser.UsageException {
        if (!p.has(name)) {
            return dflt;
        }
        String v = p.value(name).trim();
        String opt = (shortName != 0 ? "-" + shortName + "/" : "") + "--" + name;
        long n;
        try {
            n = PingpongCommand.parseC(v);
        } catch (NumberFormatException e) {
            throw new ArgParser.UsageException("option " + opt + ": '" + v + "' is not a number");
        }
        if (n < min || n > max) {
            throw new ArgParser.UsageException("option " + opt + ": " + n + " is outside " + min + ".." + max);
        }
        return n;
    }
}

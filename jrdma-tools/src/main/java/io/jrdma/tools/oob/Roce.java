package io.jrdma.tools.oob;

import io.jrdma.verbs.DeviceContext;
import io.jrdma.verbs.DeviceOptions;
import io.jrdma.verbs.Gid;
import io.jrdma.verbs.ThreadingMode;

import java.net.InetAddress;
import java.util.List;
import java.util.Map;

/**
 * What the Linux tools' exchanges carry for RoCE, mapped onto jrdma: GIDs (and how perftest picks
 * one), the LID field, and the engine pump that runs while a side-channel wait blocks.
 *
 * <p><b>The LID field carries jrdma's UDP port.</b> On RoCE the LID is 0 (rxe reports 0 and the
 * tools send it but do not use it). A jrdma context whose UDP port is not 4791 (4791 was taken on
 * this host, e.g. by a second jrdma process) advertises its port in the LID field instead, and a
 * non-zero LID from the peer is taken as the peer's UDP port; a peer sending LID 0 is on 4791.
 * Linux peers always send 0 and always listen on 4791, so this only matters between jrdma peers
 * on one host.
 */
public final class Roce {
    private Roce() {
    }

    /** @return the LID to advertise: 0 on the standard port, else the context's UDP port */
    public static int lid(DeviceContext ctx) {
        int port = ctx.queryPort().udpPort();
        return port == DeviceOptions.ROCE_V2_PORT ? 0 : port;
    }

    /**
     * @return a warning for stderr when the context could not get UDP 4791 (a Linux peer sends
     *         there and nowhere else), or null
     */
    public static String portWarning(DeviceContext ctx) {
        int port = ctx.queryPort().udpPort();
        if (port == DeviceOptions.ROCE_V2_PORT) {
            return null;
        }
        return "UDP port 4791 is taken on this host (by another jrdma process or a kernel RoCE device), so "
                + ctx.device().name() + " listens on UDP " + port + " and advertises it in the LID field: only a jrdma"
                + " peer can reach this side";
    }

    /** @return the peer's UDP port for the LID it advertised */
    public static int udpPort(int lid) {
        return lid == 0 ? DeviceOptions.ROCE_V2_PORT : lid;
    }

    /** perftest's {@code ipv6_addr_v4mapped}: {@code ::ffff:a.b.c.d}, or the IPv4-encoded multicast {@code ff0e::ffff:a.b.c.d}. */
    public static boolean isIpv4Mapped(byte[] g) {
        boolean low = g[8] == 0 && g[9] == 0 && g[10] == (byte) 0xff && g[11] == (byte) 0xff;
        if (!low) {
            return false;
        }
        boolean zeroHigh = true;
        for (int i = 0; i < 8; i++) {
            zeroHigh &= g[i] == 0;
        }
        boolean mcast = g[0] == (byte) 0xff && g[1] == 0x0e && g[2] == 0 && g[3] == 0 && g[4] == 0 && g[5] == 0
                && g[6] == 0 && g[7] == 0;
        return zeroHigh || mcast;
    }

    /** @return true for the all-zero GID (an empty table slot, or a peer that sent none) */
    public static boolean isZero(byte[] g) {
        for (byte b : g) {
            if (b != 0) {
                return false;
            }
        }
        return true;
    }

    /**
     * perftest's {@code get_best_gid_index} without {@code -x}: scanning the table from index 0,
     * an IPv4-mapped GID replaces a non-IPv4 one (the reverse with {@code --ipv6}); jrdma's GIDs
     * are all RoCE v2, so the RoCE version never decides.
     */
    public static int bestGidIndex(List<Gid> table, boolean ipv6) {
        int best = 0;
        for (int i = 1; i < table.size(); i++) {
            boolean v4 = isIpv4Mapped(table.get(best).raw());
            boolean rivalV4 = isIpv4Mapped(table.get(i).raw());
            if (rivalV4 && !v4 && !ipv6) {
                best = i;
            } else if (!rivalV4 && v4 && ipv6) {
                best = i;
            }
        }
        return best;
    }

    /** @return the index of the GID of {@code address} in the table, or -1 */
    public static int gidIndexOf(List<Gid> table, InetAddress address) {
        return table.indexOf(Gid.of(address));
    }

    /**
     * @return the index of the first GID of the same IP family as {@code peer} (IPv4-mapped or
     *         not), preferring {@code preferred} when it qualifies; -1 when none does
     */
    public static int sameFamily(List<Gid> table, byte[] peer, int preferred) {
        boolean v4 = isIpv4Mapped(peer);
        if (preferred >= 0 && preferred < table.size() && isIpv4Mapped(table.get(preferred).raw()) == v4
                && !isZero(table.get(preferred).raw())) {
            return preferred;
        }
        for (int i = 0; i < table.size(); i++) {
            byte[] g = table.get(i).raw();
            if (!isZero(g) && isIpv4Mapped(g) == v4) {
                return i;
            }
        }
        return -1;
    }

    /**
     * The pump for side-channel waits: on an INVOKER context it runs the engine (so ACKs and
     * retransmissions go on while this thread waits for the peer), every 200 µs where the engine must run for a
     * peer's requests to land (soft-RoCE, soft-iWARP: {@link DeviceContext#remoteWritesNeedProgress}), else at each
     * wake-up of the wait's blocking select (shared memory, whose peers' one-sided requests need no engine here and
     * whose SENDs wait in its rings for the next turn: an idle waiting server no longer spends a tenth of a core; a
     * wait whose peer waits in turn for this side to place one of its SENDs would take up to the select's timeout,
     * 100–500 ms, and no tool waits so today: each posts its receives before the exchange that lets the peer send,
     * and polls for them itself); on a DEDICATED one the engine runs by itself and the pump reports packets moving
     * (checked twice a second), which counts as progress for the wait's deadline.
     */
    public static SideChannel.Pump pump(DeviceContext ctx) {
        if (ctx.options().threadingMode() == ThreadingMode.INVOKER) {
            boolean spin = ctx.remoteWritesNeedProgress();
            return new SideChannel.Pump() {
                @Override
                public int turn() {
                    return ctx.progress();
                }

                @Override
                public boolean spins() {
                    return spin;
                }
            };
        }
        return new SideChannel.Pump() {
            private long next;
            private long packets = -1;

            @Override
            public int turn() {
                long now = System.nanoTime();
                if (now - next < 0) {
                    return 0;
                }
                next = now + 500_000_000L;
                long p = packets(ctx);
                boolean moved = packets >= 0 && p != packets;
                packets = p;
                return moved ? 1 : 0;
            }

            @Override
            public boolean spins() {
                return false;
            }
        };
    }

    /**
     * {@return the packets the context sent and received so far (rxe's {@code sent_pkts + rcvd_pkts}), 0 where it
     * counts none}: two counters read by name, not a snapshot of all ({@link DeviceContext#counter}); on rdma-core
     * the snapshot is a read of every file of sysfs' {@code hw_counters}, which in an emulated guest took a passive
     * server's one CPU from the kernel's RDMA work twice a second.
     */
    public static long packets(DeviceContext ctx) {
        return Math.max(0, ctx.counter("rcvd_pkts")) + Math.max(0, ctx.counter("sent_pkts"));
    }

    /** The least time {@link #linger} drives the engine: well past the responder's 50 µs ACK coalescing. */
    static final long LINGER_MIN_NANOS = 1_000_000L;

    /**
     * Drives an INVOKER context's engine after a test's last completion: the peer's last message
     * still needs its ACK, and the responder may hold an unrequested one back for up to its
     * coalescing delay, while {@code progress()} reports no work, so at least
     * {@link #LINGER_MIN_NANOS}, then until {@code idleLimit} idle turns in a row, at most
     * {@code maxNanos}.
     */
    public static void linger(DeviceContext ctx, long maxNanos, int idleLimit) {
        long start = System.nanoTime();
        int idle = 0;
        while (true) {
            long t = System.nanoTime() - start;
            if (t >= maxNanos || (idle >= idleLimit && t >= LINGER_MIN_NANOS)) {
                return;
            }
            idle = ctx.progress() > 0 ? 0 : idle + 1;
        }
    }

    /**
     * With {@code -Djrdma.perf.counters=true}: prints the context's counters (packets, ACKs, system
     * calls) as one line on stderr when a run ends, for profiles that do not depend on the clock.
     */
    public static void printCounters(DeviceContext ctx, String who) {
        if (!Boolean.getBoolean("jrdma.perf.counters")) {
            return;
        }
        StringBuilder sb = new StringBuilder("COUNTERS ").append(who);
        for (Map.Entry<String, Long> e : ctx.counters().entrySet()) {
            if (e.getValue() != 0) {
                sb.append(' ').append(e.getKey()).append('=').append(e.getValue());
            }
        }
        System.err.println(sb);
    }

    /** @return this process's CPU time (all threads, user + system) in ns, or -1 */
    public static long cpuNanos() {
        return ProcessHandle.current().info().totalCpuDuration().map(java.time.Duration::toNanos).orElse(-1L);
    }

    /**
     * With {@code -Djrdma.perf.cpu=true}: prints {@code CPU perf side=<side> cores=<CPU s per wall s>}
     * on stderr for a measured run (bench/compare.sh turns it into CPU per GB and per message).
     */
    public static void printCpu(String side, long cpu0, long wall0, long wall1) {
        long cpu1 = cpuNanos();
        if (!Boolean.getBoolean("jrdma.perf.cpu") || cpu0 < 0 || cpu1 < 0 || wall1 - wall0 <= 0) {
            return;
        }
        System.err.println(String.format(java.util.Locale.ROOT, "CPU perf side=%s cores=%.4f cpu_ms=%.1f wall_ms=%.1f",
                side, (cpu1 - cpu0) / (double) (wall1 - wall0), (cpu1 - cpu0) / 1e6, (wall1 - wall0) / 1e6));
    }
}

package io.jrdma.bench;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * Turns the raw figures of a bench/compare.sh run into its Markdown tables.
 *
 * <pre>Summarize RAW [JMH_CSV] [--shm]</pre>
 * RAW holds one {@code key value} per line, a key once per round. A table cell is the median over
 * the rounds with the min–max; the ratio is jrdma's median over the baseline's median. A baseline
 * key may end in {@code *2} (twice the value of each round: a round trip from a one-way figure).
 * With {@code --shm} only the shared-memory tables are printed. A key {@code shm.absent} (the run
 * found no shared-memory device) marks that provider's missing figures "provider absent".
 */
public final class Summarize {
    private Summarize() {
    }

    /** One row: a jrdma figure, what it is compared with, and the target on jrdma / baseline. */
    private record Row(String label, String jrdma, String baseline, String baselineLabel, String unit, String op,
                       double target) {
    }

    /**
     * A table: its title, what its first figure column holds (jrdma's figure, or another baseline's),
     * and whether it belongs to the shared-memory part (the tables {@code --shm} prints).
     */
    private record Section(String title, String subject, boolean shm) {
    }

    private static final List<Object> SPEC = new ArrayList<>();

    private static void section(String title) {
        SPEC.add(new Section(title, "jrdma", false));
    }

    private static void shmSection(String title, String subject) {
        SPEC.add(new Section(title, subject, true));
    }

    private static void row(String label, String j, String b, String bl, String unit, String op, double target) {
        SPEC.add(new Row(label, j, b, bl, unit, op, target));
    }

    private static void row(String label, String j, String b, String bl, String unit) {
        SPEC.add(new Row(label, j, b, bl, unit, null, 0));
    }

    static {
        section("Latency (µs; WRITE and SEND one-way = half the round trip, READ and atomics the whole operation, as perftest)");
        row("WRITE 8 B", "jrdma.write_lat.8", "udp_pingpong.8", "raw UDP ping-pong 8 B", "µs", "<=", 1.2);
        row("WRITE 8 B p99", "jrdma.write_lat.8.p99", "udp_pingpong.8.p99", "raw UDP ping-pong 8 B, p99", "µs", "<=", 1.5);
        row("WRITE 4 KiB", "jrdma.write_lat.4096", "udp_pingpong.4096", "raw UDP ping-pong 4 KiB", "µs");
        row("WRITE 64 KiB", "jrdma.write_lat.65536", "udp_pingpong.65536", "raw UDP ping-pong 64 KiB (16 datagrams)", "µs");
        row("READ 8 B", "jrdma.read_lat.8", "jrdma.write_lat.8*2", "jrdma WRITE 8 B round trip", "µs", "<=", 1.3);
        row("READ 4 KiB", "jrdma.read_lat.4096", "jrdma.write_lat.4096*2", "jrdma WRITE 4 KiB round trip", "µs", "<=", 1.3);
        row("READ 64 KiB", "jrdma.read_lat.65536", "jrdma.write_lat.65536*2", "jrdma WRITE 64 KiB round trip", "µs", "<=", 1.3);
        row("READ 8 B (as printed)", "jrdma.read_lat.8", "jrdma.write_lat.8", "jrdma WRITE 8 B one-way (perftest figures as printed)", "µs", "<=", 1.3);
        row("READ 4 KiB (as printed)", "jrdma.read_lat.4096", "jrdma.write_lat.4096", "jrdma WRITE 4 KiB one-way (as printed)", "µs", "<=", 1.3);
        row("READ 64 KiB (as printed)", "jrdma.read_lat.65536", "jrdma.write_lat.65536", "jrdma WRITE 64 KiB one-way (as printed)", "µs", "<=", 1.3);
        row("SEND 8 B", "jrdma.send_lat.8", "jrdma.write_lat.8", "jrdma WRITE 8 B", "µs", "<=", 1.1);
        row("SEND 4 KiB", "jrdma.send_lat.4096", "jrdma.write_lat.4096", "jrdma WRITE 4 KiB", "µs", "<=", 1.1);
        row("SEND 64 KiB", "jrdma.send_lat.65536", "jrdma.write_lat.65536", "jrdma WRITE 64 KiB", "µs", "<=", 1.1);
        row("atomic FETCH_ADD 8 B", "jrdma.atomic_lat.8", "udp_pingpong.8*2", "raw UDP round trip 8 B", "µs");
        row("READ 8 B (vs UDP)", "jrdma.read_lat.8", "udp_pingpong.8*2", "raw UDP round trip 8 B", "µs");
        row("WRITE 8 B (vs TCP)", "jrdma.write_lat.8", "tcp_pingpong.8", "raw TCP ping-pong 8 B", "µs");
        row("WRITE 4 KiB (vs TCP)", "jrdma.write_lat.4096", "tcp_pingpong.4096", "raw TCP ping-pong 4 KiB", "µs");
        row("WRITE 64 KiB (vs TCP)", "jrdma.write_lat.65536", "tcp_pingpong.65536", "raw TCP ping-pong 64 KiB", "µs");

        section("Bandwidth (GB/s = 10^9 B/s, one QP, TX depth 128, MTU 4096)");
        row("WRITE 4 KiB", "jrdma.write_bw.4096", "udp_blast.4112", "raw UDP blast, 4112 B datagrams", "GB/s", ">=", 0.8);
        row("WRITE 64 KiB", "jrdma.write_bw.65536", "udp_blast.4112", "raw UDP blast, 4112 B datagrams", "GB/s", ">=", 1.0);
        row("WRITE 1 MiB", "jrdma.write_bw.1048576", "udp_blast.4112", "raw UDP blast, 4112 B datagrams", "GB/s", ">=", 1.0);
        row("WRITE 64 KiB (vs UCX)", "jrdma.write_bw.65536", "ucx.tcp.put_bw.65536", "ucx_perftest ucp_put_bw, UCX_TLS=tcp", "GB/s", ">=", 1.5);
        row("WRITE 1 MiB (vs UCX)", "jrdma.write_bw.1048576", "ucx.tcp.put_bw.1048576", "ucx_perftest ucp_put_bw, UCX_TLS=tcp", "GB/s", ">=", 1.5);
        row("WRITE 64 KiB (vs best UDP)", "jrdma.write_bw.65536", "udp_blast_gso.4112", "raw UDP blast, 4112 B datagrams, 15 per UDP GSO send (the kernel's limit)", "GB/s");
        row("WRITE 1 MiB (vs best UDP)", "jrdma.write_bw.1048576", "udp_blast_gso.4112", "raw UDP blast, 4112 B datagrams, 15 per UDP GSO send", "GB/s");
        row("WRITE 1 MiB (vs best TCP)", "jrdma.write_bw.1048576", "tcp_stream.1048576", "raw TCP streaming, 1 MiB writes", "GB/s");
        row("READ 4 KiB", "jrdma.read_bw.4096", "udp_blast.4112", "raw UDP blast, 4112 B datagrams", "GB/s");
        row("READ 64 KiB", "jrdma.read_bw.65536", "udp_blast.4112", "raw UDP blast, 4112 B datagrams", "GB/s");
        row("READ 1 MiB", "jrdma.read_bw.1048576", "udp_blast.4112", "raw UDP blast, 4112 B datagrams", "GB/s");
        row("SEND 4 KiB", "jrdma.send_bw.4096", "jrdma.write_bw.4096", "jrdma WRITE 4 KiB", "GB/s", ">=", 1 / 1.1);
        row("SEND 64 KiB", "jrdma.send_bw.65536", "jrdma.write_bw.65536", "jrdma WRITE 64 KiB", "GB/s", ">=", 1 / 1.1);
        row("SEND 1 MiB", "jrdma.send_bw.1048576", "jrdma.write_bw.1048576", "jrdma WRITE 1 MiB", "GB/s", ">=", 1 / 1.1);
        row("WRITE 64 KiB (vs unconnected)", "jrdma.write_bw.65536", "udp_blast_unconnected.4112", "raw UDP blast, 4112 B, unconnected send (as the engine sends)", "GB/s");
        row("WRITE 64 KiB (vs TCP)", "jrdma.write_bw.65536", "tcp_stream.65536", "raw TCP streaming, 64 KiB writes", "GB/s");
        row("WRITE 64 KiB (vs copy)", "jrdma.write_bw.65536", "memcopy.65536", "MemorySegment.copy 64 KiB, 1 thread", "GB/s");
        row("WRITE 1 MiB (vs copy)", "jrdma.write_bw.1048576", "memcopy.1048576", "MemorySegment.copy 1 MiB, 1 thread", "GB/s");

        section("Message rate and scale (RDMA WRITE; Mpps = 10^6 messages/s)");
        row("8 B, 1 QP (perf write_bw)", "jrdma.write_bw.8.mpps", "udp_blast.40.mpps", "raw UDP blast, 40 B datagrams", "Mpps", ">=", 1.0);
        row("8 B, 1 QP (vs best UDP)", "jrdma.write_bw.8.mpps", "udp_blast_gso.40.mpps", "raw UDP blast, 40 B datagrams, 64 per UDP GSO send", "Mpps");
        row("8 B, 1 QP (QpScale)", "qpscale.8.q1.mpps", "udp_blast.40.mpps", "raw UDP blast, 40 B datagrams", "Mpps");
        row("8 B, 16 QPs (QpScale)", "qpscale.8.q16.mpps", "qpscale.8.q1.mpps", "jrdma 8 B, 1 QP (QpScale)", "Mpps");
        row("64 KiB, 1,000 QPs (QpScale)", "qpscale.65536.q1000.gbps", "qpscale.65536.q1.gbps", "jrdma 64 KiB, 1 QP (QpScale)", "GB/s", ">=", 0.8);

        section("CPU (user + system of both processes over the measured interval; lower is better; ratio = jrdma / baseline)");
        row("WRITE 4 KiB, CPU s per GB", "jrdma.write_bw.4096.cpu", "udp_blast.4112.cpu", "raw UDP blast, 4112 B datagrams", "s/GB");
        row("WRITE 64 KiB, CPU s per GB", "jrdma.write_bw.65536.cpu", "udp_blast.4112.cpu", "raw UDP blast, 4112 B datagrams", "s/GB");
        row("WRITE 1 MiB, CPU s per GB", "jrdma.write_bw.1048576.cpu", "udp_blast.4112.cpu", "raw UDP blast, 4112 B datagrams", "s/GB");
        row("WRITE 64 KiB, CPU s per GB (vs best UDP)", "jrdma.write_bw.65536.cpu", "udp_blast_gso.4112.cpu", "raw UDP blast, 15 datagrams per GSO send", "s/GB");
        row("WRITE 1 MiB, CPU s per GB (vs TCP)", "jrdma.write_bw.1048576.cpu", "tcp_stream.1048576.cpu", "raw TCP streaming, 1 MiB writes", "s/GB");
        row("WRITE 8 B, CPU µs per message", "jrdma.write_bw.8.mpps.cpu", "udp_blast.40.mpps.cpu", "raw UDP blast, 40 B datagrams", "µs/msg");
        row("WRITE 8 B, CPU µs per message (vs best UDP)", "jrdma.write_bw.8.mpps.cpu", "udp_blast_gso.40.mpps.cpu", "raw UDP blast, 40 B, 64 per GSO send", "µs/msg");

        section("iWARP (jrdma over soft-iWARP `-d iwarp_lo`: RDMAP/DDP/MPA over TCP, no MPA CRC between jrdma peers; targets from issues 5 and 11)");
        row("WRITE 8 B lat", "iwarp.write_lat.8", "tcp_pingpong.8", "raw TCP ping-pong 8 B", "µs", "<=", 1.2);
        row("WRITE 8 B lat p99", "iwarp.write_lat.8.p99", "tcp_pingpong.8.p99", "raw TCP ping-pong 8 B, p99", "µs", "<=", 1.5);
        row("WRITE 4 KiB lat", "iwarp.write_lat.4096", "tcp_pingpong.4096", "raw TCP ping-pong 4 KiB", "µs");
        row("WRITE 64 KiB lat", "iwarp.write_lat.65536", "tcp_pingpong.65536", "raw TCP ping-pong 64 KiB", "µs");
        row("WRITE 8 B lat (vs UCX)", "iwarp.write_lat.8", "ucx.tcp.put_lat.8", "ucx_perftest ucp_put_lat 8 B, tcp", "µs");
        row("WRITE 8 B lat (vs RoCE)", "iwarp.write_lat.8", "jrdma.write_lat.8", "jrdma over soft-RoCE, WRITE 8 B", "µs");
        row("WRITE 64 KiB bw", "iwarp.write_bw.65536", "tcp_stream.65536", "raw TCP streaming, 64 KiB writes", "GB/s", ">=", 0.9);
        row("WRITE 1 MiB bw", "iwarp.write_bw.1048576", "tcp_stream.1048576", "raw TCP streaming, 1 MiB writes", "GB/s", ">=", 0.9);
        row("WRITE 64 KiB bw (vs UCX)", "iwarp.write_bw.65536", "ucx.tcp.put_bw.65536", "ucx_perftest ucp_put_bw, UCX_TLS=tcp", "GB/s");
        row("WRITE 1 MiB bw (vs UCX)", "iwarp.write_bw.1048576", "ucx.tcp.put_bw.1048576", "ucx_perftest ucp_put_bw, UCX_TLS=tcp", "GB/s");
        row("WRITE 64 KiB bw (vs RoCE)", "iwarp.write_bw.65536", "jrdma.write_bw.65536", "jrdma over soft-RoCE, WRITE 64 KiB", "GB/s");

        section("Peers (ratio = jrdma / peer)");
        row("WRITE 8 B lat", "jrdma.write_lat.8", "ucx.tcp.put_lat.8", "ucx_perftest ucp_put_lat 8 B, tcp", "µs");
        row("WRITE 8 B lat", "jrdma.write_lat.8", "ucx.posix.put_lat.8", "ucx_perftest ucp_put_lat 8 B, posix (shm)", "µs");
        row("WRITE 8 B lat", "jrdma.write_lat.8", "aeron.udp.pingpong.8", "Aeron UDP ping-pong 8 B", "µs");
        row("WRITE 4 KiB lat", "jrdma.write_lat.4096", "aeron.udp.pingpong.4096", "Aeron UDP ping-pong 4 KiB", "µs");
        row("WRITE 8 B lat", "jrdma.write_lat.8", "aeron.ipc.pingpong.8", "Aeron IPC ping-pong 8 B", "µs");
        row("WRITE 4 KiB lat", "jrdma.write_lat.4096", "aeron.ipc.pingpong.4096", "Aeron IPC ping-pong 4 KiB", "µs");
        row("WRITE 64 KiB bw", "jrdma.write_bw.65536", "ucx.posix.put_bw.65536", "ucx_perftest ucp_put_bw, posix (shm)", "GB/s");
        row("WRITE 1 MiB bw", "jrdma.write_bw.1048576", "ucx.posix.put_bw.1048576", "ucx_perftest ucp_put_bw, posix (shm)", "GB/s");
        row("WRITE 4 KiB bw", "jrdma.write_bw.4096", "aeron.udp.stream.4096", "Aeron UDP stream 4 KiB", "GB/s");
        row("WRITE 64 KiB bw", "jrdma.write_bw.65536", "aeron.udp.stream.65536", "Aeron UDP stream 64 KiB", "GB/s");
        row("WRITE 4 KiB bw", "jrdma.write_bw.4096", "aeron.ipc.stream.4096", "Aeron IPC stream 4 KiB", "GB/s");

        shmSection("Shared memory (jrdma `-d shm0` between two processes; targets from issue 13; µs one-way as perftest, atomics the whole operation)", "jrdma");
        row("WRITE 8 B lat", "shm.write_lat.8", "ucx.posix.put_lat.8", "ucx_perftest ucp_put_lat 8 B, posix", "µs", "<=", 1.0);
        row("WRITE 8 B lat (vs floor)", "shm.write_lat.8", "mapped.8", "mapped-file flag ping-pong 8 B, two JVMs, its faster wait", "µs", "<=", 1.5);
        row("WRITE 64 KiB bw", "shm.write_bw.65536", "memcopy_hot.65536", "MemorySegment.copy 64 KiB, 1 thread, one buffer each way", "GB/s", ">=", 0.9);
        row("WRITE 1 MiB bw", "shm.write_bw.1048576", "memcopy_hot.1048576", "MemorySegment.copy 1 MiB, 1 thread, one buffer each way", "GB/s", ">=", 0.9);
        row("WRITE 64 KiB bw (vs UCX)", "shm.write_bw.65536", "ucx.posix.put_bw.65536", "ucx_perftest ucp_put_bw 64 KiB, posix", "GB/s", ">=", 0.9);
        row("WRITE 1 MiB bw (vs UCX)", "shm.write_bw.1048576", "ucx.posix.put_bw.1048576", "ucx_perftest ucp_put_bw 1 MiB, posix", "GB/s", ">=", 0.9);
        row("READ 64 KiB bw", "shm.read_bw.65536", "memcopy_hot.65536", "MemorySegment.copy 64 KiB, 1 thread, one buffer each way", "GB/s", ">=", 0.9);
        row("READ 1 MiB bw", "shm.read_bw.1048576", "memcopy_hot.1048576", "MemorySegment.copy 1 MiB, 1 thread, one buffer each way", "GB/s", ">=", 0.9);
        row("READ 64 KiB bw (vs UCX)", "shm.read_bw.65536", "ucx.posix.put_bw.65536", "ucx_perftest ucp_put_bw 64 KiB, posix", "GB/s", ">=", 0.9);
        row("READ 1 MiB bw (vs UCX)", "shm.read_bw.1048576", "ucx.posix.put_bw.1048576", "ucx_perftest ucp_put_bw 1 MiB, posix", "GB/s", ">=", 0.9);
        row("WRITE 64 KiB bw (vs copy over 4 MiB)", "shm.write_bw.65536", "memcopy.65536", "MemorySegment.copy 64 KiB through 4 MiB (perf --jrdma-cm's working set)", "GB/s");
        row("WRITE 1 MiB bw (vs copy over 8 MiB)", "shm.write_bw.1048576", "memcopy.1048576", "MemorySegment.copy 1 MiB through 8 MiB (perf --jrdma-cm's working set)", "GB/s");
        row("SEND 8 B lat", "shm.send_lat.8", "aeron.ipc.pingpong.8", "Aeron IPC ping-pong 8 B, two processes", "µs", "<=", 1.0);
        row("SEND 8 B lat (vs the verbs steps alone)", "shm.send_lat.8", "shape.verbs.8", "`SendShape shape=verbs`: shm0's ring, the verbs' steps in straight-line code, no provider", "µs");
        row("SEND 8 B lat (vs UCX's two-sided)", "shm.send_lat.8", "ucx.posix.tag_lat.8", "ucx_perftest tag_lat 8 B, posix (a posted receive matched by tag)", "µs");
        row("FETCH_ADD 8 B lat", "shm.atomic_lat.8", "shm.write_lat.8", "jrdma shm0 WRITE 8 B (one-way, as printed)", "µs", "<=", 2.0);
        row("WRITE 8 B lat (vs soft-RoCE)", "shm.write_lat.8", "jrdma.write_lat.8", "jrdma over soft-RoCE, WRITE 8 B", "µs");
        row("WRITE 8 B ping-pong: unsignaled WRITE", "shmpp.unsig", "mapped.8", "mapped-file flag ping-pong 8 B", "µs");
        row("WRITE 8 B ping-pong: signaled, and its poll", "shmpp.sig", "mapped.8", "mapped-file flag ping-pong 8 B", "µs");
        row("WRITE 8 B ping-pong: and a duty cycle per wait turn", "shmpp.perf", "mapped.8", "mapped-file flag ping-pong 8 B", "µs");
        row("WRITE 8 B ping-pong: signaled, blocks alternating with the floor's", "shmpair.write", "shmpair.floor", "flag ping-pong 8 B in the same two processes, neighbouring blocks", "µs");

        shmSection("Shared memory, one process, one thread (`ShmOpCost`: CPU time per operation, post and poll, both"
                + " contexts on one thread; bandwidth next to MemorySegment.copy of the same buffers in the same round)", "jrdma");
        row("WRITE 8 B post + poll", "shmcost.write8", "shmcost.poll0", "an empty poll (one duty cycle)", "ns");
        row("WRITE 8 B post alone (unsignaled)", "shmcost.post8", "shmcost.write8", "WRITE 8 B post + poll", "ns");
        row("READ 8 B post + poll", "shmcost.read8", "shmcost.write8", "WRITE 8 B post + poll", "ns");
        row("FETCH_ADD 8 B post + poll", "shmcost.fadd8", "shmcost.write8", "WRITE 8 B post + poll", "ns");
        row("SEND 8 B + its RECV, both sides", "shmcost.send8", "shmcost.write8", "WRITE 8 B post + poll", "ns");
        row("SEND 8 B ping-pong, one side's turn", "shmcost.turn8", "aeron.turn", "Aeron IPC ping-pong 8 B, one side's turn (`AeronBench mode=turn`)", "ns");
        row("WRITE 64 KiB bw, one process", "shmcost.write.65536", "shmcost.copy.65536", "MemorySegment.copy 64 KiB, same buffers, same round", "GB/s");
        row("READ 64 KiB bw, one process", "shmcost.read.65536", "shmcost.copy.65536", "MemorySegment.copy 64 KiB, same buffers, same round", "GB/s");
        row("WRITE 1 MiB bw, one process", "shmcost.write.1048576", "shmcost.copy.1048576", "MemorySegment.copy 1 MiB, same buffers, same round", "GB/s");
        row("READ 1 MiB bw, one process", "shmcost.read.1048576", "shmcost.copy.1048576", "MemorySegment.copy 1 MiB, same buffers, same round", "GB/s");

        shmSection("Shared-memory baselines among themselves (ratio = first / second; no jrdma)", "figure");
        row("ucx_perftest ucp_put_lat 8 B, posix", "ucx.posix.put_lat.8", "mapped.8", "mapped-file flag ping-pong 8 B", "µs");
        row("Aeron IPC ping-pong 8 B", "aeron.ipc.pingpong.8", "mapped.8", "mapped-file flag ping-pong 8 B", "µs");
        row("`SendShape shape=bare` (shm0's ring alone)", "shape.bare.8", "aeron.ipc.pingpong.8", "Aeron IPC ping-pong 8 B", "µs");
        row("`SendShape shape=verbs` (and the verbs' steps)", "shape.verbs.8", "aeron.ipc.pingpong.8", "Aeron IPC ping-pong 8 B", "µs");
        row("`SendShape shape=staged` (the steps off the path where they can be)", "shape.staged.8", "aeron.ipc.pingpong.8", "Aeron IPC ping-pong 8 B", "µs");
        row("ucx_perftest tag_lat 8 B, posix", "ucx.posix.tag_lat.8", "aeron.ipc.pingpong.8", "Aeron IPC ping-pong 8 B", "µs");
        row("ucx_perftest ucp_put_bw 64 KiB, posix", "ucx.posix.put_bw.65536", "memcopy.65536", "MemorySegment.copy 64 KiB", "GB/s");
        row("ucx_perftest ucp_put_bw 1 MiB, posix", "ucx.posix.put_bw.1048576", "memcopy.1048576", "MemorySegment.copy 1 MiB", "GB/s");
        row("ucx_perftest ucp_put_bw 64 KiB, posix", "ucx.posix.put_bw.65536", "memcopy_hot.65536", "MemorySegment.copy 64 KiB, one buffer (UCX's working set)", "GB/s");
        row("ucx_perftest ucp_put_bw 1 MiB, posix", "ucx.posix.put_bw.1048576", "memcopy_hot.1048576", "MemorySegment.copy 1 MiB, one buffer (UCX's working set)", "GB/s");
        row("MemorySegment.copy 64 KiB, one buffer", "memcopy_hot.65536", "memcopy.65536", "MemorySegment.copy 64 KiB, perf's 4 MiB working set", "GB/s");
        row("MemorySegment.copy 1 MiB, one buffer", "memcopy_hot.1048576", "memcopy.1048576", "MemorySegment.copy 1 MiB, perf's 8 MiB working set", "GB/s");
    }

    public static void main(String[] argv) throws IOException {
        boolean shmOnly = false;
        List<String> files = new ArrayList<>();
        for (String a : argv) {
            if (a.equals("--shm")) {
                shmOnly = true;
            } else if (a.startsWith("--")) {
                throw new IllegalArgumentException("Summarize: unknown option " + a + " (usage: Summarize RAW [JMH_CSV] [--shm])");
            } else {
                files.add(a);
            }
        }
        if (files.isEmpty()) {
            throw new IllegalArgumentException("usage: Summarize RAW [JMH_CSV] [--shm]");
        }
        String[] args = files.toArray(String[]::new);
        Map<String, List<Double>> data = new LinkedHashMap<>();
        // the same figures per round: a round starts with its "loadavg" line (bench/compare.sh puts one first)
        Map<String, Map<Integer, Double>> rounds = new LinkedHashMap<>();
        int round = 0;
        for (String line : Files.readAllLines(Path.of(args[0]))) {
            String[] f = line.trim().split("\\s+");
            if (f.length == 2 && !f[0].startsWith("#")) {
                try {
                    double v = Double.parseDouble(f[1]);
                    if (f[0].equals("loadavg")) {
                        round++;
                    }
                    data.computeIfAbsent(f[0], k -> new ArrayList<>()).add(v);
                    rounds.computeIfAbsent(f[0], k -> new LinkedHashMap<>()).putIfAbsent(round, v);
                } catch (NumberFormatException ignored) {
                    // not a figure
                }
            }
        }
        // `bench/compare.sh` writes shm.absent when `jrdma devices` lists no shared-memory device
        boolean shmAbsent = data.containsKey("shm.absent");
        StringBuilder out = new StringBuilder();
        boolean open = false;
        boolean skip = false;
        for (Object o : SPEC) {
            if (o instanceof Section sec) {
                skip = shmOnly && !sec.shm; // bench/compare.sh --shm runs the shared-memory part only
                if (skip) {
                    continue;
                }
                out.append(open ? "\n" : "").append("**").append(sec.title).append("**\n\n");
                out.append("| metric | ").append(sec.subject)
                        .append(" median (min–max) | baseline | baseline median (min–max) | ratio | per-round ratios | target | met? |\n");
                out.append("|---|---|---|---|---|---|---|---|\n");
                open = true;
                continue;
            }
            if (skip) {
                continue;
            }
            Row r = (Row) o;
            double[] j = stats(data, r.jrdma);
            double[] b = stats(data, r.baseline);
            String ratio = "n/a";
            String met = r.op == null ? "–" : "n/a";
            boolean absent = shmAbsent && j == null && r.jrdma.startsWith("shm.");
            if (absent && r.op != null) {
                met = "skipped";
            }
            if (j != null && b != null && b[0] > 0) {
                double q = j[0] / b[0];
                ratio = String.format(Locale.ROOT, "%.2f×", q);
                if (r.op != null) {
                    met = (r.op.equals("<=") ? q <= r.target : q >= r.target) ? "yes" : "**no**";
                }
            }
            String target = r.op == null ? "–" : (r.op.equals("<=") ? "≤ " : "≥ ")
                    + String.format(Locale.ROOT, "%.2f×", r.target).replace(".00×", ".0×");
            boolean baseAbsent = shmAbsent && b == null && r.baseline.startsWith("shm.");
            out.append("| ").append(r.label).append(" | ").append(absent ? "provider absent" : cell(j, r.unit)).append(" | ")
                    .append(r.baselineLabel).append(" | ").append(baseAbsent ? "provider absent" : cell(b, r.unit))
                    .append(" | ").append(ratio).append(" | ").append(perRound(rounds, r.jrdma, r.baseline))
                    .append(" | ").append(target).append(" | ").append(met).append(" |\n");
        }
        out.append('\n');
        out.append(extras(data));
        if (args.length > 1 && Files.exists(Path.of(args[1]))) {
            out.append('\n').append(jmh(Path.of(args[1])));
        }
        System.out.print(out);
    }

    /**
     * The ratio of the two figures within each round that has both, as "median× (min–max)": on a
     * shared host a slow round slows both figures of that round, so this spread is the ratio's own,
     * where the two columns' min–max mix rounds. "n/a" when no round has both.
     */
    private static String perRound(Map<String, Map<Integer, Double>> rounds, String a, String b) {
        double ma = a.endsWith("*2") ? 2 : 1;
        double mb = b.endsWith("*2") ? 2 : 1;
        Map<Integer, Double> ra = rounds.get(a.endsWith("*2") ? a.substring(0, a.length() - 2) : a);
        Map<Integer, Double> rb = rounds.get(b.endsWith("*2") ? b.substring(0, b.length() - 2) : b);
        if (ra == null || rb == null) {
            return "n/a";
        }
        List<Double> q = new ArrayList<>();
        for (Map.Entry<Integer, Double> e : ra.entrySet()) {
            Double vb = rb.get(e.getKey());
            if (vb != null && vb > 0) {
                q.add(e.getValue() * ma / (vb * mb));
            }
        }
        if (q.isEmpty()) {
            return "n/a";
        }
        double[] v = q.stream().mapToDouble(Double::doubleValue).sorted().toArray();
        int n = v.length;
        double median = n % 2 == 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
        return String.format(Locale.ROOT, "%.2f× (%.2f–%.2f)", median, v[0], v[n - 1]);
    }

    /** @return {median, min, max, rounds} of a key (a "*2" suffix doubles each value), or null */
    private static double[] stats(Map<String, List<Double>> data, String key) {
        double mul = 1;
        if (key.endsWith("*2")) {
            key = key.substring(0, key.length() - 2);
            mul = 2;
        }
        List<Double> v = data.get(key);
        if (v == null || v.isEmpty()) {
            return null;
        }
        double[] a = new double[v.size()];
        for (int i = 0; i < a.length; i++) {
            a[i] = v.get(i) * mul;
        }
        Arrays.sort(a);
        int n = a.length;
        double median = n % 2 == 1 ? a[n / 2] : (a[n / 2 - 1] + a[n / 2]) / 2;
        return new double[] {median, a[0], a[n - 1], n};
    }

    private static String cell(double[] s, String unit) {
        if (s == null) {
            return "n/a";
        }
        return fmt(s[0]) + (unit.isEmpty() ? "" : " " + unit) + " (" + fmt(s[1]) + "–" + fmt(s[2]) + ")";
    }

    static String fmt(double v) {
        double a = Math.abs(v);
        if (a >= 100) {
            return String.format(Locale.ROOT, "%.0f", v);
        }
        if (a >= 10) {
            return String.format(Locale.ROOT, "%.1f", v);
        }
        if (a >= 1) {
            return String.format(Locale.ROOT, "%.2f", v);
        }
        return String.format(Locale.ROOT, "%.3f", v);
    }

    /** The figures that have no baseline: per-QP memory, connection setup, tails. */
    private static String extras(Map<String, List<Double>> data) {
        StringBuilder sb = new StringBuilder("**Other figures (median over rounds, min–max)**\n\n| figure | value |\n|---|---|\n");
        String[][] extra = {
            {"engine heap per connected QP, client side (1,000 QPs, 128-deep queues; QP + CM connection)", "qpmem.client.heap", "B"},
            {"engine heap per connected QP, server side", "qpmem.server.heap", "B"},
            {"direct (off-heap buffer) memory per QP, client side", "qpmem.client.direct", "B"},
            {"connection setup per QP (1,000 sequential connects)", "qpscale.connect_ms_per_qp", "ms"},
            {"jrdma WRITE 8 B one-way p99", "jrdma.write_lat.8.p99", "µs"},
            {"raw UDP ping-pong 8 B one-way p99", "udp_pingpong.8.p99", "µs"},
            {"jrdma over iWARP WRITE 8 B one-way p99", "iwarp.write_lat.8.p99", "µs"},
            {"raw TCP ping-pong 8 B one-way p99", "tcp_pingpong.8.p99", "µs"},
            {"jrdma WRITE 64 KiB bw with QpScale (1 QP)", "qpscale.65536.q1.gbps", "GB/s"},
            {"raw UDP blast: sender rate, 4112 B datagrams", "udp_blast_send.4112", "GB/s"},
            {"mapped-file flag ping-pong 8 B one-way p99", "mapped.8.p99", "µs"},
            {"mapped-file flag ping-pong 8 B, spinning on the flag alone", "mapped.8.pause-false", "µs"},
            {"mapped-file flag ping-pong 8 B, a PAUSE per turn of the wait", "mapped.8.pause-true", "µs"},
            {"rounds whose faster wait paused (1) or spun (0): jrdma's latency rows waited the same way", "shm.wait.pause", ""},
            {"jrdma over shm0 WRITE 8 B one-way p99", "shm.write_lat.8.p99", "µs"},
            {"load average (1 min) at the start of each round", "loadavg", ""},
        };
        for (String[] e : extra) {
            double[] s = stats(data, e[1]);
            if (s == null) {
                continue; // not measured in this run (a section not run, or a figure that failed: see the notes)
            }
            sb.append("| ").append(e[0]).append(" | ").append(cell(s, e[2])).append(" |\n");
        }
        return sb.toString();
    }

    /** The JMH results (CSV from -rf csv with -prof gc): score and allocated bytes per operation. */
    private static String jmh(Path csv) throws IOException {
        List<String> lines = Files.readAllLines(csv);
        if (lines.isEmpty()) {
            return "";
        }
        List<String> header = splitCsv(lines.getFirst());
        int iBench = header.indexOf("Benchmark");
        int iScore = header.indexOf("Score");
        int iErr = header.indexOf("Score Error (99.9%)");
        int iUnit = header.indexOf("Unit");
        List<Integer> params = new ArrayList<>();
        for (int i = 0; i < header.size(); i++) {
            if (header.get(i).startsWith("Param: ")) {
                params.add(i);
            }
        }
        Map<String, String[]> rows = new LinkedHashMap<>();
        for (String line : lines.subList(1, lines.size())) {
            List<String> f = splitCsv(line);
            if (f.size() < header.size()) {
                continue;
            }
            String bench = f.get(iBench);
            String secondary = null;
            int colon = bench.indexOf(':');
            if (colon >= 0) {
                secondary = bench.substring(colon + 1);
                bench = bench.substring(0, colon);
            }
            StringBuilder p = new StringBuilder();
            for (int i : params) {
                if (!f.get(i).isEmpty()) {
                    p.append(p.isEmpty() ? "" : ", ").append(header.get(i).substring(7)).append('=').append(f.get(i));
                }
            }
            String key = bench + " " + p;
            String[] r = rows.computeIfAbsent(key, k -> new String[] {"", "", "", ""});
            double score = Double.parseDouble(f.get(iScore));
            if (secondary == null) {
                String err = iErr >= 0 && !f.get(iErr).equals("NaN") ? " ± " + fmt(Double.parseDouble(f.get(iErr))) : "";
                r[0] = fmt(score) + err + " " + f.get(iUnit);
            } else if (secondary.equals("gc.alloc.rate.norm")) {
                r[1] = String.format(Locale.ROOT, "%.3f", score);
            } else if (secondary.equals("gc.count")) {
                r[2] = String.format(Locale.ROOT, "%.0f", score);
            }
        }
        StringBuilder sb = new StringBuilder("**JMH hot paths (`-prof gc`; gc.alloc.rate.norm = bytes allocated per operation)**\n\n");
        sb.append("| benchmark | params | score | B/op | GCs |\n|---|---|---|---|---|\n");
        for (Map.Entry<String, String[]> e : rows.entrySet()) {
            String k = e.getKey();
            int sp = k.indexOf(' ');
            String name = k.substring(0, sp).replace("io.jrdma.bench.jmh.", "");
            sb.append("| ").append(name).append(" | ").append(k.substring(sp + 1)).append(" | ").append(e.getValue()[0])
                    .append(" | ").append(e.getValue()[1].isEmpty() ? "n/a" : e.getValue()[1]).append(" | ")
                    .append(e.getValue()[2].isEmpty() ? "0" : e.getValue()[2]).append(" |\n");
        }
        return sb.toString();
    }

    private static List<String> splitCsv(String line) {
        List<String> out = new ArrayList<>();
        StringBuilder cur = new StringBuilder();
        boolean quoted = false;
        for (int i = 0; i < line.length(); i++) {
            char c = line.charAt(i);
            if (c == '"') {
                quoted = !quoted;
            } else if (c == ',' && !quoted) {
                out.add(cur.toString());
                cur.setLength(0);
            } else {
                cur.append(c);
            }
        }
        out.add(cur.toString());
        return out;
    }
}

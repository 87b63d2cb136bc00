package io.jrdma.bench.aeron;

import io.aeron.Aeron;
import io.aeron.FragmentAssembler;
import io.aeron.Publication;
import io.aeron.Subscription;
import io.aeron.driver.MediaDriver;
import io.aeron.driver.ThreadingMode;
import io.aeron.logbuffer.FragmentHandler;
import io.jrdma.bench.Blocks;

import org.agrona.concurrent.AgentInvoker;
import org.agrona.concurrent.UnsafeBuffer;

import java.nio.ByteBuffer;
import java.util.Arrays;
import java.util.HashMap;
import java.util.Locale;
import java.util.Map;

/**
 * The Aeron peer (io.aeron:aeron-all), run as jrdma's perf runs: two processes, one thread per
 * side, every agent invoked by that thread (media driver in INVOKER mode, client conductor by
 * invoker): no other busy thread, so on 2 cores nothing measures the scheduler.
 *
 * <pre>
 * mode=pingpong transport=udp|ipc role=server|client port=P size=S iters=N warmup=W [blocks=0] [pause=false]
 * mode=stream   transport=udp|ipc role=server|client port=P size=S [secs=3] [warm=0.5]
 * mode=turn     [port=P] [size=8] [n=1000000] [rounds=5]
 * </pre>
 * {@code pause=true} (both sides): a PAUSE ({@link Thread#onSpinWait}) after each empty poll of a ping-pong side, as
 * Aeron's own Ping and Pong samples wait ({@code BusySpinIdleStrategy}); {@code bench/compare.sh --shm} gives it the
 * wait jrdma's SEND runs with in that round.
 * {@code mode=turn}: one process, one thread, an IPC ping-pong between two exclusive publications played by that
 * thread, each side as the ping-pong's pong side plays it (the poll that finds the message, its copy out, the
 * offer of the answer; the agents invoked every 64 turns): ns of this thread's CPU time per turn, per round
 * ({@code RESULT aeron_ipc_turn size=S median_ns=... min_ns=... max_ns=...}). The figure {@code ShmOpCost}'s
 * {@code turn8} gives for jrdma's SEND, in the same units.
 * UDP: each process embeds its own media driver; the server receives on 127.0.0.1:P and the client
 * on 127.0.0.1:P+1. IPC: the server embeds the driver and the client attaches to it. UDP frames
 * carry up to 4096 B of data (mtu=4128, as jrdma's 4 KiB path MTU), socket buffers are 4 MiB
 * (as jrdma's link) and the receiver window 2 MiB. Results: {@code RESULT aeron_<transport>_pingpong
 * size=S median_us=...} (half the round trip) from the client, {@code RESULT aeron_<transport>_stream
 * size=S gbps=... mpps=...} from the server (give it the same size=S). IPC keeps Aeron's default
 * 1408-byte IPC MTU.
 */
public final class AeronBench {
    private static final int PING_STREAM = 1001;
    private static final int PONG_STREAM = 1002;

    private final Map<String, String> args = new HashMap<>();
    private MediaDriver driver;
    private AgentInvoker driverInvoker;
    private Aeron aeron;
    private AgentInvoker clientInvoker;
    private long timeoutNanos;

    private AeronBench(String[] argv) {
        for (String a : argv) {
            int eq = a.indexOf('=');
            if (eq <= 0) {
                throw new IllegalArgumentException("arguments are key=value, not '" + a + "'");
            }
            args.put(a.substring(0, eq), a.substring(eq + 1));
        }
    }

    private String str(String k, String def) {
        return args.getOrDefault(k, def);
    }

    private int num(String k, int def) {
        return args.containsKey(k) ? Integer.parseInt(args.get(k)) : def;
    }

    private double dbl(String k, double def) {
        return args.containsKey(k) ? Double.parseDouble(args.get(k)) : def;
    }

    public static void main(String[] argv) throws Exception {
        new AeronBench(argv).run();
    }

    private void run() throws Exception {
        String mode = str("mode", "pingpong");
        String transport = str("transport", "udp");
        boolean turn = mode.equals("turn"); // one process: it embeds the driver
        boolean server = turn || str("role", "client").equals("server");
        int port = num("port", 19020);
        int size = num("size", 32);
        timeoutNanos = num("timeout", 30) * 1_000_000_000L;
        boolean ipc = turn || transport.equals("ipc");
        invokeEvery = num("invoke_every", ipc ? 64 : 1);
        String p = str("pause", "false");
        if (!p.equals("true") && !p.equals("false")) {
            throw new IllegalArgumentException("pause must be true or false, not '" + p + "'");
        }
        pause = p.equals("true");
        if (invokeEvery < 1) {
            throw new IllegalArgumentException("invoke_every must be at least 1, not " + invokeEvery);
        }
        // mode=turn in a directory of its own: a ping-pong's server on the same port keeps its own
        String dir = "/dev/shm/jrdma-bench-aeron-" + port + (turn ? "-turn" : ipc ? "" : server ? "-server" : "-client");
        if (server || !ipc) {
            driver = MediaDriver.launch(new MediaDriver.Context()
                    .aeronDirectoryName(dir)
                    .threadingMode(ThreadingMode.INVOKER)
                    .dirDeleteOnStart(true)
                    .dirDeleteOnShutdown(true)
                    .socketRcvbufLength(4 << 20)
                    .socketSndbufLength(4 << 20)
                    .initialWindowLength(2 << 20));
            driverInvoker = driver.sharedAgentInvoker();
        }
        Aeron.Context actx = new Aeron.Context().aeronDirectoryName(dir).useConductorAgentInvoker(true);
        if (driverInvoker != null) {
            actx.driverAgentInvoker(driverInvoker);
        }
        aeron = Aeron.connect(actx);
        clientInvoker = aeron.conductorAgentInvoker();
        String toServer = ipc ? "aeron:ipc" : "aeron:udp?endpoint=127.0.0.1:" + port + "|mtu=4128";
        String toClient = ipc ? "aeron:ipc" : "aeron:udp?endpoint=127.0.0.1:" + (port + 1) + "|mtu=4128";
        String name = "aeron_" + transport + "_" + mode;
        try {
            if (turn) {
                turns(toServer, num("size", 8), num("n", 1_000_000), num("rounds", 5));
            } else if (mode.equals("pingpong")) {
                int iters = num("iters", 100_000);
                int warmup = num("warmup", 20_000);
                int blocks = num("blocks", 0);
                if (blocks < 0 || blocks > iters) {
                    fail("blocks must be 0 to iters (got " + blocks + ")");
                }
                try (Subscription sub = aeron.addSubscription(server ? toServer : toClient,
                        server ? PING_STREAM : PONG_STREAM);
                     Publication pub = aeron.addExclusivePublication(server ? toClient : toServer,
                             server ? PONG_STREAM : PING_STREAM)) {
                    if (server) {
                        System.out.println("LISTENING " + name + " port=" + port);
                        System.out.flush();
                    }
                    awaitConnected(pub, sub);
                    if (server) {
                        pong(sub, pub, (long) iters + warmup + 1);
                    } else {
                        ping(sub, pub, size, iters, warmup, name, blocks);
                    }
                }
            } else if (server) {
                try (Subscription sub = aeron.addSubscription(toServer, PING_STREAM)) {
                    System.out.println("LISTENING " + name + " port=" + port);
                    System.out.flush();
                    receiveStream(sub, size, (long) (dbl("warm", 0.5) * 1e9), name);
                }
            } else {
                try (Publication pub = aeron.addExclusivePublication(toServer, PING_STREAM)) {
                    awaitConnected(pub, null);
                    sendStream(pub, size, (long) (dbl("secs", 3) * 1e9));
                }
            }
        } finally {
            aeron.close();
            if (driver != null) {
                driver.close();
            }
        }
    }

    private int idle;
    private int invokeEvery = 1;
    /** pause=true: a PAUSE ({@code Thread.onSpinWait}) per empty poll of a ping-pong side, as Aeron's samples wait */
    private boolean pause;

    /** A ping-pong side that found nothing to read: the agents' duty cycles every {@code invokeEvery} such polls. */
    private void idleInvoke() {
        if (++idle >= invokeEvery) {
            idle = 0;
            invoke();
        }
    }

    private void invoke() {
        if (driverInvoker != null) {
            driverInvoker.invoke();
        }
        clientInvoker.invoke();
    }

    private void awaitConnected(Publication pub, Subscription sub) {
        long deadline = System.nanoTime() + timeoutNanos;
        while (!pub.isConnected() || (sub != null && !sub.isConnected())) {
            invoke();
            if (System.nanoTime() - deadline > 0) {
                fail("the peer did not connect within the timeout");
            }
            Thread.onSpinWait();
        }
    }

    /** Offers until the publication takes the message, driving the agents meanwhile. */
    private void offer(Publication pub, org.agrona.DirectBuffer b, int off, int len) {
        long r = pub.offer(b, off, len);
        if (r > 0) {
            return;
        }
        long deadline = System.nanoTime() + timeoutNanos;
        while ((r = pub.offer(b, off, len)) < 0) {
            invoke();
            if (System.nanoTime() - deadline > 0) {
                fail("the publication refused a message for the whole timeout (last result " + r + ")");
            }
        }
    }

    private static void fail(String msg) {
        System.err.println("error: " + msg);
        System.exit(1);
    }

    // ------------------------------------------------------------------ one thread's turns

    private static final java.lang.management.ThreadMXBean THREADS = java.lang.management.ManagementFactory.getThreadMXBean();

    /** {@code mode=turn}: see the class comment. */
    private void turns(String channel, int size, int n, int rounds) {
        try (Subscription s1 = aeron.addSubscription(channel, PING_STREAM);
             Subscription s2 = aeron.addSubscription(channel, PONG_STREAM);
             Publication p1 = aeron.addExclusivePublication(channel, PING_STREAM);
             Publication p2 = aeron.addExclusivePublication(channel, PONG_STREAM)) {
            awaitConnected(p1, s1);
            awaitConnected(p2, s2);
            UnsafeBuffer m1 = new UnsafeBuffer(ByteBuffer.allocateDirect(1 << 20));
            UnsafeBuffer m2 = new UnsafeBuffer(ByteBuffer.allocateDirect(1 << 20));
            int[] len = {-1, -1};
            // as pong(): copy out in the handler, answer outside it
            FragmentHandler h1 = new FragmentAssembler((b, off, l, hdr) -> {
                m1.putBytes(0, b, off, l);
                len[0] = l;
            });
            FragmentHandler h2 = new FragmentAssembler((b, off, l, hdr) -> {
                m2.putBytes(0, b, off, l);
                len[1] = l;
            });
            offer(p1, m1, 0, size);
            double[] ns = new double[rounds];
            // unmeasured rounds first: compiled code, and every page of the logs' three terms touched (64 MiB each by
            // default; a page's first touch is a fault, one in 64 frames of 8 B)
            long frame = (32 + size + 31) & ~31L; // header and data, 32-byte aligned
            int warm = (int) Math.max(2, 3L * p1.termBufferLength() / (frame * n) + 2);
            for (int r = -warm; r < rounds; r++) {
                long t0 = THREADS.getCurrentThreadCpuTime();
                for (int i = 0; i < n; i++) {
                    turn(s1, h1, len, 0, p2, m1);
                    turn(s2, h2, len, 1, p1, m2);
                    if ((i & 31) == 31) { // every 64 turns, as a ping-pong side invokes the agents every 64 idle polls
                        invoke();
                    }
                }
                double v = (double) (THREADS.getCurrentThreadCpuTime() - t0) / (2.0 * n);
                if (r >= 0) {
                    ns[r] = v;
                    System.out.println(String.format(Locale.ROOT, "ROUND %d turn_ns=%.2f", r, v));
                }
            }
            turn(s1, h1, len, 0, null, null); // the last message: nothing left in a log
            Arrays.sort(ns);
            System.out.println(String.format(Locale.ROOT, "RESULT aeron_ipc_turn size=%d median_ns=%.2f min_ns=%.2f max_ns=%.2f",
                    size, ns[rounds / 2], ns[0], ns[rounds - 1]));
            System.out.flush();
        }
    }

    /** One side's turn: polls {@code sub} until a whole message came, then offers it on {@code pub} (if any). */
    private void turn(Subscription sub, FragmentHandler h, int[] len, int k, Publication pub, UnsafeBuffer msg) {
        len[k] = -1;
        long deadline = 0;
        while (len[k] < 0) {
            if (sub.poll(h, 1) == 0) {
                invoke();
                if (deadline == 0) {
                    deadline = System.nanoTime() + timeoutNanos;
                } else if (System.nanoTime() - deadline > 0) {
                    fail("a turn found no message within the timeout");
                }
            }
        }
        if (pub != null) {
            offer(pub, msg, 0, len[k]);
        }
    }

    // ------------------------------------------------------------------ ping-pong

    private long pongs;

    /** @param blocks the client also prints the medians of this many consecutive blocks of the samples ({@link Blocks}) */
    private void ping(Subscription sub, Publication pub, int size, int iters, int warmup, String name, int blocks) {
        UnsafeBuffer buf = new UnsafeBuffer(ByteBuffer.allocateDirect(Math.max(size, 64)));
        // whole messages: a message above the MTU arrives as several fragments
        FragmentHandler onPong = new FragmentAssembler((b, off, len, hdr) -> pongs++);
        long[] rtt = new long[iters];
        // one clock read per round trip, right after the offer: consecutive differences are the same round trips,
        // and the read (~27 ns on this project's host) overlaps the peer's turn instead of lying between a pong's
        // arrival and the next ping, as jrdma perf's and perftest's loops read theirs; one more round trip than
        // warmup + iters, whose timestamp starts the first sample
        long prev = 0;
        for (int i = -warmup - 1; i < iters; i++) {
            offer(pub, buf, 0, size);
            long t0 = System.nanoTime();
            if (i >= 0) {
                rtt[i] = t0 - prev;
            }
            prev = t0;
            long want = pongs + 1;
            int spins = 0;
            while (pongs < want) {
                if (sub.poll(onPong, 1) == 0) {
                    if (pause) {
                        Thread.onSpinWait();
                    }
                    idleInvoke();
                    if (++spins == 1 << 20) {
                        spins = 0;
                        if (System.nanoTime() - t0 > timeoutNanos) {
                            fail("no pong within the timeout (after " + pongs + " pongs, ping " + i + ")");
                        }
                    }
                }
            }
        }
        Blocks.print(name, rtt, iters, blocks, 2.0);
        Arrays.sort(rtt);
        double sum = 0;
        for (long v : rtt) {
            sum += v;
        }
        System.out.println(String.format(Locale.ROOT,
                "RESULT %s size=%d iters=%d median_us=%.3f min_us=%.3f p99_us=%.3f p999_us=%.3f avg_us=%.3f",
                name, size, iters, rtt[iters / 2] / 2000.0, rtt[0] / 2000.0, rtt[iters * 99 / 100] / 2000.0,
                rtt[(int) ((long) iters * 999 / 1000)] / 2000.0, sum / iters / 2000.0));
        System.out.flush();
    }

    private void pong(Subscription sub, Publication pub, long total) {
        UnsafeBuffer msg = new UnsafeBuffer(ByteBuffer.allocateDirect(1 << 20));
        int[] len = new int[1];
        // copy out in the handler and answer outside it: no agent is invoked from inside a poll
        FragmentHandler take = new FragmentAssembler((b, off, l, hdr) -> {
            msg.putBytes(0, b, off, l);
            len[0] = l;
        });
        len[0] = -1;
        long last = 0;
        int spins = 0;
        while (pongs < total) {
            if (sub.poll(take, 1) > 0) {
                if (len[0] >= 0) { // a whole message (its last fragment) has arrived
                    offer(pub, msg, 0, len[0]);
                    len[0] = -1;
                    pongs++;
                }
                spins = 0;
                last = 0;
            } else {
                if (pause) {
                    Thread.onSpinWait();
                }
                if (++spins == 1 << 16) {
                    spins = 0;
                    long now = System.nanoTime();
                    if (last == 0) {
                        last = now;
                    } else if (now - last > timeoutNanos) {
                        fail("no ping within the timeout (after " + pongs + " pongs)");
                    }
                }
            }
            idleInvoke();
        }
        // let the last pong leave
        long end = System.nanoTime() + 100_000_000L;
        while (System.nanoTime() - end < 0) {
            invoke();
        }
    }

    // ------------------------------------------------------------------ streaming

    private long bytes;
    private long msgs;
    private boolean ended;

    private void receiveStream(Subscription sub, int size, long warmNanos, String name) {
        FragmentHandler count = (b, off, len, hdr) -> {
            if (len == 1) {
                ended = true;
            } else {
                bytes += len;
                msgs++;
            }
        };
        long deadline = System.nanoTime() + timeoutNanos;
        while (msgs == 0) {
            if (sub.poll(count, 64) == 0) {
                invoke();
                if (System.nanoTime() - deadline > 0) {
                    fail("no data within the timeout");
                }
            }
        }
        long first = System.nanoTime();
        long warmAt = 0;
        long warmBytes = -1;
        long warmMsgs = 0;
        long last = first;
        long lastMsgs = msgs;
        while (!ended) {
            int n = sub.poll(count, 64);
            if (n == 0) {
                invoke();
            }
            long now = System.nanoTime();
            if (msgs != lastMsgs) {
                last = now;
                lastMsgs = msgs;
                if (warmBytes < 0 && now - first >= warmNanos) {
                    warmBytes = bytes;
                    warmMsgs = msgs;
                    warmAt = now;
                }
            } else if (now - last > 1_000_000_000L) {
                break;
            }
        }
        if (warmBytes < 0 || last - warmAt <= 0) {
            fail("the run was shorter than its warm-up");
        }
        double sec = (last - warmAt) / 1e9;
        long b = bytes - warmBytes;
        // fragments are counted as they come (a message above the MTU is several): messages = bytes / size
        System.out.println(String.format(Locale.ROOT,
                "RESULT %s size=%d gbps=%.4f mpps=%.4f bytes=%d msgs=%d secs=%.3f fragments=%d",
                name, size, b / sec / 1e9, (double) b / size / sec / 1e6, b, b / size, sec, msgs - warmMsgs));
        System.out.flush();
    }

    private void sendStream(Publication pub, int size, long nanos) {
        UnsafeBuffer buf = new UnsafeBuffer(ByteBuffer.allocateDirect(Math.max(size, 64)));
        long end = System.nanoTime() + nanos;
        long sent = 0;
        int k = 0;
        while (true) {
            if (pub.offer(buf, 0, size) > 0) {
                sent++;
            } else {
                invoke();
            }
            if ((++k & 31) == 0) {
                invoke();
                if (System.nanoTime() - end >= 0) {
                    break;
                }
            }
        }
        long deadline = System.nanoTime() + timeoutNanos;
        while (pub.offer(buf, 0, 1) < 0) {
            invoke();
            if (System.nanoTime() - deadline > 0) {
                fail("could not send the end marker");
            }
        }
        long linger = System.nanoTime() + 300_000_000L;
        while (System.nanoTime() - linger < 0) {
            invoke();
        }
        System.out.println("SENT aeron msgs=" + sent);
    }
}

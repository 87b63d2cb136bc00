package io.jrdma.tools.perf;

import io.jrdma.tools.ArgParser;
import io.jrdma.verbs.Device;
import io.jrdma.verbs.DeviceContext;
import io.jrdma.verbs.Rdma;
import io.jrdma.verbs.RdmaException;
import io.jrdma.verbs.Transport;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.UnknownHostException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;

/** {@code jrdma perf <test> [options] [host]}: perftest's benchmarks over the jrdma verbs API. */
public final class PerfCommand {
    static final int DEFAULT_PORT = 18515;
    static final int DEFAULT_TIMEOUT = 30;
    /** The longest latency run in iteration mode (the samples are kept); use -D beyond. */
    static final long MAX_LAT_ITERATIONS = 10_000_000L;

    static final ArgParser PARSER = new ArgParser("""
            usage: jrdma perf <test> [options]            server: waits for one client
                   jrdma perf <test> [options] <host>     client: runs the test against the server on <host>
                   jrdma perf <test> [options] --loopback server and client in this process over 127.0.0.1
                   jrdma perf <test> [options] --server   a long-running server: client after client

            tests: write_bw write_lat read_bw read_lat send_bw send_lat atomic_bw atomic_lat

            By default jrdma speaks perftest 4.5's own TCP exchange (without -R), so either side can be
            perftest's ib_<test>, and it prints perftest's table. As with perftest, give both sides the
            same test and flags (-s, -n, -a, -q, ...): the exchange does not carry them.

            With -R (iWARP devices only, as perftest on siw) the same exchange runs over rdma_cm: a
            "comm" QP on port -p carries it, and the test's QPs are connected through the connection
            manager (MPA over TCP) on the same port; the peer can be perftest's ib_<test> -R on Linux
            siw (write/read/send bw, write/read lat) or jrdma.

            With --jrdma-cm it uses jrdma's connection manager instead (both sides jrdma): the client
            chooses the test, sizes and iterations and the server follows; adds --verify, warm-up, -D per size.
            On an iWARP device (-d iwarp_<if>, both sides) without -R it is implied: perftest's TCP
            exchange cannot connect iWARP QPs, which only the connection manager brings to RTS.

            Bandwidth is in MB/sec with MB = 2^20 bytes; latencies in microseconds (write_lat and
            send_lat report half the round trip, read_lat and atomic_lat the whole operation).""")
            .option('s', "size", "BYTES", "message size (default 65536 for bw, 2 for lat; atomics: 8); K and M suffixes")
            .option('n', "iters", "N", "iterations per size (perftest: 5000 for write_bw, else 1000)")
            .option('a', "all", null, "run all sizes from 2 B to 8 MiB (powers of two)")
            .option('t', "tx-depth", "N", "outstanding requests (default 128 for bw, 1 for lat)")
            .option('m', "mtu", "BYTES", "path MTU 256..4096 (default: the device's active MTU)")
            .option('p', "port", "PORT", "TCP port of the side channel, or with -R of rdma_cm (default 18515)")
            .option('d', "ib-dev", "NAME", "RDMA device (default: the client's route, the server's first non-lo one;"
                    + " with -R the iWARP ones)")
            .option('x', "gid-index", "N", "local GID index (default: perftest's choice, the first IPv4 GID)")
            .option('q', "qp", "N", "number of QPs (bw tests)")
            .option('I', "inline_size", "BYTES", "max inline size (default 220 write_lat, 236 send_lat, else 0)")
            .option('A', "atomic_type", "TYPE", "CMP_AND_SWAP or FETCH_AND_ADD (default), atomic tests")
            .option('Q', "cq-mod", "N", "signal one send in N (default 100; 1 above 8 KiB)")
            .option('r', "rx-depth", "N", "receives posted, send tests (default 512)")
            .option('o', "outs", "N", "outstanding READs/atomics (default and maximum 128)")
            .option('u', "qp-timeout", "N", "QP timeout, 4.096 us * 2^N (default 14)")
            .option('S', "sl", "SL", "service level (accepted; not carried)")
            .option('N', "noPeak", null, "do not compute the peak bandwidth")
            .option('F', "CPU-freq", null, "accepted (jrdma times with the monotonic clock, not CPU cycles)")
            .option('c', "connection", "TYPE", "connection type: RC, UC (write and send tests) or UD (send_bw, send_lat)")
            .option('i', "ib-port", "PORT", "port of the device (default 1; jrdma's software devices have only 1): its"
                    + " GID table (-x), its active MTU, the QPs' port; not with -R (rdma_cm picks the port)")
            .option('l', "post_list", "N", "post list: 1 only")
            .option('V', "version", null, "print the perftest version this speaks")
            .option((char) 0, "ipv6", null, "prefer an IPv6 GID when choosing one")
            .option((char) 0, "report_gbits", null, "report bandwidth in Gb/sec")
            .option((char) 0, "disable_pcie_relaxed", null, "accepted (shown in the header)")
            .option((char) 0, "use_old_post_send", null, "accepted (jrdma posts one way)")
            .option((char) 0, "perform_warm_up", null, "write/read/atomic bw clients: tx-depth requests per QP, and"
                    + " their completions, before each measured run (as perftest --perform_warm_up)")
            .option((char) 0, "use-srq", null, "receives from one shared receive queue for all QPs, as perftest"
                    + " --use-srq (send tests)")
            .option('R', "rdma_cm", null, "exchange and connect through rdma_cm, as perftest -R (iWARP devices)")
            .option('z', "comm_rdma_cm", null, "not supported (use -R)")
            .option('b', "bidirectional", null, "not supported yet")
            .option('e', "events", null, "sleep on CQ events instead of polling (as perftest -e): send, read and atomic"
                    + " tests, not with -D")
            .option((char) 0, "pause", null, "latency tests: a PAUSE (Thread.onSpinWait) in each turn of the busy waits,"
                    + " on memory and on CQs (perftest's loops spin without; which is faster depends on the host:"
                    + " bench/compare.sh measures both and takes the faster for its floor and jrdma alike)")
            .option((char) 0, "dont_xchg_versions", null, "not supported")
            .option((char) 0, "loopback", null, "run server and client in this process over 127.0.0.1")
            .option((char) 0, "timeout", "SEC", "fail after SEC seconds without progress (default 30); a server"
                    + " gives up waiting for its client after SEC only when given")
            .option((char) 0, "server", null, "a long-running server: serve client after client (each with this test"
                    + " and these flags; with --jrdma-cm each client's own) until killed; a client that fails or dies"
                    + " ends only its own run")
            .option((char) 0, "clients", "N", "with --server: stop after N clients; on a client: run N times in a row"
                    + " (a churn against a --server)")
            .option((char) 0, "parallel", "N", "with --server: serve up to N clients at once, each on a thread of its own"
                    + " (default 1: one after the other)")
            .option((char) 0, "jrdma-cm", null, "use jrdma's connection manager (both sides jrdma), not perftest's"
                    + " exchange")
            .option('D', "duration", "SEC", "run for SEC seconds instead of -n iterations (perftest's exchange: measure"
                    + " from --margin after the start to --margin before the end, as perftest -D; --jrdma-cm: each"
                    + " size)")
            .option('f', "margin", "SEC", "with -D: seconds at each end of the run left out of the measure (default"
                    + " duration/4)")
            .option((char) 0, "verify", null, "--jrdma-cm: check the data pattern at the receiver; fail on a mismatch")
            .option((char) 0, "no-warmup", null, "--jrdma-cm: measure from the first iteration (no warm-up run)");

    private PerfCommand() {
    }

    /** Runs {@code jrdma perf} with its arguments; returns the exit code. */
    public static int run(List<String> args, PrintStream out, PrintStream err) {
        PerfOptions o = null;
        PerftestOptions po = null;
        boolean serverLoop = false;
        boolean clientRuns = false;
        long maxClients = Long.MAX_VALUE;
        int parallel = 1;
        try {
            ArgParser.Parsed p = PARSER.parse(args);
            if (p.help()) {
                out.print(PARSER.usage());
                return 0;
            }
            if (p.has("version")) {
                out.println("Version: " + PerftestWire.VERSION);
                return 0;
            }
            if (p.has("jrdma-cm") || (isIwarp(p.value("ib-dev")) && !p.has("rdma_cm"))) {
                o = options(p);
            } else {
                po = PerftestOptions.of(p);
            }
            if (p.has("clients") && !p.has("server")) {
                if (po == null ? o.host() == null : po.host() == null) {
                    throw new ArgParser.UsageException("option --clients: N clients of a --server, or N runs of a"
                            + " client (give the server's host)");
                }
                maxClients = longValue(p, "clients", (char) 0, 1, Long.MAX_VALUE);
                clientRuns = true;
            }
            if (p.has("server")) {
                String host = po != null ? po.host() : o.host();
                boolean loop = po != null ? po.loopback() : o.loopback();
                if (host != null || loop) {
                    throw new ArgParser.UsageException("--server is the server side: give no host"
                            + (loop ? " and no --loopback" : " ('" + host + "')"));
                }
                if (po != null && po.rdmaCm()) {
                    throw new ArgParser.UsageException("--server serves perftest's TCP exchange: it does not take -R");
                }
                serverLoop = true;
                maxClients = p.has("clients") ? longValue(p, "clients", (char) 0, 1, Long.MAX_VALUE) : Long.MAX_VALUE;
            }
            if (p.has("parallel")) {
                if (!p.has("server")) {
                    throw new ArgParser.UsageException("option --parallel: clients served at once by a --server");
                }
                parallel = (int) longValue(p, "parallel", (char) 0, 1, 256);
            }
        } catch (ArgParser.UsageException e) {
            err.println("jrdma perf: " + e.getMessage());
            err.print(PARSER.usage());
            return 2;
        }
        if (serverLoop) {
            return o != null ? serve(o, maxClients, parallel, out, err, port -> { })
                    : PerftestCommand.serve(po, maxClients, parallel, out, err, port -> { });
        }
        if (clientRuns) {
            PerfOptions co = o;
            return o != null ? PerftestCommand.repeat(maxClients, out, err, ps -> execute(co, ps, err))
                    : PerftestCommand.repeat(po, maxClients, out, err);
        }
        return o != null ? execute(o, out, err) : PerftestCommand.execute(po, out, err);
    }

    /** Parses a command line into {@code --jrdma-cm} options (for tests; the flag itself may be left out). */
    public static PerfOptions parse(String... args) throws ArgParser.UsageException {
        return options(PARSER.parse(List.of(args)));
    }

    /** Parses a command line into perftest-exchange options (for tests). */
    public static PerftestOptions parsePerftest(String... args) throws ArgParser.UsageException {
        return PerftestOptions.of(PARSER.parse(List.of(args)));
    }

    /**
     * @return whether {@code -d} names an iWARP device: perftest's own exchange (QPN, PSN, GID, then a
     *         manual modify to RTR/RTS) cannot connect iWARP QPs, which reach RTS only through the
     *         connection manager (MPA), so {@code --jrdma-cm} is implied there (perftest itself needs
     *         {@code -R} on siw)
     */
    static boolean isIwarp(String device) {
        if (device == null || device.isBlank()) {
            return false;
        }
        try {
            return Rdma.device(device).transport() == Transport.IWARP;
        } catch (RdmaException e) {
            return false; // an unknown name: reported when the device is opened
        }
    }

    /** @return whether a device of that name exists (an unknown one is reported when it is opened) */
    static boolean exists(String device) {
        try {
            Rdma.device(device);
            return true;
        } catch (RdmaException e) {
            return false;
        }
    }

    static PerfOptions options(ArgParser.Parsed p) throws ArgParser.UsageException {
        boolean iwarp = !p.has("jrdma-cm") && isIwarp(p.value("ib-dev"));
        String why = iwarp ? " (" + p.value("ib-dev") + " is an iWARP device: without -R jrdma perf connects it with"
                + " jrdma's connection manager, as --jrdma-cm; perftest's TCP exchange cannot set up iWARP QPs)" : "";
        for (String name : PerftestOptions.PERFTEST_ONLY) {
            if (p.has(name)) {
                if (name.equals("ib-port")) {
                    throw new ArgParser.UsageException("option --ib-port belongs to perftest's exchange: "
                            + (iwarp ? "drop -i" + why + " (" : "drop --jrdma-cm to use it (")
                            + "jrdma's connection manager puts the QP on the port of the address the connection leaves"
                            + " from)");
                }
                throw new ArgParser.UsageException("option --" + name + " belongs to perftest's exchange: "
                        + (iwarp ? "add -R to use it over iWARP" + why : "drop --jrdma-cm to use it"));
            }
        }
        if (p.has("rdma_cm")) {
            throw new ArgParser.UsageException("option -R/--rdma_cm is perftest's exchange over rdma_cm: drop"
                    + " --jrdma-cm to use it");
        }
        for (String name : List.of("comm_rdma_cm", "bidirectional", "events", "dont_xchg_versions", "post_list")) {
            if (p.has(name)) {
                throw new ArgParser.UsageException("option --" + name + " is not supported" + why);
            }
        }
        List<String> pos = p.positionals();
        if (pos.isEmpty()) {
            throw new ArgParser.UsageException("missing test name (one of " + PerfTest.names() + ")");
        }
        PerfTest test = PerfTest.byName(pos.getFirst());
        if (test == null) {
            throw new ArgParser.UsageException("unknown test '" + pos.getFirst() + "' (one of " + PerfTest.names() + ")");
        }
        if (pos.size() > 2) {
            throw new ArgParser.UsageException("unexpected argument '" + pos.get(2) + "' (give at most one host)");
        }
        String host = pos.size() == 2 ? pos.get(1) : null;
        boolean loopback = p.has("loopback");
        if (loopback && host != null) {
            throw new ArgParser.UsageException("--loopback runs both sides here: do not give a host ('" + host + "')");
        }
        if (p.has("all") && p.has("size")) {
            throw new ArgParser.UsageException("-a runs every size: do not combine it with -s");
        }
        if (p.has("duration") && p.has("iters")) {
            throw new ArgParser.UsageException("-D (duration) and -n (iterations) are exclusive");
        }
        List<Integer> sizes = new ArrayList<>();
        if (test.isAtomic()) {
            if (p.has("all")) {
                throw new ArgParser.UsageException("atomic tests always use 8-byte operations: -a does not apply");
            }
            if (p.has("size") && integer(p, "size", 's', 1, PerfTest.MAX_SIZE) != 8) {
                throw new ArgParser.UsageException("atomic tests always use 8-byte operations: -s must be 8");
            }
            sizes.add(8);
        } else if (p.has("all")) {
            for (int s = 2; s <= PerfTest.MAX_SIZE; s *= 2) {
                sizes.add(s);
            }
        } else {
            sizes.add(p.has("size") ? integer(p, "size", 's', 1, PerfTest.MAX_SIZE) : test.defaultSize());
        }
        long maxIters = test.isBw() ? 1_000_000_000L : MAX_LAT_ITERATIONS;
        long iters = p.has("iters") ? longValue(p, "iters", 'n', 5, maxIters) : test.defaultIterations();
        int duration = p.has("duration") ? integer(p, "duration", 'D', 1, 86_400) : 0;
        int maxTx = test.isAtomic() ? PerfTest.MAX_ATOMIC_DEPTH : 4096;
        int tx = p.has("tx-depth") ? integer(p, "tx-depth", 't', 1, maxTx) : test.defaultTxDepth();
        if (!test.isBw() && tx != 1) {
            throw new ArgParser.UsageException("latency tests run one request at a time: -t must be 1");
        }
        int mtu = 0;
        if (p.has("mtu")) {
            mtu = integer(p, "mtu", 'm', 256, 4096);
            if (Integer.bitCount(mtu) != 1) {
                throw new ArgParser.UsageException("option -m/--mtu: must be 256, 512, 1024, 2048 or 4096, not " + mtu);
            }
        }
        int port = p.has("port") ? integer(p, "port", 'p', 0, 65535) : loopback ? 0 : DEFAULT_PORT;
        if (port == 0 && host != null) {
            throw new ArgParser.UsageException("option -p/--port: a client needs the server's port, not 0");
        }
        String device = p.value("ib-dev");
        if (device != null && device.isBlank()) {
            throw new ArgParser.UsageException("option -d/--ib-dev: empty device name");
        }
        int gid = p.has("gid-index") ? integer(p, "gid-index", 'x', 0, 255) : -1;
        int timeout = p.has("timeout") ? integer(p, "timeout", (char) 0, 1, 3600) : DEFAULT_TIMEOUT;
        return new PerfOptions(test, sizes, iters, duration, tx, mtu, port, device, gid, host, loopback,
                p.has("verify"), timeout, !p.has("no-warmup"));
    }

    private static int integer(ArgParser.Parsed p, String name, char shortName, int min, int max)
            throws ArgParser.UsageException {
        return (int) longValue(p, name, shortName, min, max);
    }

    private static long longValue(ArgParser.Parsed p, String name, char shortName, long min, long max)
            throws ArgParser.UsageException {
        String v = p.value(name);
        String opt = (shortName != 0 ? "-" + shortName + "/" : "") + "--" + name;
        long n;
        try {
            n = Long.parseLong(v.trim());
        } catch (NumberFormatException e) {
            throw new ArgParser.UsageException("option " + opt + ": '" + v + "' is not a number");
        }
        if (n < min || n > max) {
            throw new ArgParser.UsageException("option " + opt + ": " + n + " is outside " + min + ".." + max);
        }
        return n;
    }

    /** A flag value that turned out wrong once the device was open (-d, -x): exit code 2. */
    static final class BadValue extends RuntimeException {
        private static final long serialVersionUID = 1L;

        BadValue(String message) {
            super(message);
        }
    }

    static void checkGidIndex(DeviceContext ctx, int index) {
        if (index < 0) {
            return;
        }
        int n = ctx.queryPort().gids().size();
        if (index >= n) {
            throw new BadValue("option -x/--gid-index: GID index " + index + " does not exist on "
                    + ctx.device().name() + " (its GID table has " + n + " entries: see 'jrdma devices')");
        }
    }

    /** Runs parsed options; returns the exit code. */
    public static int execute(PerfOptions o, PrintStream out, PrintStream err) {
        try {
            if (o.loopback()) {
                return loopback(o, out, err);
            }
            if (o.host() != null) {
                InetAddress addr;
                try {
                    addr = InetAddress.getByName(o.host());
                } catch (UnknownHostException e) {
                    err.println("jrdma perf: cannot resolve host '" + o.host() + "'");
                    return 1;
                }
                Device dev = o.device() != null ? device(o.device()) : Rdma.resolve(addr, Transport.ROCE_V2).device();
                new Client(o, out, new Watchdog(o.timeoutSec(), null)).run(dev, new InetSocketAddress(addr, o.port()));
                return 0;
            }
            long acceptNanos = Math.max(300, o.timeoutSec()) * 1_000_000_000L;
            Server server = new Server(o, out, new Watchdog(o.timeoutSec(), null), true);
            if (o.device() == null) {
                List<Device> up = Rdma.devices().stream()
                        .filter(d -> d.transport() == Transport.ROCE_V2 && d.isUp()).toList();
                if (up.isEmpty()) {
                    up = List.of(serverDevice());
                }
                server.runAnyDevice(up, o.port(), acceptNanos);
                return 0;
            }
            server.run(device(o.device()), new InetSocketAddress(o.port()), port -> { }, acceptNanos);
            return 0;
        } catch (BadValue e) {
            err.println("jrdma perf: " + e.getMessage());
            return 2;
        } catch (PerfFailure e) {
            out.flush();
            err.println("jrdma perf: FAILED: " + e.getMessage());
            return 1;
        } catch (RdmaException e) {
            out.flush();
            err.println("jrdma perf: FAILED: " + e.getMessage());
            return 1;
        }
    }

    /**
     * {@code jrdma perf <test> --server --jrdma-cm}: serves client after client over jrdma's connection manager
     * (see {@link Server#serveClients}), on {@code -d}'s device or on every RoCE device that is up.
     *
     * @param maxClients how many clients to serve, or {@link Long#MAX_VALUE} for no end
     * @param parallel   how many to serve at once (1: one after the other)
     * @param listening told the TCP port once the server listens
     * @return 0 when every client's run succeeded, 1 when one failed (or nothing could be listened on), 2 for a bad
     *         flag or device
     */
    public static int serve(PerfOptions o, long maxClients, int parallel, PrintStream out, PrintStream err,
                            java.util.function.IntConsumer listening) {
        try {
            List<Device> devices;
            boolean one = o.device() != null;
            if (one) {
                devices = List.of(device(o.device()));
            } else {
                devices = Rdma.devices().stream().filter(d -> d.transport() == Transport.ROCE_V2 && d.isUp()).toList();
                if (devices.isEmpty()) {
                    devices = List.of(serverDevice());
                    one = true;
                }
            }
            long failed = new Server(o, out, new Watchdog(o.timeoutSec(), null), false)
                    .serveClients(devices, o.port(), one, listening, maxClients, parallel, err);
            return failed == 0 ? 0 : 1;
        } catch (BadValue e) {
            err.println("jrdma perf: " + e.getMessage());
            return 2;
        } catch (PerfFailure | RdmaException e) {
            out.flush();
            err.println("jrdma perf: FAILED: " + e.getMessage());
            return 1;
        }
    }

    private static Device device(String name) {
        try {
            return Rdma.device(name);
        } catch (RdmaException e) {
            throw new BadValue("option -d/--ib-dev: " + e.getMessage());
        }
    }

    /** The server's default device: the first one not on the loopback interface, else the loopback one. */
    static Device serverDevice() {
        List<Device> all = Rdma.devices();
        for (Device d : all) {
            if (!d.netdev().equals("lo") && d.isUp()) {
                return d;
            }
        }
        for (Device d : all) {
            if (d.netdev().equals("lo")) {
                return d;
            }
        }
        if (all.isEmpty()) {
            throw new PerfFailure("no RDMA device found (see 'jrdma devices')");
        }
        return all.getFirst();
    }

    /** Server (in a second thread) and client in this process, over 127.0.0.1. */
    private static int loopback(PerfOptions o, PrintStream out, PrintStream err) {
        InetAddress lo = InetAddress.getLoopbackAddress();
        if (!(lo instanceof java.net.Inet4Address)) {
            try {
                lo = InetAddress.getByName("127.0.0.1");
            } catch (UnknownHostException e) {
                throw new IllegalStateException(e);
            }
        }
        Device dev = o.device() != null ? device(o.device()) : Rdma.resolve(lo, Transport.ROCE_V2).device();
        AtomicBoolean serverFailed = new AtomicBoolean();
        AtomicBoolean clientFailed = new AtomicBoolean();
        AtomicReference<Throwable> serverError = new AtomicReference<>();
        CompletableFuture<Integer> listening = new CompletableFuture<>();
        ByteArrayOutputStream serverOut = new ByteArrayOutputStream();
        PrintStream sout = new PrintStream(serverOut, true, StandardCharsets.UTF_8);
        InetSocketAddress listenOn = new InetSocketAddress(lo, o.port());
        Thread server = Thread.ofPlatform().name("jrdma-perf-server").daemon().start(() -> {
            try {
                new Server(o, sout, new Watchdog(o.timeoutSec(), clientFailed), false)
                        .run(dev, listenOn, listening::complete, o.timeoutSec() * 1_000_000_000L);
            } catch (Throwable e) {
                serverError.set(e);
                serverFailed.set(true);
                listening.completeExceptionally(e);
            }
        });
        int port;
        try {
            port = listening.get(o.timeoutSec(), TimeUnit.SECONDS);
        } catch (ExecutionException e) {
            join(server, o);
            return reportServer(serverError.get(), err);
        } catch (TimeoutException | InterruptedException e) {
            err.println("jrdma perf: FAILED: the loopback server did not start listening");
            return 1;
        }
        Throwable clientError = null;
        try {
            new Client(o, out, new Watchdog(o.timeoutSec(), serverFailed)).run(dev, new InetSocketAddress(lo, port));
        } catch (PerfFailure | RdmaException | BadValue e) {
            clientError = e;
            clientFailed.set(true);
        }
        join(server, o);
        out.flush();
        if (server.isAlive()) {
            err.println("jrdma perf: FAILED: the loopback server thread did not finish");
            return 1;
        }
        Throwable se = serverError.get();
        int rc = 0;
        if (clientError != null) {
            // when the server failed first, its message is the cause: print it first
            if (se != null) {
                rc = reportServer(se, err);
            }
            err.println("jrdma perf: " + (clientError instanceof BadValue ? "" : "FAILED: ") + clientError.getMessage());
            return clientError instanceof BadValue ? 2 : 1;
        }
        if (se != null) {
            return reportServer(se, err);
        }
        return rc;
    }

    private static void join(Thread t, PerfOptions o) {
        try {
            t.join(o.timeoutSec() * 1000L + 5000);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    private static int reportServer(Throwable e, PrintStream err) {
        if (e instanceof BadValue) {
            err.println("jrdma perf: " + e.getMessage());
            return 2;
        }
        if (e instanceof PerfFailure || e instanceof RdmaException) {
            err.println("jrdma perf: FAILED (server): " + e.getMessage());
        } else {
            err.println("jrdma perf: FAILED (server): " + e);
            e.printStackTrace(err);
        }
        return 1;
    }
}

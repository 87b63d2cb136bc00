package io.jrdma.tools.pingpong;

import io.jrdma.tools.ArgParser;
import io.jrdma.tools.DeviceChoice;
import io.jrdma.tools.oob.SideChannelException;
import io.jrdma.verbs.QpType;
import io.jrdma.verbs.RdmaException;

import java.io.PrintStream;
import java.util.List;
import java.util.function.IntConsumer;

/**
 * {@code jrdma pingpong [options] [host]}: {@code ibv_rc_pingpong} from rdma-core, flag for flag
 * and byte for byte on its TCP side channel, so either end can be the Linux tool.
 */
public final class PingpongCommand {
    static final int DEFAULT_PORT = 18515;
    static final int DEFAULT_TIMEOUT = 30;

    static final ArgParser PARSER = new ArgParser("""
            usage: jrdma pingpong [options]          server: waits for one client
                   jrdma pingpong [options] <host>   client: connects to the server on <host>

            As ibv_rc_pingpong (rdma-core): an RC ping-pong of SENDs, -n exchanges of -s bytes, after
            exchanging LID:QPN:PSN:GID over TCP port -p. Either end can be ibv_rc_pingpong; use the
            same -s, -n and -m on both. With --uc as ibv_uc_pingpong, with --ud as ibv_ud_pingpong
            (soft-RoCE only: iWARP has no UC or UD). With --srq, as ibv_srq_pingpong: -q QPs whose receives
            come from one shared receive queue, 256 addresses exchanged each way (the same -q on both).
            Without -g jrdma uses the GID of the address the TCP connection runs over (the rdma-core
            tools send no GID then, which RoCE peers cannot use).""")
            .option('p', "port", "PORT", "listen on/connect to TCP port PORT (default 18515)")
            .option('d', "ib-dev", "DEV", "use device DEV (default: the client's route, the server's first non-lo one)")
            .option('i', "ib-port", "PORT", "use port PORT of the device (default 1; jrdma's software devices have only 1)")
            .option('s', "size", "SIZE", "size of message to exchange (default 4096)")
            .option('m', "mtu", "SIZE", "path MTU (default 1024)")
            .option('r', "rx-depth", "DEP", "number of receives to post at a time (default 500)")
            .option('n', "iters", "ITERS", "number of exchanges (default 1000)")
            .option('l', "sl", "SL", "service level value (accepted; RoCE carries none here)")
            .option('e', "events", null, "sleep on CQ events (default poll)")
            .option('g', "gid-idx", "INDEX", "local port gid index")
            .option('c', "chk", null, "validate received buffer (the server checks; a mismatch exits 1)")
            .option('N', "new_send", null, "use new post send WR API (accepted: the same packets)")
            .option('o', "odp", null, "on demand paging: not supported")
            .option('O', "iodp", null, "implicit on demand paging: not supported")
            .option('P', "prefetch", null, "prefetch an ODP MR: not supported")
            .option('t', "ts", null, "CQE timestamps: not supported")
            .option('j', "dm", null, "device memory: not supported")
            .option((char) 0, "ud", null, "as ibv_ud_pingpong: UD QPs, an address handle to the peer, Q_Key "
                    + "0x11111111, 40 bytes of GRH room in each receive; -s at most the port MTU (default 2048); no -m/-c")
            .option((char) 0, "uc", null, "as ibv_uc_pingpong: UC QPs connected by hand (no ACKs: a lost packet loses"
                    + " its message, and the run then times out)")
            .option((char) 0, "srq", null, "ibv_srq_pingpong instead: -q QPs taking their receives from one SRQ"
                    + " (RoCE)")
            .option('q', "num-qp", "NUM", "with --srq: number of QPs to use (default 16, at most 256)")
            .option((char) 0, "timeout", "SEC", "fail after SEC s without progress (default 30); a server waits "
                    + "that long for its client only when given");

    private PingpongCommand() {
    }

    /** Runs {@code jrdma pingpong}; returns the exit code (0 ok, 1 failure, 2 bad usage). */
    public static int run(List<String> args, PrintStream out, PrintStream err) {
        Pingpong.Options o;
        try {
            ArgParser.Parsed p = PARSER.parse(args);
            if (p.help()) {
                out.print(PARSER.usage());
                return 0;
            }
            o = options(p);
        } catch (ArgParser.UsageException e) {
            err.println("jrdma pingpong: " + e.getMessage());
            err.print(PARSER.usage());
            return 2;
        }
        return execute(o, out, err);
    }

    /** Parses a command line (for tests). */
    public static Pingpong.Options parse(String... args) throws ArgParser.UsageException {
        return options(PARSER.parse(List.of(args)));
    }

    static Pingpong.Options options(ArgParser.Parsed p) throws ArgParser.UsageException {
        for (String[] u : new String[][] {{"odp", "-o"}, {"iodp", "-O"}, {"prefetch", "-P"}, {"ts", "-t"},
                {"dm", "-j"}}) {
            if (p.has(u[0])) {
                throw new ArgParser.UsageException("option " + u[1] + "/--" + u[0] + " is not supported by jrdma ("
                        + switch (u[0]) {
                            case "odp", "iodp", "prefetch" -> "its memory is always registered, on-demand paging does"
                                    + " not apply";
                            case "ts" -> "its completions carry no timestamps";
                            default -> "it has no device memory";
                        } + ")");
            }
        }
        List<String> pos = p.positionals();
        if (pos.size() > 1) {
            throw new ArgParser.UsageException("unexpected argument '" + pos.get(1) + "' (give at most one host)");
        }
        String host = pos.isEmpty() ? null : pos.getFirst();
        int port = (int) number(p, "port", 'p', 0, 65535, DEFAULT_PORT);
        if (port == 0 && host != null) {
            throw new ArgParser.UsageException("option -p/--port: a client needs the server's port, not 0");
        }
        int ibPort = (int) number(p, "ib-port", 'i', 1, 255, 1);
        if (p.has("ud") && p.has("uc")) {
            throw new ArgParser.UsageException("options --ud and --uc exclude each other (one QP type per run)");
        }
        QpType type = p.has("ud") ? QpType.UD : p.has("uc") ? QpType.UC : QpType.RC;
        if (type == QpType.UD) {
            for (String[] u : new String[][] {{"mtu", "-m"}, {"chk", "-c"}}) {
                if (p.has(u[0])) {
                    throw new ArgParser.UsageException("option " + u[1] + "/--" + u[0] + " does not apply to --ud"
                            + " (ibv_ud_pingpong has none: a datagram is at most the port MTU, and its receive starts"
                            + " with the GRH)");
                }
            }
        }
        int size = (int) number(p, "size", 's', 1, 1 << 30, type == QpType.UD ? 2048 : 4096);
        int mtu = (int) number(p, "mtu", 'm', 256, 4096, 1024);
        if (Integer.bitCount(mtu) != 1) {
            throw new ArgParser.UsageException("option -m/--mtu: must be 256, 512, 1024, 2048 or 4096, not " + mtu);
        }
        int rx = (int) number(p, "rx-depth", 'r', 1, 1 << 16, 500);
        int iters = (int) number(p, "iters", 'n', 1, Integer.MAX_VALUE, 1000);
        int sl = (int) number(p, "sl", 'l', 0, 15, 0);
        int gid = (int) number(p, "gid-idx", 'g', 0, 255, -1);
        String dev = p.value("ib-dev");
        if (dev != null && dev.isBlank()) {
            throw new ArgParser.UsageException("option -d/--ib-dev: empty device name");
        }
        int timeout = (int) number(p, "timeout", (char) 0, 1, 86_400, DEFAULT_TIMEOUT);
        boolean srq = p.has("srq");
        if (srq && type != QpType.RC) {
            throw new ArgParser.UsageException("option --srq is ibv_srq_pingpong's, which runs RC QPs: not with --ud or --uc");
        }
        if (p.has("num-qp") && !srq) {
            throw new ArgParser.UsageException("option -q/--num-qp is ibv_srq_pingpong's: give it with --srq");
        }
        if (srq && p.has("chk")) {
            throw new ArgParser.UsageException("option -c/--chk is ibv_rc_pingpong's: ibv_srq_pingpong has no -c");
        }
        int numQp = srq ? (int) number(p, "num-qp", 'q', 1, SrqPingpong.MAX_QP, 16) : 0;
        if (srq && numQp > rx) {
            throw new ArgParser.UsageException("rx_depth " + rx + " is too small for " + numQp
                    + " QPs -- must have at least one receive per QP (give -r " + numQp + " or more)");
        }
        return new Pingpong.Options(host, port, dev, ibPort, size, mtu, rx, iters, sl, p.has("events"), gid,
                p.has("chk"), timeout, p.has("timeout"), type, numQp);
    }

    /** Parses a number as {@code strtoul(s, NULL, 0)} would (decimal, 0x hex, 0 octal), strictly. */
    public static long number(ArgParser.Parsed p, String name, char shortName, long min, long max, long dflt)
            throws ArgParser.UsageException {
        if (!p.has(name)) {
            return dflt;
        }
        String v = p.value(name).trim();
        String opt = (shortName != 0 ? "-" + shortName + "/" : "") + "--" + name;
        long n;
        try {
            n = parseC(v);
        } catch (NumberFormatException e) {
            throw new ArgParser.UsageException("option " + opt + ": '" + v + "' is not a number");
        }
        if (n < min || n > max) {
            throw new ArgParser.UsageException("option " + opt + ": " + n + " is outside " + min + ".." + max);
        }
        return n;
    }

    /** @return a C integer literal's value: decimal, {@code 0x} hexadecimal or {@code 0} octal */
    public static long parseC(String v) {
        boolean neg = v.startsWith("-");
        String s = neg || v.startsWith("+") ? v.substring(1) : v;
        long n;
        if (s.startsWith("0x") || s.startsWith("0X")) {
            n = Long.parseLong(s.substring(2), 16);
        } else if (s.length() > 1 && s.startsWith("0")) {
            n = Long.parseLong(s.substring(1), 8);
        } else {
            n = Long.parseLong(s);
        }
        if (s.isEmpty() || s.startsWith("-") || s.startsWith("+")) {
            throw new NumberFormatException(v);
        }
        return neg ? -n : n;
    }

    /** Runs parsed options; returns the exit code. */
    public static int execute(Pingpong.Options o, PrintStream out, PrintStream err) {
        return execute(o, out, err, port -> { });
    }

    /** As {@link #execute(Pingpong.Options, PrintStream, PrintStream)}, telling a server's port to {@code listening}. */
    public static int execute(Pingpong.Options o, PrintStream out, PrintStream err, IntConsumer listening) {
        try {
            return o.numQp() > 0 ? new SrqPingpong(o, out, err, listening).run()
                    : new Pingpong(o, out, err, listening).run();
        } catch (DeviceChoice.NoSuchDevice e) {
            err.println("jrdma pingpong: " + e.getMessage());
            return 2;
        } catch (Pingpong.BadValue e) {
            err.println("jrdma pingpong: " + e.getMessage());
            return 2;
        } catch (SideChannelException | Pingpong.Failure | RdmaException e) {
            out.flush();
            err.println("jrdma pingpong: " + e.getMessage());
            return 1;
        }
    }
}

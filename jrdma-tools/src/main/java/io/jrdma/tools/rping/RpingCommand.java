package io.jrdma.tools.rping;

import io.jrdma.tools.ArgParser;
import io.jrdma.tools.DeviceChoice;
import io.jrdma.tools.pingpong.PingpongCommand;
import io.jrdma.verbs.RdmaException;

import java.io.PrintStream;
import java.net.InetAddress;
import java.net.UnknownHostException;
import java.util.List;
import java.util.function.IntConsumer;

/**
 * {@code jrdma rping}: rdma-core's {@code rping}, flag for flag and message for message, so that
 * either end can be the Linux tool over iWARP (Linux siw) or RoCE (Linux rxe) through rdma_cm.
 */
public final class RpingCommand {
    static final ArgParser PARSER = new ArgParser("""
            usage: jrdma rping -s [-vVdP] [-a address] [-p port] [-C count] [-S size]
                   jrdma rping -c [-vVd] -a address [-p port] [-C count] [-S size]

            As rping (rdma-core, librdmacm examples): the client advertises a buffer, the server READs
            it, the client advertises a second one, the server WRITEs the data back into it, and each
            step is announced with a SEND. Either end can be rping, e.g. over Linux SoftiWARP or soft-RoCE.
            The device is the iWARP device of the address unless -D names one; -D roce_<interface> runs
            rdma_cm over RoCE (the InfiniBand CM, as rping on Linux rxe).""")
            .option('s', "server", null, "run as the server")
            .option('c', "client", null, "run as the client")
            .option('a', "addr", "ADDRESS", "the server's address (a server binds to it; default: all)")
            .option('I', "src-addr", "ADDRESS", "source address (accepted; the route picks it)")
            .option('p', "port", "PORT", "port (default 7174)")
            .option('C', "count", "COUNT", "number of pings (default 0: until interrupted)")
            .option('S', "size", "SIZE", "ping buffer size (default 64, " + Rping.MIN_SIZE + ".." + Rping.MAX_SIZE + ")")
            .option('v', "verbose", null, "print the ping data")
            .option('V', "validate", null, "the client checks that the data came back unchanged")
            .option('d', "debug", null, "debug output (on standard error)")
            .option('P', "persistent", null, "the server serves one client after another")
            .option('q', "qp-only", null, "rping's -q (create only the QP): not supported")
            .option('D', "device", "DEV", "use device DEV (jrdma; default: the iWARP device of the address; roce_<if>: over RoCE)")
            .option((char) 0, "timeout", "SEC", "fail after SEC s without progress (default 30); a server waits "
                    + "that long for its client only when given");

    private RpingCommand() {
    }

    /** Runs {@code jrdma rping}; returns the exit code (0 ok, 1 failure, 2 bad usage). */
    public static int run(List<String> args, PrintStream out, PrintStream err) {
        return run(args, out, err, port -> { });
    }

    /** As {@link #run(List, PrintStream, PrintStream)}, telling a server's port to {@code listening}. */
    public static int run(List<String> args, PrintStream out, PrintStream err, IntConsumer listening) {
        Rping.Options o;
        try {
            ArgParser.Parsed p = PARSER.parse(args);
            if (p.help()) {
                out.print(PARSER.usage());
                return 0;
            }
            o = options(p);
        } catch (ArgParser.UsageException e) {
            err.println("jrdma rping: " + e.getMessage());
            err.print(PARSER.usage());
            return 2;
        } catch (Rping.Failure e) { // a host name that does not resolve: one line, as perf and pingpong
            err.println("jrdma rping: " + e.getMessage());
            return 1;
        }
        try {
            return new Rping(o, out, err, listening).run();
        } catch (DeviceChoice.NoSuchDevice e) {
            err.println("jrdma rping: " + e.getMessage());
            return 2;
        } catch (Rping.Failure | RdmaException e) {
            out.flush();
            err.println("jrdma rping: " + e.getMessage());
            return 1;
        }
    }

    static Rping.Options options(ArgParser.Parsed p) throws ArgParser.UsageException {
        if (p.has("server") == p.has("client")) {
            throw new ArgParser.UsageException("give one of -s (server) and -c (client)");
        }
        if (p.has("qp-only")) {
            throw new ArgParser.UsageException("option -q/--qp-only is not supported by jrdma (it connects through its "
                    + "connection manager only)");
        }
        if (!p.positionals().isEmpty()) {
            throw new ArgParser.UsageException("unexpected argument '" + p.positionals().getFirst() + "'");
        }
        boolean server = p.has("server");
        InetAddress addr = null;
        if (p.has("addr")) {
            try {
                addr = InetAddress.getByName(p.value("addr"));
            } catch (UnknownHostException e) {
                throw new Rping.Failure("cannot resolve host '" + p.value("addr") + "'");
            }
        } else if (!server) {
            throw new ArgParser.UsageException("a client needs the server's address (-a)");
        }
        int port = (int) PingpongCommand.number(p, "port", 'p', server ? 0 : 1, 65535, Rping.DEFAULT_PORT);
        int count = (int) PingpongCommand.number(p, "count", 'C', 0, Integer.MAX_VALUE, 0);
        int size = (int) PingpongCommand.number(p, "size", 'S', Rping.MIN_SIZE, Rping.MAX_SIZE, 64);
        int timeout = (int) PingpongCommand.number(p, "timeout", (char) 0, 1, 86_400, 30);
        String dev = p.value("device");
        if (dev != null && dev.isBlank()) {
            throw new ArgParser.UsageException("option -D/--device: empty device name");
        }
        return new Rping.Options(server, addr, port, count, size, p.has("verbose"), p.has("validate"), p.has("debug"),
                p.has("persistent"), dev, timeout, p.has("timeout"));
    }
}

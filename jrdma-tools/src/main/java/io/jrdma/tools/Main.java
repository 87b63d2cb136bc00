package io.jrdma.tools;

import io.jrdma.tools.perf.PerfCommand;
import io.jrdma.tools.pingpong.PingpongCommand;
import io.jrdma.tools.rping.RpingCommand;

import java.io.PrintStream;
import java.util.Arrays;
import java.util.List;

/** The {@code jrdma} command: dispatches to its subcommands. */
public final class Main {
    static final String USAGE = """
            usage: jrdma <command> [options]

            commands:
              devices [-v]                 list the RDMA devices, their ports and GID tables (like ibv_devinfo)
              perf <test> [options] [host] perftest's benchmarks: write_bw write_lat read_bw read_lat
                                           send_bw send_lat atomic_bw atomic_lat (ib_<test> can be the peer)
              pingpong [options] [host]    ibv_rc_pingpong, with --uc/--ud ibv_uc_pingpong/ibv_ud_pingpong
                                           (the rdma-core tool can be the peer)
              rping -s|-c [options]        rping (rdma-core's librdmacm example; Linux siw or rxe can be the peer)
              rdma_server, rdma_client     librdmacm's rdma_server/rdma_client examples (the Linux ones can be the peer)
              pcap FILE [--from IP]        check the RoCEv2 ICRC of every packet in a capture
              stat [--watch] [--pid P]     the counters of every open jrdma device context of this user
                                           (like rdma statistic), read from their counters files

            Run 'jrdma <command> --help' for the options of a command; 'jrdma --version' (-V) prints
            the version of jrdma and of the JDK it runs on.
            """;

    private Main() {
    }

    public static void main(String[] args) {
        Progress.installInterruptHandler(System.err);
        int rc = run(args, System.out, System.err);
        System.out.flush();
        System.err.flush();
        Progress.exit(rc); // or, after Ctrl-C, waits for its handler to exit with 130
    }

    /** @return jrdma's version (from the build: Maven's project version), or "unknown" outside a build */
    static String version() {
        Module m = Main.class.getModule();
        if (m.getDescriptor() != null && m.getDescriptor().rawVersion().isPresent()) {
            return m.getDescriptor().rawVersion().get(); // the module path: javac's --module-version
        }
        try (var in = Main.class.getResourceAsStream("version.properties")) {
            if (in != null) {
                var p = new java.util.Properties();
                p.load(in);
                String v = p.getProperty("version", "");
                if (!v.isEmpty() && !v.startsWith("$")) {
                    return v;
                }
            }
        } catch (java.io.IOException e) {
            // fall through
        }
        return "unknown";
    }

    /** What {@code jrdma --version} prints: jrdma's version, then the JDK's version, vendor and home. */
    static String versionLine() {
        return "jrdma " + version() + System.lineSeparator()
                + "JDK " + System.getProperty("java.runtime.version") + " (" + System.getProperty("java.vm.vendor")
                + ", " + System.getProperty("java.home") + ")";
    }

    /** Runs a command line; returns the exit code (0 ok, 1 failure, 2 bad usage). */
    public static int run(String[] args, PrintStream out, PrintStream err) {
        if (args.length == 0) {
            err.println("jrdma: missing command");
            err.print(USAGE);
            return 2;
        }
        List<String> rest = Arrays.asList(args).subList(1, args.length);
        Progress.start("jrdma " + args[0]);
        try {
            return dispatch(args, rest, out, err);
        } finally {
            Progress.done();
        }
    }

    private static int dispatch(String[] args, List<String> rest, PrintStream out, PrintStream err) {
        return switch (args[0]) {
            case "-h", "--help", "help" -> {
                out.print(USAGE);
                yield 0;
            }
            case "-V", "--version", "version" -> {
                out.println(versionLine());
                yield 0;
            }
            case "devices" -> DevicesCommand.run(rest, out, err);
            case "perf" -> PerfCommand.run(rest, out, err);
            case "pingpong" -> PingpongCommand.run(rest, out, err);
            case "rping" -> RpingCommand.run(rest, out, err);
            case "rdma_server" -> io.jrdma.tools.rdmacm.RdmaCmExampleCommand.run(true, rest, out, err);
            case "rdma_client" -> io.jrdma.tools.rdmacm.RdmaCmExampleCommand.run(false, rest, out, err);
            case "pcap" -> PcapCommand.run(rest, out, err);
            case "stat" -> StatCommand.run(rest, out, err);
            case "aot-training" -> AotTraining.run(rest, out, err); // the launcher's, not in the usage
            default -> {
                err.println("jrdma: unknown command '" + args[0] + "'");
                err.print(USAGE);
                yield 2;
            }
        };
    }
}

package io.jrdma.tools;

import io.jrdma.tools.perf.PerfCommand;

import java.io.OutputStream;
import java.io.PrintStream;
import java.util.List;

/**
 * {@code jrdma aot-training}: the run the {@code jrdma} launcher records to make the JVM's AOT cache
 * ({@code -XX:AOTCacheOutput}, JEP 483/514): what every tool does at its start, once, with its output discarded:
 * list the devices of every provider with their attributes ({@code devices -v}) and run a short {@code perf}
 * server and client in one process ({@code perf write_bw --loopback}: the perftest exchange over TCP, a soft-RoCE
 * context, the table). The classes it loads and links are then read from the cache by later runs.
 */
final class AotTraining {
    private AotTraining() {
    }

    /** @return 0; a step that fails (no device of some provider here) only records less */
    static int run(List<String> args, PrintStream out, PrintStream err) {
        if (!args.isEmpty()) {
            err.println("jrdma aot-training: takes no arguments (the jrdma launcher runs it to make its AOT cache)");
            return 2;
        }
        PrintStream none = new PrintStream(OutputStream.nullOutputStream());
        DevicesCommand.run(List.of("-v"), none, none);
        PerfCommand.run(List.of("write_bw", "--loopback", "-s", "4096", "-n", "200"), none, none);
        return 0;
    }
}

/**
 * The jrdma command-line tool: {@code jrdma devices} (like {@code ibv_devinfo}) and
 * {@code jrdma perf} (perftest-style benchmarks over the verbs API).
 */
module io.jrdma.tools {
    requires java.management; // jrdma perf --server reports its own resources after each client
    requires io.jrdma.verbs;
    requires io.jrdma.engine;
    requires io.jrdma.rdmacore;
    requires io.jrdma.wire;
    requires jdk.unsupported; // sun.misc.Signal: Ctrl-C says what it interrupted (Progress)
}

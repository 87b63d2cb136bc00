package io.jrdma.bench;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.BufferedReader;
import java.io.ByteArrayOutputStream;
import java.io.File;
import java.io.IOException;
import java.io.PrintStream;
import java.net.URISyntaxException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/** Benchmark programs started as JVMs of their own, as bench/compare.sh starts them; {@link #close} kills what is left. */
final class BenchProcesses implements AutoCloseable {
    private final Class<?> main;
    private final String classPath;
    private final List<Process> started = new ArrayList<>();

    /** @param alsoFrom classes whose code sources (jars or class directories) the program needs besides its own */
    BenchProcesses(Class<?> main, Class<?>... alsoFrom) throws URISyntaxException {
        this.main = main;
        StringBuilder cp = new StringBuilder(codeSource(main).toString());
        for (Class<?> c : alsoFrom) {
            cp.append(File.pathSeparator).append(codeSource(c));
        }
        this.classPath = cp.toString();
    }

    private static Path codeSource(Class<?> c) throws URISyntaxException {
        return Path.of(c.getProtectionDomain().getCodeSource().getLocation().toURI());
    }

    /** Starts the program with {@code args}, its standard error merged into its standard output. */
    Process start(String... args) throws IOException {
        List<String> cmd = new ArrayList<>(List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "-cp", classPath, main.getName()));
        cmd.addAll(List.of(args));
        Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
        started.add(p);
        return p;
    }

    /**
     * Runs the program with {@code args} to its end, 30 s at most, and checks that it failed (exit code 1, as
     * {@code Result.fail}). @return its output, for the caller's check of what it said
     */
    String failing(String... args) throws IOException, InterruptedException {
        Process p = start(args);
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertTrue(p.waitFor(30, TimeUnit.SECONDS), out);
        assertEquals(1, p.exitValue(), out);
        return out;
    }

    /**
     * Checks a latency program's result line ({@code Result.latency}): its name, size and iterations, and
     * 0 &lt; min &le; median &le; p99.
     */
    static void assertLatency(String result, String name, int size, int iters) {
        Matcher m = Pattern.compile("^RESULT " + Pattern.quote(name)
                + " size=" + size + " iters=" + iters + " median_us=([0-9.]+) min_us=([0-9.]+) p99_us=([0-9.]+)").matcher(result);
        assertTrue(m.find(), "a result of " + name + ", " + size + " B, " + iters + " iterations: " + result);
        double median = Double.parseDouble(m.group(1));
        double min = Double.parseDouble(m.group(2));
        assertTrue(min > 0 && min <= median && median <= Double.parseDouble(m.group(3)), result);
    }

    /** Something to run in this JVM whose standard output a test reads ({@link #printedBy}). */
    interface Action {
        void run() throws Exception;
    }

    /** @return what {@code action} printed on {@link System#out}, stripped (it is restored after, thrown or not) */
    static String printedBy(Action action) throws Exception {
        PrintStream was = System.out;
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        System.setOut(new PrintStream(out, true, StandardCharsets.UTF_8));
        try {
            action.run();
        } finally {
            System.setOut(was);
        }
        return out.toString(StandardCharsets.UTF_8).strip();
    }

    /** Reads lines until one starts with {@code prefix}; fails at the end of the output (every program here ends by its own timeout). */
    static String awaitLine(BufferedReader r, String prefix, StringBuilder seen) throws IOException {
        String line;
        while ((line = r.readLine()) != null) {
            seen.append(line).append('\n');
            if (line.startsWith(prefix)) {
                return line;
            }
        }
        throw new AssertionError("no line starting with '" + prefix + "'; output: " + seen);
    }

    @Override
    public void close() {
        for (Process p : started) {
            p.destroyForcibly();
        }
    }
}

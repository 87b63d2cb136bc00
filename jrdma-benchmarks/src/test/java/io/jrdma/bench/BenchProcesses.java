package io.jrdma.bench;

import java.io.BufferedReader;
import java.io.File;
import java.io.IOException;
import java.net.URISyntaxException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

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

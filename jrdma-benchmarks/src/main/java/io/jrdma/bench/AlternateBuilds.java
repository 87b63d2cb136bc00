package io.jrdma.bench;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.lang.reflect.Method;
import java.net.URL;
import java.net.URLClassLoader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.stream.Stream;

/**
 * Two or more builds of jrdma in one JVM, each in a class loader of its own, running the same benchmark's
 * {@code main} in turn, run after run (A B, then B A, ...): an A/B whose runs sit seconds apart in the same
 * process, where separate processes on a shared host move by more from run to run than a change of a few
 * percent. Each build is a directory that holds {@code jrdma-benchmarks.jar} and {@code lib/} (a copy of a
 * build's {@code jrdma-benchmarks/target}). Every build's code is compiled by the same JIT in the same
 * process, so a run also shares the code cache and the heap with the other builds' runs.
 *
 * <pre>AlternateBuilds builds=DIR_A,DIR_B [runs=6] [main=io.jrdma.bench.ShmOpCost] -- ARGS...</pre>
 * runs {@code main} with {@code ARGS} {@code runs} times per build, prints each {@code RESULT} line of each
 * run prefixed with the run's number and the build's directory name, and at the end one line per figure and
 * build other than the first: {@code RATIO name=... build=... median=... min=... max=...}, the ratios of that
 * build's median to the first build's in the same run.
 */
public final class AlternateBuilds {
    private AlternateBuilds() {
    }

    public static void main(String[] argv) throws Exception {
        int sep = Arrays.asList(argv).indexOf("--");
        if (sep < 0) {
            Result.fail("usage: AlternateBuilds builds=DIR_A,DIR_B [runs=6] [main=CLASS] -- ARGS... (no -- given)");
            return;
        }
        Args args = new Args(Arrays.copyOf(argv, sep));
        String[] benchArgs = Arrays.copyOfRange(argv, sep + 1, argv.length);
        String[] builds = args.str("builds", "").split(",");
        int runs = (int) args.num("runs", 6);
        String main = args.str("main", "io.jrdma.bench.ShmOpCost");
        if (builds.length < 2) {
            Result.fail("builds= needs two or more directories, each with jrdma-benchmarks.jar and lib/");
            return;
        }
        Method[] mains = new Method[builds.length];
        for (int b = 0; b < builds.length; b++) {
            mains[b] = loader(Path.of(builds[b])).loadClass(main).getMethod("main", String[].class);
        }
        List<String> names = new ArrayList<>();
        double[][][] medians = new double[builds.length][runs][]; // [build][run][figure]
        PrintStream out = System.out;
        for (int r = 0; r < runs; r++) {
            for (int k = 0; k < builds.length; k++) {
                int b = r % 2 == 0 ? k : builds.length - 1 - k; // A B, B A, ...
                ByteArrayOutputStream captured = new ByteArrayOutputStream();
                System.setOut(new PrintStream(captured, true, StandardCharsets.UTF_8));
                ClassLoader before = Thread.currentThread().getContextClassLoader();
                Thread.currentThread().setContextClassLoader(mains[b].getDeclaringClass().getClassLoader());
                try {
                    mains[b].invoke(null, (Object) benchArgs);
                } finally {
                    Thread.currentThread().setContextClassLoader(before);
                    System.setOut(out);
                }
                medians[b][r] = new double[64];
                Arrays.fill(medians[b][r], Double.NaN);
                for (String line : captured.toString(StandardCharsets.UTF_8).split("\n")) {
                    if (!line.startsWith("RESULT")) {
                        continue;
                    }
                    out.println("RUN " + r + " build=" + Path.of(builds[b]).getFileName() + " " + line);
                    String name = field(line, "name");
                    String median = field(line, "median");
                    if (name == null || median == null) {
                        continue;
                    }
                    int i = names.indexOf(name);
                    if (i < 0) {
                        names.add(name);
                        i = names.size() - 1;
                    }
                    medians[b][r][i] = Double.parseDouble(median);
                }
            }
        }
        for (int i = 0; i < names.size(); i++) {
            for (int b = 1; b < builds.length; b++) {
                double[] ratios = new double[runs];
                int n = 0;
                for (int r = 0; r < runs; r++) {
                    double v = medians[b][r][i] / medians[0][r][i];
                    if (!Double.isNaN(v)) {
                        ratios[n++] = v;
                    }
                }
                if (n == 0) {
                    continue;
                }
                double[] v = Arrays.copyOf(ratios, n);
                Arrays.sort(v);
                out.printf(Locale.ROOT, "RATIO name=%s build=%s median=%.3f min=%.3f max=%.3f%n", names.get(i),
                        Path.of(builds[b]).getFileName(), v[n / 2], v[0], v[n - 1]);
            }
        }
    }

    /** @return the value of {@code key=} in a RESULT line, or null */
    private static String field(String line, String key) {
        for (String part : line.split(" ")) {
            if (part.startsWith(key + "=")) {
                return part.substring(key.length() + 1);
            }
        }
        return null;
    }

    /** A class loader of a build: its jrdma-benchmarks.jar, then lib/'s jars, over the platform loader. */
    private static URLClassLoader loader(Path dir) throws Exception {
        Path jar = dir.resolve("jrdma-benchmarks.jar");
        Path lib = dir.resolve("lib");
        if (!Files.isRegularFile(jar) || !Files.isDirectory(lib)) {
            throw new IllegalArgumentException(dir + " is not a build: it needs jrdma-benchmarks.jar and lib/ (copy a"
                    + " build's jrdma-benchmarks/target)");
        }
        List<URL> urls = new ArrayList<>();
        urls.add(jar.toUri().toURL());
        try (Stream<Path> s = Files.list(lib)) {
            for (Path p : s.sorted().toList()) {
                urls.add(p.toUri().toURL());
            }
        }
        return new URLClassLoader(urls.toArray(new URL[0]), ClassLoader.getPlatformClassLoader());
    }
}

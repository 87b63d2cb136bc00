package io.jrdma.tools;

import org.junit.jupiter.api.Test;

import java.io.ByteArrayOutputStream;
import java.io.InputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * No silent fallbacks: {@code jrdma devices} in a JVM without {@code --enable-native-access} and the
 * {@code --add-opens} logs a WARNING once per transport (System.Logger, printed by the JDK's default
 * logging on stderr) and prints a {@code limitation:} line per device, with and without {@code -v}.
 */
class FallbackReportTest {
    /** Runs the CLI in a JVM of its own on this class path with {@code jvmFlags}; returns {rc, stdout, stderr}. */
    static String[] runChild(List<String> jvmFlags, String... args) throws Exception {
        List<String> cmd = new ArrayList<>();
        cmd.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
        cmd.addAll(jvmFlags);
        cmd.add("-cp");
        cmd.add(System.getProperty("java.class.path"));
        cmd.add(Main.class.getName());
        cmd.addAll(List.of(args));
        Process p = new ProcessBuilder(cmd).start();
        CompletableFuture<String> err = CompletableFuture.supplyAsync(() -> drain(p.getErrorStream()));
        String out = drain(p.getInputStream());
        assertTrue(p.waitFor(30, TimeUnit.SECONDS), "the child JVM did not end within 30 s");
        return new String[] {Integer.toString(p.exitValue()), out, err.get(30, TimeUnit.SECONDS)};
    }

    private static String drain(InputStream in) {
        try (in) {
            ByteArrayOutputStream b = new ByteArrayOutputStream();
            in.transferTo(b);
            return b.toString(StandardCharsets.UTF_8);
        } catch (java.io.IOException e) {
            throw new java.io.UncheckedIOException(e);
        }
    }

    private static int count(String s, String what) {
        int n = 0;
        for (int i = s.indexOf(what); i >= 0; i = s.indexOf(what, i + 1)) {
            n++;
        }
        return n;
    }

    @Test
    void withoutNativeAccessRoceSaysItOnceLogsItAndListsIt() throws Exception {
        String[] r = runChild(List.of(), "devices", "-v", "-d", "roce_lo");
        String out = r[1];
        String err = r[2];
        assertEquals("0", r[0], out + err);
        // the log record: once, a WARNING, what is lost, the flag to add
        assertEquals(1, count(err, "soft-RoCE devices fall back"), err);
        assertTrue(err.contains("WARNING: soft-RoCE devices fall back: UDP through DatagramChannel"), err);
        assertTrue(err.contains("rxe peers are not heard over IPv6"), err);
        assertTrue(err.contains("(java --enable-native-access=ALL-UNNAMED)"), err);
        // the port attribute, as jrdma devices -v shows it
        assertTrue(out.contains("\t\t\tlimitation:\t\tUDP through DatagramChannel instead of native sockets"), out);
        assertTrue(out.contains("--enable-native-access=ALL-UNNAMED"), out);
    }

    @Test
    void withoutTheFlagsIwarpSaysItAndNamesBothFlags() throws Exception {
        String[] r = runChild(List.of(), "devices", "-v", "-d", "iwarp_lo");
        String out = r[1];
        String err = r[2];
        assertEquals("0", r[0], out + err);
        assertEquals(1, count(err, "soft-iWARP devices fall back"), err);
        assertTrue(err.contains("WARNING: soft-iWARP devices fall back: TCP through SocketChannel"), err);
        assertTrue(err.contains("--enable-native-access=ALL-UNNAMED"), err);
        assertTrue(err.contains("--add-opens java.base/sun.nio.ch=ALL-UNNAMED"), err);
        assertTrue(out.contains("\t\t\tlimitation:\t\tTCP through SocketChannel instead of writev/readv"), out);
    }

    @Test
    void theDeviceListWithoutOpeningShowsItToo() throws Exception {
        String[] r = runChild(List.of("--enable-native-access=ALL-UNNAMED"), "devices", "-d", "iwarp_lo");
        String out = r[1];
        assertEquals("0", r[0], out + r[2]);
        // native access alone: UDP is fine, the iWARP streams still miss the add-opens
        assertTrue(out.contains("\t\t\tlimitation:\t\tTCP through SocketChannel"), out);
        assertTrue(out.contains("--add-opens java.base/sun.nio.ch=ALL-UNNAMED"), out);
        assertFalse(out.contains("--enable-native-access"), out);
        String[] roce = runChild(List.of("--enable-native-access=ALL-UNNAMED"), "devices", "-d", "roce_lo");
        assertFalse(roce[1].contains("limitation:"), roce[1]);
    }

    @Test
    void withTheFlagsThereIsNoLimitationLine() {
        // this JVM runs with both flags (the build's surefire argLine)
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        int rc = Main.run(new String[] {"devices", "-v", "-d", "roce_lo"}, new PrintStream(out, true, StandardCharsets.UTF_8),
                new PrintStream(err, true, StandardCharsets.UTF_8));
        assertEquals(0, rc, err.toString(StandardCharsets.UTF_8));
        assertFalse(out.toString(StandardCharsets.UTF_8).contains("limitation:"), out.toString(StandardCharsets.UTF_8));
        rc = Main.run(new String[] {"devices", "-v", "-d", "iwarp_lo"}, new PrintStream(out, true, StandardCharsets.UTF_8),
                new PrintStream(err, true, StandardCharsets.UTF_8));
        assertEquals(0, rc, err.toString(StandardCharsets.UTF_8));
        assertFalse(out.toString(StandardCharsets.UTF_8).contains("limitation:"), out.toString(StandardCharsets.UTF_8));
    }
}

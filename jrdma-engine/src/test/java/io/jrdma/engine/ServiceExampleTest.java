package io.jrdma.engine;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import javax.tools.JavaCompiler;
import javax.tools.ToolProvider;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.lang.reflect.Field;
import java.lang.reflect.Method;
import java.net.URL;
import java.net.URLClassLoader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.BooleanSupplier;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The service example (examples/tutorial's hello.Service and hello.Client, docs/guide/service.md),
 * compiled against the engine and run in this JVM, so {@code ./mvnw verify} proves it works:
 * a client served and departed (its resources freed), a client staying, one rejected at the
 * bound, and the service's shutdown disconnecting the staying client. examples/run-tutorial.sh
 * runs it again as separate processes, with a client killed by SIGKILL.
 */
@Timeout(value = 90, unit = TimeUnit.SECONDS)
class ServiceExampleTest {
    private static final Path ROOT = Path.of(System.getProperty("user.dir")).resolve("..");

    @Test
    void theServiceServesClientsBoundsThemSeesThemGoAndStopsCleanly(@TempDir Path dir) throws Exception {
        Path src = ROOT.resolve("examples/tutorial/src/main/java/hello");
        Path classes = Files.createDirectories(dir.resolve("classes"));
        JavaCompiler javac = ToolProvider.getSystemJavaCompiler();
        assertNotNull(javac, "the tests need a JDK (javax.tools), not a JRE");
        String cp = System.getProperty("surefire.test.class.path", System.getProperty("java.class.path"));
        ByteArrayOutputStream diagnostics = new ByteArrayOutputStream();
        int rc = javac.run(null, diagnostics, diagnostics, "-d", classes.toString(), "-cp", cp,
                src.resolve("Service.java").toString(), src.resolve("Client.java").toString());
        assertEquals(0, rc, "examples/tutorial's Service.java and Client.java do not compile:\n"
                + diagnostics.toString(StandardCharsets.UTF_8));

        PrintStream old = System.out;
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        Path portFile = dir.resolve("port");
        try (URLClassLoader loader = new URLClassLoader(new URL[] {classes.toUri().toURL()}, getClass().getClassLoader())) {
            System.setOut(new PrintStream(out, true, StandardCharsets.UTF_8));
            Class<?> service = loader.loadClass("hello.Service");
            Method client = loader.loadClass("hello.Client").getMethod("main", String[].class);
            AtomicReference<Throwable> serviceFailure = new AtomicReference<>();
            AtomicReference<Throwable> bobFailure = new AtomicReference<>();
            Thread serviceThread = Thread.ofPlatform().name("service").start(() -> run(service, serviceFailure,
                    "--port-file", portFile.toString(), "--max-clients", "1"));
            Thread bob = null;
            try {
                await(() -> out.toString(StandardCharsets.UTF_8).contains("listening, at most 1 clients"), "the service to listen");
                String port = Files.readString(portFile).trim();

                client.invoke(null, (Object) new String[] {port, "alice"});
                await(() -> out.toString(StandardCharsets.UTF_8).contains("client 1 freed\n"), "alice's departure");

                bob = Thread.ofPlatform().name("bob").start(() -> {
                    try {
                        client.invoke(null, (Object) new String[] {port, "bob", "--stay"});
                    } catch (Throwable t) {
                        bobFailure.set(t);
                    }
                });
                await(() -> out.toString(StandardCharsets.UTF_8).contains("bob: staying\n"), "bob served");
                client.invoke(null, (Object) new String[] {port, "carol"});    // rejected: 1 client at most
            } finally {
                Field running = service.getDeclaredField("running");
                running.setAccessible(true);
                running.setBoolean(null, false);                           // what the SIGTERM hook does
                serviceThread.join(20_000);
                if (bob != null) {
                    bob.join(20_000);
                }
                System.setOut(old);
            }
            assertFalse(serviceThread.isAlive(), "the service did not stop within 20 s");
            assertFalse(bob.isAlive(), "bob was not disconnected within 20 s of the service's stop");
            assertNull(serviceFailure.get(), () -> "the service failed: " + serviceFailure.get());
            assertNull(bobFailure.get(), () -> "bob failed: " + bobFailure.get());
        }
        // the service and the clients print from their own threads: each one's lines in order
        String text = out.toString(StandardCharsets.UTF_8);
        for (String name : new String[] {"alice", "bob"}) {
            inOrder(text, name + ": connected, a region of 4096 bytes", name + ": FETCH_ADD 1 returned 0",
                    name + ": FETCH_ADD 1 returned 1", name + ": FETCH_ADD 1 returned 2", name + ": READ counter 3",
                    name + ": reply: status: counter 3, note 'hello from " + name + "'");
        }
        inOrder(text, "alice: done", "bob: staying", "carol: rejected: busy: 1 clients",
                "bob: the service disconnected", "bob: done");
        inOrder(text, "listening, at most 1 clients", "client 1 connected",
                "client 1: status: counter 3, note 'hello from alice'", "client 1 departed", "client 1 freed",
                "client 2 connected", "client 2: status: counter 3, note 'hello from bob'",
                "request rejected: 1 clients already", "stopping: disconnecting the clients left: 1",
                "stopped after 2 clients");
    }

    /** Each line appears in {@code text}, whole, after the one before it. */
    private static void inOrder(String text, String... lines) {
        int at = 0;
        for (String line : lines) {
            int i = ("\n" + text).indexOf("\n" + line + "\n", at);
            assertTrue(i >= 0, () -> "no line '" + line + "' after the lines before it in:\n" + text);
            at = i + line.length() + 1;
        }
    }

    private static void run(Class<?> main, AtomicReference<Throwable> failure, String... args) {
        try {
            main.getMethod("main", String[].class).invoke(null, (Object) args);
        } catch (Throwable t) {
            failure.set(t);
        }
    }

    /** Waits for a condition for at most 20 s. */
    private static void await(BooleanSupplier condition, String what) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
        while (!condition.getAsBoolean()) {
            if (System.nanoTime() > deadline) {
                throw new AssertionError("no " + what + " within 20 s");
            }
            Thread.sleep(10);
        }
    }
}

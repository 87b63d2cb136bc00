package io.jrdma.engine;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import javax.tools.JavaCompiler;
import javax.tools.ToolProvider;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.net.URL;
import java.net.URLClassLoader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;

/**
 * The README's tutorial is examples/tutorial's Hello.java, verbatim but for its package line; this
 * test compiles that file against the engine, runs it, and checks its output against the example's
 * expected-output.txt, so {@code ./mvnw verify} proves the tutorial works (examples/run-tutorial.sh
 * proves it again as a separate Maven project, on the class path and the module path).
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class TutorialTest {
    private static final Path ROOT = Path.of(System.getProperty("user.dir")).resolve("..");

    @Test
    void tutorialRunsAndMatchesTheReadme(@TempDir Path classes) throws Exception {
        Path tutorial = ROOT.resolve("examples/tutorial");
        Path source = tutorial.resolve("src/main/java/hello/Hello.java");
        String md = Files.readString(ROOT.resolve("README.md"));
        int start = md.indexOf("```java\n") + 8;
        String block = md.substring(start, md.indexOf("```", start));
        assertEquals("package hello;\n\n" + block, Files.readString(source),
                "README's tutorial and examples/tutorial/src/main/java/hello/Hello.java differ: update both");

        JavaCompiler javac = ToolProvider.getSystemJavaCompiler();
        assertNotNull(javac, "the tests need a JDK (javax.tools), not a JRE");
        String cp = System.getProperty("surefire.test.class.path", System.getProperty("java.class.path"));
        ByteArrayOutputStream diagnostics = new ByteArrayOutputStream();
        int rc = javac.run(null, diagnostics, diagnostics, "-d", classes.toString(), "-cp", cp, source.toString());
        assertEquals(0, rc, "examples/tutorial's Hello.java does not compile:\n" + diagnostics.toString(StandardCharsets.UTF_8));

        PrintStream old = System.out;
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        try (URLClassLoader loader = new URLClassLoader(new URL[] {classes.toUri().toURL()}, getClass().getClassLoader())) {
            System.setOut(new PrintStream(out, true, StandardCharsets.UTF_8));
            loader.loadClass("hello.Hello").getMethod("main", String[].class).invoke(null, (Object) new String[0]);
        } finally {
            System.setOut(old);
        }
        String text = out.toString(StandardCharsets.UTF_8);
        assertEquals("SUCCESS: hello, remote memory\nSUCCESS: hello, remote memory\nRECV 64 bytes, imm 42\n", text);
        assertEquals(text, Files.readString(tutorial.resolve("expected-output.txt")),
                "examples/tutorial/expected-output.txt is not what the tutorial prints");
    }
}

package io.jrdma.engine;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The README's tutorial compiles (it is Hello.java), runs, and stays identical to the README and to
 * examples/tutorial (whose expected output it checks too).
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class TutorialTest {
    @Test
    void tutorialRunsAndMatchesTheReadme() throws Exception {
        PrintStream old = System.out;
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        System.setOut(new PrintStream(out, true, StandardCharsets.UTF_8));
        try {
            Hello.main(new String[0]);
        } finally {
            System.setOut(old);
        }
        String text = out.toString(StandardCharsets.UTF_8);
        assertEquals("SUCCESS: hello, remote memory\nSUCCESS: hello, remote memory\nRECV 64 bytes, imm 42\n", text);

        Path readme = Path.of(System.getProperty("user.dir")).resolve("../README.md");
        if (Files.exists(readme)) {
            String md = Files.readString(readme);
            String block = md.substring(md.indexOf("```java\n") + 8, md.indexOf("```", md.indexOf("```java\n") + 8));
            String src = Files.readString(Path.of(System.getProperty("user.dir"))
                    .resolve("src/test/java/io/jrdma/engine/Hello.java"));
            String body = src.substring(src.indexOf("import io.jrdma.verbs.*;"))
                    .replace("/** The README's tutorial, verbatim apart from this comment and the package line; run by TutorialTest. */\n", "");
            assertTrue(block.equals(body), "README tutorial and Hello.java differ: update both");
            // the tutorial project that examples/run-tutorial.sh builds against jrdma's coordinates
            Path tutorial = Path.of(System.getProperty("user.dir")).resolve("../examples/tutorial");
            assertEquals("package hello;\n\n" + block, Files.readString(tutorial.resolve("src/main/java/hello/Hello.java")),
                    "README tutorial and examples/tutorial/src/main/java/hello/Hello.java differ: update both");
            assertEquals(text, Files.readString(tutorial.resolve("expected-output.txt")),
                    "examples/tutorial/expected-output.txt is not what the tutorial prints");
        }
    }
}

package io.jrdma.tools;

import static org.junit.jupiter.api.Assertions.fail;

import java.nio.file.Files;
import java.nio.file.Path;

/**
 * The golden captures in the repository's {@code testdata/pcaps} (see its README), for the
 * tools' tests. The parent pom passes that folder as {@code -Djrdma.pcaps}; {@code
 * -Djrdma.pcaps=DIR} on the Maven command line points the tests at another one. Without the
 * property (a test run from an IDE) the first {@code testdata/pcaps} above the working directory
 * is used.
 */
final class TestCaptures {
    private TestCaptures() {
    }

    /** The capture with this name; fails the calling test if it is absent. */
    static Path path(String name) {
        String prop = System.getProperty("jrdma.pcaps");
        Path dir = null;
        if (prop != null && !prop.isBlank()) {
            dir = Path.of(prop).toAbsolutePath().normalize();
        } else {
            for (Path p = Path.of(System.getProperty("user.dir")).toAbsolutePath(); p != null; p = p.getParent()) {
                if (Files.isDirectory(p.resolve("testdata/pcaps"))) {
                    dir = p.resolve("testdata/pcaps");
                    break;
                }
            }
        }
        if (dir == null || !Files.isDirectory(dir)) {
            fail("golden capture folder not found: " + (dir != null ? dir : "no testdata/pcaps above "
                    + System.getProperty("user.dir")) + " (the repository's testdata/pcaps; -Djrdma.pcaps=DIR)");
        }
        Path file = dir.resolve(name);
        if (!Files.isRegularFile(file)) {
            fail("golden capture missing: " + file);
        }
        return file;
    }
}

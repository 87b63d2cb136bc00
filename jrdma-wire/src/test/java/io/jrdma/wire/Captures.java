package io.jrdma.wire;

import static org.junit.jupiter.api.Assertions.fail;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.stream.Stream;

/**
 * Where the golden captures are: the repository's {@code testdata/pcaps} (see its README). The
 * parent pom passes that folder to every test JVM as {@code -Djrdma.pcaps}; {@code
 * -Djrdma.pcaps=DIR} on the Maven command line points the tests at another folder instead.
 */
public final class Captures {
    private Captures() {
    }

    /** System property naming the capture folder. */
    public static final String PROPERTY = "jrdma.pcaps";

    /** The capture folder, relative to the repository root. */
    static final String IN_REPOSITORY = "testdata/pcaps";

    /**
     * The capture folder: {@code -Djrdma.pcaps=DIR} (set by the build), else {@code
     * testdata/pcaps} in the first parent of the working directory that has one (a test run
     * from an IDE); fails the calling test if there is none.
     */
    public static Path folder() {
        String prop = System.getProperty(PROPERTY);
        Path dir;
        if (prop != null && !prop.isBlank()) {
            dir = Path.of(prop).toAbsolutePath().normalize();
            if (!Files.isDirectory(dir)) {
                fail("golden capture folder not found: -D" + PROPERTY + "=" + prop + " names no folder ("
                        + dir + "); the repository's own is " + IN_REPOSITORY);
            }
            return dir;
        }
        Path start = Path.of(System.getProperty("user.dir")).toAbsolutePath().normalize();
        for (Path p = start; p != null; p = p.getParent()) {
            dir = p.resolve(IN_REPOSITORY);
            if (Files.isDirectory(dir)) {
                return dir;
            }
        }
        fail("golden capture folder not found: no " + IN_REPOSITORY + " in " + start + " or its parents;"
                + " run the tests from the repository, or set -D" + PROPERTY + "=DIR");
        return null;
    }

    /** The capture with this name; fails if absent. */
    public static Path path(String name) {
        Path p = folder().resolve(name);
        if (!Files.isRegularFile(p)) {
            fail("golden capture missing: " + p);
        }
        return p;
    }

    /** The captures whose names start with {@code prefix} and end with .pcap, sorted; fails if none. */
    public static List<Path> list(String prefix) {
        Path dir = folder();
        try (Stream<Path> s = Files.list(dir)) {
            List<Path> files = s.filter(p -> {
                String n = p.getFileName().toString();
                return n.startsWith(prefix) && n.endsWith(".pcap");
            }).sorted().toList();
            if (files.isEmpty()) {
                fail("no " + prefix + "*.pcap files in " + dir);
            }
            return files;
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** Reads the capture with this name. */
    static PcapFile read(String name) throws IOException {
        return PcapFile.read(path(name));
    }

    /** A capture read into memory. */
    record PcapFile(String name, int linkType, List<PcapReader.Record> records) {
        static PcapFile read(Path p) throws IOException {
            try (PcapReader r = PcapReader.open(p)) {
                return new PcapFile(p.getFileName().toString(), r.linkType(), r.readAll());
            }
        }
    }
}

package io.jrdma.wire;

import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.fail;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.stream.Stream;

/** Where the golden captures are: the shared folder and the bundled copies. */
final class Captures {
    private Captures() {
    }

    /** System property overriding the shared capture folder. */
    static final String PROPERTY = "jrdma.pcaps";

    /** Copies in src/test/resources/pcaps, always available. */
    static final List<String> BUNDLED = List.of(
            "roce-ib_write_lat.pcap", "roce-ib_atomic_bw_fetch_add.pcap", "roce-ib_read_lat.pcap");

    /**
     * The shared capture folder ({@code ../../shared/pcaps} from the module directory, or
     * {@code -Djrdma.pcaps=DIR}); fails the calling test if it is absent.
     */
    static Path sharedFolder() {
        String prop = System.getProperty(PROPERTY);
        Path dir = prop != null && !prop.isBlank()
                ? Path.of(prop)
                : Path.of(System.getProperty("user.dir")).resolve("../../shared/pcaps");
        dir = dir.toAbsolutePath().normalize();
        if (!Files.isDirectory(dir)) {
            fail("golden capture folder not found: " + dir + " (expected shared/pcaps next to"
                    + " the repository, i.e. ../../shared/pcaps from the module directory;"
                    + " set -D" + PROPERTY + "=DIR to point elsewhere)");
        }
        return dir;
    }

    /** All roce-*.pcap files in the shared folder, sorted; fails if there are none. */
    static List<Path> sharedRoceCaptures() {
        Path dir = sharedFolder();
        try (Stream<Path> s = Files.list(dir)) {
            List<Path> files = s.filter(p -> {
                String n = p.getFileName().toString();
                return n.startsWith("roce-") && n.endsWith(".pcap");
            }).sorted().toList();
            if (files.isEmpty()) {
                fail("no roce-*.pcap files in " + dir);
            }
            return files;
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** The shared capture with this name; fails if absent. */
    static Path shared(String name) {
        Path p = sharedFolder().resolve(name);
        if (!Files.isRegularFile(p)) {
            fail("golden capture missing: " + p);
        }
        return p;
    }

    /** Reads a shared capture. */
    static PcapFile readShared(String name) throws IOException {
        return PcapFile.read(shared(name));
    }

    /** Reads a bundled copy from the class path. */
    static PcapFile readBundled(String name) throws IOException {
        try (InputStream in = Captures.class.getResourceAsStream("/pcaps/" + name)) {
            assertNotNull(in, "bundled capture missing from test resources: pcaps/" + name);
            try (PcapReader r = new PcapReader(in)) {
                return new PcapFile(name, r.linkType(), r.readAll());
            }
        }
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

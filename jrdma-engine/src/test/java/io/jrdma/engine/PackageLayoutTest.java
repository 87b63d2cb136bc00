package io.jrdma.engine;

import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The engine's package graph as docs/design.md draws it: which package's main code imports which
 * (from the sources, as {@code grep -h '^import io.jrdma.engine' -r <package>} does), that no
 * package reaches one of a higher layer (so there is no cycle), and that the core names no transport
 * in its code.
 */
class PackageLayoutTest {
    private static final Path MAIN = Path.of(System.getProperty("user.dir"), "src", "main", "java", "io", "jrdma",
            "engine");
    private static final Pattern IMPORT = Pattern.compile("^import (?:static )?io\\.jrdma\\.engine\\.(\\w+)\\.",
            Pattern.MULTILINE);
    /** The layers of docs/design.md: a package may import only packages of a lower layer. */
    private static final Map<String, Integer> LAYER = Map.of("util", 0, "link", 0, "core", 1, "cm", 2, "ibcm", 2,
            "roce", 3, "iwarp", 3, "shm", 3);

    private static Map<String, Set<String>> imports() throws IOException {
        Map<String, Set<String>> graph = new TreeMap<>();
        try (Stream<Path> dirs = Files.list(MAIN)) {
            for (Path dir : dirs.filter(Files::isDirectory).toList()) {
                String pkg = dir.getFileName().toString();
                Set<String> to = new TreeSet<>();
                try (Stream<Path> files = Files.walk(dir)) {
                    for (Path f : files.filter(p -> p.toString().endsWith(".java")).toList()) {
                        Matcher m = IMPORT.matcher(Files.readString(f));
                        while (m.find()) {
                            if (!m.group(1).equals(pkg)) {
                                to.add(m.group(1));
                            }
                        }
                    }
                }
                graph.put(pkg, to);
            }
        }
        return graph;
    }

    @Test
    void theGraphIsTheOneTheDesignDocumentDraws() throws IOException {
        Map<String, Set<String>> expected = new TreeMap<>(Map.of(
                "core", Set.of("link", "util"),
                "roce", Set.of("core", "cm", "ibcm", "link", "util"),
                "iwarp", Set.of("core", "link", "util"),
                "shm", Set.of("core", "cm", "link", "util"),
                "cm", Set.of("core"),
                "ibcm", Set.of("core", "link"),
                "link", Set.of(),
                "util", Set.of()));
        Map<String, Set<String>> actual = imports();
        assertEquals(expected.keySet(), actual.keySet(), "the engine's packages");
        for (String p : expected.keySet()) {
            assertEquals(new TreeSet<>(expected.get(p)), actual.get(p), "what " + p + " imports");
        }
    }

    @Test
    void everyImportGoesDownALayerSoThereIsNoCycle() throws IOException {
        List<String> upward = new ArrayList<>();
        imports().forEach((from, tos) -> {
            for (String to : tos) {
                if (LAYER.get(to) >= LAYER.get(from)) {
                    upward.add(from + " -> " + to);
                }
            }
        });
        assertTrue(upward.isEmpty(), "imports that do not go down a layer: " + upward);
    }

    @Test
    void theCoreNamesNoTransportInItsCode() throws IOException {
        Pattern transportNames = Pattern.compile("\\b(Roce\\w*|Iwarp\\w*|SoftRoce\\w*|SoftIwarp\\w*|UdpLink|"
                + "Requester|Responder|Completer|TcpConnectionManager)\\b");
        List<String> found = new ArrayList<>();
        try (Stream<Path> files = Files.list(MAIN.resolve("core"))) {
            for (Path f : files.toList()) {
                List<String> lines = Files.readAllLines(f);
                for (int i = 0; i < lines.size(); i++) {
                    String code = lines.get(i).replaceAll("//.*", "").strip();
                    if (code.startsWith("*") || code.startsWith("/*")) {
                        continue; // javadoc and comments may say which transports exist
                    }
                    Matcher m = transportNames.matcher(code);
                    if (m.find()) {
                        found.add(f.getFileName() + ":" + (i + 1) + " " + m.group());
                    }
                }
            }
        }
        assertTrue(found.isEmpty(), "core code naming a transport: " + found);
    }
}

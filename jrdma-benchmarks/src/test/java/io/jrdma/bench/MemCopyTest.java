package io.jrdma.bench;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.net.URISyntaxException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/** MemCopy as bench/compare.sh and docs/shm-design.md run it: each way of copying copies, and says which it was. */
class MemCopyTest {
    @ParameterizedTest
    @ValueSource(strings = {"segment", "memmove"})
    @Timeout(value = 60, unit = TimeUnit.SECONDS)
    void eachWayCopiesTheSourceAndNamesItself(String via) throws IOException, InterruptedException, URISyntaxException {
        Path classes = Path.of(MemCopy.class.getProtectionDomain().getCodeSource().getLocation().toURI());
        Process p = new ProcessBuilder(List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "--enable-native-access=ALL-UNNAMED", "-cp", classes.toString(), MemCopy.class.getName(),
                "sizes=4096,65536", "span=size", "secs=0.05", "warm=0.01", "via=" + via))
                .redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertTrue(p.waitFor(50, TimeUnit.SECONDS), out);
        assertEquals(0, p.exitValue(), out);
        for (String size : List.of("4096", "65536")) {
            assertTrue(out.lines().anyMatch(l -> l.startsWith("RESULT memcopy_hot size=" + size + " ") && l.endsWith(" via=" + via)),
                    out);
        }
    }
}

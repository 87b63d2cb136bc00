package io.jrdma.tools;

import org.junit.jupiter.api.Test;

import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class ArgParserTest {
    private final ArgParser parser = new ArgParser("usage: test [options] args")
            .option('s', "size", "BYTES", "size")
            .option('a', "all", null, "all")
            .option('v', "verbose", null, "verbose")
            .option((char) 0, "verify", null, "verify")
            .option((char) 0, "timeout", "SEC", "timeout");

    @Test
    void shortOptionsTakeTheirValueAttachedOrNext() throws Exception {
        ArgParser.Parsed p = parser.parse(List.of("-s", "4096", "host"));
        assertEquals("4096", p.value("size"));
        assertEquals(List.of("host"), p.positionals());
        assertEquals("512", parser.parse(List.of("-s512")).value("size"));
    }

    @Test
    void flagsCluster() throws Exception {
        ArgParser.Parsed p = parser.parse(List.of("-av"));
        assertTrue(p.has("all"));
        assertTrue(p.has("verbose"));
        ArgParser.Parsed q = parser.parse(List.of("-as64"));
        assertTrue(q.has("all"));
        assertEquals("64", q.value("size"));
    }

    @Test
    void longOptionsWithSpaceOrEquals() throws Exception {
        ArgParser.Parsed p = parser.parse(List.of("--size", "8", "--timeout=5", "--verify", "x", "y"));
        assertEquals("8", p.value("size"));
        assertEquals("5", p.value("timeout"));
        assertTrue(p.has("verify"));
        assertFalse(p.has("all"));
        assertEquals(List.of("x", "y"), p.positionals());
    }

    @Test
    void doubleDashEndsOptions() throws Exception {
        ArgParser.Parsed p = parser.parse(List.of("--", "-s", "--help"));
        assertFalse(p.has("size"));
        assertFalse(p.help());
        assertEquals(List.of("-s", "--help"), p.positionals());
    }

    @Test
    void helpWinsOverErrors() throws Exception {
        assertTrue(parser.parse(List.of("--bogus", "-h")).help());
        assertTrue(parser.parse(List.of("--help")).help());
    }

    @Test
    void errorsSayWhatIsWrong() {
        assertEquals("unknown option -q", message(List.of("-q")));
        assertEquals("unknown option -q (in -aq)", message(List.of("-aq")));
        assertEquals("unknown option --bogus", message(List.of("--bogus")));
        assertEquals("unknown option --s (did you mean -s?)", message(List.of("--s", "1")));
        assertEquals("option -s/--size needs a value (BYTES)", message(List.of("-s")));
        assertEquals("option --timeout needs a value (SEC)", message(List.of("--timeout")));
        assertEquals("option --verify takes no value", message(List.of("--verify=yes")));
    }

    @Test
    void usageListsEveryOption() {
        String u = parser.usage();
        assertTrue(u.startsWith("usage: test"));
        assertTrue(u.contains("-s, --size BYTES"));
        assertTrue(u.contains("    --verify"));
        assertTrue(u.contains("-h, --help"));
    }

    private String message(List<String> args) {
        return assertThrows(ArgParser.UsageException.class, () -> parser.parse(args)).getMessage();
    }
}

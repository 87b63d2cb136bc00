package io.jrdma.tools;

import java.io.PrintStream;
import java.util.function.Supplier;

/**
 * What the running command is doing, for Ctrl-C: on SIGINT the CLI prints
 * {@code jrdma <command>: interrupted while <step>} and exits with 130 (128 + SIGINT), as shells
 * expect. Commands name their steps at control points (connecting, waiting for the peer's
 * message, the size being measured); a step given as a {@link Supplier} is evaluated only when
 * the interrupt comes, so a loop's counters cost nothing on the data path.
 */
public final class Progress {
    /** The exit code after Ctrl-C. */
    public static final int INTERRUPTED = 130;

    private static volatile String command;
    private static volatile Supplier<String> step = () -> "starting";

    private Progress() {
    }

    /** The command line's name, e.g. {@code jrdma pingpong}; set by {@link Main} before a command runs. */
    static void start(String name) {
        step = () -> "starting";
        command = name;
    }

    /** The command ended normally: an interrupt from now on reports nothing. */
    static void done() {
        command = null;
    }

    /** Names the current step, e.g. "connecting to 192.0.2.1:18515". */
    public static void step(String what) {
        step = () -> what;
    }

    /** Names the current step lazily (evaluated only on an interrupt, from another thread: keep it to plain reads). */
    public static void step(Supplier<String> what) {
        step = what;
    }

    /** @return the line an interrupt prints now, or null when no command runs */
    static String interruptedLine() {
        String c = command;
        if (c == null) {
            return null;
        }
        String s;
        try {
            s = step.get();
        } catch (RuntimeException e) {
            s = "(" + e + ")";
        }
        return c + ": interrupted while " + s;
    }

    /**
     * Installs the SIGINT handler (once per JVM; only the command-line entry point calls it): it prints
     * {@link #interruptedLine()} on {@code err} and exits with {@value #INTERRUPTED}. Where the JVM has no
     * signal API, Ctrl-C keeps its default (exit without a word).
     */
    static void installInterruptHandler(PrintStream err) {
        try {
            sun.misc.Signal.handle(new sun.misc.Signal("INT"), sig -> {
                String line = interruptedLine();
                if (line != null) {
                    err.println();
                    err.println(line);
                }
                err.flush();
                System.out.flush();
                Runtime.getRuntime().halt(INTERRUPTED);
            });
        } catch (RuntimeException | LinkageError e) {
            // no SIGINT handling here: the JVM's default applies
        }
    }
}

package io.jrdma.tools;

import java.io.PrintStream;
import java.time.Duration;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.LockSupport;
import java.util.function.Supplier;

/**
 * What the running command is doing, for Ctrl-C: on SIGINT the CLI prints
 * {@code jrdma <command>: interrupted while <step>} and exits with 130 (128 + SIGINT), as shells
 * expect. Commands name their steps at control points (connecting, waiting for the peer's
 * message, the size being measured); a step given as a {@link Supplier} is evaluated only when
 * the interrupt comes, so a loop's counters cost nothing on the data path.
 *
 * <p>A command that must tell its peer it is going (rping's client: rdma_cm over RoCE has no TCP
 * connection whose end the peer would see, so it sends a DREQ) registers a stop action with
 * {@link #onInterrupt}: Ctrl-C runs the registered actions, for at most {@link #STOP_BOUND}, before
 * the JVM halts.
 */
public final class Progress {
    /** The exit code after Ctrl-C. */
    public static final int INTERRUPTED = 130;

    /** The longest Ctrl-C waits for the stop actions before the JVM halts all the same. */
    public static final Duration STOP_BOUND = Duration.ofSeconds(3);

    private static final int RUNNING = 0;
    private static final int INTERRUPTING = 1;
    private static final int EXITING = 2;

    private static volatile String command;
    private static volatile Supplier<String> step = () -> "starting";
    private static final CopyOnWriteArrayList<Runnable> stopActions = new CopyOnWriteArrayList<>();
    /** RUNNING until Ctrl-C (INTERRUPTING: it runs the stop actions, then halts) or the command's exit (EXITING). */
    private static final AtomicInteger state = new AtomicInteger(RUNNING);

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

    /** A stop action's registration: closing it withdraws the action. */
    public interface Registration extends AutoCloseable {
        @Override
        void close();
    }

    /**
     * Registers what Ctrl-C does before the JVM halts, e.g. disconnecting from the peer. The action runs on
     * another thread than the command's, while the command goes on: it must be safe against that, and it
     * should end within {@link #STOP_BOUND} (the JVM halts then all the same).
     *
     * @return the registration; close it when the action no longer applies
     */
    public static Registration onInterrupt(Runnable action) {
        stopActions.add(action);
        return () -> stopActions.remove(action);
    }

    /**
     * What Ctrl-C runs before the JVM halts: every registered stop action, in order, on a thread of their
     * own, for at most {@code bound}.
     *
     * @return true when they all ended within the bound
     */
    static boolean runStopActions(Duration bound) {
        if (stopActions.isEmpty()) {
            return true;
        }
        Thread t = Thread.ofPlatform().daemon().name("jrdma-stop").start(() -> {
            for (Runnable r : stopActions) {
                try {
                    r.run();
                } catch (RuntimeException e) {
                    // the next one still runs: the JVM halts anyway
                }
            }
        });
        try {
            return t.join(bound);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return false;
        }
    }

    /**
     * Ends the JVM with the command's exit code ({@link Main#main}), unless Ctrl-C came first: its handler is
     * then running the stop actions and halts the JVM with {@value #INTERRUPTED} itself, so this waits for it
     * (the command may have ended because a stop action closed its connection).
     */
    static void exit(int rc) {
        if (!state.compareAndSet(RUNNING, EXITING)) {
            while (true) {
                LockSupport.park();
            }
        }
        System.exit(rc);
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
     * {@link #interruptedLine()} on {@code err}, runs the stop actions ({@link #onInterrupt}) for at most
     * {@link #STOP_BOUND}, and exits with {@value #INTERRUPTED}. A second Ctrl-C during the stop actions
     * exits at once. Where the JVM has no signal API, Ctrl-C keeps its default (exit without a word).
     */
    static void installInterruptHandler(PrintStream err) {
        try {
            sun.misc.Signal.handle(new sun.misc.Signal("INT"), sig -> {
                boolean first = state.compareAndSet(RUNNING, INTERRUPTING);
                String line = first ? interruptedLine() : null;
                if (line != null) {
                    err.println();
                    err.println(line);
                    err.flush();
                }
                if (first) {
                    runStopActions(STOP_BOUND);
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

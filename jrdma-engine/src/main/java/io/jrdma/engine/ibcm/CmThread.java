package io.jrdma.engine.ibcm;

import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.locks.LockSupport;

/**
 * The one thread of the JVM that runs every soft-RoCE context's IB CM: it takes the MADs each
 * {@link Gsi} received, runs the state machines and their timers (retries, time-wait, half-open
 * timeouts), and the tasks the API threads hand it. Off the engines' duty cycles: the data path
 * never waits for it. A daemon, started with the first IB CM and parked while there is nothing to do.
 */
final class CmThread {
    private static final CopyOnWriteArrayList<IbConnectionManager> CMS = new CopyOnWriteArrayList<>();
    private static volatile Thread thread;
    /** The longest park: timers are checked at least this often. */
    private static final long MAX_PARK = 50_000_000;

    private CmThread() {
    }

    static synchronized void register(IbConnectionManager cm) {
        CMS.add(cm);
        if (thread == null) {
            Thread t = new Thread(CmThread::run, "jrdma-ibcm");
            t.setDaemon(true);
            thread = t;
            t.start();
        }
        cm.gsi.reader = thread;
        wake();
    }

    static void unregister(IbConnectionManager cm) {
        CMS.remove(cm);
    }

    static void wake() {
        Thread t = thread;
        if (t != null) {
            LockSupport.unpark(t);
        }
    }

    /** A step of {@code cm} failed on this thread: logged, and the thread goes on with the next. */
    static void stepFailed(IbConnectionManager cm, Throwable e) {
        System.getLogger(CmThread.class.getName()).log(System.Logger.Level.WARNING,
                "IB CM of " + cm + " failed a step", e);
    }

    static boolean onThread() {
        return Thread.currentThread() == thread;
    }

    private static void run() {
        while (true) {
            long next = System.nanoTime() + MAX_PARK;
            for (IbConnectionManager cm : CMS) {
                try {
                    long due = cm.work(System.nanoTime());
                    if (due - next < 0) {
                        next = due;
                    }
                } catch (RuntimeException | Error e) {
                    stepFailed(cm, e);
                }
            }
            long wait = next - System.nanoTime();
            if (wait > 0) {
                LockSupport.parkNanos(CmThread.class, wait);
            }
        }
    }
}

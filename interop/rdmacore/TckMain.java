import org.junit.platform.engine.TestExecutionResult;
import org.junit.platform.engine.discovery.DiscoverySelectors;
import org.junit.platform.launcher.Launcher;
import org.junit.platform.launcher.LauncherDiscoveryRequest;
import org.junit.platform.launcher.TestExecutionListener;
import org.junit.platform.launcher.TestIdentifier;
import org.junit.platform.launcher.core.LauncherDiscoveryRequestBuilder;
import org.junit.platform.launcher.core.LauncherFactory;

import java.util.concurrent.atomic.AtomicInteger;

/**
 * Runs test classes of jrdma-rdmacore (the TCK subclasses, the allocation test) where there is no Maven:
 * in the interop guests. Prints one line per test (PASS, FAIL with the cause, SKIP with the reason) and
 * a summary; exits 1 if any test failed. Usage: java -cp ... TckMain CLASS[#METHOD]...
 */
public final class TckMain {
    public static void main(String[] args) {
        LauncherDiscoveryRequestBuilder b = LauncherDiscoveryRequestBuilder.request();
        for (String c : args) { // CLASS, or CLASS#method for one test
            b.selectors(c.contains("#") ? DiscoverySelectors.selectMethod(c) : DiscoverySelectors.selectClass(c));
        }
        LauncherDiscoveryRequest request = b.build();
        AtomicInteger pass = new AtomicInteger(), fail = new AtomicInteger(), skip = new AtomicInteger();
        TestExecutionListener listener = new TestExecutionListener() {
            @Override
            public void executionSkipped(TestIdentifier t, String reason) {
                skip.incrementAndGet();
                System.out.println("SKIP " + name(t) + ": " + reason);
            }

            @Override
            public void executionFinished(TestIdentifier t, TestExecutionResult r) {
                if (!t.isTest()) {
                    if (r.getStatus() == TestExecutionResult.Status.FAILED) {
                        fail.incrementAndGet();
                        System.out.println("FAIL " + name(t) + ": " + r.getThrowable().map(Throwable::toString).orElse("?"));
                    }
                    return;
                }
                switch (r.getStatus()) {
                    case SUCCESSFUL -> {
                        pass.incrementAndGet();
                        System.out.println("PASS " + name(t));
                    }
                    case ABORTED -> {
                        skip.incrementAndGet();
                        System.out.println("SKIP " + name(t) + ": " + r.getThrowable().map(Throwable::getMessage).orElse(""));
                    }
                    case FAILED -> {
                        fail.incrementAndGet();
                        System.out.println("FAIL " + name(t) + ": " + r.getThrowable().map(Throwable::toString).orElse("?"));
                        r.getThrowable().ifPresent(e -> e.printStackTrace(System.out));
                    }
                }
            }
        };
        Launcher launcher = LauncherFactory.create();
        launcher.execute(request, listener);
        System.out.println("SUMMARY passed " + pass + ", failed " + fail + ", skipped " + skip);
        System.exit(fail.get() == 0 ? 0 : 1);
    }

    private static String name(TestIdentifier t) {
        String id = t.getUniqueId();
        int c = id.indexOf("[class:");
        String cls = c >= 0 ? id.substring(c + 7, id.indexOf(']', c)) : "";
        cls = cls.substring(cls.lastIndexOf('.') + 1);
        return cls + "." + t.getDisplayName();
    }
}

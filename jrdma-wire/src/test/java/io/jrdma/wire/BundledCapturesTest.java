package io.jrdma.wire;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.stream.Stream;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.TestFactory;

/** The golden check against the small captures copied into the test resources. */
class BundledCapturesTest {

    @TestFactory
    Stream<DynamicTest> everyRocePacketOfTheBundledCopies() {
        return Captures.BUNDLED.stream().map(name -> DynamicTest.dynamicTest(name, () -> {
            RoceChecker.Result r = RoceChecker.check(Captures.readBundled(name));
            assertEquals(GoldenCapturesTest.EXPECTED.get(name), r.packets().size(), name);
            assertEquals(r.frames(), r.packets().size(), name + ": non-RoCE frames");
        }));
    }
}

package io.jrdma.engine.core;

import io.jrdma.soft.SoftRoceOptions;

import io.jrdma.engine.iwarp.IwarpEngine;
import io.jrdma.engine.iwarp.SoftIwarpDevice;
import io.jrdma.engine.link.UdpLink;
import io.jrdma.engine.roce.RoceTransport;
import io.jrdma.engine.roce.SoftRoceDevice;
import io.jrdma.engine.util.NanoClock;
import io.jrdma.verbs.DeviceOptions;
import io.jrdma.verbs.Mtu;
import io.jrdma.verbs.ThreadingMode;
import org.junit.jupiter.api.Test;

import java.lang.System.Logger.Level;
import java.net.InetAddress;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The fallbacks' reports: the sentences, their log levels, and a context's port attributes. The log
 * record of a JVM without the flags is checked in a JVM of its own by the tools' FallbackReportTest.
 */
class FallbacksTest {
    private static final InetAddress LO = InetAddress.getLoopbackAddress();

    @Test
    void aMissingFlagIsAWarningThatNamesWhatIsLostAndTheFlag() {
        String roce = RoceTransport.nativeUdpLimitation("native access is not enabled for io.jrdma.engine"
                + " (java --enable-native-access=io.jrdma.engine)");
        assertTrue(roce.contains("DatagramChannel"), roce);
        assertTrue(roce.contains("not heard over IPv6"), roce);
        assertTrue(roce.endsWith("(java --enable-native-access=io.jrdma.engine)"), roce);
        assertEquals(Level.WARNING, Fallbacks.level(roce));

        String iwarp = IwarpEngine.writevLimitation("the socket's descriptor is not reachable"
                + " (java --add-opens java.base/sun.nio.ch=io.jrdma.engine)");
        assertTrue(iwarp.contains("copied"), iwarp);
        assertTrue(iwarp.endsWith("(java --add-opens java.base/sun.nio.ch=io.jrdma.engine)"), iwarp);
        assertEquals(Level.WARNING, Fallbacks.level(iwarp));
    }

    @Test
    void aChosenFallbackIsDebugAndAPlatformOneInfo() {
        assertEquals(Level.DEBUG, Fallbacks.level(IwarpEngine.writevLimitation(null)));
        assertTrue(IwarpEngine.writevLimitation(null).endsWith("turned off by -Djrdma.iwarp.writev=false"));
        assertEquals(Level.DEBUG, Fallbacks.level(RoceTransport.nativeUdpLimitation("disabled by -Djrdma.udp.noNative=true")));
        assertEquals(Level.INFO, Fallbacks.level(RoceTransport.nativeUdpLimitation("not Linux (Mac OS X)")));
    }

    @Test
    void withTheFlagsNothingIsLimited() {
        // the build runs its tests with --enable-native-access and the add-opens
        assertEquals(List.of(), SoftRoceDevice.forTest("lo", () -> List.of(LO)).limitations());
        assertEquals(List.of(), SoftIwarpDevice.forTest("lo", () -> List.of(LO)).limitations());
        var c = SoftRoceDevice.forTest("lo", () -> List.of(LO)).open(
                DeviceOptions.defaults().withThreadingMode(ThreadingMode.INVOKER)
                        .with(SoftRoceOptions.defaults().withUdpPort(0, true)));
        try {
            assertEquals(List.of(), c.queryPort().limitations());
        } finally {
            c.close();
        }
    }

    @Test
    void aContextOnDatagramChannelsSaysSoInItsPortAttributes() {
        UdpLink link = UdpLink.open(List.of(LO), 0, true, false); // DatagramChannels although native works
        Context c = SoftRoceDevice.forTest("lo", () -> List.of(LO)).open(
                DeviceOptions.defaults().withThreadingMode(ThreadingMode.INVOKER), link, NanoClock.SYSTEM, Mtu.MTU_1024);
        try {
            List<String> l = c.queryPort().limitations();
            assertEquals(1, l.size(), l.toString());
            assertTrue(l.getFirst().startsWith("UDP through DatagramChannel"), l.getFirst());
            assertTrue(l.getFirst().endsWith("chosen when the context was opened"), l.getFirst());
        } finally {
            c.close();
        }
    }
}

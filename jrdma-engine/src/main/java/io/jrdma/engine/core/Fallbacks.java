package io.jrdma.engine.core;

import java.lang.System.Logger.Level;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

/**
 * What the engine gives up when the JVM lacks a flag or the platform a feature, said once per process
 * through {@link System.Logger} and listed in {@link io.jrdma.verbs.Device#limitations()} and
 * {@link io.jrdma.verbs.PortAttr#limitations()}: jrdma never falls back silently.
 * <ul>
 *   <li>soft-RoCE without native UDP sockets ({@code --enable-native-access}) uses
 *       {@code DatagramChannel}: the kernel drops IPv6 datagrams with a zero UDP checksum, which is
 *       how Linux rxe sends every packet, and each datagram costs a receive call;</li>
 *   <li>soft-iWARP without {@code writev}/{@code readv} on the socket's descriptor
 *       ({@code --enable-native-access} and {@code --add-opens java.base/sun.nio.ch}) uses the
 *       single-buffer {@code SocketChannel} calls and copies payloads into the stream's transmit buffer.</li>
 * </ul>
 * Each transport words its own ({@code RoceTransport.nativeUdpLimitation}, {@code IwarpEngine.writevLimitation});
 * this class says them and grades them. Control path only: read when a device is listed or a context opens.
 */
public final class Fallbacks {
    public static final System.Logger LOG = System.getLogger("io.jrdma.engine");

    private static final Set<String> SAID = ConcurrentHashMap.newKeySet();

    private Fallbacks() {
    }

    /**
     * How loudly to say a limitation: WARNING when a JVM flag would lift it (the reason names it),
     * DEBUG when a system property or the context's opener asked for it, INFO for a platform without the feature.
     */
    public static Level level(String limitation) {
        if (limitation.contains("java --")) {
            return Level.WARNING;
        }
        return limitation.contains("-Djrdma.") || limitation.endsWith("chosen when the context was opened")
                ? Level.DEBUG : Level.INFO;
    }

    /**
     * Where a QP's move to ERROR comes from, for its DEBUG record: the method that decided it, two frames
     * up (Completer.fail: an error completion; IwarpEngine.writeFailed: the stream broke; ...).
     */
    public static String caller() {
        return StackWalker.getInstance().walk(f -> f.skip(2).findFirst()
                .map(e -> e.getClassName().substring(e.getClassName().lastIndexOf('.') + 1) + "." + e.getMethodName())
                .orElse("?"));
    }

    /**
     * Logs each of {@code limitations} once per process and device kind (the first context to open says it).
     *
     * @param devices     the kind of device, as the record names it ("soft-RoCE", "soft-iWARP")
     * @param limitations what its contexts give up
     */
    public static void sayOnce(String devices, List<String> limitations) {
        if (limitations.isEmpty() || !SAID.add(devices)) {
            return;
        }
        for (String l : limitations) {
            LOG.log(level(l), devices + " devices fall back: " + l);
        }
    }
}

package io.jrdma.engine.core;
import io.jrdma.engine.link.NativeTcp;
import io.jrdma.engine.link.UdpLink;


import java.lang.System.Logger.Level;
import java.util.List;
import java.util.concurrent.atomic.AtomicBoolean;

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
 * Control path only: read when a device is listed or a context opens.
 */
public final class Fallbacks {
    public static final System.Logger LOG = System.getLogger("io.jrdma.engine");

    private static final AtomicBoolean ROCE_SAID = new AtomicBoolean();
    private static final AtomicBoolean IWARP_SAID = new AtomicBoolean();

    private Fallbacks() {
    }

    /**
     * The soft-RoCE limitation for a link without native sockets.
     *
     * @param reason why native sockets are not available (as {@code NativeUdp} says it), or null when
     *               they are and the context's opener chose {@code DatagramChannel} anyway
     */
    public static String roce(String reason) {
        return "UDP through DatagramChannel instead of native sockets: IPv6 packets with a zero UDP checksum"
                + " (Linux rxe sends all its packets so) are dropped by the kernel, so rxe peers are not heard"
                + " over IPv6, and each datagram costs one receive call; "
                + (reason == null ? "chosen when the context was opened" : reason);
    }

    /**
     * The soft-iWARP limitation for streams without writev/readv.
     *
     * @param reason why writev/readv are not available (as {@code NativeTcp} says it), or null when they
     *               are and {@code -Djrdma.iwarp.writev=false} turned them off
     */
    public static String iwarp(String reason) {
        return "TCP through SocketChannel instead of writev/readv: payloads are copied into the stream's"
                + " transmit buffer instead of leaving from their regions, one system call per buffer; "
                + (reason == null ? "turned off by -D" + NativeTcp.PROPERTY + "=false" : reason);
    }

    /** @return the limitations of the soft-RoCE devices in this process (empty: none) */
    public static List<String> roceNow() {
        String why = UdpLink.nativeUnavailableReason();
        return why == null ? List.of() : List.of(roce(why));
    }

    /** @return the limitations of the soft-iWARP devices in this process (empty: none) */
    public static List<String> iwarpNow() {
        return NativeTcp.enabled() ? List.of() : List.of(iwarp(iwarpReason()));
    }

    /**
     * Why streams go without writev/readv: {@code NativeTcp}'s reason, with the add-opens flag added when
     * that is missing too (its reason names only the first flag it misses), or null for the property.
     */
    public static String iwarpReason() {
        String why = NativeTcp.unavailableReason();
        Module me = Fallbacks.class.getModule();
        if (why != null && !why.contains("--add-opens") && !Object.class.getModule().isExported("sun.nio.ch", me)) {
            why += ", and the socket's descriptor is not reachable (java --add-opens java.base/sun.nio.ch="
                    + (me.isNamed() ? me.getName() : "ALL-UNNAMED") + ")";
        }
        return why;
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

    /** Logs each of {@code limitations} once per process and transport (the first context to open says it). */
    public static void sayOnce(boolean iwarp, List<String> limitations) {
        if (limitations.isEmpty() || !(iwarp ? IWARP_SAID : ROCE_SAID).compareAndSet(false, true)) {
            return;
        }
        for (String l : limitations) {
            LOG.log(level(l), (iwarp ? "soft-iWARP" : "soft-RoCE") + " devices fall back: " + l);
        }
    }
}

package io.jrdma.verbs;

import java.util.List;

/**
 * Port attributes ({@code ibv_port_attr}) plus what a software RoCE port adds: the UDP port
 * it listens on and its GID table.
 *
 * @param state     ACTIVE when the network interface is up
 * @param maxMtu    the largest path MTU the port supports
 * @param activeMtu the largest path MTU the interface's MTU allows
 * @param gids      the GID table, index 0 first
 * @param udpPort   the UDP port this context receives on (4791 unless it was taken)
 * @param linkLayer "Ethernet" for RoCE
 * @param limitations what this port gives up compared with the provider at its best, one human-readable
 *                  sentence each with what to do about it (say, a JVM flag that was not given); empty when
 *                  nothing is missing. The same as {@link Device#limitations()} for the port's context.
 */
public record PortAttr(PortState state, Mtu maxMtu, Mtu activeMtu, List<Gid> gids, int udpPort, String linkLayer,
                       List<String> limitations) {
    /** Port states, as {@code ibv_port_state}. */
    public enum PortState {
        /** No state change (not reported by jrdma). */
        NOP,
        /** The network interface is down: nothing is sent or received. */
        DOWN,
        /** Initializing (not reported by jrdma). */
        INIT,
        /** Armed (not reported by jrdma). */
        ARMED,
        /** The network interface is up. */
        ACTIVE,
        /** Active, deferring (not reported by jrdma). */
        ACTIVE_DEFER
    }

    /**
     * Makes the attributes; the GID list is copied.
     *
     * @throws NullPointerException if {@code gids} is null or holds a null
     */
    public PortAttr {
        gids = List.copyOf(gids);
        limitations = List.copyOf(limitations);
    }

    /**
     * Port attributes without limitations.
     *
     * @param state     ACTIVE when the network interface is up
     * @param maxMtu    the largest path MTU the port supports
     * @param activeMtu the largest path MTU the interface's MTU allows
     * @param gids      the GID table, index 0 first
     * @param udpPort   the UDP port this context receives on
     * @param linkLayer "Ethernet" for RoCE
     */
    public PortAttr(PortState state, Mtu maxMtu, Mtu activeMtu, List<Gid> gids, int udpPort, String linkLayer) {
        this(state, maxMtu, activeMtu, gids, udpPort, linkLayer, List.of());
    }
}

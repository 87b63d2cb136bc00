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
 */
public record PortAttr(PortState state, Mtu maxMtu, Mtu activeMtu, List<Gid> gids, int udpPort, String linkLayer) {
    /** Port states, as {@code ibv_port_state}. */
    public enum PortState { NOP, DOWN, INIT, ARMED, ACTIVE, ACTIVE_DEFER }

    public PortAttr {
        gids = List.copyOf(gids);
    }
}

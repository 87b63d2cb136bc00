package io.jrdma.rdmacore;

import io.jrdma.verbs.Gid;

/**
 * One valid entry of a port's GID table, as {@code ibv_devinfo -v} prints it.
 *
 * @param index the index in the table ({@code ibv_query_gid})
 * @param gid   the GID
 * @param type  the kernel's GID type ({@code RoCE v2}, {@code IB/RoCE v1}), or null where the kernel reports
 *              none (iWARP devices)
 */
public record GidEntry(int index, Gid gid, String type) {
}

package io.jrdma.rdmacore;

import org.junit.jupiter.api.Test;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

import static io.jrdma.rdmacore.LibIbverbs.IBV_DEVICE;
import static io.jrdma.rdmacore.LibIbverbs.IBV_DEVICE_ATTR;
import static io.jrdma.rdmacore.LibIbverbs.IBV_GID;
import static io.jrdma.rdmacore.LibIbverbs.IBV_PORT_ATTR_COMPAT;
import static io.jrdma.rdmacore.LibIbverbs.off;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The layouts against the sizes and offsets that rdma-core's verbs.h gives on LP64 (x86-64, aarch64),
 * computed by hand from its declarations (field types and C alignment rules), and the mismatch checks.
 */
class LayoutTest {
    @Test
    void ibvDeviceMatchesVerbsH() {
        // two function pointers (_ops), two enums, char name[64], dev_name[64], dev_path[256], ibdev_path[256]
        assertEquals(16, off(IBV_DEVICE, "node_type"));
        assertEquals(20, off(IBV_DEVICE, "transport_type"));
        assertEquals(24, off(IBV_DEVICE, "name"));
        assertEquals(88, off(IBV_DEVICE, "dev_name"));
        assertEquals(152, off(IBV_DEVICE, "dev_path"));
        assertEquals(408, off(IBV_DEVICE, "ibdev_path"));
        assertEquals(664, IBV_DEVICE.byteSize());
    }

    @Test
    void ibvDeviceAttrMatchesVerbsH() {
        assertEquals(0, off(IBV_DEVICE_ATTR, "fw_ver"));
        assertEquals(64, off(IBV_DEVICE_ATTR, "node_guid"));
        assertEquals(72, off(IBV_DEVICE_ATTR, "sys_image_guid"));
        assertEquals(80, off(IBV_DEVICE_ATTR, "max_mr_size"));
        assertEquals(88, off(IBV_DEVICE_ATTR, "page_size_cap"));
        assertEquals(96, off(IBV_DEVICE_ATTR, "vendor_id"));
        assertEquals(108, off(IBV_DEVICE_ATTR, "max_qp"));
        assertEquals(116, off(IBV_DEVICE_ATTR, "device_cap_flags"));
        assertEquals(164, off(IBV_DEVICE_ATTR, "atomic_cap"));
        assertEquals(176, off(IBV_DEVICE_ATTR, "max_mw"));
        assertEquals(200, off(IBV_DEVICE_ATTR, "max_ah"));
        assertEquals(212, off(IBV_DEVICE_ATTR, "max_srq"));
        assertEquals(224, off(IBV_DEVICE_ATTR, "max_pkeys"));
        assertEquals(226, off(IBV_DEVICE_ATTR, "local_ca_ack_delay"));
        assertEquals(227, off(IBV_DEVICE_ATTR, "phys_port_cnt"));
        assertEquals(232, IBV_DEVICE_ATTR.byteSize()); // 228 rounded up to the 8-byte alignment of the __be64s
        assertEquals(8, IBV_DEVICE_ATTR.byteAlignment());
    }

    @Test
    void compatPortAttrMatchesVerbsH() {
        assertEquals(12, off(IBV_PORT_ATTR_COMPAT, "gid_tbl_len"));
        assertEquals(20, off(IBV_PORT_ATTR_COMPAT, "max_msg_sz"));
        assertEquals(32, off(IBV_PORT_ATTR_COMPAT, "pkey_tbl_len"));
        assertEquals(34, off(IBV_PORT_ATTR_COMPAT, "lid"));
        assertEquals(38, off(IBV_PORT_ATTR_COMPAT, "lmc"));
        assertEquals(43, off(IBV_PORT_ATTR_COMPAT, "active_width"));
        assertEquals(45, off(IBV_PORT_ATTR_COMPAT, "phys_state"));
        assertEquals(46, off(IBV_PORT_ATTR_COMPAT, "link_layer"));
        assertEquals(47, off(IBV_PORT_ATTR_COMPAT, "flags"));
        assertEquals(48, IBV_PORT_ATTR_COMPAT.byteSize());
        assertEquals(16, IBV_GID.byteSize());
    }

    @Test
    void aLibraryThatWritesPastTheStructIsCaughtNotRead() {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment buf = arena.allocate(IBV_PORT_ATTR_COMPAT.byteSize() + LibIbverbs.CANARY_BYTES, 8);
            // a library whose struct ibv_port_attr is the full 56-byte one writes 8 bytes too many
            var e = assertThrows(LibIbverbs.LayoutMismatchException.class, () -> LibIbverbs.guarded(buf,
                    IBV_PORT_ATTR_COMPAT, "ibv_query_port", seg -> {
                        seg.asSlice(0, 56).fill((byte) 1);
                        return 0;
                    }));
            assertTrue(e.getMessage().contains("ibv_query_port wrote byte 48 past the 48 bytes of _compat_ibv_port_attr"),
                    e.getMessage());
            // one that writes exactly the struct passes, and its failure code is reported as such
            LibIbverbs.guarded(buf, IBV_PORT_ATTR_COMPAT, "ibv_query_port", seg -> {
                seg.asSlice(0, 48).fill((byte) 1);
                return 0;
            });
            var n = assertThrows(LibIbverbs.NativeCallException.class,
                    () -> LibIbverbs.guarded(buf, IBV_PORT_ATTR_COMPAT, "ibv_query_port", seg -> 22));
            assertEquals(22, n.errno());
        }
    }

    @Test
    void aDeviceWhoseNameIsElsewhereIsCaught() {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment dev = arena.allocate(IBV_DEVICE);
            dev.setString(off(IBV_DEVICE, "name"), "rxe0");
            dev.setString(off(IBV_DEVICE, "ibdev_path"), "/sys/class/infiniband/rxe0");
            LibIbverbs.checkDevice(dev, dev.asSlice(24)); // as the library would answer
            var e = assertThrows(LibIbverbs.LayoutMismatchException.class,
                    () -> LibIbverbs.checkDevice(dev, dev.asSlice(32)));
            assertTrue(e.getMessage().contains("name at offset 32"), e.getMessage());
            dev.setString(off(IBV_DEVICE, "ibdev_path"), "/sys/class/infiniband/mlx5_0");
            var p = assertThrows(LibIbverbs.LayoutMismatchException.class,
                    () -> LibIbverbs.checkDevice(dev, dev.asSlice(24)));
            assertTrue(p.getMessage().contains("ibdev_path"), p.getMessage());
        }
    }
}

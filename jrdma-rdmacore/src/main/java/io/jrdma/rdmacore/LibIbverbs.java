package io.jrdma.rdmacore;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemoryLayout;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.StructLayout;
import java.lang.foreign.SymbolLookup;
import java.lang.invoke.MethodHandle;
import java.lang.invoke.VarHandle;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Optional;

import static java.lang.foreign.MemoryLayout.PathElement.groupElement;
import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;
import static java.lang.foreign.ValueLayout.JAVA_SHORT;

/**
 * {@code libibverbs.so.1} bound through the FFM API: the layouts of the public structs this provider
 * reads (written from rdma-core's {@code infiniband/verbs.h}, x86-64/aarch64 LP64) and the exported
 * functions that read them. Loading never throws: {@link #reason()} says why the library cannot be
 * used. Every call checks the layout facts it depends on (see {@link #checkDevice} and the canaries
 * of {@link #queryDevice} and {@link #queryPort}) and throws {@link LayoutMismatchException} rather
 * than read a field at the wrong place.
 */
final class LibIbverbs {
    /** The library's soname: ABI 1, the ABI whose public structs rdma-core keeps stable. */
    static final String DEFAULT_LIBRARY = "libibverbs.so.1";
    /** The symbol version of every function bound here (the default version of each in rdma-core). */
    static final String SYMBOL_VERSION = "IBVERBS_1.1";

    private static final int SYSFS_NAME_MAX = 64; // IBV_SYSFS_NAME_MAX
    private static final int SYSFS_PATH_MAX = 256; // IBV_SYSFS_PATH_MAX

    /**
     * {@code struct ibv_device}: {@code struct _ibv_device_ops _ops} (two function pointers), the node and
     * transport types (enums: int), then four fixed-size strings. 664 bytes.
     */
    static final StructLayout IBV_DEVICE = MemoryLayout.structLayout(
            ADDRESS.withName("_dummy1"),
            ADDRESS.withName("_dummy2"),
            JAVA_INT.withName("node_type"),
            JAVA_INT.withName("transport_type"),
            MemoryLayout.sequenceLayout(SYSFS_NAME_MAX, JAVA_BYTE).withName("name"),
            MemoryLayout.sequenceLayout(SYSFS_NAME_MAX, JAVA_BYTE).withName("dev_name"),
            MemoryLayout.sequenceLayout(SYSFS_PATH_MAX, JAVA_BYTE).withName("dev_path"),
            MemoryLayout.sequenceLayout(SYSFS_PATH_MAX, JAVA_BYTE).withName("ibdev_path")).withName("ibv_device");

    /**
     * {@code struct ibv_device_attr}: {@code char fw_ver[64]}, two {@code __be64} GUIDs, two {@code uint64_t},
     * three {@code uint32_t}, 33 {@code int}-sized fields (the enum {@code atomic_cap} among them), a
     * {@code uint16_t}, two {@code uint8_t}, then 4 bytes of tail padding to the 8-byte alignment: 232 bytes.
     */
    static final StructLayout IBV_DEVICE_ATTR = MemoryLayout.structLayout(
            MemoryLayout.sequenceLayout(64, JAVA_BYTE).withName("fw_ver"),
            JAVA_LONG.withName("node_guid"),
            JAVA_LONG.withName("sys_image_guid"),
            JAVA_LONG.withName("max_mr_size"),
            JAVA_LONG.withName("page_size_cap"),
            JAVA_INT.withName("vendor_id"),
            JAVA_INT.withName("vendor_part_id"),
            JAVA_INT.withName("hw_ver"),
            JAVA_INT.withName("max_qp"),
            JAVA_INT.withName("max_qp_wr"),
            JAVA_INT.withName("device_cap_flags"),
            JAVA_INT.withName("max_sge"),
            JAVA_INT.withName("max_sge_rd"),
            JAVA_INT.withName("max_cq"),
            JAVA_INT.withName("max_cqe"),
            JAVA_INT.withName("max_mr"),
            JAVA_INT.withName("max_pd"),
            JAVA_INT.withName("max_qp_rd_atom"),
            JAVA_INT.withName("max_ee_rd_atom"),
            JAVA_INT.withName("max_res_rd_atom"),
            JAVA_INT.withName("max_qp_init_rd_atom"),
            JAVA_INT.withName("max_ee_init_rd_atom"),
            JAVA_INT.withName("atomic_cap"),
            JAVA_INT.withName("max_ee"),
            JAVA_INT.withName("max_rdd"),
            JAVA_INT.withName("max_mw"),
            JAVA_INT.withName("max_raw_ipv6_qp"),
            JAVA_INT.withName("max_raw_ethy_qp"),
            JAVA_INT.withName("max_mcast_grp"),
            JAVA_INT.withName("max_mcast_qp_attach"),
            JAVA_INT.withName("max_total_mcast_qp_attach"),
            JAVA_INT.withName("max_ah"),
            JAVA_INT.withName("max_fmr"),
            JAVA_INT.withName("max_map_per_fmr"),
            JAVA_INT.withName("max_srq"),
            JAVA_INT.withName("max_srq_wr"),
            JAVA_INT.withName("max_srq_sge"),
            JAVA_SHORT.withName("max_pkeys"),
            JAVA_BYTE.withName("local_ca_ack_delay"),
            JAVA_BYTE.withName("phys_port_cnt"),
            MemoryLayout.paddingLayout(4)).withName("ibv_device_attr");

    /**
     * {@code struct _compat_ibv_port_attr}, what the exported {@code ibv_query_port@@IBVERBS_1.1} fills
     * (verbs.h's {@code ibv_query_port} is a static inline that prefers the context's extended op with
     * the full {@code struct ibv_port_attr}; the exported symbol copies exactly this prefix of it):
     * eight 4-byte fields, three {@code uint16_t}, ten {@code uint8_t} ending with {@code flags}. 48 bytes.
     */
    static final StructLayout IBV_PORT_ATTR_COMPAT = MemoryLayout.structLayout(
            JAVA_INT.withName("state"),
            JAVA_INT.withName("max_mtu"),
            JAVA_INT.withName("active_mtu"),
            JAVA_INT.withName("gid_tbl_len"),
            JAVA_INT.withName("port_cap_flags"),
            JAVA_INT.withName("max_msg_sz"),
            JAVA_INT.withName("bad_pkey_cntr"),
            JAVA_INT.withName("qkey_viol_cntr"),
            JAVA_SHORT.withName("pkey_tbl_len"),
            JAVA_SHORT.withName("lid"),
            JAVA_SHORT.withName("sm_lid"),
            JAVA_BYTE.withName("lmc"),
            JAVA_BYTE.withName("max_vl_num"),
            JAVA_BYTE.withName("sm_sl"),
            JAVA_BYTE.withName("subnet_timeout"),
            JAVA_BYTE.withName("init_type_reply"),
            JAVA_BYTE.withName("active_width"),
            JAVA_BYTE.withName("active_speed"),
            JAVA_BYTE.withName("phys_state"),
            JAVA_BYTE.withName("link_layer"),
            JAVA_BYTE.withName("flags")).withName("_compat_ibv_port_attr");

    /** {@code union ibv_gid}: 16 raw bytes (its other member, {@code global}, is two {@code __be64}). */
    static final MemoryLayout IBV_GID = MemoryLayout.sequenceLayout(16, JAVA_BYTE).withName("ibv_gid");

    /** Bytes past the end of a struct the library fills that must come back untouched. */
    static final int CANARY_BYTES = 64;
    private static final byte CANARY = (byte) 0xA5;

    private static final StructLayout CALL_STATE = Linker.Option.captureStateLayout();
    private static final VarHandle ERRNO = CALL_STATE.varHandle(groupElement("errno"));

    private final String library;
    private final String reason;
    private final String version;
    private final IbvVerbs verbs;
    private final Downcall getDeviceList, freeDeviceList, getDeviceName, getDeviceGuid, openDevice, closeDevice,
            queryDevice, queryPort, queryGid;

    private LibIbverbs(String library, String reason, String version, Downcall[] h) {
        this(library, reason, version, h, null);
    }

    private LibIbverbs(String library, String reason, String version, Downcall[] h, IbvVerbs verbs) {
        this.verbs = verbs;
        this.library = library;
        this.reason = reason;
        this.version = version;
        getDeviceList = h[0];
        freeDeviceList = h[1];
        getDeviceName = h[2];
        getDeviceGuid = h[3];
        openDevice = h[4];
        closeDevice = h[5];
        queryDevice = h[6];
        queryPort = h[7];
        queryGid = h[8];
    }

    /** The functions bound, in the order of the handle array. */
    static final List<String> SYMBOLS = List.of("ibv_get_device_list", "ibv_free_device_list", "ibv_get_device_name",
            "ibv_get_device_guid", "ibv_open_device", "ibv_close_device", "ibv_query_device", "ibv_query_port",
            "ibv_query_gid");

    /**
     * A shared library's symbols, or why this module cannot reach them ({@code lookup} null): native access not
     * enabled for the module, or the library not loadable.
     */
    record Opened(SymbolLookup lookup, String reason) {
        /**
         * @param what    what the FFM API reaches, for the message ("rdma-core", "librdmacm")
         * @param install the package to install, named after "install rdma-core's "
         */
        static Opened of(String library, Module me, String what, String install) {
            if (!me.isNativeAccessEnabled()) {
                String name = me.isNamed() ? me.getName() : "ALL-UNNAMED";
                return new Opened(null, what + " is reached through the FFM API, which needs native access: "
                        + "run java with --enable-native-access=" + name);
            }
            try {
                return new Opened(SymbolLookup.libraryLookup(library, Arena.global()), null);
            } catch (IllegalArgumentException e) {
                return new Opened(null, library + " cannot be loaded (" + e.getMessage() + "): install rdma-core's "
                        + install);
            }
        }
    }

    /**
     * Loads {@code library} (a soname or a path, as {@code dlopen} takes it). Never throws.
     *
     * @param library the library to load, {@link #DEFAULT_LIBRARY} normally
     * @return the bindings; {@link #reason()} is non-null when they cannot be used
     */
    static LibIbverbs load(String library) {
        Downcall[] h = new Downcall[SYMBOLS.size()];
        Module me = LibIbverbs.class.getModule();
        if (!System.getProperty("os.name", "").equals("Linux")) {
            return new LibIbverbs(library, "rdma-core needs Linux, not " + System.getProperty("os.name"), null, h);
        }
        String arch = System.getProperty("os.arch", "");
        if (!arch.equals("amd64") && !arch.equals("x86_64") && !arch.equals("aarch64")) {
            return new LibIbverbs(library, "the verbs.h layouts are written for LP64 x86-64 and aarch64, not " + arch, null, h);
        }
        Opened opened = Opened.of(library, me, "rdma-core", "libibverbs (Debian/Ubuntu: apt install libibverbs1"
                + " ibverbs-providers; Fedora/RHEL: dnf install libibverbs)");
        if (opened.reason() != null) {
            return new LibIbverbs(library, opened.reason(), null, h);
        }
        SymbolLookup lookup = opened.lookup();
        FunctionDescriptor[] fd = {
                FunctionDescriptor.of(ADDRESS, ADDRESS), // struct ibv_device **ibv_get_device_list(int *num_devices)
                FunctionDescriptor.ofVoid(ADDRESS), // void ibv_free_device_list(struct ibv_device **list)
                FunctionDescriptor.of(ADDRESS, ADDRESS), // const char *ibv_get_device_name(struct ibv_device *)
                FunctionDescriptor.of(JAVA_LONG, ADDRESS), // __be64 ibv_get_device_guid(struct ibv_device *)
                FunctionDescriptor.of(ADDRESS, ADDRESS), // struct ibv_context *ibv_open_device(struct ibv_device *)
                FunctionDescriptor.of(JAVA_INT, ADDRESS), // int ibv_close_device(struct ibv_context *)
                FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS), // int ibv_query_device(ctx, struct ibv_device_attr *)
                FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_BYTE, ADDRESS), // int ibv_query_port(ctx, uint8_t, attr *)
                FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_BYTE, JAVA_INT, ADDRESS), // int ibv_query_gid(ctx, uint8_t, int, gid *)
        };
        for (int i = 0; i < h.length; i++) {
            String sym = SYMBOLS.get(i);
            Optional<MemorySegment> addr = lookup.find(sym);
            if (addr.isEmpty()) {
                return new LibIbverbs(library, library + " has no symbol " + sym
                        + ": it is not rdma-core's libibverbs, or one too old for this provider", null, h);
            }
            String wrongVersion = symbolVersionMismatch(library, sym, addr.get());
            if (wrongVersion != null) {
                return new LibIbverbs(library, wrongVersion, null, h);
            }
            boolean setsErrno = sym.equals("ibv_get_device_list") || sym.equals("ibv_open_device");
            h[i] = new Downcall(sym, addr.get(), fd[i], setsErrno ? Downcall.ERRNO : Downcall.NONE); // bound on first use
        }
        String version = loadedVersion();
        if (version != null && !version.startsWith("1.")) {
            return new LibIbverbs(library, "the loaded libibverbs.so." + version + " is not ABI 1: the struct layouts"
                    + " of this provider are those of libibverbs.so.1 (rdma-core's verbs.h)", version, h);
        }
        IbvVerbs.Bound bound = IbvVerbs.bind(library, lookup);
        if (bound.reason() != null) {
            return new LibIbverbs(library, bound.reason(), version, h);
        }
        return new LibIbverbs(library, null, version, h, bound.verbs());
    }

    /** {@return the functions found at load, this class's and the object verbs', each bound on its first call} */
    List<Downcall> downcalls() {
        java.util.ArrayList<Downcall> all = new java.util.ArrayList<>();
        for (Downcall d : new Downcall[]{getDeviceList, freeDeviceList, getDeviceName, getDeviceGuid, openDevice,
                closeDevice, queryDevice, queryPort, queryGid}) {
            if (d != null) {
                all.add(d);
            }
        }
        if (verbs != null) {
            all.addAll(verbs.downcalls());
        }
        return all;
    }

    /** {@return the object verbs (PD, MR, CQ, QP, ...), found with the rest} */
    IbvVerbs verbs() {
        requireUsable();
        return verbs;
    }

    /**
     * Checks that {@code dlsym}, behind {@link SymbolLookup}, bound {@code sym}'s {@value #SYMBOL_VERSION} version,
     * the one whose struct layouts this provider reads, by asking glibc's {@code dlvsym} for that version.
     *
     * @param library the library, as loaded
     * @param sym     the symbol
     * @param found   the address {@code SymbolLookup} found
     * @return null when it is that version or when this libc cannot tell (no {@code dlvsym}); else the mismatch
     */
    static String symbolVersionMismatch(String library, String sym, MemorySegment found) {
        return symbolVersionMismatch(library, sym, SYMBOL_VERSION, found);
    }

    /**
     * As {@link #symbolVersionMismatch(String, String, MemorySegment)}, for a symbol whose layouts are those of
     * {@code version} ({@code ibv_create_comp_channel} has only {@code IBVERBS_1.0}).
     *
     * @param library the library, as loaded
     * @param sym     the symbol
     * @param version the symbol version expected
     * @param found   the address {@code SymbolLookup} found
     * @return null when it is that version or when this libc cannot tell; else the mismatch
     */
    static String symbolVersionMismatch(String library, String sym, String version, MemorySegment found) {
        MethodHandle dlopen = Dl.DLOPEN, dlvsym = Dl.DLVSYM;
        if (dlopen == null || dlvsym == null) {
            return null;
        }
        try (Arena arena = Arena.ofConfined()) {
            final int rtldLazyNoload = 0x0001 | 0x0004; // RTLD_LAZY | RTLD_NOLOAD: the handle of the loaded copy
            MemorySegment handle = (MemorySegment) dlopen.invokeExact(arena.allocateFrom(library), rtldLazyNoload);
            if (handle.equals(MemorySegment.NULL)) {
                return null;
            }
            MemorySegment versioned = (MemorySegment) dlvsym.invokeExact(handle, arena.allocateFrom(sym),
                    arena.allocateFrom(version));
            if (versioned.equals(MemorySegment.NULL)) {
                return library + " has no " + sym + "@" + version + ": the layouts of this provider are"
                        + " those of that symbol version";
            }
            if (versioned.address() != found.address()) {
                return library + "'s default " + sym + " is not its " + version + " version: a newer"
                        + " rdma-core changed that function's structs; this provider's layouts are " + version + "'s";
            }
            return null; // the dlopen reference is not dropped: the library stays loaded for the provider anyway
        } catch (Throwable t) {
            return null;
        }
    }

    /** glibc's {@code dlopen} and {@code dlvsym}, bound once (null where libc has none), for the version checks. */
    private static final class Dl {
        static final MethodHandle DLOPEN = bind("dlopen", FunctionDescriptor.of(ADDRESS, ADDRESS, JAVA_INT));
        static final MethodHandle DLVSYM = bind("dlvsym", FunctionDescriptor.of(ADDRESS, ADDRESS, ADDRESS, ADDRESS));

        private static MethodHandle bind(String name, FunctionDescriptor fd) {
            Linker linker = Linker.nativeLinker();
            return linker.defaultLookup().find(name).map(a -> linker.downcallHandle(a, fd)).orElse(null);
        }
    }

    /**
     * {@return the version suffix of the libibverbs file mapped into this process, such as
     * {@code 1.14.44.0} (ABI 1, rdma-core 44), or null if none is found in {@code /proc/self/maps}}
     */
    static String loadedVersion() {
        return mappedVersion("libibverbs.so.");
    }

    /**
     * {@return the version suffix of the file named {@code soPrefix}* mapped into this process (for
     * {@code libibverbs.so.}: {@code 1.14.44.0}), or null if {@code /proc/self/maps} shows none}
     */
    static String mappedVersion(String soPrefix) {
        String name = "/" + soPrefix;
        try {
            for (String line : Files.readAllLines(Path.of("/proc/self/maps"))) {
                int at = line.indexOf(name);
                if (at >= 0) {
                    return line.substring(at + name.length()).trim();
                }
            }
        } catch (IOException | RuntimeException e) {
            return null;
        }
        return null;
    }

    /** {@return null when usable, else why not} */
    String reason() {
        return reason;
    }

    /** {@return the library name given to {@link #load}} */
    String library() {
        return library;
    }

    /** {@return the loaded file's version suffix ({@code 1.14.44.0}), or null if unknown} */
    String version() {
        return version;
    }

    private void requireUsable() {
        if (reason != null) {
            throw new IllegalStateException("libibverbs is not usable: " + reason);
        }
    }

    /** One entry of {@code ibv_get_device_list}, read while the list was held. */
    record DeviceInfo(String name, int nodeType, int transportType, long nodeGuid, String devPath, String ibdevPath) {
    }

    /**
     * Lists the devices ({@code ibv_get_device_list}, read, {@code ibv_free_device_list}).
     *
     * @return the devices, empty when there is none
     * @throws NativeCallException if {@code ibv_get_device_list} fails (errno)
     * @throws LayoutMismatchException if an entry's fields are not where the layout says
     */
    List<DeviceInfo> deviceList() {
        requireUsable();
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment num = arena.allocate(JAVA_INT);
            MemorySegment state = arena.allocate(CALL_STATE);
            MemorySegment list = (MemorySegment) getDeviceList.handle().invokeExact(state, num);
            if (list.equals(MemorySegment.NULL)) {
                int err = (int) ERRNO.get(state, 0L);
                throw new NativeCallException("ibv_get_device_list", err);
            }
            try {
                int n = num.get(JAVA_INT, 0);
                MemorySegment array = list.reinterpret((long) (n + 1) * ADDRESS.byteSize());
                java.util.ArrayList<DeviceInfo> out = new java.util.ArrayList<>(n);
                for (int i = 0; i < n; i++) {
                    MemorySegment dev = array.getAtIndex(ADDRESS, i).reinterpret(IBV_DEVICE.byteSize());
                    out.add(readDevice(dev));
                }
                return List.copyOf(out);
            } finally {
                freeDeviceList.handle().invokeExact(list);
            }
        } catch (RuntimeException | Error e) {
            throw e;
        } catch (Throwable t) {
            throw new IllegalStateException(t);
        }
    }

    private DeviceInfo readDevice(MemorySegment dev) throws Throwable {
        checkDevice(dev, (MemorySegment) getDeviceName.handle().invokeExact(dev));
        String name = cString(dev, off(IBV_DEVICE, "name"), SYSFS_NAME_MAX);
        long guid = Long.reverseBytes((long) getDeviceGuid.handle().invokeExact(dev)); // __be64 as stored: to host order
        return new DeviceInfo(name, dev.get(JAVA_INT, off(IBV_DEVICE, "node_type")),
                dev.get(JAVA_INT, off(IBV_DEVICE, "transport_type")), guid,
                cString(dev, off(IBV_DEVICE, "dev_path"), SYSFS_PATH_MAX),
                cString(dev, off(IBV_DEVICE, "ibdev_path"), SYSFS_PATH_MAX));
    }

    /**
     * Checks the {@code ibv_device} layout against the library: {@code ibv_get_device_name} returns a
     * pointer to the device's {@code name} field, and {@code ibdev_path} is the sysfs directory of that name.
     *
     * @param dev     the device
     * @param namePtr what {@code ibv_get_device_name(dev)} returned
     * @throws LayoutMismatchException naming the field that is not where the layout puts it
     */
    static void checkDevice(MemorySegment dev, MemorySegment namePtr) {
        long nameOff = namePtr.address() - dev.address();
        if (nameOff != off(IBV_DEVICE, "name")) {
            throw new LayoutMismatchException("struct ibv_device: ibv_get_device_name returns the name at offset "
                    + nameOff + ", the layout (verbs.h) has it at " + off(IBV_DEVICE, "name"));
        }
        String name = cString(dev, off(IBV_DEVICE, "name"), SYSFS_NAME_MAX);
        String ibdev = cString(dev, off(IBV_DEVICE, "ibdev_path"), SYSFS_PATH_MAX);
        if (!ibdev.endsWith("/" + name)) {
            throw new LayoutMismatchException("struct ibv_device: ibdev_path at offset " + off(IBV_DEVICE, "ibdev_path")
                    + " reads '" + ibdev + "', which is not the sysfs directory of device '" + name + "'");
        }
    }

    /**
     * {@return the name of the device of a context another library opened (librdmacm's), checked as the device list's
     * entries are}
     *
     * @param ctx a {@code struct ibv_context *}: its first field is the {@code struct ibv_device *}
     * @throws LayoutMismatchException if the device's name is not where the layout says
     */
    String contextDeviceName(MemorySegment ctx) {
        requireUsable();
        MemorySegment dev = ctx.reinterpret(ADDRESS.byteSize()).get(ADDRESS, 0).reinterpret(IBV_DEVICE.byteSize());
        try {
            checkDevice(dev, (MemorySegment) getDeviceName.handle().invokeExact(dev));
        } catch (RuntimeException | Error e) {
            throw e;
        } catch (Throwable t) {
            throw new IllegalStateException(t);
        }
        return cString(dev, off(IBV_DEVICE, "name"), SYSFS_NAME_MAX);
    }

    /**
     * Opens a device context ({@code ibv_open_device}) on the device with this name.
     *
     * @param name the device name
     * @return the {@code struct ibv_context *}
     * @throws NativeCallException ENODEV if there is no such device, else the errno of {@code ibv_open_device}
     */
    MemorySegment open(String name) {
        requireUsable();
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment num = arena.allocate(JAVA_INT);
            MemorySegment state = arena.allocate(CALL_STATE);
            MemorySegment list = (MemorySegment) getDeviceList.handle().invokeExact(state, num);
            if (list.equals(MemorySegment.NULL)) {
                throw new NativeCallException("ibv_get_device_list", (int) ERRNO.get(state, 0L));
            }
            try {
                int n = num.get(JAVA_INT, 0);
                MemorySegment array = list.reinterpret((long) (n + 1) * ADDRESS.byteSize());
                for (int i = 0; i < n; i++) {
                    MemorySegment dev = array.getAtIndex(ADDRESS, i).reinterpret(IBV_DEVICE.byteSize());
                    checkDevice(dev, (MemorySegment) getDeviceName.handle().invokeExact(dev));
                    if (cString(dev, off(IBV_DEVICE, "name"), SYSFS_NAME_MAX).equals(name)) {
                        // the context stays valid after the list is freed (rdma-core counts the device's references)
                        MemorySegment ctx = (MemorySegment) openDevice.handle().invokeExact(state, dev);
                        if (ctx.equals(MemorySegment.NULL)) {
                            throw new NativeCallException("ibv_open_device(" + name + ")", (int) ERRNO.get(state, 0L));
                        }
                        return ctx;
                    }
                }
                throw new NativeCallException("ibv_open_device(" + name + "): no such device", 19 /* ENODEV */);
            } finally {
                freeDeviceList.handle().invokeExact(list);
            }
        } catch (RuntimeException | Error e) {
            throw e;
        } catch (Throwable t) {
            throw new IllegalStateException(t);
        }
    }

    /**
     * Closes a context ({@code ibv_close_device}).
     *
     * @param ctx the context from {@link #open}
     * @return 0, or the library's failure code
     */
    int close(MemorySegment ctx) {
        try {
            return (int) closeDevice.handle().invokeExact(ctx);
        } catch (Throwable t) {
            throw new IllegalStateException(t);
        }
    }

    /**
     * {@code ibv_query_device} into {@code attr}, which must hold the struct and {@link #CANARY_BYTES} more:
     * those must come back untouched, else the library wrote a bigger struct than the layout.
     *
     * @param ctx  the context
     * @param attr at least {@code IBV_DEVICE_ATTR.byteSize() + CANARY_BYTES} bytes
     * @throws NativeCallException with the returned errno
     * @throws LayoutMismatchException if the library wrote past the layout's size
     */
    void queryDevice(MemorySegment ctx, MemorySegment attr) {
        guarded(attr, IBV_DEVICE_ATTR, "ibv_query_device", seg -> (int) queryDevice.handle().invokeExact(ctx, seg));
    }

    /**
     * {@code ibv_query_port@@IBVERBS_1.1} into {@code attr} (the compat layout), with a canary as {@link #queryDevice}.
     *
     * @param ctx  the context
     * @param port the port number, from 1
     * @param attr at least {@code IBV_PORT_ATTR_COMPAT.byteSize() + CANARY_BYTES} bytes
     */
    void queryPort(MemorySegment ctx, int port, MemorySegment attr) {
        guarded(attr, IBV_PORT_ATTR_COMPAT, "ibv_query_port", seg -> (int) queryPort.handle().invokeExact(ctx, (byte) port, seg));
    }

    /**
     * {@code ibv_query_gid}.
     *
     * @param ctx   the context
     * @param port  the port number, from 1
     * @param index the GID table index
     * @param gid   16 bytes
     * @return 0, or the library's failure code (an empty or invalid entry)
     */
    int queryGid(MemorySegment ctx, int port, int index, MemorySegment gid) {
        try {
            return (int) queryGid.handle().invokeExact(ctx, (byte) port, index, gid);
        } catch (Throwable t) {
            throw new IllegalStateException(t);
        }
    }

    @FunctionalInterface
    interface Call {
        int call(MemorySegment seg) throws Throwable;
    }

    /**
     * Fills {@code buf} past {@code layout}'s size with a canary, calls, and checks the canary.
     *
     * @param buf    the struct and {@link #CANARY_BYTES} more
     * @param layout the struct's layout
     * @param what   the function's name, for messages
     * @param call   the call
     */
    static void guarded(MemorySegment buf, MemoryLayout layout, String what, Call call) {
        long size = layout.byteSize();
        if (buf.byteSize() < size + CANARY_BYTES) {
            throw new IllegalArgumentException(what + ": buffer of " + buf.byteSize() + " bytes, needs " + (size + CANARY_BYTES));
        }
        buf.fill((byte) 0);
        buf.asSlice(size, CANARY_BYTES).fill(CANARY);
        int rc;
        try {
            rc = call.call(buf);
        } catch (RuntimeException | Error e) {
            throw e;
        } catch (Throwable t) {
            throw new IllegalStateException(t);
        }
        for (long i = size; i < size + CANARY_BYTES; i++) {
            if (buf.get(JAVA_BYTE, i) != CANARY) {
                throw new LayoutMismatchException(what + " wrote byte " + i + " past the " + size + " bytes of "
                        + layout.name().orElse("the struct") + " in verbs.h: the library's struct is bigger than this"
                        + " provider's layout; its fields cannot be trusted");
            }
        }
        if (rc != 0) {
            throw new NativeCallException(what, rc < 0 ? -rc : rc);
        }
    }

    /** {@return the byte offset of {@code field} in {@code layout}} */
    static long off(StructLayout layout, String field) {
        return layout.byteOffset(groupElement(field));
    }

    /** {@return the NUL-terminated string at {@code offset}, at most {@code max} bytes} */
    static String cString(MemorySegment seg, long offset, int max) {
        int len = 0;
        while (len < max && seg.get(JAVA_BYTE, offset + len) != 0) {
            len++;
        }
        byte[] b = new byte[len];
        MemorySegment.copy(seg, JAVA_BYTE, offset, b, 0, len);
        return new String(b, java.nio.charset.StandardCharsets.UTF_8);
    }

    /** The library broke the layout assumptions: nothing it wrote is read. */
    static final class LayoutMismatchException extends RuntimeException {
        LayoutMismatchException(String message) {
            super(message);
        }
    }

    /** A libibverbs function failed with an errno. */
    static final class NativeCallException extends RuntimeException {
        private final int errno;

        NativeCallException(String what, int errno) {
            super(what + " failed: errno " + errno);
            this.errno = errno;
        }

        int errno() {
            return errno;
        }
    }
}

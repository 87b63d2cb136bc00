package io.jrdma.rdmacore;

import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemoryLayout;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.StructLayout;
import java.lang.foreign.SymbolLookup;
import java.lang.invoke.MethodHandle;
import java.net.Inet4Address;
import java.net.Inet6Address;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.UnknownHostException;
import java.nio.ByteOrder;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Optional;

import static java.lang.foreign.MemoryLayout.PathElement.groupElement;
import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_SHORT;

/**
 * {@code librdmacm.so.1} bound through the FFM API: the layouts of the {@code rdma_cma.h} structs this provider
 * reads and writes ({@code struct rdma_cm_id}, {@code rdma_cm_event}, {@code rdma_conn_param}, {@code sockaddr_in}
 * and {@code sockaddr_in6}; LP64) and the functions of the connection manager. Loading never throws:
 * {@link #reason()} says why the library cannot be used. What the library writes is checked where it can be
 * ({@link #checkId}, {@link #checkEvent}): a mismatch throws {@link LibIbverbs.LayoutMismatchException} naming the
 * field, before anything read at a wrong place is used.
 */
final class LibRdmacm {
    /** The library's soname. */
    static final String DEFAULT_LIBRARY = "librdmacm.so.1";
    /** System property naming another library (a path or soname). */
    static final String LIBRARY_PROPERTY = "jrdma.rdmacore.rdmacm.library";

    /** {@code RDMA_PS_TCP}: the port space of reliable connected (RC) QPs, rping's and perftest's. */
    static final int RDMA_PS_TCP = 0x0106;
    static final short AF_INET = 2, AF_INET6 = 10;

    /** {@code enum rdma_cm_event_type}, in order. */
    static final String[] EVENT_NAMES = {"ADDR_RESOLVED", "ADDR_ERROR", "ROUTE_RESOLVED", "ROUTE_ERROR",
            "CONNECT_REQUEST", "CONNECT_RESPONSE", "CONNECT_ERROR", "UNREACHABLE", "REJECTED", "ESTABLISHED",
            "DISCONNECTED", "DEVICE_REMOVAL", "MULTICAST_JOIN", "MULTICAST_ERROR", "ADDR_CHANGE", "TIMEWAIT_EXIT",
            "ADDRINFO_RESOLVED", "ADDRINFO_ERROR"};
    static final int ADDR_RESOLVED = 0, ADDR_ERROR = 1, ROUTE_RESOLVED = 2, ROUTE_ERROR = 3, CONNECT_REQUEST = 4,
            CONNECT_RESPONSE = 5, CONNECT_ERROR = 6, UNREACHABLE = 7, REJECTED = 8, ESTABLISHED = 9,
            DISCONNECTED = 10, DEVICE_REMOVAL = 11, ADDR_CHANGE = 14, TIMEWAIT_EXIT = 15;

    /** {@return the event's name as {@code rdma_event_str} gives it, without its prefix} */
    static String eventName(int type) {
        return type >= 0 && type < EVENT_NAMES.length ? EVENT_NAMES[type] : "UNKNOWN(" + type + ")";
    }

    /** {@code struct sockaddr_storage}: 128 bytes, 8-aligned. */
    static final MemoryLayout SOCKADDR_STORAGE = MemoryLayout.sequenceLayout(16, java.lang.foreign.ValueLayout.JAVA_LONG)
            .withName("sockaddr_storage");

    /** {@code struct rdma_addr}: source and destination addresses (two {@code sockaddr_storage}), the IB addresses. */
    static final StructLayout RDMA_ADDR = MemoryLayout.structLayout(SOCKADDR_STORAGE.withName("src_addr"),
            SOCKADDR_STORAGE.withName("dst_addr"),
            // union { struct rdma_ib_addr ibaddr; }: sgid, dgid (union ibv_gid, 8-aligned), __be16 pkey, padding
            MemoryLayout.sequenceLayout(40, JAVA_BYTE).withName("addr")).withName("rdma_addr");

    /** {@code struct rdma_route}: the addresses, the path records, their count. 312 bytes. */
    static final StructLayout RDMA_ROUTE = MemoryLayout.structLayout(RDMA_ADDR.withName("addr"),
            ADDRESS.withName("path_rec"), JAVA_INT.withName("num_paths"), MemoryLayout.paddingLayout(4))
            .withName("rdma_route");

    /** {@code struct rdma_cm_id}. 416 bytes. */
    static final StructLayout RDMA_CM_ID = MemoryLayout.structLayout(ADDRESS.withName("verbs"),
            ADDRESS.withName("channel"), ADDRESS.withName("context"), ADDRESS.withName("qp"),
            RDMA_ROUTE.withName("route"), JAVA_INT.withName("ps"), JAVA_BYTE.withName("port_num"),
            MemoryLayout.paddingLayout(3), ADDRESS.withName("event"), ADDRESS.withName("send_cq_channel"),
            ADDRESS.withName("send_cq"), ADDRESS.withName("recv_cq_channel"), ADDRESS.withName("recv_cq"),
            ADDRESS.withName("srq"), ADDRESS.withName("pd"), JAVA_INT.withName("qp_type"), MemoryLayout.paddingLayout(4))
            .withName("rdma_cm_id");

    /** {@code struct rdma_conn_param}. 24 bytes. */
    static final StructLayout RDMA_CONN_PARAM = MemoryLayout.structLayout(ADDRESS.withName("private_data"),
            JAVA_BYTE.withName("private_data_len"), JAVA_BYTE.withName("responder_resources"),
            JAVA_BYTE.withName("initiator_depth"), JAVA_BYTE.withName("flow_control"), JAVA_BYTE.withName("retry_count"),
            JAVA_BYTE.withName("rnr_retry_count"), JAVA_BYTE.withName("srq"), MemoryLayout.paddingLayout(1),
            JAVA_INT.withName("qp_num"), MemoryLayout.paddingLayout(4)).withName("rdma_conn_param");

    /** {@code struct rdma_cm_event}: id, listen_id, event, status, and the union of conn (24) and ud (56) params. 80 bytes. */
    static final StructLayout RDMA_CM_EVENT = MemoryLayout.structLayout(ADDRESS.withName("id"),
            ADDRESS.withName("listen_id"), JAVA_INT.withName("event"), JAVA_INT.withName("status"),
            MemoryLayout.unionLayout(RDMA_CONN_PARAM.withName("conn"),
                    MemoryLayout.sequenceLayout(56, JAVA_BYTE).withName("ud")).withName("param"))
            .withName("rdma_cm_event");

    /** {@code struct sockaddr_in}: family, port (big-endian), address, zero. 16 bytes. */
    static final StructLayout SOCKADDR_IN = MemoryLayout.structLayout(JAVA_SHORT.withName("sin_family"),
            JAVA_SHORT.withName("sin_port"), MemoryLayout.sequenceLayout(4, JAVA_BYTE).withName("sin_addr"),
            MemoryLayout.sequenceLayout(8, JAVA_BYTE).withName("sin_zero")).withName("sockaddr_in");

    /** {@code struct sockaddr_in6}: family, port (big-endian), flow info, address, scope id. 28 bytes. */
    static final StructLayout SOCKADDR_IN6 = MemoryLayout.structLayout(JAVA_SHORT.withName("sin6_family"),
            JAVA_SHORT.withName("sin6_port"), JAVA_INT.withName("sin6_flowinfo"),
            MemoryLayout.sequenceLayout(16, JAVA_BYTE).withName("sin6_addr"), JAVA_INT.withName("sin6_scope_id"))
            .withName("sockaddr_in6");

    static final long ID_VERBS = off(RDMA_CM_ID, "verbs");
    static final long ID_CHANNEL = off(RDMA_CM_ID, "channel");
    static final long ID_CONTEXT = off(RDMA_CM_ID, "context");
    static final long ID_PS = off(RDMA_CM_ID, "ps");
    static final long ID_PORT_NUM = off(RDMA_CM_ID, "port_num");
    static final long ID_SRC_ADDR = off(RDMA_CM_ID, "route") + off(RDMA_ROUTE, "addr") + off(RDMA_ADDR, "src_addr");
    static final long ID_DST_ADDR = off(RDMA_CM_ID, "route") + off(RDMA_ROUTE, "addr") + off(RDMA_ADDR, "dst_addr");
    static final long EV_ID = off(RDMA_CM_EVENT, "id");
    static final long EV_LISTEN_ID = off(RDMA_CM_EVENT, "listen_id");
    static final long EV_EVENT = off(RDMA_CM_EVENT, "event");
    static final long EV_STATUS = off(RDMA_CM_EVENT, "status");
    static final long EV_CONN = off(RDMA_CM_EVENT, "param");
    static final long CP_PRIVATE_DATA = off(RDMA_CONN_PARAM, "private_data");
    static final long CP_PRIVATE_DATA_LEN = off(RDMA_CONN_PARAM, "private_data_len");
    static final long CP_RESPONDER_RESOURCES = off(RDMA_CONN_PARAM, "responder_resources");
    static final long CP_INITIATOR_DEPTH = off(RDMA_CONN_PARAM, "initiator_depth");
    static final long CP_FLOW_CONTROL = off(RDMA_CONN_PARAM, "flow_control");
    static final long CP_RETRY_COUNT = off(RDMA_CONN_PARAM, "retry_count");
    static final long CP_RNR_RETRY_COUNT = off(RDMA_CONN_PARAM, "rnr_retry_count");
    static final long CP_SRQ = off(RDMA_CONN_PARAM, "srq");
    static final long CP_QP_NUM = off(RDMA_CONN_PARAM, "qp_num");

    /** Each function with the symbol version whose structs this provider uses (the default ones of rdma-core 44). */
    static final Map<String, String> SYMBOLS = new LinkedHashMap<>();
    private static final Map<String, FunctionDescriptor> DESCRIPTORS = new LinkedHashMap<>();

    private static void fn(String name, String version, FunctionDescriptor fd) {
        SYMBOLS.put(name, version);
        DESCRIPTORS.put(name, fd);
    }

    static {
        fn("rdma_create_event_channel", "RDMACM_1.0", FunctionDescriptor.of(ADDRESS));
        fn("rdma_destroy_event_channel", "RDMACM_1.0", FunctionDescriptor.ofVoid(ADDRESS));
        fn("rdma_create_id", "RDMACM_1.0", FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS, ADDRESS, JAVA_INT));
        fn("rdma_destroy_id", "RDMACM_1.0", FunctionDescriptor.of(JAVA_INT, ADDRESS));
        fn("rdma_bind_addr", "RDMACM_1.0", FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS));
        fn("rdma_listen", "RDMACM_1.0", FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_INT));
        fn("rdma_resolve_addr", "RDMACM_1.0", FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS, ADDRESS, JAVA_INT));
        fn("rdma_resolve_route", "RDMACM_1.0", FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_INT));
        fn("rdma_connect", "RDMACM_1.0", FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS));
        fn("rdma_accept", "RDMACM_1.0", FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS));
        fn("rdma_reject", "RDMACM_1.0", FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS, JAVA_BYTE));
        fn("rdma_disconnect", "RDMACM_1.0", FunctionDescriptor.of(JAVA_INT, ADDRESS));
        fn("rdma_establish", "RDMACM_1.2", FunctionDescriptor.of(JAVA_INT, ADDRESS));
        fn("rdma_get_cm_event", "RDMACM_1.0", FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS));
        fn("rdma_ack_cm_event", "RDMACM_1.0", FunctionDescriptor.of(JAVA_INT, ADDRESS));
        fn("rdma_init_qp_attr", "RDMACM_1.2", FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS, ADDRESS));
        fn("rdma_migrate_id", "RDMACM_1.0", FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS));
    }

    private final String library;
    private final String reason;
    private final String version;
    private final Map<String, Downcall> h;

    private LibRdmacm(String library, String reason, String version, Map<String, Downcall> h) {
        this.library = library;
        this.reason = reason;
        this.version = version;
        this.h = h;
    }

    private static volatile LibRdmacm instance;

    /** {@return the library of {@value #LIBRARY_PROPERTY} (default {@value #DEFAULT_LIBRARY}), loaded once} */
    static LibRdmacm get() {
        LibRdmacm l = instance;
        if (l == null) {
            synchronized (LibRdmacm.class) {
                l = instance;
                if (l == null) {
                    l = load(System.getProperty(LIBRARY_PROPERTY, DEFAULT_LIBRARY));
                    instance = l;
                }
            }
        }
        return l;
    }

    /**
     * Loads {@code library} (a soname or a path). Never throws.
     *
     * @param library the library, {@link #DEFAULT_LIBRARY} normally
     * @return the bindings; {@link #reason()} is non-null when they cannot be used
     */
    static LibRdmacm load(String library) {
        Map<String, Downcall> h = new LinkedHashMap<>();
        Module me = LibRdmacm.class.getModule();
        if (!System.getProperty("os.name", "").equals("Linux")) {
            return new LibRdmacm(library, "librdmacm needs Linux, not " + System.getProperty("os.name"), null, h);
        }
        LibIbverbs.Opened opened = LibIbverbs.Opened.of(library, me, "librdmacm",
                "librdmacm (Debian/Ubuntu: apt install librdmacm1; Fedora/RHEL: dnf install librdmacm)");
        if (opened.reason() != null) {
            return new LibRdmacm(library, opened.reason(), null, h);
        }
        SymbolLookup lookup = opened.lookup();
        for (Map.Entry<String, String> e : SYMBOLS.entrySet()) {
            Optional<MemorySegment> addr = lookup.find(e.getKey());
            if (addr.isEmpty()) {
                return new LibRdmacm(library, library + " has no symbol " + e.getKey()
                        + ": it is not rdma-core's librdmacm, or one too old for this provider", null, h);
            }
            String wrong = LibIbverbs.symbolVersionMismatch(library, e.getKey(), e.getValue(), addr.get());
            if (wrong != null) {
                return new LibRdmacm(library, wrong, null, h);
            }
            h.put(e.getKey(), new Downcall(e.getKey(), addr.get(), DESCRIPTORS.get(e.getKey()), Downcall.ERRNO)); // bound on first use
        }
        String version = loadedVersion();
        if (version != null && !version.startsWith("1.")) {
            return new LibRdmacm(library, "the loaded librdmacm.so." + version + " is not ABI 1: the struct layouts"
                    + " of this provider are those of librdmacm.so.1 (rdma-core's rdma_cma.h)", version, h);
        }
        return new LibRdmacm(library, null, version, h);
    }

    /** {@return the version suffix of the librdmacm file mapped into this process (1.3.44.0), or null} */
    static String loadedVersion() {
        return LibIbverbs.mappedVersion("librdmacm.so.");
    }

    /** {@return the functions found at load, each bound on its first call} */
    java.util.Collection<Downcall> downcalls() {
        return h.values();
    }

    /** {@return null when usable, else why not} */
    String reason() {
        return reason;
    }

    /** {@return the library name given to {@link #load}} */
    String library() {
        return library;
    }

    /** {@return the loaded file's version suffix, or null if unknown} */
    String version() {
        return version;
    }

    // ------------------------------------------------------------------ calls

    /**
     * Calls {@code fn} with an errno slot.
     *
     * @return the function's int result (0 for success), or the errno of a -1
     */
    private int call(String fn, MemorySegment state, Object... args) {
        Downcall d = h.get(fn);
        if (d == null) {
            throw new IllegalStateException("librdmacm is not usable: " + reason);
        }
        MethodHandle m = d.handle();
        Object[] all = new Object[args.length + 1];
        all[0] = state;
        System.arraycopy(args, 0, all, 1, args.length);
        int rc;
        try {
            rc = (int) m.invokeWithArguments(all);
        } catch (RuntimeException | Error e) {
            throw e;
        } catch (Throwable t) {
            throw new IllegalStateException(t);
        }
        if (rc == 0) {
            return 0;
        }
        int e = IbvVerbs.errno(state);
        return rc > 0 ? rc : (e == 0 ? 5 /* EIO */ : e);
    }

    /**
     * {@code rdma_create_event_channel}.
     *
     * @throws LibIbverbs.NativeCallException with the errno, the message saying what it means
     */
    MemorySegment createEventChannel(MemorySegment state) {
        MethodHandle m = h.get("rdma_create_event_channel").handle();
        MemorySegment ch;
        try {
            ch = (MemorySegment) m.invokeExact(state);
        } catch (RuntimeException | Error e) {
            throw e;
        } catch (Throwable t) {
            throw new IllegalStateException(t);
        }
        if (ch.equals(MemorySegment.NULL)) {
            int e = IbvVerbs.errno(state);
            throw new LibIbverbs.NativeCallException(channelFailure(e), e == 0 ? 19 : e);
        }
        return ch.reinterpret(4);
    }

    /** {@return what a failed {@code rdma_create_event_channel} means, by errno} */
    static String channelFailure(int errno) {
        return switch (errno) {
            case 19 -> "rdma_create_event_channel: librdmacm finds no RDMA device (ENODEV): an RDMA NIC's driver, or"
                    + " modprobe rdma_rxe or siw and 'rdma link add', provides one";
            case 2 -> "rdma_create_event_channel: /dev/infiniband/rdma_cm is missing (ENOENT): modprobe rdma_ucm";
            case 13, 1 -> "rdma_create_event_channel: no permission to open /dev/infiniband/rdma_cm (errno " + errno
                    + "): run as a user allowed to use RDMA devices";
            default -> "rdma_create_event_channel";
        };
    }

    void destroyEventChannel(MemorySegment state, MemorySegment ch) {
        try {
            h.get("rdma_destroy_event_channel").handle().invokeExact(state, ch);
        } catch (RuntimeException | Error e) {
            throw e;
        } catch (Throwable t) {
            throw new IllegalStateException(t);
        }
    }

    int createId(MemorySegment state, MemorySegment ch, MemorySegment idOut, MemorySegment context) {
        return call("rdma_create_id", state, ch, idOut, context, RDMA_PS_TCP);
    }

    int destroyId(MemorySegment state, MemorySegment id) {
        return call("rdma_destroy_id", state, id);
    }

    int bindAddr(MemorySegment state, MemorySegment id, MemorySegment sockaddr) {
        return call("rdma_bind_addr", state, id, sockaddr);
    }

    int listen(MemorySegment state, MemorySegment id, int backlog) {
        return call("rdma_listen", state, id, backlog);
    }

    int resolveAddr(MemorySegment state, MemorySegment id, MemorySegment src, MemorySegment dst, int timeoutMs) {
        return call("rdma_resolve_addr", state, id, src, dst, timeoutMs);
    }

    int resolveRoute(MemorySegment state, MemorySegment id, int timeoutMs) {
        return call("rdma_resolve_route", state, id, timeoutMs);
    }

    int connect(MemorySegment state, MemorySegment id, MemorySegment param) {
        return call("rdma_connect", state, id, param);
    }

    int accept(MemorySegment state, MemorySegment id, MemorySegment param) {
        return call("rdma_accept", state, id, param);
    }

    int reject(MemorySegment state, MemorySegment id, MemorySegment data, int length) {
        return call("rdma_reject", state, id, data, (byte) length);
    }

    int disconnect(MemorySegment state, MemorySegment id) {
        return call("rdma_disconnect", state, id);
    }

    int establish(MemorySegment state, MemorySegment id) {
        return call("rdma_establish", state, id);
    }

    int getCmEvent(MemorySegment state, MemorySegment ch, MemorySegment eventOut) {
        return call("rdma_get_cm_event", state, ch, eventOut);
    }

    int ackCmEvent(MemorySegment state, MemorySegment event) {
        return call("rdma_ack_cm_event", state, event);
    }

    int initQpAttr(MemorySegment state, MemorySegment id, MemorySegment attr, MemorySegment maskOut) {
        return call("rdma_init_qp_attr", state, id, attr, maskOut);
    }

    int migrateId(MemorySegment state, MemorySegment id, MemorySegment ch) {
        return call("rdma_migrate_id", state, id, ch);
    }

    // ------------------------------------------------------------------ layout checks

    /**
     * Checks a fresh {@code rdma_cm_id} against what {@code rdma_create_id} was given: its {@code channel},
     * {@code context} and {@code ps} fields must hold them.
     *
     * @throws LibIbverbs.LayoutMismatchException naming the first field that does not
     */
    static void checkId(MemorySegment id, MemorySegment channel, long context) {
        long ch = id.get(ADDRESS, ID_CHANNEL).address();
        if (ch != channel.address()) {
            throw new LibIbverbs.LayoutMismatchException("struct rdma_cm_id: channel at offset " + ID_CHANNEL
                    + " reads 0x" + Long.toHexString(ch) + ", not the event channel rdma_create_id was given (0x"
                    + Long.toHexString(channel.address()) + ")");
        }
        long c = id.get(ADDRESS, ID_CONTEXT).address();
        if (c != context) {
            throw new LibIbverbs.LayoutMismatchException("struct rdma_cm_id: context at offset " + ID_CONTEXT
                    + " reads 0x" + Long.toHexString(c) + ", not the context rdma_create_id was given (0x"
                    + Long.toHexString(context) + ")");
        }
        int ps = id.get(JAVA_INT, ID_PS);
        if (ps != RDMA_PS_TCP) {
            throw new LibIbverbs.LayoutMismatchException("struct rdma_cm_id: ps at offset " + ID_PS + " reads 0x"
                    + Integer.toHexString(ps) + ", not RDMA_PS_TCP (0x" + Integer.toHexString(RDMA_PS_TCP) + ")");
        }
    }

    /**
     * Checks an event read from a channel whose only ids are {@code expectedId} (and, for a connection request,
     * the listening {@code expectedId}): the event's {@code id} (or {@code listen_id}) must be it, its type one of
     * {@code enum rdma_cm_event_type}.
     *
     * @param event      the event, {@code RDMA_CM_EVENT.byteSize()} bytes
     * @param expectedId the only id on the channel
     * @throws LibIbverbs.LayoutMismatchException naming the field that does not hold what it must
     */
    static void checkEvent(MemorySegment event, MemorySegment expectedId) {
        int type = event.get(JAVA_INT, EV_EVENT);
        if (type < 0 || type >= EVENT_NAMES.length) {
            throw new LibIbverbs.LayoutMismatchException("struct rdma_cm_event: event at offset " + EV_EVENT
                    + " reads " + type + ", not an enum rdma_cm_event_type");
        }
        long field = type == CONNECT_REQUEST ? EV_LISTEN_ID : EV_ID;
        long id = event.get(ADDRESS, field).address();
        if (id != expectedId.address()) {
            throw new LibIbverbs.LayoutMismatchException("struct rdma_cm_event: " + (type == CONNECT_REQUEST
                    ? "listen_id" : "id") + " at offset " + field + " of a " + eventName(type) + " event reads 0x"
                    + Long.toHexString(id) + ", not the rdma_cm_id of its channel (0x"
                    + Long.toHexString(expectedId.address()) + ")");
        }
    }

    // ------------------------------------------------------------------ socket addresses

    /**
     * Writes {@code a} as a {@code sockaddr_in} or {@code sockaddr_in6} (with the IPv6 scope id) into {@code s}.
     *
     * @param s at least 28 bytes (128 for a {@code sockaddr_storage})
     * @param a the address; a wildcard address stays the family's wildcard
     */
    static void writeSockaddr(MemorySegment s, InetSocketAddress a) {
        s.fill((byte) 0);
        InetAddress ip = a.getAddress();
        short port = Short.reverseBytes((short) a.getPort()); // network order in a host-order short
        if (ByteOrder.nativeOrder() == ByteOrder.BIG_ENDIAN) {
            port = (short) a.getPort();
        }
        if (ip instanceof Inet4Address) {
            s.set(JAVA_SHORT, off(SOCKADDR_IN, "sin_family"), AF_INET);
            s.set(JAVA_SHORT, off(SOCKADDR_IN, "sin_port"), port);
            MemorySegment.copy(ip.getAddress(), 0, s, JAVA_BYTE, off(SOCKADDR_IN, "sin_addr"), 4);
        } else {
            s.set(JAVA_SHORT, off(SOCKADDR_IN6, "sin6_family"), AF_INET6);
            s.set(JAVA_SHORT, off(SOCKADDR_IN6, "sin6_port"), port);
            MemorySegment.copy(ip.getAddress(), 0, s, JAVA_BYTE, off(SOCKADDR_IN6, "sin6_addr"), 16);
            s.set(JAVA_INT, off(SOCKADDR_IN6, "sin6_scope_id"), ((Inet6Address) ip).getScopeId());
        }
    }

    /**
     * {@return the {@code sockaddr_in}/{@code sockaddr_in6} at {@code offset}, or null for another family}
     *
     * @param s      memory holding it
     * @param offset where it starts
     */
    static InetSocketAddress readSockaddr(MemorySegment s, long offset) {
        short family = s.get(JAVA_SHORT, offset);
        int port = Short.toUnsignedInt(s.get(JAVA_SHORT, offset + 2));
        if (ByteOrder.nativeOrder() == ByteOrder.LITTLE_ENDIAN) {
            port = Short.toUnsignedInt(Short.reverseBytes((short) port));
        }
        try {
            if (family == AF_INET) {
                byte[] b = s.asSlice(offset + off(SOCKADDR_IN, "sin_addr"), 4).toArray(JAVA_BYTE);
                return new InetSocketAddress(InetAddress.getByAddress(b), port);
            }
            if (family == AF_INET6) {
                byte[] b = s.asSlice(offset + off(SOCKADDR_IN6, "sin6_addr"), 16).toArray(JAVA_BYTE);
                int scope = s.get(JAVA_INT, offset + off(SOCKADDR_IN6, "sin6_scope_id"));
                InetAddress ip = scope != 0 ? Inet6Address.getByAddress(null, b, scope) : InetAddress.getByAddress(b);
                return new InetSocketAddress(ip, port);
            }
        } catch (UnknownHostException e) {
            return null;
        }
        return null;
    }

    /** {@return the byte offset of {@code field} in {@code layout}} */
    static long off(StructLayout layout, String field) {
        return layout.byteOffset(groupElement(field));
    }
}

package io.jrdma.rdmacore;

import io.jrdma.verbs.Access;
import io.jrdma.verbs.ConnParam;
import io.jrdma.verbs.ConnectionManager;
import io.jrdma.verbs.ConnectionRejectedException;
import io.jrdma.verbs.Mtu;
import io.jrdma.verbs.QpAttr;
import io.jrdma.verbs.QpState;
import io.jrdma.verbs.QpType;
import io.jrdma.verbs.QueuePair;
import io.jrdma.verbs.RdmaException;
import io.jrdma.verbs.RdmaException.Errno;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.Arrays;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.ReentrantLock;

import static io.jrdma.rdmacore.Structs.IBV_QP_ATTR;
import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_INT;

/**
 * The rdma_cm connection manager of an rdma-core context: {@code librdmacm} ({@code rdma_cm}) in the TCP port
 * space, so that a jrdma program on a RoCE or iWARP device connects to any rdma_cm peer (rping, perftest
 * {@code -R}, NVMe-oF), and the only way iWARP QPs (siw) connect at all.
 *
 * <p><b>Which context the QP lives on.</b> librdmacm opens its own {@code ibv_context} of each device (the
 * {@code verbs} of a {@code rdma_cm_id}); the application's QPs live on the provider's context (its PDs, CQs and
 * regions are there). Both are contexts of the same kernel device, and the kernel's connection manager finds a QP
 * by its number on that device, so the QP stays where it is, as an <em>external</em> QP of the
 * {@code rdma_cm_id}: its number goes in {@code rdma_conn_param.qp_num}, and the transitions librdmacm would
 * make on a QP of its own ({@code rdma_create_qp}, {@code rdma_accept}, the CONNECT_RESPONSE of
 * {@code rdma_get_cm_event}) are made here with the attributes {@code rdma_init_qp_attr} gives, then
 * {@code rdma_establish} sends the RTU. An id whose {@code verbs} is another device than this context's is refused
 * (ENETUNREACH for a client whose route leaves through another device; a request arriving on another device is
 * rejected).
 *
 * <p><b>Events.</b> Every {@code rdma_cm_id} has an event channel of its own (a connection request's id is moved
 * to one with {@code rdma_migrate_id}), so that each blocking call waits on one descriptor with {@code poll(2)}:
 * the thread sleeps in the kernel and nothing spins. Each event is copied and acknowledged at once. Once a
 * connection is established its channel is read by one thread of the manager, the <em>watcher</em>
 * ({@link FdWatcher}: blocked in {@code poll(2)} on the channels of the established connections and an eventfd),
 * which files the events for {@link Connection#pollEvent} and on DISCONNECTED moves the QP to ERROR at once (its
 * posted work flushes, so an application that waits only on its CQ learns of the disconnect) and answers with
 * {@code rdma_disconnect}; at TIMEWAIT_EXIT it destroys the id and its channel. The watcher starts with the first
 * established connection and ends when the context closes.
 */
final class RdmaCoreCm implements ConnectionManager {
    private static final System.Logger LOG = System.getLogger(RdmaCoreCm.class.getName());

    /** {@code rdma_conn_param.private_data_len} is a {@code uint8_t}: the most private data through librdmacm. */
    static final int MAX_PRIVATE_DATA = 255;
    /**
     * The most on iWARP: 251 bytes. An MPA Request or Reply may carry 256 bytes of private data ({@code
     * MPA_MAX_PRIVDATA} in Linux siw, {@code RDMA_MAX_PRIVATE_DATA}), of which MPA revision 2's enhanced connection
     * set-up (siw's default) takes 4 for IRD and ORD; but siw's {@code siw_send_mpareqrep} adds those 4 to the
     * application's length in a {@code u8}, so 252 bytes go out as a length of 0 and the peer rejects the frame
     * (bisected on siw0, kernel 6.1, 2026-11-26: 251 connects, 252 is rejected; RdmaCmPrivateDataLimitTest).
     */
    static final int MAX_IWARP_PRIVATE_DATA = 251;
    /** Over the InfiniBand CM (RoCE): a REQ's private data after rdma_cm's 36-byte header, a REP's, a REJ's. */
    static final int IB_REQ_PRIVATE_DATA = 56, IB_REP_PRIVATE_DATA = 196, IB_REJ_PRIVATE_DATA = 148;
    /**
     * The jrdma trailer of soft-iWARP's connection manager (flags, QPN, MTU code, {@code "JRD1"}), appended to the
     * private data on iWARP, where no QPN crosses the wire; a jrdma peer strips it, others ignore it.
     */
    static final int EXT_LENGTH = 16, EXT_MAGIC = 0x4A52_4431;
    /** The longest application data that still leaves room for the trailer. */
    static final int MAX_DATA_WITH_TRAILER = MAX_IWARP_PRIVATE_DATA - EXT_LENGTH;
    private static final int BACKLOG = 128;
    private static final int IBV_ACCESS_LOCAL_WRITE = 1, IBV_ACCESS_REMOTE_WRITE = 2, IBV_ACCESS_REMOTE_READ = 4;
    private static final int RDMA_MAX = 0xFF; // RDMA_MAX_RESP_RES, RDMA_MAX_INIT_DEPTH: "what the CM says"

    private final RdmaCoreContext context;
    private final LibRdmacm lib;
    private final boolean iwarp;
    private final int maxResponder, maxInitiator;
    private final Set<Endpoint> open = ConcurrentHashMap.newKeySet();
    /** The reader of the established connections' channels; made with the first one, closed with the context. */
    private FdWatcher watcher;
    /** Set by {@link #shutdown} (under this manager's lock): no id is made or kept from then on. */
    private boolean shut;
    private static final AtomicLong TOKENS = new AtomicLong(0x6A72_0000_0000L);

    RdmaCoreCm(RdmaCoreContext context, LibRdmacm lib) {
        this.context = context;
        this.lib = lib;
        this.iwarp = context.device().transportType() == RdmaCoreDevice.TRANSPORT_IWARP;
        io.jrdma.verbs.DeviceAttr a = context.queryDevice();
        this.maxResponder = Math.max(0, Math.min(255, a.maxQpRdAtom()));
        this.maxInitiator = Math.max(0, Math.min(255, a.maxQpInitRdAtom()));
    }

    // ------------------------------------------------------------------ one rdma_cm_id on its own channel

    /** An event, copied out of its {@code struct rdma_cm_event} before the acknowledgement. */
    record Ev(int type, int status, MemorySegment id, byte[] privateData, int responderResources, int initiatorDepth,
              int retryCount, int rnrRetryCount, int qpNum) {
    }

    /** An {@code rdma_cm_id} with an event channel of its own. */
    final class Endpoint {
        final Arena arena = Arena.ofShared();
        final MemorySegment evState = IbvVerbs.callState(arena);
        final MemorySegment evOut = arena.allocate(ADDRESS);
        final MemorySegment attr = arena.allocate(IBV_QP_ATTR);
        final MemorySegment mask = arena.allocate(JAVA_INT);
        final MemorySegment param = arena.allocate(LibRdmacm.RDMA_CONN_PARAM);
        final MemorySegment data = arena.allocate(256);
        final MemorySegment sockaddr = arena.allocate(LibRdmacm.SOCKADDR_STORAGE);
        /** Held while reading events and to destroy: one reader of the channel at a time. */
        final ReentrantLock eventLock = new ReentrantLock();
        /** Held by calls on the id that may run beside an event reader (disconnect), and by the destruction. */
        final Object opLock = new Object();
        /**
         * The wait for the channel's next event, which the context's close (and a listener's) ends with {@link
         * FdWait#wake}, and an interrupt within {@value FdWait#SLICE_MS} ms: a connect, an accept, a listener's poll
         * (found in review: a connect or an accept waited in a bare poll(2) that neither could end).
         */
        final FdWait wait = new FdWait("the rdma_cm events of " + context.device().name());
        MemorySegment channel;
        MemorySegment id;
        int fd;
        volatile boolean destroyed;

        /** A new id on a new channel ({@code rdma_create_event_channel}, {@code rdma_create_id}). */
        Endpoint() {
            try {
                channel = lib.createEventChannel(evState);
                fd = channel.get(JAVA_INT, 0);
                long token = TOKENS.incrementAndGet();
                int rc = lib.createId(evState, channel, evOut, MemorySegment.ofAddress(token));
                if (rc != 0) {
                    throw new RdmaException(Errno.of(rc), context.device().name() + ": rdma_create_id failed (errno "
                            + rc + ")");
                }
                id = evOut.get(ADDRESS, 0).reinterpret(LibRdmacm.RDMA_CM_ID.byteSize());
                LibRdmacm.checkId(id, channel, token);
            } catch (RuntimeException e) {
                destroy();
                throw rdma(e);
            }
            if (!register()) {
                destroy();
                throw closedContext();
            }
        }

        /** The id of a connection request, moved to a channel of its own ({@code rdma_migrate_id}). */
        Endpoint(MemorySegment requestId) {
            try {
                channel = lib.createEventChannel(evState);
                fd = channel.get(JAVA_INT, 0);
                MemorySegment rid = requestId.reinterpret(LibRdmacm.RDMA_CM_ID.byteSize());
                int rc = lib.migrateId(evState, rid, channel);
                if (rc != 0) {
                    lib.destroyId(evState, rid);
                    throw new RdmaException(Errno.of(rc), "rdma_migrate_id failed (errno " + rc + ")");
                }
                id = rid;
                LibRdmacm.checkId(id, channel, id.get(ADDRESS, LibRdmacm.ID_CONTEXT).address());
            } catch (RuntimeException e) {
                destroy();
                throw rdma(e);
            }
            if (!register()) {
                // the context is closing: the request is answered and its id destroyed, where it was kept by nobody
                // (found in review)
                try (Arena a = Arena.ofConfined()) {
                    lib.reject(IbvVerbs.callState(a), id, MemorySegment.NULL, 0);
                }
                destroy();
                throw new RdmaException(Errno.EINVAL, "the context of " + context.device().name() + " is closed: a"
                        + " connection request that came meanwhile was rejected");
            }
        }

        /** Adds the endpoint to {@link #open}; {@return false when the manager is shut down: then it is not added} */
        private boolean register() {
            synchronized (RdmaCoreCm.this) {
                if (shut) {
                    return false;
                }
                open.add(this);
                return true;
            }
        }

        /**
         * Waits for the next event until {@code deadline}: {@code poll(2)} on the channel's descriptor ({@link #wait},
         * which a close or an interrupt ends), then {@code rdma_get_cm_event}, a copy, {@code rdma_ack_cm_event}. The
         * caller holds {@link #eventLock}.
         *
         * @return the event, or null when none came in time, the id is gone, or the wait was woken ({@code
         *         wait.woken()} then says so: the context or the listener closed)
         * @throws RdmaException EINTR when the thread is interrupted (its interrupt status set again)
         */
        Ev next(long deadline) {
            if (destroyed) {
                return null;
            }
            if (wait.await(fd, deadline) != FdWait.READY) {
                return null;
            }
            int rc = lib.getCmEvent(evState, channel, evOut);
            if (rc != 0) {
                throw new RdmaException(Errno.of(rc), "rdma_get_cm_event failed (errno " + rc + ")");
            }
            MemorySegment ev = evOut.get(ADDRESS, 0).reinterpret(LibRdmacm.RDMA_CM_EVENT.byteSize());
            try {
                LibRdmacm.checkEvent(ev, id);
                int type = ev.get(JAVA_INT, LibRdmacm.EV_EVENT);
                long c = LibRdmacm.EV_CONN;
                int len = Byte.toUnsignedInt(ev.get(JAVA_BYTE, c + LibRdmacm.CP_PRIVATE_DATA_LEN));
                MemorySegment pd = ev.get(ADDRESS, c + LibRdmacm.CP_PRIVATE_DATA);
                byte[] data = len == 0 || pd.equals(MemorySegment.NULL) ? new byte[0]
                        : pd.reinterpret(len).toArray(JAVA_BYTE);
                Ev e = new Ev(type, ev.get(JAVA_INT, LibRdmacm.EV_STATUS), ev.get(ADDRESS, LibRdmacm.EV_ID), data,
                        u8(ev, c + LibRdmacm.CP_RESPONDER_RESOURCES), u8(ev, c + LibRdmacm.CP_INITIATOR_DEPTH),
                        u8(ev, c + LibRdmacm.CP_RETRY_COUNT), u8(ev, c + LibRdmacm.CP_RNR_RETRY_COUNT),
                        ev.get(JAVA_INT, c + LibRdmacm.CP_QP_NUM));
                LOG.log(System.Logger.Level.DEBUG, () -> context.device().name() + ": rdma_cm event "
                        + LibRdmacm.eventName(e.type()) + " status " + e.status());
                return e;
            } catch (LibIbverbs.LayoutMismatchException m) {
                throw RdmaCoreProvider.toRdma(m);
            } finally {
                lib.ackCmEvent(evState, ev);
            }
        }

        /** {@return the name of the device the id is bound to, or null when it is bound to none} */
        String deviceName() {
            MemorySegment verbs = id.get(ADDRESS, LibRdmacm.ID_VERBS);
            if (verbs.equals(MemorySegment.NULL)) {
                return null;
            }
            MemorySegment dev = verbs.reinterpret(Structs.IBV_CONTEXT.byteSize()).get(ADDRESS, 0)
                    .reinterpret(LibIbverbs.IBV_DEVICE.byteSize());
            return LibIbverbs.cString(dev, LibIbverbs.off(LibIbverbs.IBV_DEVICE, "name"), 64);
        }

        /** {@code rdma_destroy_id} and {@code rdma_destroy_event_channel}; idempotent. Takes the event lock. */
        void destroy() {
            eventLock.lock();
            try {
                synchronized (opLock) {
                    if (destroyed) {
                        return;
                    }
                    destroyed = true;
                    open.remove(this);
                    try (Arena a = Arena.ofConfined()) {
                        MemorySegment s = IbvVerbs.callState(a);
                        if (id != null) {
                            lib.destroyId(s, id);
                        }
                        if (channel != null) {
                            lib.destroyEventChannel(s, channel);
                        }
                    } finally {
                        wait.close(); // nobody waits: the event lock is held
                        arena.close();
                    }
                }
            } finally {
                eventLock.unlock();
            }
        }

        /**
         * {@return {@code e}, or the reason no event came: the context closed (EINVAL) while this thread was
         * {@code doing} it}
         */
        RdmaException closedWhile(String doing, RdmaException e) {
            return wait.woken() ? new RdmaException(Errno.EINVAL, "the context of " + context.device().name()
                    + " was closed while this thread was " + doing) : e;
        }

        /** {@code rdma_init_qp_attr} for {@code state} into {@link #attr}; {@return its mask} */
        int initQpAttr(QpState state) {
            attr.fill((byte) 0);
            attr.set(JAVA_INT, Structs.off(IBV_QP_ATTR, "qp_state"), state.ordinal());
            mask.set(JAVA_INT, 0, 0);
            try (Arena a = Arena.ofConfined()) {
                int rc = lib.initQpAttr(IbvVerbs.callState(a), id, attr, mask);
                if (rc != 0) {
                    throw new RdmaException(Errno.of(rc), "rdma_init_qp_attr(" + state + ") failed (errno " + rc + ")");
                }
            }
            return mask.get(JAVA_INT, 0);
        }
    }

    private RdmaException closedContext() {
        return new RdmaException(Errno.EINVAL, "the context of " + context.device().name() + " is closed");
    }

    private static int u8(MemorySegment s, long off) {
        return Byte.toUnsignedInt(s.get(JAVA_BYTE, off));
    }

    /** {@return {@code e} as an RdmaException; an interrupt's EINTR saying that {@code what} was abandoned} */
    private static RdmaException interrupted(RuntimeException e, String what) {
        if (e instanceof RdmaException r && r.errno() == Errno.EINTR) {
            return new RdmaException(Errno.EINTR, what + " was interrupted (the thread's interrupt status is set): its"
                    + " rdma_cm id is destroyed", r);
        }
        return rdma(e);
    }

    private static RdmaException rdma(RuntimeException e) {
        return e instanceof RdmaException r ? r : RdmaCoreProvider.toRdma(e);
    }

    // ------------------------------------------------------------------ QP transitions

    private RdmaCoreQp qpOf(QueuePair qp) {
        if (!(qp instanceof RdmaCoreQp q) || q.pd().context() != context) {
            throw new RdmaException(Errno.EINVAL, "the QP is not a QP of this rdma-core context ("
                    + context.device().name() + "): create it with a PD of the context whose rdmaCm() connects it");
        }
        if (q.type() != QpType.RC) {
            throw new RdmaException(Errno.EINVAL, "rdma_cm in the TCP port space connects RC QPs, not " + q.type());
        }
        QpState s = q.state();
        if (s != QpState.RESET && s != QpState.INIT) {
            throw new RdmaException(Errno.EINVAL, "a QP connects from RESET or INIT, not " + s + (iwarp
                    && s == QpState.ERROR ? " (on iWARP a QP whose connect failed or was rejected is left in ERROR,"
                    + " which Linux siw never leaves: create another QP)" : ""));
        }
        return q;
    }

    private void modify(Endpoint ep, RdmaCoreQp qp, int mask, QpState to) {
        int rc = qp.modifyNative(ep.attr, mask);
        if (rc != 0) {
            throw new RdmaException(Errno.of(rc), "ibv_modify_qp of QP 0x" + Integer.toHexString(qp.qpn()) + " to "
                    + to + " with rdma_cm's attributes (mask 0x" + Integer.toHexString(mask) + ") failed (errno " + rc
                    + ")");
        }
    }

    /**
     * What {@code rdma_create_qp} does to a QP of librdmacm's: RESET to INIT with {@code rdma_init_qp_attr}'s
     * attributes (on iWARP with local write and remote READ/WRITE access, which siw's CM gives the passive side
     * only). A QP the application moved to INIT already is left as it is.
     */
    private void toInit(Endpoint ep, RdmaCoreQp qp) {
        if (qp.state() != QpState.RESET) {
            return;
        }
        int mask = ep.initQpAttr(QpState.INIT);
        if (iwarp) {
            long at = Structs.off(IBV_QP_ATTR, "qp_access_flags");
            ep.attr.set(JAVA_INT, at, ep.attr.get(JAVA_INT, at) | IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE
                    | IBV_ACCESS_REMOTE_READ);
            mask |= QpAttr.ACCESS_FLAGS;
        }
        modify(ep, qp, mask, QpState.INIT);
    }

    /**
     * What librdmacm does to its own QP on RoCE at {@code rdma_accept} and at a CONNECT_RESPONSE: INIT again, RTR,
     * RTS, each with {@code rdma_init_qp_attr}'s attributes; {@code responder} and {@code initiator} replace the
     * READ/atomic depths unless {@value #RDMA_MAX}.
     */
    private void toRts(Endpoint ep, RdmaCoreQp qp, int responder, int initiator) {
        modify(ep, qp, ep.initQpAttr(QpState.INIT), QpState.INIT);
        int mask = ep.initQpAttr(QpState.RTR);
        if (context.portInfo(Math.max(1, u8(ep.id, LibRdmacm.ID_PORT_NUM))).linkLayer() == 1) {
            mask &= ~0xE00000; // as librdmacm: bits 21-24 are RoCE's, a kernel bug may set them on InfiniBand
        }
        if (responder != RDMA_MAX) {
            ep.attr.set(JAVA_BYTE, Structs.off(IBV_QP_ATTR, "max_dest_rd_atomic"), (byte) responder);
        }
        modify(ep, qp, mask, QpState.RTR);
        mask = ep.initQpAttr(QpState.RTS);
        if (initiator != RDMA_MAX) {
            ep.attr.set(JAVA_BYTE, Structs.off(IBV_QP_ATTR, "max_rd_atomic"), (byte) initiator);
        }
        modify(ep, qp, mask, QpState.RTS);
    }

    private static void toError(RdmaCoreQp qp) {
        try {
            if (qp.state() != QpState.RESET && qp.state() != QpState.INIT) {
                qp.modify(new QpAttr().state(QpState.ERROR));
            }
        } catch (RdmaException e) {
            // destroyed meanwhile, or already in ERROR: nothing to flush
        }
    }

    // ------------------------------------------------------------------ private data

    private int limit(String what) {
        if (iwarp) {
            return MAX_IWARP_PRIVATE_DATA;
        }
        return switch (what) {
            case "connect" -> IB_REQ_PRIVATE_DATA;
            case "accept" -> IB_REP_PRIVATE_DATA;
            default -> IB_REJ_PRIVATE_DATA;
        };
    }

    private void checkLength(byte[] data, String what) {
        int max = limit(what);
        if (data.length > max) {
            throw new RdmaException(Errno.EINVAL, what + " with " + data.length + " bytes of private data: rdma_cm on "
                    + context.device().name() + " carries at most " + max + (iwarp
                    ? " (an MPA frame carries 256, of which MPA revision 2 takes 4 for IRD and ORD, and Linux siw counts"
                    + " those 4 and the data in one byte)"
                    : " (over the InfiniBand CM: a REQ 56 after rdma_cm's header, a REP 196, a REJ 148)"));
        }
    }

    /** Our private data on iWARP: the application's, then the trailer with our QPN when it fits. */
    private byte[] withTrailer(byte[] app, int qpn, Mtu mtu) {
        if (!iwarp || app.length > MAX_DATA_WITH_TRAILER) {
            return app;
        }
        ByteBuffer b = ByteBuffer.allocate(app.length + EXT_LENGTH);
        b.put(app).putInt(0).putInt(qpn).put((byte) (mtu.ordinal() + 1)).put(new byte[3]).putInt(EXT_MAGIC);
        return b.array();
    }

    /** A peer's private data, split: the application's and, when a jrdma trailer ends it, the QPN in it (else -1). */
    record Split(byte[] app, int qpn) {
    }

    static Split split(byte[] pd) {
        int end = pd.length;
        if (end >= EXT_LENGTH && ByteBuffer.wrap(pd, end - 4, 4).getInt() == EXT_MAGIC) {
            int qpn = ByteBuffer.wrap(pd, end - EXT_LENGTH + 4, 4).getInt();
            return new Split(Arrays.copyOf(pd, end - EXT_LENGTH), qpn);
        }
        return new Split(pd, -1);
    }

    private void writeParam(Endpoint ep, byte[] data, int responder, int initiator, ConnParam p, RdmaCoreQp qp) {
        MemorySegment cp = ep.param;
        cp.fill((byte) 0);
        MemorySegment.copy(data, 0, ep.data, JAVA_BYTE, 0, data.length);
        cp.set(ADDRESS, LibRdmacm.CP_PRIVATE_DATA, data.length == 0 ? MemorySegment.NULL : ep.data);
        cp.set(JAVA_BYTE, LibRdmacm.CP_PRIVATE_DATA_LEN, (byte) data.length);
        cp.set(JAVA_BYTE, LibRdmacm.CP_RESPONDER_RESOURCES, (byte) responder);
        cp.set(JAVA_BYTE, LibRdmacm.CP_INITIATOR_DEPTH, (byte) initiator);
        cp.set(JAVA_BYTE, LibRdmacm.CP_FLOW_CONTROL, (byte) 1);
        cp.set(JAVA_BYTE, LibRdmacm.CP_RETRY_COUNT, (byte) p.retryCount());
        cp.set(JAVA_BYTE, LibRdmacm.CP_RNR_RETRY_COUNT, (byte) p.rnrRetryCount());
        cp.set(JAVA_BYTE, LibRdmacm.CP_SRQ, (byte) (qp.srq() == null ? 0 : 1));
        cp.set(JAVA_INT, LibRdmacm.CP_QP_NUM, qp.qpn());
    }

    /** {@return the active MTU of the port rdma_cm put {@code ep}'s id on ({@code cm_id->port_num})} */
    private Mtu portMtu(Endpoint ep) {
        int code = context.portInfo(Math.max(1, u8(ep.id, LibRdmacm.ID_PORT_NUM))).activeMtu();
        return code >= 1 && code <= 5 ? Mtu.ofCode(code) : Mtu.MTU_1024;
    }

    private ConnParam peerParam(Endpoint ep, byte[] app, Ev e) {
        return new ConnParam(app, e.responderResources(), e.initiatorDepth(), Math.min(7, e.retryCount()),
                Math.min(7, e.rnrRetryCount()), portMtu(ep));
    }

    private static int deadlineMs(long deadline) {
        return (int) Math.clamp((deadline - System.nanoTime()) / 1_000_000L, 1, Integer.MAX_VALUE);
    }

    private static long deadline(Duration timeout) {
        return System.nanoTime() + Math.min(timeout.toNanos(), Long.MAX_VALUE / 4);
    }

    private static String errnoName(int e) {
        Errno n = Errno.of(e);
        return n == Errno.EIO && e != 5 ? "errno " + e : n.name();
    }

    // ------------------------------------------------------------------ listen

    @Override
    public Listener listen(InetSocketAddress address) {
        Endpoint ep = new Endpoint();
        try {
            LibRdmacm.writeSockaddr(ep.sockaddr, address);
            int rc;
            try (Arena a = Arena.ofConfined()) {
                rc = lib.bindAddr(IbvVerbs.callState(a), ep.id, ep.sockaddr);
            }
            if (rc != 0) {
                throw new RdmaException(Errno.EADDRINUSE, "rdma_bind_addr(" + address + ") failed: " + errnoName(rc)
                        + (rc == 98 ? " (the port is taken: another rdma_cm listener has it)"
                        : rc == 99 || rc == 19 ? " (not an address of an RDMA device of this host)" : ""));
            }
            String dev = ep.deviceName();
            if (dev != null && !dev.equals(context.device().name())) {
                throw new RdmaException(Errno.EADDRINUSE, address.getAddress().getHostAddress() + " is an address of "
                        + dev + ", not of " + context.device().name() + ": listen on one of " + context.device().name()
                        + "'s addresses (or on the wildcard address)");
            }
            try (Arena a = Arena.ofConfined()) {
                rc = lib.listen(IbvVerbs.callState(a), ep.id, BACKLOG);
            }
            if (rc != 0) {
                throw new RdmaException(Errno.EADDRINUSE, "rdma_listen(" + address + ") failed: " + errnoName(rc)
                        + (rc == 98 ? " (another rdma_cm listener has the port)" : ""));
            }
            InetSocketAddress bound = LibRdmacm.readSockaddr(ep.id, LibRdmacm.ID_SRC_ADDR);
            if (bound == null || (bound.getAddress() instanceof java.net.Inet4Address)
                    != (address.getAddress() instanceof java.net.Inet4Address)) {
                throw RdmaCoreProvider.toRdma(new LibIbverbs.LayoutMismatchException("struct rdma_cm_id:"
                        + " route.addr.src_addr at offset " + LibRdmacm.ID_SRC_ADDR + " reads " + bound
                        + " after rdma_bind_addr(" + address + ")"));
            }
            if (address.getPort() != 0 && bound.getPort() != address.getPort()) {
                throw RdmaCoreProvider.toRdma(new LibIbverbs.LayoutMismatchException("struct rdma_cm_id:"
                        + " route.addr.src_addr at offset " + LibRdmacm.ID_SRC_ADDR + " reads port " + bound.getPort()
                        + " after rdma_bind_addr to port " + address.getPort()));
            }
            return new RcListener(ep, bound);
        } catch (RuntimeException e) {
            ep.destroy();
            throw rdma(e);
        }
    }

    private final class RcListener implements Listener {
        private final Endpoint ep;
        private final InetSocketAddress address;

        RcListener(Endpoint ep, InetSocketAddress address) {
            this.ep = ep;
            this.address = address;
        }

        @Override
        public InetSocketAddress address() {
            return address;
        }

        @Override
        public ConnectRequest poll(Duration timeout) {
            long deadline = deadline(timeout);
            ep.eventLock.lock();
            try {
                while (true) {
                    if (ep.destroyed || ep.wait.woken()) {
                        throw new RdmaException(Errno.EINVAL, "the listener on " + address + " is closed");
                    }
                    Ev e = ep.next(deadline);
                    if (e == null) {
                        if (ep.wait.woken()) { // closed meanwhile: the listener, or its context
                            throw new RdmaException(Errno.EINVAL, "the listener on " + address + " was closed while"
                                    + " this thread waited for a connection request");
                        }
                        return null;
                    }
                    // a request read as the context closes is rejected and its id destroyed (request(e) throws)
                    if (e.type() == LibRdmacm.CONNECT_REQUEST) {
                        Request r = request(e);
                        if (r != null) {
                            return r;
                        }
                    } else if (e.type() == LibRdmacm.DEVICE_REMOVAL) {
                        throw new RdmaException(Errno.EIO, context.device().name() + " was removed: the listener on "
                                + address + " is gone");
                    }
                }
            } finally {
                ep.eventLock.unlock();
            }
        }

        /** Destroys the listener's id; a thread in {@link #poll} is woken (it throws EINVAL) and waited for. */
        @Override
        public void close() {
            ep.wait.wake();
            ep.destroy(); // takes the event lock: once the woken poll has left
        }
    }

    /** A connection request: its id on a channel of its own, or null when it arrived on another device (rejected). */
    private Request request(Ev e) {
        MemorySegment rid = e.id().reinterpret(LibRdmacm.RDMA_CM_ID.byteSize());
        Endpoint ep = new Endpoint(rid);
        String dev = ep.deviceName();
        if (dev == null || !dev.equals(context.device().name())) {
            LOG.log(System.Logger.Level.DEBUG, () -> context.device().name() + ": a connection request arrived on "
                    + dev + ": rejected (this listener's QPs are on " + context.device().name() + ")");
            try (Arena a = Arena.ofConfined()) {
                lib.reject(IbvVerbs.callState(a), ep.id, MemorySegment.NULL, 0);
            }
            ep.destroy();
            return null;
        }
        Split s = iwarp ? split(e.privateData()) : new Split(e.privateData(), e.qpNum());
        return new Request(ep, peerParam(ep, s.app(), e), LibRdmacm.readSockaddr(ep.id, LibRdmacm.ID_DST_ADDR), s.qpn(),
                iwarp && s.qpn() >= 0);
    }

    private final class Request implements ConnectRequest {
        private final Endpoint ep;
        private final ConnParam peer;
        private final InetSocketAddress peerAddress;
        private final int peerQpn;
        private final boolean jrdmaPeer;
        private boolean answered;

        Request(Endpoint ep, ConnParam peer, InetSocketAddress peerAddress, int peerQpn, boolean jrdmaPeer) {
            this.ep = ep;
            this.peer = peer;
            this.peerAddress = peerAddress;
            this.peerQpn = peerQpn;
            this.jrdmaPeer = jrdmaPeer;
        }

        @Override
        public ConnParam peerParam() {
            return peer;
        }

        @Override
        public InetSocketAddress peerAddress() {
            return peerAddress;
        }

        @Override
        public synchronized Connection accept(QueuePair qp, ConnParam param, Duration timeout) {
            if (answered) {
                throw new RdmaException(Errno.EINVAL, "this connection request was already answered");
            }
            RdmaCoreQp q = qpOf(qp);
            checkLength(param.privateData(), "accept");
            answered = true;
            long deadline = deadline(timeout);
            ep.eventLock.lock();
            try {
                if (ep.destroyed) { // the context closed since the request was handed out: its id is gone
                    throw new RdmaException(Errno.EINVAL, "the context of " + context.device().name() + " is closed:"
                            + " the connection request from " + peerAddress + " is gone");
                }
                toInit(ep, q);
                int responder = Math.min(maxResponder, Math.max(1, Math.min(param.responderResources(),
                        peer.initiatorDepth())));
                int initiator = Math.min(maxInitiator, Math.min(param.initiatorDepth(), peer.responderResources()));
                if (!iwarp) {
                    toRts(ep, q, responder, initiator);
                }
                byte[] data = jrdmaPeer ? withTrailer(param.privateData(), q.qpn(), portMtu(ep)) : param.privateData();
                writeParam(ep, data, responder, initiator, param, q);
                int rc;
                try (Arena a = Arena.ofConfined()) {
                    rc = lib.accept(IbvVerbs.callState(a), ep.id, ep.param);
                }
                if (rc != 0) {
                    throw new RdmaException(Errno.of(rc), "rdma_accept of the request from " + peerAddress
                            + " failed (errno " + rc + ")");
                }
                while (true) {
                    Ev e = ep.next(deadline);
                    if (e == null) {
                        throw ep.closedWhile("accepting the connection from " + peerAddress, new RdmaException(
                                Errno.ETIMEDOUT, "the client at " + peerAddress + " did not complete the connection"
                                + " (no ESTABLISHED) within " + timeout.toMillis() + " ms"));
                    }
                    switch (e.type()) {
                        case LibRdmacm.ESTABLISHED -> {
                            if (iwarp) {
                                q.assumeState(QpState.RTS); // the kernel moved it there (siw at the MPA exchange)
                            }
                            if (peerQpn >= 0) {
                                context.setPeer(q.qpn(), peerQpn);
                            }
                            return watch(new Conn(ep, q, peer, Math.max(0, peerQpn)));
                        }
                        case LibRdmacm.REJECTED, LibRdmacm.CONNECT_ERROR, LibRdmacm.UNREACHABLE,
                             LibRdmacm.DISCONNECTED, LibRdmacm.DEVICE_REMOVAL ->
                                throw new RdmaException(e.type() == LibRdmacm.UNREACHABLE ? Errno.ETIMEDOUT
                                        : Errno.ECONNRESET, "the connection from " + peerAddress + " failed after"
                                        + " rdma_accept: " + LibRdmacm.eventName(e.type()) + " (status " + e.status() + ")");
                        default -> {
                            // not about this connection's setup
                        }
                    }
                }
            } catch (RuntimeException e) {
                toError(q);
                ep.destroy();
                throw interrupted(e, "the accept of the connection from " + peerAddress);
            } finally {
                if (ep.eventLock.isHeldByCurrentThread()) {
                    ep.eventLock.unlock();
                }
            }
        }

        @Override
        public synchronized void reject(byte[] privateData) {
            if (answered) {
                throw new RdmaException(Errno.EINVAL, "this connection request was already answered");
            }
            byte[] d = privateData == null ? new byte[0] : privateData;
            checkLength(d, "reject");
            answered = true;
            ep.eventLock.lock();
            try {
                if (ep.destroyed) { // the context closed since the request was handed out: its id is gone
                    throw new RdmaException(Errno.EINVAL, "the context of " + context.device().name() + " is closed:"
                            + " the connection request from " + peerAddress + " is gone (rejected at the close)");
                }
                MemorySegment.copy(d, 0, ep.data, JAVA_BYTE, 0, d.length);
                int rc;
                try (Arena a = Arena.ofConfined()) {
                    rc = lib.reject(IbvVerbs.callState(a), ep.id, d.length == 0 ? MemorySegment.NULL : ep.data,
                            d.length);
                }
                if (rc != 0) {
                    throw new RdmaException(Errno.of(rc), "rdma_reject of the request from " + peerAddress
                            + " failed (errno " + rc + ")");
                }
            } finally {
                ep.destroy();
                ep.eventLock.unlock();
            }
        }
    }

    // ------------------------------------------------------------------ connect

    @Override
    public Connection connect(QueuePair qp, InetSocketAddress server, ConnParam param, Duration timeout) {
        RdmaCoreQp q = qpOf(qp);
        checkLength(param.privateData(), "connect");
        if (server.isUnresolved()) {
            throw new RdmaException(Errno.EHOSTUNREACH, "cannot resolve " + server.getHostString()
                    + ": give an address, or a name this host resolves");
        }
        long deadline = deadline(timeout);
        Endpoint ep = new Endpoint();
        boolean handedOver = false; // rdma_connect took the QP: on iWARP a failure from here on leaves it in ERROR
        ep.eventLock.lock();
        try {
            LibRdmacm.writeSockaddr(ep.sockaddr, server);
            int rc;
            try (Arena a = Arena.ofConfined()) {
                rc = lib.resolveAddr(IbvVerbs.callState(a), ep.id, MemorySegment.NULL, ep.sockaddr, deadlineMs(deadline));
            }
            if (rc != 0) {
                throw unreachable(server, "rdma_resolve_addr", rc);
            }
            await(ep, deadline, LibRdmacm.ADDR_RESOLVED, server, "address resolution");
            String dev = ep.deviceName();
            if (dev == null || !dev.equals(context.device().name())) {
                throw new RdmaException(Errno.ENETUNREACH, "the route to " + server.getAddress().getHostAddress()
                        + " leaves through " + (dev == null ? "no RDMA device" : dev) + ", not "
                        + context.device().name() + ": connect from a context of " + (dev == null ? "the device of"
                        + " that route" : dev) + ", or to an address " + context.device().name() + " reaches");
            }
            try (Arena a = Arena.ofConfined()) {
                rc = lib.resolveRoute(IbvVerbs.callState(a), ep.id, deadlineMs(deadline));
            }
            if (rc != 0) {
                throw unreachable(server, "rdma_resolve_route", rc);
            }
            await(ep, deadline, LibRdmacm.ROUTE_RESOLVED, server, "route resolution");
            toInit(ep, q);
            int responder = Math.min(maxResponder, param.responderResources());
            int initiator = Math.min(maxInitiator, param.initiatorDepth());
            writeParam(ep, withTrailer(param.privateData(), q.qpn(), portMtu(ep)), responder, initiator, param, q);
            try (Arena a = Arena.ofConfined()) {
                rc = lib.connect(IbvVerbs.callState(a), ep.id, ep.param);
            }
            if (rc == 111) {
                throw new RdmaException(Errno.ECONNREFUSED, "nothing listens on " + server + " (rdma_connect: connection"
                        + " refused)");
            }
            if (rc != 0) {
                throw new RdmaException(Errno.of(rc), "rdma_connect to " + server + " failed: " + errnoName(rc));
            }
            handedOver = true;
            while (true) {
                Ev e = ep.next(deadline);
                if (e == null) {
                    throw ep.closedWhile("connecting to " + server, new RdmaException(Errno.ETIMEDOUT,
                            "no answer from " + server + " within " + timeout.toMillis() + " ms"));
                }
                switch (e.type()) {
                    case LibRdmacm.CONNECT_RESPONSE -> {
                        // an external QP: the transitions librdmacm makes on its own QP, then the RTU
                        toRts(ep, q, RDMA_MAX, RDMA_MAX);
                        try (Arena a = Arena.ofConfined()) {
                            rc = lib.establish(IbvVerbs.callState(a), ep.id);
                        }
                        if (rc != 0) {
                            throw new RdmaException(Errno.of(rc), "rdma_establish with " + server + " failed (errno "
                                    + rc + ")");
                        }
                        return established(ep, q, e);
                    }
                    case LibRdmacm.ESTABLISHED -> {
                        return established(ep, q, e);
                    }
                    case LibRdmacm.REJECTED -> throw rejected(server, e);
                    case LibRdmacm.UNREACHABLE -> throw new RdmaException(e.status() == -110 ? Errno.ETIMEDOUT
                            : Errno.EHOSTUNREACH, server + " is unreachable: rdma_cm gave UNREACHABLE (status "
                            + e.status() + ")" + (e.status() == -110 ? ": no answer to the connection request" : ""));
                    case LibRdmacm.CONNECT_ERROR, LibRdmacm.DISCONNECTED, LibRdmacm.DEVICE_REMOVAL ->
                            throw new RdmaException(Errno.ECONNRESET, "the connection to " + server + " failed: "
                                    + LibRdmacm.eventName(e.type()) + " (status " + e.status() + ")");
                    default -> {
                        // not about this connection's setup
                    }
                }
            }
        } catch (RuntimeException e) {
            toError(q);
            ep.destroy();
            if (iwarp && handedOver) {
                // Linux siw releases the connection end point of a failed connect (a reject, an error) with
                // siw_qp_llp_close, which moves the QP to ERROR, a state siw never leaves: it cannot connect again
                q.assumeState(QpState.ERROR);
            }
            throw interrupted(e, "the connect to " + server);
        } finally {
            if (ep.eventLock.isHeldByCurrentThread()) {
                ep.eventLock.unlock();
            }
        }
    }

    private Connection established(Endpoint ep, RdmaCoreQp q, Ev e) {
        if (iwarp) {
            q.assumeState(QpState.RTS); // the kernel moved it there (siw at the MPA exchange)
        }
        Split s = iwarp ? split(e.privateData()) : new Split(e.privateData(), e.qpNum());
        if (iwarp && s.qpn() >= 0) {
            context.setPeer(q.qpn(), s.qpn());
        }
        return watch(new Conn(ep, q, peerParam(ep, s.app(), e), Math.max(0, s.qpn())));
    }

    private RdmaException rejected(InetSocketAddress server, Ev e) {
        byte[] data = iwarp ? split(e.privateData()).app() : e.privateData();
        String why;
        if (iwarp) {
            why = e.status() == -104 ? "the server rejected it (MPA Reply with the reject bit)"
                    : "status " + e.status() + " (" + errnoName(-e.status()) + ")";
        } else {
            why = switch (e.status()) {
                case 8 -> "REJ reason 8, invalid service ID: nothing listens on that port";
                case 28 -> "REJ reason 28, consumer defined: the application rejected it";
                default -> "REJ reason " + e.status();
            };
        }
        return new ConnectionRejectedException("the server at " + server + " rejected the connection: " + why,
                e.status(), data);
    }

    private RdmaException unreachable(InetSocketAddress server, String fn, int errno) {
        Errno n = errno == 113 ? Errno.EHOSTUNREACH : errno == 110 ? Errno.ETIMEDOUT : Errno.ENETUNREACH;
        return new RdmaException(n, fn + "(" + server + ") failed: " + errnoName(errno)
                + ": no RDMA device of this host routes to " + server.getAddress().getHostAddress()
                + " (check the address, and that the interface toward it has an RDMA device: rdma link show)");
    }

    /** Waits for {@code expected}; the ADDR/ROUTE errors and a timeout become exceptions that say what to check. */
    private void await(Endpoint ep, long deadline, int expected, InetSocketAddress server, String what) {
        while (true) {
            Ev e = ep.next(deadline);
            if (e == null) {
                throw ep.closedWhile("connecting to " + server + " (" + what + ")", new RdmaException(Errno.ETIMEDOUT,
                        what + " of " + server + " did not finish in time"));
            }
            if (e.type() == expected) {
                return;
            }
            if (e.type() == LibRdmacm.ADDR_ERROR || e.type() == LibRdmacm.ROUTE_ERROR) {
                int err = -e.status();
                Errno n = err == 110 ? Errno.ETIMEDOUT : err == 113 ? Errno.EHOSTUNREACH : Errno.ENETUNREACH;
                throw new RdmaException(n, what + " of " + server.getAddress().getHostAddress() + " failed: "
                        + LibRdmacm.eventName(e.type()) + " " + errnoName(err) + (err == 110 || err == 113
                        ? ": nothing answers ARP/neighbour discovery for it on the RDMA interface; check the address"
                        : ": no RDMA device of this host routes there (rdma link show; ip route get "
                        + server.getAddress().getHostAddress() + ")"));
            }
        }
    }

    // ------------------------------------------------------------------ connections

    /** Hands an established connection's channel to the watcher (started here for the first one). */
    private Conn watch(Conn c) {
        FdWatcher w;
        synchronized (this) {
            if (shut) {
                throw new RdmaException(Errno.EINVAL, "the context of " + context.device().name() + " is closed");
            }
            if (watcher == null) {
                watcher = new FdWatcher("jrdma-rdmacm-" + context.device().name());
            }
            w = watcher;
        }
        c.ep.wait.idle(); // nothing waits on the id any more (the watcher polls it): its eventfd is closed
        w.add(c);
        return c;
    }

    /** {@return the watcher, or null before the first connection: for tests} */
    synchronized FdWatcher watcher() {
        return watcher;
    }

    private final class Conn implements Connection, FdWatcher.Source {
        private final Endpoint ep;
        private final RdmaCoreQp qp;
        private final ConnParam peer;
        private final int peerQpn;
        /** The events filed by the watcher, not yet taken; guarded by itself, which pollEvent waits on. */
        private final ArrayDeque<Event> pending = new ArrayDeque<>();
        private boolean disconnected; // on the watcher's thread only
        private volatile boolean closed;

        Conn(Endpoint ep, RdmaCoreQp qp, ConnParam peer, int peerQpn) {
            this.ep = ep;
            this.qp = qp;
            this.peer = peer;
            this.peerQpn = peerQpn;
        }

        @Override
        public QueuePair qp() {
            return qp;
        }

        @Override
        public ConnParam peerParam() {
            return peer;
        }

        @Override
        public int peerQpn() {
            return peerQpn;
        }

        @Override
        public Event pollEvent(Duration timeout) {
            long deadline = deadline(timeout);
            synchronized (pending) {
                while (true) {
                    Event ev = pending.poll();
                    if (ev != null || ep.destroyed) {
                        return ev; // after the id is gone (TIMEWAIT_EXIT, or the context closed) nothing more comes
                    }
                    long ms = (deadline - System.nanoTime()) / 1_000_000L;
                    if (ms <= 0) {
                        return null;
                    }
                    try {
                        pending.wait(ms);
                    } catch (InterruptedException e) {
                        Thread.currentThread().interrupt();
                        return null;
                    }
                }
            }
        }

        @Override
        public int fd() {
            return ep.fd;
        }

        /** The watcher's turn: reads every event there is and files it; {@return false once the id is gone} */
        @Override
        public boolean readable() {
            ep.eventLock.lock();
            try {
                if (ep.destroyed) {
                    return false;
                }
                for (Ev e; (e = ep.next(System.nanoTime())) != null; ) {
                    handle(e);
                }
                return !ep.destroyed;
            } catch (RdmaException e) {
                LOG.log(System.Logger.Level.WARNING, () -> context.device().name() + ": reading the rdma_cm events of"
                        + " the connection of QP 0x" + Integer.toHexString(qp.qpn()) + " failed: " + e.getMessage());
                return false;
            } finally {
                ep.eventLock.unlock();
                synchronized (pending) {
                    pending.notifyAll(); // also when the id is gone: a waiter then returns
                }
            }
        }

        private void file(Event... events) {
            synchronized (pending) {
                pending.addAll(Arrays.asList(events));
                pending.notifyAll();
            }
        }

        /** Files an event read from the channel (on the watcher's thread, holding the event lock). */
        private void handle(Ev e) {
            switch (e.type()) {
                case LibRdmacm.DISCONNECTED, LibRdmacm.DEVICE_REMOVAL -> {
                    if (disconnected) {
                        return;
                    }
                    disconnected = true;
                    toError(qp); // as librdmacm's rdma_disconnect: the QP's work is flushed, a CQ waiter wakes
                    if (!iwarp && !closed) {
                        // the peer's DREQ: answer it with the DREP (rdma_disconnect, what every rdma_cm application
                        // does on DISCONNECTED), else the peer waits out its DREQ retries and no time-wait begins
                        disconnect();
                    }
                    if (iwarp) { // iWARP has no time-wait of rdma_cm's (TCP keeps its own): it follows at once
                        file(Event.DISCONNECTED, Event.TIMEWAIT_EXIT); // filed first: a waiter sees a gone id
                        ep.destroy();                                    // as the end of the events
                    } else {
                        file(Event.DISCONNECTED);
                    }
                }
                case LibRdmacm.TIMEWAIT_EXIT -> {
                    file(Event.TIMEWAIT_EXIT);
                    ep.destroy();
                }
                default -> {
                    // ESTABLISHED again, ADDR_CHANGE: nothing the connection reports
                }
            }
        }

        /** {@code rdma_disconnect}: the DREQ, or the DREP to the peer's; an error (already done) is only logged. */
        private void disconnect() {
            synchronized (ep.opLock) {
                if (!ep.destroyed) {
                    try (Arena a = Arena.ofConfined()) {
                        int rc = lib.disconnect(IbvVerbs.callState(a), ep.id);
                        if (rc != 0) {
                            LOG.log(System.Logger.Level.DEBUG, () -> context.device().name()
                                    + ": rdma_disconnect returned errno " + rc);
                        }
                    }
                }
            }
        }

        /**
         * {@code rdma_disconnect}; the watcher goes on reading the connection's events (the peer's answer, then
         * TIMEWAIT_EXIT, when it destroys the id), so nothing of the connection stays once they came.
         */
        @Override
        public void close() {
            if (closed) {
                return;
            }
            closed = true;
            if (!iwarp) {
                toError(qp); // librdmacm's rdma_disconnect on InfiniBand transports: ERROR, then the DREQ
            }
            disconnect();
            if (iwarp) {
                toError(qp);
            }
        }
    }

    /**
     * Ends the watcher, then destroys every id and channel left (the context closes); a waiter in
     * {@code pollEvent} then returns.
     */
    void shutdown() {
        FdWatcher w;
        synchronized (this) {
            shut = true; // from now on no id is made (a request that comes is rejected and destroyed)
            w = watcher;
        }
        for (Endpoint ep : open) {
            // a listener's poll, a connect or an accept in progress leaves (EINVAL) and lets go of the event lock
            // the destroy below takes (found in review: a connect's or an accept's wait could not be ended)
            ep.wait.wake();
        }
        if (w != null) {
            w.close();
        }
        for (Endpoint ep : open) {
            try {
                if (ep.eventLock.tryLock(2, TimeUnit.SECONDS)) {
                    try {
                        ep.destroy();
                    } finally {
                        ep.eventLock.unlock();
                    }
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return;
            } catch (RuntimeException e) {
                // destroying anyway
            }
        }
    }

    /** {@return how many rdma_cm ids this manager holds (listeners, requests, connections not yet at their end)} */
    int openIds() {
        return open.size();
    }
}

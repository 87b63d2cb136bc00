package io.jrdma.engine.ibcm;

import io.jrdma.engine.core.ConnEvents;
import io.jrdma.engine.core.Context;
import io.jrdma.engine.link.Endpoint;
import io.jrdma.verbs.Access;
import io.jrdma.verbs.AddressVector;
import io.jrdma.verbs.ConnParam;
import io.jrdma.verbs.ConnectionManager;
import io.jrdma.verbs.ConnectionRejectedException;
import io.jrdma.verbs.DeviceOptions;
import io.jrdma.verbs.Gid;
import io.jrdma.verbs.Mtu;
import io.jrdma.verbs.QpAttr;
import io.jrdma.verbs.QpState;
import io.jrdma.verbs.QueuePair;
import io.jrdma.verbs.RdmaException;
import io.jrdma.verbs.RdmaException.Errno;
import io.jrdma.wire.mad.CmDrep;
import io.jrdma.wire.mad.CmDreq;
import io.jrdma.wire.mad.CmMessage;
import io.jrdma.wire.mad.CmMra;
import io.jrdma.wire.mad.CmPath;
import io.jrdma.wire.mad.CmRej;
import io.jrdma.wire.mad.CmRep;
import io.jrdma.wire.mad.CmReq;
import io.jrdma.wire.mad.CmRtu;
import io.jrdma.wire.mad.CmaHeader;
import io.jrdma.wire.mad.Mad;
import io.jrdma.wire.mad.MadFormatException;

import java.io.IOException;
import java.net.Inet4Address;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.channels.DatagramChannel;
import java.security.SecureRandom;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * rdma_cm over RoCE: the InfiniBand communication manager (IBA vol 1 ch. 12) of a soft-RoCE context,
 * speaking with Linux's {@code ib_cm}/{@code rdma_cm} byte for byte. Connections are RC; the service ID
 * is rdma_cm's TCP port space ({@code 0x0000000001060000 | port}); the REQ's private data starts with the
 * rdma_cm header ({@link CmaHeader}). MADs travel through the context's {@link Gsi} (QP 1); the state
 * machines run on the {@link CmThread}; API calls hand it tasks and wait for their outcome.
 *
 * <p>Timers (all on the CM thread): REQ, REP and DREQ are sent again after 0.5 s, doubling up to 4 s, at
 * most 15 times (the REQ's Max CM Retries); a REQ retry is answered with the REP already sent, a REP
 * retry with the RTU, a DREQ retry in time-wait with the DREP. A request the application leaves unanswered
 * for 60 s gets a REJ 28 rejecting the REQ (as Linux's passive side that gives up on one; a REJ 4 is not matched
 * by a client in REQ_SENT). Time-wait lasts 0.5 s.
 *
 * <p>{@code accept} does not wait for the RTU (as Linux's rdma_cm with a QP it manages): it moves the QP to
 * RTS, sends the REP and returns the connection. The CM thread then takes the RTU, or the first request
 * packet on the QP (IBA's "communication established"), as the confirmation; when neither came by the
 * caller's deadline or the REP's last retry, it sends a REJ with reason timeout, moves the QP to ERROR and
 * reports DISCONNECTED then TIMEWAIT_EXIT on the connection ({@code ibcm_rtu_timed_out}). So a client that
 * sends a REQ and then nothing cannot hold the server's thread.
 * At most 1024 connections in setup or time-wait per context and 64 unpolled requests per listener:
 * beyond, a REQ gets a REJ (no resources), so a REQ flood cannot grow memory.
 *
 * <p>jrdma's UDP port: a context that could not get UDP 4791 puts its port in the REQ's primary local
 * LID (Linux sends 0xFFFF, the permissive LID, which means 4791); a client finds the port of a listener of
 * this JVM by itself, and otherwise sends to 4791.
 */
public final class IbConnectionManager implements ConnectionManager {
    private static final System.Logger LOG = System.getLogger(IbConnectionManager.class.getName());

    static final int RESPONSE_TIMEOUT = 20; // what Linux's rdma_cm advertises (4.096 us << 20 = 4.3 s)
    static final int MAX_CM_RETRIES = 15;
    static final long FIRST_RETRY_NANOS = 500_000_000L;
    static final long MAX_RETRY_NANOS = 4_000_000_000L;
    static final long TIMEWAIT_NANOS = 500_000_000L;
    static final long UNANSWERED_REQUEST_NANOS = 60_000_000_000L;
    static final int MAX_IDS = 1024;
    static final int BACKLOG = 64;
    static final int LOCAL_ACK_TIMEOUT = 14;
    static final int TARGET_ACK_DELAY = 15; // rxe's local_ca_ack_delay
    static final int REASON_NO_RESOURCES = 3;
    static final int REASON_INVALID_COMM_ID = 6;

    /** Listeners of this JVM, by address, with their context's UDP port: how a client here finds a jrdma server's port. */
    private static final Map<InetSocketAddress, Integer> LISTENING = new ConcurrentHashMap<>();
    /** The CA GUIDs of this JVM's open managers: no two at once (see {@link #caGuid}). */
    private static final java.util.Set<Long> CA_GUIDS = ConcurrentHashMap.newKeySet();

    final Context context;
    final Gsi gsi = new Gsi();
    private final ConcurrentLinkedQueue<Runnable> tasks = new ConcurrentLinkedQueue<>();
    /** CM thread only: connections in setup, established or in time-wait, by local communication ID. */
    private final Map<Integer, CmId> ids = new HashMap<>();
    private final Map<Integer, IbListener> listeners = new ConcurrentHashMap<>();
    private final SecureRandom random = new SecureRandom();
    /**
     * This context's CA GUID, the Local CA GUID of its REQs and REPs and the ARI of its REJs with reason timeout.
     * Linux keys a peer's connections by (CA GUID, QPN) and (CA GUID, comm ID): its stale-connection check (REJ 10
     * and a DREQ to the older one) and the match of a REJ 4. rxe derives its node GUID from the interface's MAC (one
     * device, one CA); a jrdma context is a CA of its own (its own QPNs and comm IDs, the same numbers in another
     * context or process on the host), and many share a MAC, even a PID (containers on the host's network). So
     * each manager draws 56 random bits under the first octet 0x02 (an EUI-64 assigned locally, not a group):
     * stable for the context, never two alike in one JVM (a live set), between processes alike with probability
     * 2^-56 per pair. Found in review: every context sent 0, so two jrdma clients whose QPNs collided at one Linux
     * server looked like one stale connection to it.
     */
    final long caGuid;
    private volatile boolean closed;
    /** How long a request may wait for the application's answer (tests shorten it). */
    volatile long unansweredRequestNanos = UNANSWERED_REQUEST_NANOS;
    /** accepted connections ended because neither an RTU nor a request packet confirmed them (CM thread writes) */
    private final java.util.concurrent.atomic.AtomicLong rtuTimedOut = new java.util.concurrent.atomic.AtomicLong();

    public IbConnectionManager(Context context) {
        this.context = context;
        this.caGuid = newCaGuid(random);
        CmThread.register(this);
    }

    /** @return a CA GUID no open manager of this JVM has: first octet 0x02, then 56 random bits */
    static long newCaGuid(SecureRandom random) {
        while (true) {
            long g = 0x0200_0000_0000_0000L | (random.nextLong() & 0x00FF_FFFF_FFFF_FFFFL);
            if (CA_GUIDS.add(g)) {
                return g;
            }
        }
    }

    /** {@return this context's CA GUID, as its REQs and REPs carry it} */
    public long caGuid() {
        return caGuid;
    }

    /** The 8-byte ARI of a REJ with reason timeout: the rejecting side's CA GUID, as Linux's cm_destroy_id puts it. */
    private byte[] guidAri() {
        return java.nio.ByteBuffer.allocate(8).putLong(caGuid).array();
    }

    enum State { REQ_SENT, REP_RCVD, REQ_RCVD, REP_SENT, ESTABLISHED, DREQ_SENT, TIMEWAIT }

    /** One connection's CM state (Linux's cm_id). CM thread only, apart from the immutable fields. */
    private final class CmId {
        final boolean active;
        final int localCommId;
        int remoteCommId;
        long tid;
        State state;
        final Endpoint local;
        final Endpoint remote;
        final int sgidIndex;
        CmReq req;
        CmRep rep;
        QueuePair qp;
        int peerQpn;
        byte[] lastMad;
        int retriesLeft;
        long retryInterval;
        long due;
        /** passive side in REP_SENT: when the caller's time for the confirmation runs out (nanoTime) */
        long confirmBy;
        CompletableFuture<CmMessage> waiter = new CompletableFuture<>();
        /** a REJ that came after the REP, before the client's RTU (CM thread writes, the connect reads it there) */
        CmRej lateRej;
        /** a request its client withdrew with a REJ before it was answered: poll passes over it */
        volatile boolean withdrawn;
        final ConnEvents events = new ConnEvents();

        CmId(boolean active, int localCommId, Endpoint local, Endpoint remote, int sgidIndex) {
            this.active = active;
            this.localCommId = localCommId;
            this.local = local;
            this.remote = remote;
            this.sgidIndex = sgidIndex;
        }

        void send(CmMessage m, long tid) {
            lastMad = m.toMad(tid);
            transmit(lastMad, local, remote);
        }

        /** Sends {@code m} and waits for its answer, sending it again on the retry schedule. */
        void sendWithRetries(CmMessage m, long tid, long now) {
            send(m, tid);
            retriesLeft = MAX_CM_RETRIES;
            retryInterval = FIRST_RETRY_NANOS;
            due = now + retryInterval;
        }

        @Override
        public String toString() {
            return (active ? "active" : "passive") + " comm ID 0x" + Integer.toHexString(localCommId) + " ("
                    + state + ") with " + remote;
        }
    }

    // ------------------------------------------------------------------ API: listen

    @Override
    public Listener listen(InetSocketAddress address) {
        checkOpen();
        InetAddress a = address.getAddress();
        if (!a.isAnyLocalAddress() && context.gidIndexOf(Gid.of(a)) < 0) {
            throw new RdmaException(Errno.EADDRINUSE, "cannot listen on " + address + ": " + a.getHostAddress()
                    + " is not an address of " + context.device().name());
        }
        int port = address.getPort();
        IbListener l;
        synchronized (listeners) {
            if (port == 0) {
                do {
                    port = 49152 + random.nextInt(16384);
                } while (listeners.containsKey(port));
            }
            if (listeners.containsKey(port)) {
                throw new RdmaException(Errno.EADDRINUSE, "cannot listen on " + address + ": port " + port
                        + " already has a listener on " + context.device().name());
            }
            l = new IbListener(new InetSocketAddress(a, port));
            listeners.put(port, l);
        }
        LISTENING.put(l.address, context.udpPort());
        return l;
    }

    private final class IbListener implements Listener {
        final InetSocketAddress address;
        final LinkedBlockingQueue<Request> backlog = new LinkedBlockingQueue<>(BACKLOG);
        volatile boolean closed;

        IbListener(InetSocketAddress address) {
            this.address = address;
        }

        boolean matches(InetAddress dst) {
            return address.getAddress().isAnyLocalAddress() || address.getAddress().equals(dst);
        }

        @Override
        public InetSocketAddress address() {
            return address;
        }

        @Override
        public ConnectRequest poll(Duration timeout) {
            long deadline = System.nanoTime() + Math.max(0, timeout.toNanos());
            while (true) {
                Request r = backlog.poll();
                if (r != null) {
                    if (r.id.withdrawn) {
                        continue; // its client rejected it meanwhile
                    }
                    return r;
                }
                if (closed || IbConnectionManager.this.closed) {
                    return null;
                }
                long left = deadline - System.nanoTime();
                if (left <= 0) {
                    return null;
                }
                try {
                    if (context.invoker) { // the engine receives MADs only while the application drives it
                        context.progress();
                        r = backlog.poll(Math.min(left, 200_000), TimeUnit.NANOSECONDS);
                    } else {
                        r = backlog.poll(left, TimeUnit.NANOSECONDS);
                    }
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    return null;
                }
                if (r != null && !r.id.withdrawn) {
                    return r;
                }
            }
        }

        @Override
        public void close() {
            closed = true;
            listeners.remove(address.getPort(), this);
            LISTENING.remove(address);
            for (Request r; (r = backlog.poll()) != null; ) {
                if (IbConnectionManager.this.closed) {
                    continue; // its context closed: nothing can be sent any more, the requests just go
                }
                r.reject(new byte[0]);
            }
        }
    }

    // ------------------------------------------------------------------ API: the server's answer

    private final class Request implements ConnectRequest {
        final CmId id;
        final CmReq req;
        final ConnParam peer;
        final InetSocketAddress peerAddress;
        private boolean answered;

        Request(CmId id, CmReq req, CmaHeader cma) {
            this.id = id;
            this.req = req;
            byte[] user = Arrays.copyOfRange(req.privateData(), CmaHeader.LENGTH, CmReq.PRIVATE_DATA);
            this.peer = new ConnParam(user, req.responderResources(), req.initiatorDepth(), req.retryCount(),
                    req.rnrRetryCount(), Mtu.ofCode(req.pathMtu()));
            this.peerAddress = new InetSocketAddress(cma.src(), cma.srcPort());
        }

        @Override
        public ConnParam peerParam() {
            return peer;
        }

        @Override
        public InetSocketAddress peerAddress() {
            return peerAddress;
        }

        private synchronized void once() {
            if (answered) {
                throw new RdmaException(Errno.EINVAL, "this connection request was already accepted or rejected");
            }
            answered = true;
        }

        @Override
        public Connection accept(QueuePair qp, ConnParam param, Duration timeout) {
            byte[] pd = param.privateData();
            if (pd.length > CmRep.PRIVATE_DATA) {
                throw new RdmaException(Errno.EINVAL, "an accept over the InfiniBand CM carries up to "
                        + CmRep.PRIVATE_DATA + " bytes of private data (the REP's), not " + pd.length);
            }
            if (timeout == null || timeout.isNegative() || timeout.isZero()) {
                throw new RdmaException(Errno.EINVAL, "accept needs a positive time for the client's ready-to-use,"
                        + " not " + timeout);
            }
            checkQp(qp);
            once();
            long deadline = System.nanoTime() + timeout.toNanos();
            // the passive side takes the REQ's path MTU, as Linux's cm_init_qp_rtr_attr does: a REP carries none, so
            // a smaller one here would leave the two QPs with different MTUs (found in review: each side then NAKed
            // the other's full packets). One it cannot take is refused with REJ 26, invalid MTU
            Mtu mtu = Mtu.ofCode(req.pathMtu());
            Mtu most = min(param.mtu(), context.activeMtu());
            if (mtu.bytes() > most.bytes()) {
                rejectRequest(id, CmRej.REASON_INVALID_MTU, null);
                throw new RdmaException(Errno.EINVAL, "the client's path MTU (" + mtu.bytes() + " bytes, its REQ's) is"
                        + " more than this side takes (" + most.bytes() + ": the accept's ConnParam and the port's active"
                        + " MTU); over the InfiniBand CM the passive side cannot lower it (a REP carries no MTU), so the"
                        + " request is rejected (REJ 26, invalid MTU): connect with a smaller MTU on the client");
            }
            int destRd = Math.min(param.responderResources(), Math.max(1, req.initiatorDepth()));
            int rd = Math.min(param.initiatorDepth(), req.responderResources());
            int psn = random.nextInt(1 << 24);
            try {
                // Linux's convention (the capture of two rxe peers shows it): the REQ's starting PSN is the one the
                // passive side sends with, the REP's the one the active side sends with
                bringUp(qp, id, req.localQpn(), psn, req.startingPsn(), mtu, destRd, rd,
                        req.primary().localAckTimeout() == 0 ? LOCAL_ACK_TIMEOUT : req.primary().localAckTimeout(),
                        req.retryCount(), req.rnrRetryCount());
            } catch (RuntimeException e) {
                rejectRequest(id, REASON_NO_RESOURCES, null);
                throw e;
            }
            CmRep rep = new CmRep(id.localCommId, id.remoteCommId, 0, qp.qpn(), 0, psn, destRd, rd, TARGET_ACK_DELAY,
                    0, false, param.rnrRetryCount(), qp.srq() != null, caGuid, pd);
            try {
                call(() -> {
                    if (ids.get(id.localCommId) != id || id.state != State.REQ_RCVD) {
                        throw new RdmaException(Errno.ETIMEDOUT, "the connection request from " + peerAddress
                                + " timed out or was withdrawn before it was accepted");
                    }
                    id.qp = qp;
                    id.peerQpn = req.localQpn();
                    id.rep = rep;
                    id.state = State.REP_SENT;
                    long now = System.nanoTime();
                    id.sendWithRetries(rep, id.tid, now);
                    id.confirmBy = deadline;
                    if (id.due - deadline > 0) {
                        id.due = deadline;
                    }
                    return null;
                });
            } catch (RdmaException e) {
                toError(qp);
                throw failed(e);
            }
            flush();
            // no wait for the RTU here: the CM thread takes it, or ends the connection at the deadline
            IbConnection c = new IbConnection(id, peer);
            LOG.log(System.Logger.Level.DEBUG, () -> "connection accepted, awaiting its RTU: " + id);
            return c;
        }

        @Override
        public void reject(byte[] privateData) {
            byte[] pd = privateData == null ? new byte[0] : privateData;
            if (pd.length > CmRej.PRIVATE_DATA) {
                throw new RdmaException(Errno.EINVAL, "a reject over the InfiniBand CM carries up to "
                        + CmRej.PRIVATE_DATA + " bytes of private data (the REJ's), not " + pd.length);
            }
            once();
            rejectRequest(id, CmRej.REASON_CONSUMER_DEFINED, pd);
            flush();
        }
    }

    // ------------------------------------------------------------------ API: connect

    @Override
    public Connection connect(QueuePair qp, InetSocketAddress server, ConnParam param, Duration timeout) {
        byte[] user = param.privateData();
        if (user.length > CmaHeader.USER_DATA) {
            throw new RdmaException(Errno.EINVAL, "a connect over the InfiniBand CM carries up to "
                    + CmaHeader.USER_DATA + " bytes of private data (the REQ's 92 less the rdma_cm header), not "
                    + user.length);
        }
        checkQp(qp);
        checkOpen();
        long deadline = System.nanoTime() + timeout.toNanos();
        InetAddress dst = server.getAddress();
        int sgidIndex = sgidIndexFor(dst);
        Endpoint local = context.link.localEndpoints().get(sgidIndex);
        InetAddress src = local.socketAddress().getAddress();
        Endpoint remote = Endpoint.of(dst, peerUdpPort(server));
        if (qp.state() == QpState.RESET) {
            qp.modify(new QpAttr().state(QpState.INIT).pkeyIndex(0).portNum(1)
                    .accessFlags(Access.LOCAL_WRITE | Access.REMOTE_WRITE | Access.REMOTE_READ | Access.REMOTE_ATOMIC));
        }
        Mtu mtu = min(param.mtu(), context.activeMtu());
        int psn = random.nextInt(1 << 24);
        CmaHeader cma = new CmaHeader(CmaHeader.VERSION, dst instanceof Inet4Address ? 4 : 6,
                32768 + random.nextInt(28232), src, dst);
        CmPath path = new CmPath(ourLid(), CmPath.PERMISSIVE_LID, Gid.of(src).raw(), Gid.of(dst).raw(), 0, 0, 0, 64, 0,
                false, LOCAL_ACK_TIMEOUT);
        long tid = random.nextLong() & 0xFFFF_FFFF_FFFFL;
        CmId id = call(() -> {
            CmId i = new CmId(true, newCommId(), local, remote, sgidIndex);
            i.qp = qp;
            i.tid = tid;
            i.req = new CmReq(i.localCommId, CmaHeader.tcpServiceId(server.getPort()), caGuid,
                    0, qp.qpn(), param.responderResources(), 0, param.initiatorDepth(), 0, RESPONSE_TIMEOUT,
                    CmReq.TRANSPORT_RC, false, psn, RESPONSE_TIMEOUT, param.retryCount(), 0xFFFF, mtu.code(), false,
                    param.rnrRetryCount(), MAX_CM_RETRIES, qp.srq() != null, 0, path, CmPath.NONE,
                    cma.withUserData(user));
            i.state = State.REQ_SENT;
            ids.put(i.localCommId, i);
            i.sendWithRetries(i.req, tid, System.nanoTime());
            return i;
        });
        flush();
        CmMessage answer;
        try {
            answer = await(id.waiter, deadline);
        } catch (TimeoutException e) {
            withdraw(id);
            throw failed(new RdmaException(Errno.ETIMEDOUT, "no answer from " + server + " (UDP port "
                    + remote.port() + ") within " + timeout + ": unreachable"));
        } catch (InterruptedException e) {
            // as a timed-out connect: the request withdrawn and the id let go (found in review: an interrupted connect
            // sent nothing, and one whose REP came after kept its id for good); the interrupt status stays set
            withdraw(id);
            Thread.currentThread().interrupt();
            throw failed(new RdmaException(Errno.EINTR, "interrupted while waiting for the answer of " + server
                    + "; the connection request was withdrawn"));
        }
        if (answer instanceof CmRej rej) {
            throw failed(new ConnectionRejectedException(rejectText(rej, server), rej.reason(), rej.privateData()));
        }
        CmRep rep = (CmRep) answer;
        try {
            Mtu pathMtu = min(mtu, Mtu.ofCode(id.req.pathMtu()));
            bringUp(qp, id, rep.localQpn(), psn, rep.startingPsn(), pathMtu,
                    Math.min(param.responderResources(), Math.max(1, rep.initiatorDepth())),
                    Math.min(param.initiatorDepth(), rep.responderResources()), LOCAL_ACK_TIMEOUT,
                    param.retryCount(), rep.rnrRetryCount());
        } catch (RuntimeException e) {
            call(() -> {
                id.send(new CmRej(id.localCommId, id.remoteCommId, CmRej.REJECTED_REP, 0, REASON_NO_RESOURCES, null,
                        null), id.tid);
                ids.remove(id.localCommId);
                return null;
            });
            throw failed(e);
        }
        CmRej late = call(() -> {
            // what has arrived first (the CM thread runs its tasks before it takes the MADs): a REJ that came during
            // bringUp is taken now, not after this RTU went (found by a test that failed once in a loaded run)
            try {
                gsi.take(this::onMad);
            } catch (RuntimeException e) { // another connection's MAD: as in work(), logged, not this connect's failure
                CmThread.stepFailed(this, e);
            }
            if (ids.get(id.localCommId) != id || id.state != State.REP_RCVD) {
                // rejected (or gone) between its REP and this RTU: as Linux's CM, no RTU, the connect fails (found
                // in review: the RTU went and the connection returned had no id, so no events and no DREQ)
                return id.lateRej != null ? id.lateRej
                        : new CmRej(id.remoteCommId, id.localCommId, CmRej.REJECTED_REP, 0, CmRej.REASON_TIMEOUT,
                                null, null);
            }
            id.peerQpn = rep.localQpn();
            id.state = State.ESTABLISHED;
            id.send(new CmRtu(id.localCommId, id.remoteCommId, null), id.tid);
            return null;
        });
        if (late != null) {
            try {
                qp.modify(new io.jrdma.verbs.QpAttr().state(io.jrdma.verbs.QpState.ERROR));
            } catch (RuntimeException e) {
                // the QP is the application's: it may have closed it meanwhile
            }
            throw failed(new ConnectionRejectedException(rejectText(late, server), late.reason(), late.privateData()));
        }
        flush();
        ConnParam peer = new ConnParam(rep.privateData(), rep.responderResources(), rep.initiatorDepth(),
                param.retryCount(), rep.rnrRetryCount(), min(mtu, Mtu.ofCode(id.req.pathMtu())));
        IbConnection c = new IbConnection(id, peer);
        LOG.log(System.Logger.Level.DEBUG, () -> "connection established: " + id);
        return c;
    }

    /**
     * A connect that gives up before its RTU (its timeout, an interrupt) withdraws its request as Linux's
     * cm_destroy_id does and lets go of its id: in REQ_SENT a REJ with reason timeout and our CA GUID as the ARI
     * (the server's comm ID unknown, 0), which a server matches by the GUID and our comm ID; in REP_RCVD a REJ
     * 28 (consumer defined) rejecting the REP. An id that is gone already (a REJ came, the REQ's retries ran
     * out) needs nothing. A REP that comes after finds no id and is dropped, as Linux drops a REP for an id it
     * no longer has (cm_rep_handler, then cm_dup_rep_handler finding nothing).
     */
    private void withdraw(CmId id) {
        call(() -> {
            if (ids.get(id.localCommId) != id) {
                return null;
            }
            ids.remove(id.localCommId);
            if (id.state == State.REQ_SENT) {
                id.send(new CmRej(id.localCommId, 0, CmRej.REJECTED_OTHER, 8, CmRej.REASON_TIMEOUT, guidAri(), null),
                        id.tid);
            } else if (id.state == State.REP_RCVD) {
                id.send(new CmRej(id.localCommId, id.remoteCommId, CmRej.REJECTED_REP, 0, CmRej.REASON_CONSUMER_DEFINED,
                        null, null), id.tid);
            }
            return null;
        });
        flush();
    }

    private static String rejectText(CmRej rej, InetSocketAddress server) {
        String why = switch (rej.reason()) {
            case CmRej.REASON_INVALID_SERVICE_ID -> "nobody listens on port " + server.getPort() + " there";
            case CmRej.REASON_CONSUMER_DEFINED -> "the server application rejected it";
            case CmRej.REASON_TIMEOUT -> "the server timed out";
            case REASON_NO_RESOURCES -> "the server has no resources for it";
            case CmRej.REASON_INVALID_GID -> "the server does not own the address it was sent to";
            default -> "reject reason " + rej.reason();
        };
        return "the connection request was rejected by " + server + ": " + why + " (IB CM REJ reason " + rej.reason()
                + ")";
    }

    // ------------------------------------------------------------------ the connection

    private final class IbConnection implements Connection {
        final CmId id;
        final ConnParam peer;
        private volatile boolean closed;

        IbConnection(CmId id, ConnParam peer) {
            this.id = id;
            this.peer = peer;
        }

        @Override
        public QueuePair qp() {
            return id.qp;
        }

        @Override
        public ConnParam peerParam() {
            return peer;
        }

        @Override
        public int peerQpn() {
            return id.peerQpn;
        }

        @Override
        public Event pollEvent(Duration timeout) {
            if (!context.invoker) {
                return id.events.poll(timeout, null);
            }
            return id.events.poll(timeout, wait -> { // the engine receives the DREQ only while the application drives it
                context.progress();
                java.util.concurrent.locks.LockSupport.parkNanos(Math.min(wait, 200_000));
                return false;
            });
        }

        @Override
        public void close() {
            if (closed) {
                return;
            }
            closed = true;
            sendOwedAck(id.qp); // a message this side already completed is acknowledged before the QP stops answering
            toError(id.qp);
            if (IbConnectionManager.this.closed) {
                id.events.timewaitExit();
                return;
            }
            call(() -> {
                if (ids.get(id.localCommId) != id) {
                    return null; // over already (time-wait done, or ended unconfirmed)
                }
                if (id.state == State.REP_SENT) {
                    // not confirmed yet: a REJ withdraws the REP (as Linux's cm_destroy_id), and it is over here
                    id.send(new CmRej(id.localCommId, id.remoteCommId, CmRej.REJECTED_OTHER, 0,
                            CmRej.REASON_CONSUMER_DEFINED, null, null), id.tid);
                    ids.remove(id.localCommId);
                    id.events.timewaitExit();
                } else if (id.state == State.ESTABLISHED) {
                    id.state = State.DREQ_SENT;
                    id.tid = random.nextLong() & 0xFFFF_FFFF_FFFFL;
                    id.sendWithRetries(new CmDreq(id.localCommId, id.remoteCommId, id.peerQpn, null), id.tid,
                            System.nanoTime());
                }
                return null;
            });
            flush();
            LOG.log(System.Logger.Level.DEBUG, () -> "disconnecting: " + id);
        }

        @Override
        public String toString() {
            return "QP 0x" + Integer.toHexString(id.qp.qpn()) + " <-> QP 0x" + Integer.toHexString(id.peerQpn) + " "
                    + id.remote;
        }
    }

    // ------------------------------------------------------------------ the CM thread

    /** CM thread: tasks, received MADs, timers. @return when it wants to run again (System.nanoTime) */
    long work(long now) {
        for (Runnable r; (r = tasks.poll()) != null; ) {
            r.run();
        }
        gsi.take(this::onMad);
        long next = now + 1_000_000_000L;
        for (Iterator<CmId> it = ids.values().iterator(); it.hasNext(); ) {
            CmId id = it.next();
            if (id.due - now <= 0 && timer(id, now)) {
                it.remove();
                continue;
            }
            if (id.due - next < 0) {
                next = id.due;
            }
        }
        return next;
    }

    /** A connection's timer ran out. @return true when it is done (removed) */
    private boolean timer(CmId id, long now) {
        switch (id.state) {
            case REQ_SENT, REP_SENT, DREQ_SENT -> {
                if (id.state == State.REP_SENT) {
                    if (id.qp instanceof io.jrdma.engine.core.Qp q && q.requestSeen()) {
                        establish(id, now); // the client's RTU was lost, but it is sending: communication established
                        return false;
                    }
                    if (now - id.confirmBy >= 0) {
                        unconfirmed(id, "its deadline");
                        return true;
                    }
                }
                if (id.retriesLeft > 0) {
                    id.retriesLeft--;
                    transmit(id.lastMad, id.local, id.remote);
                    id.retryInterval = Math.min(MAX_RETRY_NANOS, id.retryInterval * 2);
                    id.due = now + id.retryInterval;
                    if (id.state == State.REP_SENT && id.due - id.confirmBy > 0) {
                        id.due = id.confirmBy;
                    }
                    return false;
                }
                if (id.state == State.REQ_SENT) {
                    id.waiter.completeExceptionally(new RdmaException(Errno.ETIMEDOUT, "no answer to "
                            + (MAX_CM_RETRIES + 1) + " REQs: unreachable"));
                    return true;
                }
                if (id.state == State.REP_SENT) {
                    unconfirmed(id, (MAX_CM_RETRIES + 1) + " REPs");
                    return true;
                }
                id.events.disconnected(); // DREQ unanswered: down all the same (rdma_cm: DISCONNECTED, ETIMEDOUT)
                enterTimewait(id, now);
                return false;
            }
            case REQ_RCVD -> {
                // the application never answered: the client is told, the request forgotten and passed over by the
                // listener's poll. Not with reason timeout: a Linux client matches a REJ 4 by the ARI's CA GUID and
                // our comm ID, which it learns only from a REP (cm_acquire_rejected_id), so in REQ_SENT it dropped
                // it and its next REQ retry became a second request here (found in review). A REJ rejecting the REQ
                // with another reason is matched by its own comm ID alone; 28 is what Linux's passive side sends
                // when it gives up on a request (cm_destroy_id in REQ_RCVD)
                id.send(new CmRej(id.localCommId, id.remoteCommId, CmRej.REJECTED_REQ, 0,
                        CmRej.REASON_CONSUMER_DEFINED, null, null), id.tid);
                id.withdrawn = true;
                return true;
            }
            case TIMEWAIT -> {
                id.events.timewaitExit();
                return true;
            }
            default -> {
                id.due = now + 3_600_000_000_000L;
                return false;
            }
        }
    }

    private void enterTimewait(CmId id, long now) {
        id.state = State.TIMEWAIT;
        id.due = now + TIMEWAIT_NANOS;
    }

    /** CM thread: an accepted connection is confirmed (its RTU, or the first request packet on its QP). */
    private void establish(CmId id, long now) {
        id.state = State.ESTABLISHED;
        id.due = now + 3_600_000_000_000L;
        LOG.log(System.Logger.Level.DEBUG, () -> "connection established: " + id);
    }

    /**
     * CM thread: an accepted connection that nothing confirmed by {@code when}: the client is told with a REJ
     * (timeout), the QP goes to ERROR, the connection reports DISCONNECTED then TIMEWAIT_EXIT. The caller
     * forgets the ID.
     */
    private void unconfirmed(CmId id, String when) {
        // a REJ 4 is matched by the ARI's CA GUID and our comm ID (Linux's cm_acquire_rejected_id): a client that took
        // the REP (REP_RCVD or ESTABLISHED) finds its connection by the REP's CA GUID, so the ARI carries it
        id.send(new CmRej(id.localCommId, id.remoteCommId, CmRej.REJECTED_OTHER, 8, CmRej.REASON_TIMEOUT, guidAri(),
                null), id.tid);
        rtuTimedOut.incrementAndGet();
        LOG.log(System.Logger.Level.DEBUG, () -> "no RTU by " + when + ": " + id);
        peerGone(id, true);
    }

    private void onMad(byte[] mad, Endpoint src, Endpoint dst) {
        CmMessage m;
        long tid;
        try {
            m = CmMessage.decode(mad, 0, mad.length);
            tid = Mad.decode(mad, 0, mad.length).tid();
        } catch (MadFormatException e) {
            bad(src, e.getMessage());
            return;
        }
        long now = System.nanoTime();
        switch (m) {
            case CmReq req -> onReq(req, tid, src, dst, now);
            case CmRep rep -> onRep(rep, src);
            case CmRtu rtu -> {
                CmId id = ids.get(rtu.remoteCommId());
                if (id != null && !id.active && id.state == State.REP_SENT && rtu.localCommId() == id.remoteCommId) {
                    establish(id, now);
                } else if (id == null || id.state != State.ESTABLISHED) {
                    bad(src, "an RTU for no connection waiting for one");
                }
            }
            case CmRej rej -> onRej(rej, src, now);
            case CmDreq dreq -> onDreq(dreq, tid, src, dst, now);
            case CmDrep drep -> {
                CmId id = ids.get(drep.remoteCommId());
                if (id != null && id.state == State.DREQ_SENT && drep.localCommId() == id.remoteCommId) {
                    id.events.disconnected();
                    enterTimewait(id, now);
                } else if (id == null || id.state != State.TIMEWAIT) {
                    bad(src, "a DREP for no connection disconnecting");
                }
            }
            case CmMra mra -> {
                CmId id = ids.get(mra.remoteCommId());
                if (id != null && (id.state == State.REQ_SENT || id.state == State.REP_SENT)) {
                    // the peer needs longer: wait its service timeout before the next try
                    id.due = now + Math.min(60_000_000_000L, 4096L << Math.min(mra.serviceTimeout(), 23));
                    if (id.state == State.REP_SENT && id.due - id.confirmBy > 0) {
                        id.due = id.confirmBy; // the caller's deadline still holds
                    }
                } else {
                    bad(src, "an MRA for no connection waiting");
                }
            }
        }
    }

    private void bad(Endpoint src, String why) {
        gsi.madsBad.incrementAndGet();
        LOG.log(System.Logger.Level.DEBUG, () -> context.device().name() + ": dropped a CM MAD from " + src + ": " + why);
    }

    private void onReq(CmReq req, long tid, Endpoint src, Endpoint dst, long now) {
        InetAddress from = src.socketAddress().getAddress();
        InetAddress to = dst.socketAddress().getAddress();
        for (CmId id : ids.values()) { // a retry of a REQ already here
            if (!id.active && id.remoteCommId == req.localCommId() && id.remote.sameAddress(src)) {
                if (id.state == State.REP_SENT) {
                    transmit(id.lastMad, id.local, id.remote); // our REP was lost: the same again
                }
                return;
            }
        }
        Endpoint back = Endpoint.of(scoped(from, dst), udpPortOfLid(req.primary().localLid()));
        if (!Arrays.equals(req.primary().localGid(), Gid.of(from).raw())
                || !Arrays.equals(req.primary().remoteGid(), Gid.of(to).raw())) {
            rejectReq(req, tid, dst, back, CmRej.REASON_INVALID_GID, Gid.of(to).raw());
            return;
        }
        CmaHeader cma;
        try {
            cma = CmaHeader.decode(req.privateData());
        } catch (MadFormatException e) {
            bad(src, e.getMessage());
            return;
        }
        if (!cma.src().equals(from) || !cma.dst().equals(to) && !(cma.ipVersion() == 4 && Gid.of(cma.dst()).equals(Gid.of(to)))) {
            bad(src, "the rdma_cm header's addresses " + cma.src() + " -> " + cma.dst() + " are not the packet's");
            return;
        }
        if ((req.serviceId() & CmaHeader.SERVICE_ID_SPACE_MASK) != CmaHeader.SERVICE_ID_TCP) {
            rejectReq(req, tid, dst, back, CmRej.REASON_INVALID_SERVICE_ID, null);
            return;
        }
        IbListener l = listeners.get((int) (req.serviceId() & 0xFFFF));
        if (l == null || l.closed || !l.matches(to)) {
            rejectReq(req, tid, dst, back, CmRej.REASON_INVALID_SERVICE_ID, null);
            return;
        }
        if (req.transportServiceType() != CmReq.TRANSPORT_RC) {
            rejectReq(req, tid, dst, back, CmRej.REASON_INVALID_TRANSPORT_TYPE, null);
            return;
        }
        int sgid = context.gidIndexOf(Gid.of(to));
        if (ids.size() >= MAX_IDS || sgid < 0) {
            rejectReq(req, tid, dst, back, REASON_NO_RESOURCES, null);
            return;
        }
        CmId id = new CmId(false, newCommId(), dst, back, sgid);
        id.remoteCommId = req.localCommId();
        id.tid = tid;
        id.req = req;
        id.state = State.REQ_RCVD;
        id.due = now + unansweredRequestNanos;
        if (!l.backlog.offer(new Request(id, req, cma))) {
            rejectReq(req, tid, dst, back, REASON_NO_RESOURCES, null);
            return;
        }
        ids.put(id.localCommId, id);
    }

    private void rejectReq(CmReq req, long tid, Endpoint local, Endpoint remote, int reason, byte[] ari) {
        LOG.log(System.Logger.Level.DEBUG, () -> context.device().name() + ": REJ reason " + reason + " to a REQ from "
                + remote + " for service ID 0x" + Long.toHexString(req.serviceId()));
        transmit(new CmRej(0, req.localCommId(), CmRej.REJECTED_REQ, ari == null ? 0 : ari.length, reason, ari, null)
                .toMad(tid), local, remote);
    }

    private void onRep(CmRep rep, Endpoint src) {
        CmId id = ids.get(rep.remoteCommId());
        if (id == null || !id.active) {
            bad(src, "a REP for no connection of this side");
            return;
        }
        if (id.state == State.REQ_SENT) {
            id.remoteCommId = rep.localCommId();
            id.rep = rep;
            id.state = State.REP_RCVD;
            id.due = System.nanoTime() + 3_600_000_000_000L;
            id.waiter.complete(rep);
        } else if (id.state == State.ESTABLISHED && rep.localCommId() == id.remoteCommId) {
            transmit(id.lastMad, id.local, id.remote); // our RTU was lost: the same again
        }
    }

    /** Rejects the request of passive {@code id} with {@code reason} (REJ, REQ rejected) and forgets it, unless it went meanwhile. */
    private void rejectRequest(CmId id, int reason, byte[] privateData) {
        call(() -> {
            if (ids.get(id.localCommId) == id && id.state == State.REQ_RCVD) {
                id.send(new CmRej(id.localCommId, id.remoteCommId, CmRej.REJECTED_REQ, 0, reason, null, privateData),
                        id.tid);
                ids.remove(id.localCommId);
            }
            return null;
        });
    }

    /** @return the passive id of the request client comm ID {@code commId} sent from {@code src}, or null */
    private CmId requestFrom(int commId, Endpoint src) {
        for (CmId id : ids.values()) {
            if (!id.active && id.state == State.REQ_RCVD && id.remoteCommId == commId
                    && id.remote.socketAddress().equals(src.socketAddress())) {
                return id;
            }
        }
        return null;
    }

    private void onRej(CmRej rej, Endpoint src, long now) {
        CmId found = ids.get(rej.remoteCommId());
        if (found == null) {
            // a client that gives up on its REQ (Linux's cm_destroy_id in REQ_SENT) rejects with remote comm ID 0,
            // not knowing ours yet: the request is found by the client's comm ID and address, as Linux's
            // cm_acquire_rejected_id finds it (found in review: it was dropped as bad, and the request accepted later)
            found = requestFrom(rej.localCommId(), src);
            if (found == null) {
                bad(src, "a REJ for no connection of this side");
                return;
            }
        }
        CmId id = found;
        switch (id.state) {
            case REQ_RCVD -> {
                ids.remove(id.localCommId);
                id.withdrawn = true; // poll passes over it; an accept of it polled before fails (it is gone)
                LOG.log(System.Logger.Level.DEBUG, () -> "the client withdrew its request (IB CM REJ reason "
                        + rej.reason() + ")");
            }
            case REQ_SENT, REP_RCVD -> {
                ids.remove(id.localCommId);
                id.lateRej = rej; // after the REP: the connect, between the REP and its RTU, finds it (found in review)
                id.waiter.complete(rej);
            }
            case REP_SENT -> {
                // the client gave up on the REP: the accepted connection is over before it began
                ids.remove(id.localCommId);
                LOG.log(System.Logger.Level.DEBUG, () -> "the client rejected the REP (IB CM REJ reason "
                        + rej.reason() + "): " + id);
                peerGone(id, true);
            }
            case ESTABLISHED -> {
                peerGone(id);
                enterTimewait(id, now);
            }
            default -> bad(src, "a REJ in state " + id.state);
        }
    }

    private void onDreq(CmDreq dreq, long tid, Endpoint src, Endpoint dst, long now) {
        CmId id = ids.get(dreq.remoteCommId());
        if (id == null || dreq.localCommId() != id.remoteCommId) {
            // gone already (time-wait over): answer all the same, as Linux does, so the peer stops asking
            transmit(new CmDrep(dreq.remoteCommId(), dreq.localCommId(), null).toMad(tid), dst,
                    Endpoint.of(scoped(src.socketAddress().getAddress(), dst), id != null ? id.remote.port()
                            : DeviceOptions.ROCE_V2_PORT));
            return;
        }
        switch (id.state) {
            case ESTABLISHED, DREQ_SENT, REP_SENT -> {
                id.send(new CmDrep(id.localCommId, id.remoteCommId, null), tid);
                peerGone(id);
                enterTimewait(id, now);
            }
            case TIMEWAIT -> transmit(new CmDrep(id.localCommId, id.remoteCommId, null).toMad(tid), id.local, id.remote);
            default -> bad(src, "a DREQ in state " + id.state);
        }
    }

    // ------------------------------------------------------------------ helpers

    private void transmit(byte[] mad, Endpoint local, Endpoint remote) {
        gsi.queue(mad, local, remote);
        Thread t = context.engine.thread;
        if (t != null) {
            java.util.concurrent.locks.LockSupport.unpark(t); // the engine sends it in its next duty cycle
        }
        context.engine.transport.wake();
    }

    /** API thread, after handing the CM thread a send: an INVOKER context's engine sends it now. */
    private void flush() {
        if (context.invoker) {
            context.progress();
        }
    }

    /** Runs {@code task} on the CM thread and returns its result (its exception, rethrown). */
    private <T> T call(java.util.concurrent.Callable<T> task) {
        if (CmThread.onThread()) {
            try {
                return task.call();
            } catch (RuntimeException e) {
                throw e;
            } catch (Exception e) {
                throw new RdmaException(Errno.EIO, e.getMessage(), e);
            }
        }
        if (closed) {
            throw closedError();
        }
        CompletableFuture<T> f = new CompletableFuture<>();
        tasks.add(() -> {
            try {
                f.complete(task.call());
            } catch (Throwable e) {
                f.completeExceptionally(e);
            }
        });
        CmThread.wake();
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        // an interrupt does not end the wait: the task is queued and will run (a REJ sent, an id removed), and its
        // caller must know what it did; the wait is short (the CM thread runs tasks first), and the interrupt status
        // is set again on return (found in review: a withdrawal asked by an interrupted connect never waited)
        boolean interrupted = false;
        try {
            while (true) {
                try {
                    // in slices: once the manager is closed its tasks never run, and the caller hears so at once
                    // (found in review: it waited the whole 30 s for a task the closed manager would never run)
                    return f.get(Math.min(CALL_SLICE_NANOS, Math.max(1, deadline - System.nanoTime())),
                            TimeUnit.NANOSECONDS);
                } catch (InterruptedException e) {
                    interrupted = true;
                } catch (TimeoutException e) {
                    if (f.isDone()) {
                        continue;
                    }
                    if (closed) {
                        throw closedError();
                    }
                    if (System.nanoTime() - deadline >= 0) {
                        throw new RdmaException(Errno.ETIMEDOUT, "the IB CM thread did not run a task within 30 s");
                    }
                }
            }
        } catch (ExecutionException e) {
            if (e.getCause() instanceof RuntimeException r) {
                throw r;
            }
            throw new RdmaException(Errno.EIO, String.valueOf(e.getCause()), e.getCause());
        } finally {
            if (interrupted) {
                Thread.currentThread().interrupt();
            }
        }
    }

    /** Waits for {@code f} until {@code deadline}, driving an INVOKER context's engine meanwhile. */
    private <T> T await(CompletableFuture<T> f, long deadline) throws TimeoutException, InterruptedException {
        while (true) {
            long left = deadline - System.nanoTime();
            try {
                if (context.invoker) {
                    context.progress();
                    return f.get(Math.max(0, Math.min(left, 200_000)), TimeUnit.NANOSECONDS);
                }
                return f.get(Math.max(0, left), TimeUnit.NANOSECONDS);
            } catch (TimeoutException e) {
                if (deadline - System.nanoTime() <= 0) {
                    throw e;
                }
            } catch (ExecutionException e) {
                if (e.getCause() instanceof RuntimeException r) {
                    throw r;
                }
                throw new RdmaException(Errno.EIO, String.valueOf(e.getCause()), e.getCause());
            }
        }
    }

    private int newCommId() {
        int c;
        do {
            c = random.nextInt();
        } while (c == 0 || ids.containsKey(c));
        return c;
    }

    private void bringUp(QueuePair qp, CmId id, int destQpn, int rqPsn, int sqPsn, Mtu mtu, int destRd, int rd,
                         int timeout, int retry, int rnrRetry) {
        if (qp.state() == QpState.RESET) {
            qp.modify(new QpAttr().state(QpState.INIT).pkeyIndex(0).portNum(1)
                    .accessFlags(Access.LOCAL_WRITE | Access.REMOTE_WRITE | Access.REMOTE_READ | Access.REMOTE_ATOMIC));
        }
        Gid peer = Gid.of(id.remote.socketAddress().getAddress());
        qp.modify(new QpAttr().state(QpState.RTR).av(new AddressVector(peer, id.sgidIndex, 64, 0, id.remote.port()))
                .pathMtu(mtu).destQpn(destQpn).rqPsn(rqPsn).maxDestRdAtomic(destRd).minRnrTimer(12));
        qp.modify(new QpAttr().state(QpState.RTS).sqPsn(sqPsn).timeout(timeout).retryCnt(retry).rnrRetry(rnrRetry)
                .maxRdAtomic(rd));
    }

    /** Sends the ACK the QP's responder still owes (a coalesced one), as before a QP is destroyed. */
    private void sendOwedAck(QueuePair qp) {
        if (qp instanceof io.jrdma.engine.core.Qp q && qp.state() == QpState.RTS) {
            try {
                context.control(() -> context.engine.transport.destroying(q));
            } catch (RdmaException e) {
                // the engine is gone: nothing owed can leave any more
            }
        }
    }

    private static void toError(QueuePair qp) {
        try {
            if (qp != null && qp.state() != QpState.RESET && qp.state() != QpState.ERROR) {
                qp.modify(new QpAttr().state(QpState.ERROR));
            }
        } catch (RdmaException e) {
            // destroyed meanwhile
        }
    }

    /**
     * CM thread: the peer disconnected. The QP moves to ERROR (its queued work flushes), then DISCONNECTED is
     * queued, so an application that sees the event finds the QP in ERROR. Off the CM thread (the move waits
     * for the engine) unless the context has none.
     */
    private void peerGone(CmId id) {
        peerGone(id, false);
    }

    /** As {@link #peerGone(CmId)}; {@code over}: TIMEWAIT_EXIT follows at once (no time-wait: the ID is forgotten). */
    private void peerGone(CmId id, boolean over) {
        if (context.invoker) {
            toError(id.qp); // inline, under the context's lock
            down(id, over);
        } else {
            Thread.ofVirtual().start(() -> {
                toError(id.qp);
                down(id, over);
            });
        }
    }

    private static void down(CmId id, boolean over) {
        if (over) {
            id.events.timewaitExit();
        } else {
            id.events.disconnected();
        }
    }

    /** An IPv6 link-local peer address with the scope of the local endpoint it was heard on (a reply needs it). */
    private static InetAddress scoped(InetAddress a, Endpoint local) {
        if (a instanceof java.net.Inet6Address v6 && v6.isLinkLocalAddress() && v6.getScopeId() == 0
                && local.socketAddress().getAddress() instanceof java.net.Inet6Address l6 && l6.getScopeId() != 0) {
            try {
                return java.net.Inet6Address.getByAddress(null, v6.getAddress(), l6.getScopeId());
            } catch (java.net.UnknownHostException e) {
                return a;
            }
        }
        return a;
    }

    private static Mtu min(Mtu a, Mtu b) {
        return a.bytes() <= b.bytes() ? a : b;
    }

    private void checkQp(QueuePair qp) {
        if (qp.pd().context() != context) {
            throw new RdmaException(Errno.EINVAL, "the QP belongs to another device context than this connection manager");
        }
        if (qp.type() != io.jrdma.verbs.QpType.RC) {
            throw new RdmaException(Errno.EINVAL, "rdma_cm over the InfiniBand CM connects RC QPs, not " + qp.type());
        }
        if (qp.state() != QpState.RESET && qp.state() != QpState.INIT) {
            throw new RdmaException(Errno.EINVAL, "connect/accept need a QP in RESET or INIT, not " + qp.state());
        }
    }

    private void checkOpen() {
        if (closed) {
            throw new RdmaException(Errno.EINVAL, "the device context is closed");
        }
    }

    private int ourLid() {
        int p = context.udpPort();
        return p == DeviceOptions.ROCE_V2_PORT ? CmPath.PERMISSIVE_LID : p;
    }

    static int udpPortOfLid(int lid) {
        return lid == CmPath.PERMISSIVE_LID || lid == 0 ? DeviceOptions.ROCE_V2_PORT : lid;
    }

    /** The UDP port of the server's RoCE: a listener's of this JVM, else 4791. */
    private static int peerUdpPort(InetSocketAddress server) {
        Integer p = LISTENING.get(server);
        if (p == null) {
            InetAddress any;
            try {
                any = InetAddress.getByAddress(new byte[server.getAddress() instanceof Inet4Address ? 4 : 16]);
            } catch (java.net.UnknownHostException e) {
                throw new IllegalStateException(e);
            }
            p = LISTENING.get(new InetSocketAddress(any, server.getPort()));
        }
        return p != null ? p : DeviceOptions.ROCE_V2_PORT;
    }

    /**
     * The GID index to connect from, as rdma_resolve_addr picks the source: the kernel route's source when
     * it is this context's, else this context's first address of the same IP version.
     */
    private int sgidIndexFor(InetAddress destination) {
        InetAddress routed = null;
        try (DatagramChannel ch = DatagramChannel.open()) {
            ch.connect(new InetSocketAddress(destination, 9)); // routes only; sends nothing
            routed = ((InetSocketAddress) ch.getLocalAddress()).getAddress();
        } catch (IOException e) {
            // no route: fall through to the first address of the family
        }
        if (routed != null) {
            int i = context.gidIndexOf(Gid.of(routed));
            if (i >= 0) {
                return i;
            }
        }
        List<Gid> gids = context.queryPort().gids();
        for (int i = 0; i < gids.size(); i++) {
            InetAddress a = gids.get(i).toInetAddress();
            if (a.getClass() == destination.getClass() && !a.isAnyLocalAddress() && !gids.get(i).equals(Gid.of(new byte[16]))) {
                return i;
            }
        }
        throw new RdmaException(Errno.ENETUNREACH, "no address of " + context.device().name() + " reaches "
                + destination.getHostAddress() + (routed == null ? "" : " (the route leaves from "
                + routed.getHostAddress() + ")") + "; open the device that owns the route's source (Rdma.resolve picks it)");
    }

    private static RuntimeException failed(RuntimeException e) {
        LOG.log(System.Logger.Level.DEBUG, () -> "connection failed: " + e.getMessage());
        return e;
    }

    /** Tests: the CM state of a connection this manager returned, asked on the CM thread. */
    State stateOf(Connection c) {
        CmId id = ((IbConnection) c).id;
        return call(() -> id.state);
    }

    /** Tests: how many connections the manager holds (in setup, established or in time-wait), asked on the CM thread. */
    int heldIds() {
        return call(ids::size);
    }

    /** {@return the context's QP 1, which the transport feeds and drains} */
    public Gsi gsi() {
        return gsi;
    }

    /** The GSI and CM counters, for the context's counter snapshot. */
    public void addCounters(Map<String, Long> m) {
        m.put("gsi_mads_rcvd", gsi.madsReceived.get());
        m.put("gsi_mads_sent", gsi.madsSent.get());
        m.put("gsi_mads_dropped", gsi.madsDropped.get());
        m.put("cm_mads_bad", gsi.madsBad.get());
        m.put("ibcm_rtu_timed_out", rtuTimedOut.get());
    }

    /** How long {@link #call} waits at a time before it looks whether the manager was closed meanwhile. */
    private static final long CALL_SLICE_NANOS = TimeUnit.MILLISECONDS.toNanos(20);

    private RdmaException closedError() {
        return new RdmaException(Errno.EINVAL, "the InfiniBand connection manager of " + context.device().name()
                + " is closed (its device context closed): nothing more is sent or answered");
    }

    /**
     * Context close (the engine stopped; the transport then sends what this queued): each connection goes as Linux's
     * cm_destroy_id lets it go, once and without retries or waits: an established one with a DREQ, one accepted and
     * not confirmed with a REJ 28 withdrawing the REP, a request still waiting for the application with a REJ 28;
     * then listeners stop and nothing more is sent or answered.
     */
    public void close() {
        if (closed) {
            return;
        }
        farewell();
        closed = true;
        CmThread.unregister(this);
        CA_GUIDS.remove(caGuid);
        for (IbListener l : new ArrayList<>(listeners.values())) {
            l.closed = true;
            LISTENING.remove(l.address);
        }
        listeners.clear();
    }

    /** How long a context's close waits for the CM thread to queue its DREQs and REJs (best effort beyond). */
    static final long FAREWELL_WAIT_NANOS = TimeUnit.SECONDS.toNanos(1);

    /**
     * Queues the DREQs and REJs of {@link #close} on the CM thread, waiting for it {@link #FAREWELL_WAIT_NANOS} at
     * most (found in review: established connections were dropped without a DREQ, so their peers held them until
     * their own traffic failed).
     */
    private void farewell() {
        Runnable task = () -> {
            for (CmId id : ids.values()) {
                try {
                    switch (id.state) {
                        case ESTABLISHED -> id.send(new CmDreq(id.localCommId, id.remoteCommId, id.peerQpn, null),
                                random.nextLong() & 0xFFFF_FFFF_FFFFL);
                        case REP_SENT -> id.send(new CmRej(id.localCommId, id.remoteCommId, CmRej.REJECTED_OTHER, 0,
                                CmRej.REASON_CONSUMER_DEFINED, null, null), id.tid);
                        case REQ_RCVD -> {
                            id.send(new CmRej(id.localCommId, id.remoteCommId, CmRej.REJECTED_REQ, 0,
                                    CmRej.REASON_CONSUMER_DEFINED, null, null), id.tid);
                            id.withdrawn = true;
                        }
                        default -> {
                            // REQ_SENT and REP_RCVD belong to a connect still running (its QP open, so its context
                            // cannot be closing); DREQ_SENT and TIMEWAIT have said goodbye already
                        }
                    }
                } catch (RuntimeException e) {
                    LOG.log(System.Logger.Level.DEBUG, () -> "closing " + id + ": " + e);
                }
            }
        };
        if (CmThread.onThread()) {
            task.run();
            return;
        }
        CompletableFuture<Void> done = new CompletableFuture<>();
        tasks.add(() -> {
            try {
                task.run();
            } finally {
                done.complete(null);
            }
        });
        CmThread.wake();
        boolean interrupted = false;
        long deadline = System.nanoTime() + FAREWELL_WAIT_NANOS;
        while (!done.isDone()) {
            long left = deadline - System.nanoTime();
            if (left <= 0) {
                LOG.log(System.Logger.Level.DEBUG, () -> this + ": closed without its DREQs (the CM thread was busy)");
                break;
            }
            try {
                done.get(left, TimeUnit.NANOSECONDS);
            } catch (InterruptedException e) {
                interrupted = true;
            } catch (ExecutionException | TimeoutException e) {
                // done, or the deadline: the loop decides
            }
        }
        if (interrupted) {
            Thread.currentThread().interrupt();
        }
    }

    @Override
    public String toString() {
        return "IB CM of " + context.device().name();
    }
}

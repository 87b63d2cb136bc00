package io.jrdma.tools.perf;

import io.jrdma.tools.oob.SideChannel;
import io.jrdma.tools.oob.SideChannelException;
import io.jrdma.verbs.Access;
import io.jrdma.verbs.CompletionQueue;
import io.jrdma.verbs.ConnParam;
import io.jrdma.verbs.ConnectionManager;
import io.jrdma.verbs.DeviceContext;
import io.jrdma.verbs.MemoryRegion;
import io.jrdma.verbs.Mtu;
import io.jrdma.verbs.ProtectionDomain;
import io.jrdma.verbs.QpAttr;
import io.jrdma.verbs.QpInitAttr;
import io.jrdma.verbs.QpState;
import io.jrdma.verbs.QueuePair;
import io.jrdma.verbs.RdmaException;
import io.jrdma.verbs.RecvWorkRequest;
import io.jrdma.verbs.SendFlags;
import io.jrdma.verbs.SendWorkRequest;
import io.jrdma.verbs.WcOpcode;
import io.jrdma.verbs.WcStatus;
import io.jrdma.verbs.WorkCompletion;
import io.jrdma.verbs.WrOpcode;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.concurrent.locks.LockSupport;

/**
 * perftest's {@code -R} exchange ({@code create_comm_struct} with {@code use_rdma_cm}): an RC
 * "comm" QP connected through the connection manager ({@code rdma_client_connect} /
 * {@code rdma_server_connect}: IRD/ORD 0/0, no private data), one 56-byte receive
 * ({@code post_one_recv_wqe}, wr_id {@code SYNC_SPEC_ID}) posted before the connect or accept
 * and posted again as soon as a message is in, so that exactly one is outstanding, and every
 * message one signaled SEND of exactly its bytes whose completion is awaited
 * ({@code rdma_write_data}). iWARP has no receiver-not-ready retry: a SEND that finds no
 * receive is fatal (siw answers with a TERMINATE), so the strict alternation of the exchange is
 * what keeps the peer's receive posted.
 *
 * <p>Waiting polls the CQs, which drives an INVOKER context's engine; a wait fails after the
 * timeout without progress (no completion, and no packet moved by the engine), or at once when
 * the peer closed (the receive is flushed).
 */
final class RdmaCmExchange implements PerftestExchange {
    /** perftest's SYNC_SPEC_ID. */
    static final long SYNC_SPEC_ID = 5;
    /** How long a server waits for the client to close first (see {@link #finish()}). */
    static final long CLOSE_GRACE_NANOS = 500_000_000L;

    private final ProtectionDomain pd;
    private final CompletionQueue sendCq;
    private final CompletionQueue recvCq;
    private final QueuePair qp;
    private final Arena arena = Arena.ofShared();
    private final MemorySegment sendBuf;
    private final MemorySegment recvBuf;
    private final MemoryRegion sendMr;
    private final MemoryRegion recvMr;
    private final SendWorkRequest wr = new SendWorkRequest(1);
    private final RecvWorkRequest rwr = new RecvWorkRequest(1);
    private final WorkCompletion wc = new WorkCompletion();
    private final SideChannel.Pump pump;
    private final long timeoutNanos;
    private ConnectionManager.Connection conn;
    private String peer = "the peer";
    private boolean closed;
    private boolean server;

    /** The peer's address once connected (the data QPs' port is the one it is reached on), else null. */
    java.net.InetAddress peerAddress;

    /** @param port the port of the connection's address ({@link io.jrdma.tools.DeviceChoice#portFor}), for INIT */
    private RdmaCmExchange(DeviceContext ctx, SideChannel.Pump pump, long timeoutNanos, int port) {
        this.pump = pump;
        this.timeoutNanos = timeoutNanos;
        try {
            pd = ctx.allocPd();
            sendCq = ctx.createCq(4);
            recvCq = ctx.createCq(4);
            qp = pd.createQp(new QpInitAttr(io.jrdma.verbs.QpType.RC, sendCq, recvCq, 1, 1, 1, 1, 0, false));
            sendBuf = arena.allocate(PerftestWire.DEST_SIZE, 64);
            recvBuf = arena.allocate(PerftestWire.DEST_SIZE, 64);
            sendMr = pd.register(sendBuf, Access.LOCAL_WRITE);
            recvMr = pd.register(recvBuf, Access.LOCAL_WRITE);
            // as rdma_create_qp leaves it: INIT on the address's port, so that the receive is posted before connecting
            // (rdma_cm on RoCE moves it to its rdma_cm_id's port, INIT to INIT, as librdmacm)
            qp.modify(new QpAttr().state(QpState.INIT).pkeyIndex(0).portNum(port).accessFlags(Access.LOCAL_WRITE));
            postRecv();
        } catch (RuntimeException e) {
            close();
            throw e;
        }
    }

    /** perftest's comm conn_param: zeros (the comm verb is SEND), retry counts 7. */
    private static ConnParam param() {
        return new ConnParam(null, 0, 0, 7, 7, Mtu.MTU_4096);
    }

    /** {@code rdma_client_connect}: one attempt, as perftest makes. */
    static RdmaCmExchange connect(DeviceContext ctx, InetSocketAddress server, SideChannel.Pump pump,
                                  long timeoutNanos) {
        RdmaCmExchange x = new RdmaCmExchange(ctx, pump, timeoutNanos,
                io.jrdma.tools.DeviceChoice.portFor(ctx, server.getAddress()));
        x.peer = server.getAddress().getHostAddress() + ":" + server.getPort();
        x.peerAddress = server.getAddress();
        try {
            io.jrdma.tools.Progress.step("connecting to " + server + " (rdma_cm over "
                    + (ctx.device().transport() == io.jrdma.verbs.Transport.IWARP ? "iWARP)" : "RoCE)"));
            x.conn = ctx.rdmaCm().connect(x.qp, server, param(), Duration.ofNanos(timeoutNanos));
            return x;
        } catch (RdmaException e) {
            x.close();
            throw new SideChannelException("couldn't connect to " + x.peer + " through rdma_cm (" + e.getMessage()
                    + "): is the server running the same test with -R on the same kind of device?", e);
        }
    }

    /**
     * {@code rdma_server_connect}: accepts the first connection request on {@code listener}.
     *
     * @param waitNanos how long to wait for a client, 0 = for ever (perftest waits for ever)
     */
    static RdmaCmExchange accept(DeviceContext ctx, ConnectionManager.Listener listener, long waitNanos,
                                 SideChannel.Pump pump, long timeoutNanos) {
        RdmaCmExchange x = new RdmaCmExchange(ctx, pump, timeoutNanos,
                io.jrdma.tools.DeviceChoice.portFor(ctx, listener.address().getAddress()));
        x.server = true;
        io.jrdma.tools.Progress.step("waiting for a client on TCP port " + listener.address().getPort() + " (rdma_cm)");
        try {
            long end = System.nanoTime() + waitNanos;
            ConnectionManager.ConnectRequest req;
            while ((req = nextRequest(listener)) == null) {
                if (waitNanos > 0 && System.nanoTime() - end > 0) {
                    throw new SideChannelException("no client connected to port " + listener.address().getPort()
                            + " (rdma_cm) within " + waitNanos / 1_000_000_000L + " s");
                }
            }
            InetSocketAddress from = req.peerAddress();
            if (from != null) {
                x.peer = from.getAddress().getHostAddress() + ":" + from.getPort();
                x.peerAddress = from.getAddress();
            }
            try {
                x.conn = req.accept(x.qp, param(), Duration.ofNanos(timeoutNanos));
            } catch (RdmaException e) {
                throw new SideChannelException("couldn't accept the rdma_cm connection from " + x.peer + " ("
                        + e.getMessage() + ")", e);
            }
            return x;
        } catch (RuntimeException e) {
            x.close();
            throw e;
        }
    }

    /**
     * @return the next connection request on {@code l}, or null after a while without one
     * @throws SideChannelException when the listener is closed (a poll that returns at once) or the
     *                              thread interrupted, rather than spinning
     */
    static ConnectionManager.ConnectRequest nextRequest(ConnectionManager.Listener l) {
        long start = System.nanoTime();
        ConnectionManager.ConnectRequest r = l.poll(Duration.ofMillis(200));
        if (r == null && (Thread.currentThread().isInterrupted() || System.nanoTime() - start < 100_000_000L)) {
            throw new SideChannelException("stopped waiting for a connection on port " + l.address().getPort()
                    + " (rdma_cm): " + (Thread.currentThread().isInterrupted() ? "interrupted" : "the listener closed"));
        }
        return r;
    }

    /** @return the peer's address, for messages */
    String peer() {
        return peer;
    }

    private void postRecv() {
        rwr.reset().wrId(SYNC_SPEC_ID).sge(0, recvBuf.address(), PerftestWire.DEST_SIZE, recvMr.lkey());
        int rc = qp.postRecv(rwr);
        if (rc != 0) {
            throw new SideChannelException("Function ibv_post_recv failed for RDMA_CM QP ("
                    + RdmaException.Errno.of(rc) + ", QP state " + qp.state() + ")");
        }
    }

    /** {@code rdma_write_data}: one signaled SEND of the message, then its completion. */
    @Override
    public void write(byte[] message, String what) {
        if (message.length > PerftestWire.DEST_SIZE) {
            throw new IllegalArgumentException(what + ": " + message.length + " bytes do not fit the peer's receive");
        }
        MemorySegment.copy(message, 0, sendBuf, ValueLayout.JAVA_BYTE, 0, message.length);
        wr.reset().opcode(WrOpcode.SEND).wrId(SYNC_SPEC_ID).flags(SendFlags.SIGNALED)
                .sge(0, sendBuf.address(), message.length, sendMr.lkey());
        int rc = qp.postSend(wr);
        if (rc != 0) {
            throw new SideChannelException("couldn't send " + what + " to " + peer + " over rdma_cm (ibv_post_send: "
                    + RdmaException.Errno.of(rc) + ", QP state " + qp.state() + ")");
        }
        await(sendCq, "the completion of sending " + what);
        if (wc.status() != WcStatus.SUCCESS) {
            throw new SideChannelException("couldn't send " + what + " to " + peer + " over rdma_cm: Bad wc status "
                    + wc.status().ordinal() + " (" + wc.status() + ")" + (wc.status() == WcStatus.WR_FLUSH_ERR
                    ? ": the connection was closed" : ""));
        }
    }

    /** {@code rdma_read_data}: the next receive, which must hold {@code n} bytes; then the receive is posted again. */
    @Override
    public byte[] read(int n, String what) {
        await(recvCq, what + " from " + peer);
        if (wc.status() != WcStatus.SUCCESS) {
            throw new SideChannelException((wc.status() == WcStatus.WR_FLUSH_ERR
                    ? "the peer " + peer + " closed the rdma_cm connection before sending " + what
                    : "couldn't receive " + what + " from " + peer + " over rdma_cm")
                    + " (Bad wc status -- " + wc.status().ordinal() + " -- " + wc.wrId() + ": " + wc.status() + ")");
        }
        if (wc.opcode() != WcOpcode.RECV || wc.wrId() != SYNC_SPEC_ID) {
            throw new SideChannelException("unexpected completion on the rdma_cm QP: " + wc.opcode() + " wr_id "
                    + wc.wrId());
        }
        int len = wc.byteLen();
        byte[] m = recvBuf.asSlice(0, Math.min(len, PerftestWire.DEST_SIZE)).toArray(ValueLayout.JAVA_BYTE);
        postRecv();
        if (len != n) {
            throw new SideChannelException("the peer " + peer + " sent " + len + " bytes where " + what + " has " + n
                    + " (" + SideChannel.printable(m, m.length) + "): is it running the same test and flags with -R?");
        }
        return m;
    }

    private void await(CompletionQueue cq, String what) {
        long last = System.nanoTime();
        int idle = 0;
        while (cq.poll(wc) == 0) {
            if (pump.turn() > 0) {
                last = System.nanoTime();
                idle = 0;
                continue;
            }
            if (++idle < 2000) {
                Thread.onSpinWait();
                continue;
            }
            if (System.nanoTime() - last > timeoutNanos) {
                throw new SideChannelException("timed out waiting for " + what + " over rdma_cm: nothing arrived in "
                        + timeoutNanos / 1_000_000_000L + " s (is the peer running the same test with -R? see"
                        + " --timeout)");
            }
            LockSupport.parkNanos(50_000);
        }
    }

    @Override
    public byte[] encodeKeys(PerftestWire.Dest d) {
        return PerftestWire.encodeDest(d);
    }

    @Override
    public PerftestWire.Dest decodeKeys(byte[] m) {
        return PerftestWire.decodeDest(m);
    }

    @Override
    public int keySize() {
        return PerftestWire.DEST_SIZE;
    }

    /**
     * {@code ctx_close_connection} over rdma_cm: nothing goes on the wire after the last handshake.
     * A server gives the client up to {@link #CLOSE_GRACE_NANOS} to close first: Linux siw as the
     * client can still be completing its last SEND when the server's FIN arrives, and then fails it
     * (LOC_QP_OP_ERR, "Failed to close connection"), which perftest's own, slower, server never
     * provokes. The wait ends as soon as the client's close flushes the posted receive.
     */
    @Override
    public void finish() {
        if (!server) {
            return;
        }
        long end = System.nanoTime() + CLOSE_GRACE_NANOS;
        while (recvCq.poll(wc) == 0) {
            if (pump.turn() == 0) {
                if (System.nanoTime() - end > 0) {
                    return;
                }
                LockSupport.parkNanos(50_000);
            }
        }
    }

    /** Disconnects (a FIN: the peer sees a normal close) and frees the comm QP's resources. */
    @Override
    public void close() {
        if (closed) {
            return;
        }
        closed = true;
        for (AutoCloseable c : new AutoCloseable[] {conn, qp, sendMr, recvMr, sendCq, recvCq, pd}) {
            if (c != null) {
                try {
                    c.close();
                } catch (Exception ignored) {
                    // teardown
                }
            }
        }
        arena.close();
    }
}

package io.jrdma.engine.roce;

import io.jrdma.soft.SoftRoceOptions;

import io.jrdma.engine.cm.TcpConnectionManager;
import io.jrdma.engine.core.Context;
import io.jrdma.engine.core.Counter;
import io.jrdma.engine.core.Counters;
import io.jrdma.engine.core.Cq;
import io.jrdma.engine.core.Engine;
import io.jrdma.engine.core.Fallbacks;
import io.jrdma.engine.core.Pd;
import io.jrdma.engine.core.Qp;
import io.jrdma.engine.core.QpCounter;
import io.jrdma.engine.core.Transport;
import io.jrdma.engine.ibcm.IbConnectionManager;
import io.jrdma.engine.link.Endpoint;
import io.jrdma.engine.link.Link;
import io.jrdma.engine.link.UdpLink;
import io.jrdma.verbs.ConnectionManager;
import io.jrdma.verbs.DeviceAttr;
import io.jrdma.verbs.DeviceCap;
import io.jrdma.verbs.QpType;
import io.jrdma.verbs.QpAttr;
import io.jrdma.verbs.QpInitAttr;
import io.jrdma.verbs.QpState;
import io.jrdma.wire.Icrc;

import java.lang.foreign.MemorySegment;
import java.net.InetAddress;
import java.nio.ByteBuffer;
import java.util.List;
import java.util.Map;

/**
 * The IB transport of a soft-RoCE context (RoCEv2 over UDP), shaped like Linux rxe: the
 * {@link PacketReceiver} (rxe_recv.c: length, opcode, ICRC, destination QP, source address
 * checks) hands requests to the {@link Responder} (rxe_resp.c) and responses to the
 * {@link Completer} (rxe_comp.c); the {@link Requester} (rxe_req.c) turns send-queue WQEs into
 * packets. It owns the transmit buffers and the ICRC, and runs inside the core's {@link Engine}
 * duty cycle through {@link Transport}.
 */
public final class RoceTransport implements Transport {
    static final int RX_BATCH = 64;
    static final int TX_BUFFER = 8192;

    final Engine engine;
    final Context context;
    final Link link;
    final Counters counters;
    final Icrc icrc = new Icrc();
    /**
     * The packet being built: one slot of {@link #txBufs}. A link that holds packets until
     * {@link Link#flush} (batched transmit) keeps a reference to each sent slot, so the engine
     * moves to the next slot after every send; the ring has one slot more than the link holds,
     * so the slot being built is never one the link still holds.
     */
    ByteBuffer tx;
    MemorySegment txSeg;
    private final ByteBuffer[] txBufs;
    private final MemorySegment[] txSegs;
    private int txSlot;
    private final boolean linkHolds;
    /** rxe_recv.c: the link hands it every datagram */
    final PacketReceiver receiver;
    final Requester requester;
    final Completer completer;
    final Responder responder;
    private final TcpConnectionManager cm;
    /** rdma_cm over RoCE: the IB CM, whose GSI (QP 1) the receiver feeds and the duty cycle drains */
    final IbConnectionManager ibcm;
    private final io.jrdma.engine.ibcm.Gsi.Sender gsiSender = this::sendGsi;
    private final List<String> limitations;

    RoceTransport(Engine engine) {
        ColdStart.prime(); // once per JVM, before any peer can send: the wire code's first run is slow
        this.engine = engine;
        this.context = engine.context;
        this.link = context.link;
        this.counters = engine.counters;
        this.requester = new Requester(this);
        this.completer = new Completer(this);
        this.responder = new Responder(this);
        this.receiver = new PacketReceiver(this);
        this.linkHolds = link.heldPackets() > 0;
        int slots = linkHolds ? link.heldPackets() + 1 : 1;
        ByteBuffer area = ByteBuffer.allocateDirect(TX_BUFFER * slots);
        txBufs = new ByteBuffer[slots];
        txSegs = new MemorySegment[slots];
        for (int i = 0; i < slots; i++) {
            txBufs[i] = area.slice(i * TX_BUFFER, TX_BUFFER);
            txSegs[i] = MemorySegment.ofBuffer(txBufs[i]);
        }
        tx = txBufs[0];
        txSeg = txSegs[0];
        this.cm = new TcpConnectionManager(context);
        this.ibcm = new IbConnectionManager(context);
        this.limitations = link instanceof UdpLink u && !u.isNative()
                ? List.of(nativeUdpLimitation(UdpLink.nativeUnavailableReason())) : List.of();
        Fallbacks.sayOnce("soft-RoCE", limitations);
    }

    /**
     * The soft-RoCE limitation for a link without native sockets.
     *
     * @param reason why native sockets are not available (as {@code NativeUdp} says it), or null when
     *               they are and the context's opener chose {@code DatagramChannel} anyway
     */
    public static String nativeUdpLimitation(String reason) {
        return "UDP through DatagramChannel instead of native sockets: IPv6 packets with a zero UDP checksum"
                + " (Linux rxe sends all its packets so) are dropped by the kernel, so rxe peers are not heard"
                + " over IPv6, each datagram costs one receive call, UD sends leave with the system's hop limit (only"
                + " an address handle's traffic class is set) and a UD receive's GRH says hop limit 64 and traffic class 0; "
                + (reason == null ? "chosen when the context was opened" : reason);
    }

    /** @return the limitations of the soft-RoCE devices in this process (empty: none) */
    public static List<String> limitationsNow() {
        String why = UdpLink.nativeUnavailableReason();
        return why == null ? List.of() : List.of(nativeUdpLimitation(why));
    }

    // ------------------------------------------------------------------ duty cycle

    @Override
    public void beforeReceive() {
        if (ibcm.gsi().pending()) { // MADs the IB CM queued (control path: at most a few per connection)
            ibcm.gsi().drain(gsiSender);
        }
        if (linkHolds) {
            link.flush(); // fresh posts leave before this cycle's receive system call
        }
    }

    @Override
    public int receive() {
        return link.poll(receiver, RX_BATCH);
    }

    @Override
    public int transmit(Qp qp, int budget) {
        return requester.run((RoceQp) qp, budget);
    }

    @Override
    public int service(Qp q, int budget) {
        RoceQp qp = (RoceQp) q;
        completer.checkTimers(qp);
        int work = requester.run(qp, budget);
        return work + responder.output(qp, budget);
    }

    @Override
    public boolean hasWork(Qp q) {
        if (q.state == QpState.ERROR) {
            return Engine.flushPending(q);
        }
        if (q.state == QpState.RESET || q.state == QpState.INIT) {
            return false;
        }
        ResponderState resp = ((RoceQp) q).resp;
        return resp.resCount > 0 || resp.ackPending || resp.ackDueAt != 0 || resp.nakPendingSyndrome >= 0
                || q.sqConsumer != q.sqProducerAcquire();
    }

    @Override
    public void afterService() {
        if (linkHolds) {
            link.flush();
        }
    }

    // ------------------------------------------------------------------ QP life

    @Override
    public Qp newQp(Pd pd, int qpn, QpInitAttr init, Cq sendCq, Cq recvCq) {
        if (init.type() == QpType.UD) {
            link.reportIpHeaders(); // a UD receive's GRH holds the datagram's hop limit and traffic class
        }
        return new RoceQp(context, pd, qpn, init, sendCq, recvCq);
    }

    @Override
    public void modified(Qp q, QpAttr a, QpState from, QpState to) {
        RoceQp qp = (RoceQp) q;
        if (to == QpState.SQD && from != QpState.SQD) {
            qp.drainedRaised = false;
            engine.schedule(qp); // a QP with nothing outstanding is drained at once: its next service says so
        }
        if (a.has(QpAttr.RQ_PSN)) {
            responder.start(qp, a.rqPsn());
        }
        if (a.has(QpAttr.SQ_PSN)) {
            requester.start(qp, a.sqPsn());
            completer.start(qp, a.sqPsn());
        }
        if (a.has(QpAttr.MAX_DEST_RD_ATOMIC)) {
            qp.resp.sizeResources(a.maxDestRdAtomic());
        }
        if (a.has(QpAttr.RETRY_CNT) || a.has(QpAttr.RNR_RETRY)) {
            completer.reloadRetries(qp, a.has(QpAttr.RETRY_CNT), a.has(QpAttr.RNR_RETRY));
        }
    }

    @Override
    public void queried(Qp q, QpAttr a) {
        RoceQp qp = (RoceQp) q;
        a.rqPsn(qp.resp.ePsn).sqPsn(qp.req.psn);
    }

    @Override
    public void enteredError(Qp q) {
        RoceQp qp = (RoceQp) q;
        qp.comp.stopTimers();
        qp.resp.dropOwed();
    }

    @Override
    public void flushed(Qp q) {
        RoceQp qp = (RoceQp) q;
        qp.req.restart(qp.sqConsumer);
        qp.resp.recv = null;
    }

    @Override
    public void reset(Qp q) {
        RoceQp qp = (RoceQp) q;
        qp.req.restart(qp.sqConsumer);
        qp.comp.stopTimers();
        qp.comp.readIndex = -1;
        responder.reset(qp);
    }

    /**
     * Control path, before a QP goes away: sends the ACK it still owes (deferred or coalesced),
     * so the peer's last message is acknowledged instead of retried until its retry count runs out.
     */
    @Override
    public void destroying(Qp q) {
        if (responder.sendOwedAck((RoceQp) q) && linkHolds) {
            link.flush();
        }
    }

    @Override
    public void peerAcksUnrequested(Qp qp, boolean on) {
        ((RoceQp) qp).peerAcksUnrequested = on;
    }

    // ------------------------------------------------------------------ device facts

    @Override
    public ConnectionManager connectionManager() {
        return cm;
    }

    @Override
    public ConnectionManager rdmaCm() {
        return ibcm;
    }

    @Override
    public List<String> limitations() {
        return limitations;
    }

    /**
     * RoCE has RC, UC and UD QPs (UD needs address handles, which the engine does not limit), SRQs (the
     * responder takes receives through Qp.takeRecv), memory
     * windows of both types (type 2 as 2B: bound to a QP, checked with its PD) and fast registration, as rxe.
     */
    @Override
    public DeviceAttr deviceAttr(DeviceAttr base) {
        DeviceAttr b = io.jrdma.engine.core.LocalOps.withMemoryManagement(
                io.jrdma.engine.core.Srq.declare(base), DeviceCap.MEM_MGT_EXTENSIONS
                | DeviceCap.MEM_WINDOW | DeviceCap.MEM_WINDOW_TYPE_2B, base.maxMr());
        return new DeviceAttr(b.fwVer(), b.nodeGuid(), b.sysImageGuid(), b.maxMrSize(), b.pageSizeCap(), b.vendorId(),
                b.vendorPartId(), b.hwVer(), b.maxQp(), b.maxQpWr(), b.deviceCapFlags() | DeviceCap.BAD_QKEY_CNTR,
                b.maxSge(), b.maxSgeRd(), b.maxCq(), b.maxCqe(), b.maxMr(), b.maxPd(), b.maxQpRdAtom(),
                b.maxResRdAtom(), b.maxQpInitRdAtom(), b.atomicCap(), b.maxMw(), Integer.MAX_VALUE, b.maxSrq(),
                b.maxSrqWr(), b.maxSrqSge(), b.maxPkeys(), b.physPortCnt(), union(b.qpTypes(), QpType.UC, QpType.UD));
    }

    private static java.util.Set<QpType> union(java.util.Set<QpType> s, QpType... more) {
        java.util.EnumSet<QpType> u = java.util.EnumSet.of(QpType.RC, more);
        u.addAll(s);
        return u;
    }

    @Override
    public String describe() {
        return "udp " + context.udpPort();
    }

    @Override
    public void addCounters(Map<String, Long> m) {
        ibcm.addCounters(m);
        cm.addCounters(m); // its listeners: handshakes accepted, timed out, dropped
        if (link instanceof UdpLink u) { // the link's own (opaque reads of engine-thread counts: a snapshot)
            m.put("tx_syscalls", u.txCalls());
            m.put("rx_syscalls", u.rxCalls());
            m.put("rx_empty_syscalls", u.rxEmpty());
            m.put("tx_gso_messages", u.gsoMessages());
        }
    }

    @Override
    public String transmitMode() {
        return link instanceof UdpLink u ? u.transmitMode() : null;
    }

    @Override
    public boolean refreshAddresses() {
        if (!(link instanceof UdpLink udp) || !(context.device instanceof SoftRoceDevice dev)
                || !SoftRoceOptions.of(context.options).addresses().isEmpty()) {
            return false; // a test's in-memory network, or a context opened on a fixed address list
        }
        List<InetAddress> current = dev.addresses();
        if (current.isEmpty()) {
            return false;
        }
        context.control(() -> {
            List<Endpoint> eps = udp.localEndpoints();
            for (Endpoint e : eps) {
                if (udp.isOpen(e.linkIndex()) && !current.contains(e.socketAddress().getAddress())) {
                    udp.removeAddress(e.linkIndex());
                }
            }
            for (InetAddress a : current) {
                boolean known = false;
                for (Endpoint e : udp.localEndpoints()) {
                    known |= udp.isOpen(e.linkIndex()) && e.socketAddress().getAddress().equals(a);
                }
                if (!known) {
                    try {
                        udp.addAddress(a);
                    } catch (java.io.IOException ex) {
                        // cannot listen there (yet): tried again at the next refresh
                    }
                }
            }
        });
        return true;
    }

    @Override
    public void close() {
        cm.close();
        ibcm.close();
        // the DREQs and REJs the IB CM's close queued: the engine has stopped (this thread holds it), so they leave now
        ibcm.gsi().drain(gsiSender);
        if (linkHolds) {
            link.flush();
        }
    }

    // ------------------------------------------------------------------ transmit

    /**
     * Appends the ICRC to the packet in {@code tx[0, len)} and sends it on the QP's path.
     *
     * @return false when the link is full (nothing was sent; the caller retries later)
     */
    boolean send(RoceQp qp, int len) {
        if (!send(qp.local, qp.remote, len, qp.peerAcksUnrequested)) {
            return false;
        }
        counters.increment(qp.stats, QpCounter.SENT_PKTS);
        counters.add(qp.stats, QpCounter.SENT_BYTES, len + Icrc.LENGTH);
        return true;
    }

    /**
     * Appends the ICRC to the packet in {@code tx[0, len)} and sends it from {@code local} to {@code remote}
     * (a connected QP's path, or a UD address handle's).
     *
     * @return false when the link is full (nothing was sent; the caller retries later)
     */
    boolean send(Endpoint local, Endpoint remote, int len, boolean batch) {
        Icrc.write(txSeg, len, PacketReceiver.icrc(icrc, local, remote, tx, len));
        // batched transmit (sendmmsg, UDP GSO) only toward a jrdma peer, the only one with which
        // peerAcksUnrequested is negotiated: both ends take the IPv4 ID as 0 in the ICRC, and the Linux peers of
        // the interop suites keep the one-send-per-packet path they were proven on (docs/interop.md)
        if (!link.send(tx, txSeg, len + Icrc.LENGTH, local, remote, batch)) {
            counters.increment(Counter.SEND_ERR);
            return false;
        }
        counters.increment(Counter.SENT_PKTS);
        counters.add(Counter.SENT_BYTES, len + Icrc.LENGTH);
        if (linkHolds) { // the link may still hold this slot: build the next packet in the next one
            int next = txSlot + 1 == txBufs.length ? 0 : txSlot + 1;
            txSlot = next;
            tx = txBufs[next];
            txSeg = txSegs[next];
        }
        return true;
    }

    /** Engine thread: one GSI MAD as a UD SEND_ONLY to QP 1 (BTH, DETH with the GSI Q_Key and source QP 1, the MAD). */
    private boolean sendGsi(byte[] mad, Endpoint local, Endpoint remote, int psn) {
        int hdr = io.jrdma.wire.IbOpcode.headerLength(io.jrdma.wire.IbOpcode.UD_SEND_ONLY);
        io.jrdma.wire.Bth.write(txSeg, 0, io.jrdma.wire.IbOpcode.UD_SEND_ONLY, false, false, 0, 0xFFFF, 1, true, psn);
        io.jrdma.wire.Deth.write(txSeg, io.jrdma.wire.Bth.LENGTH, io.jrdma.wire.Deth.GSI_QKEY, 1);
        MemorySegment.copy(mad, 0, txSeg, java.lang.foreign.ValueLayout.JAVA_BYTE, hdr, mad.length);
        return send(local, remote, hdr + mad.length, false);
    }

    /** Zero-fills the pad bytes after a payload ending at {@code end}; @return the pad count. */
    int pad(int end, int payload) {
        int pad = (-payload) & 3;
        for (int i = 0; i < pad; i++) {
            txSeg.set(java.lang.foreign.ValueLayout.JAVA_BYTE, end + i, (byte) 0);
        }
        return pad;
    }

    static long timeoutNanos(int timeout) {
        return timeout == 0 ? 0 : 4096L << timeout;
    }

    /** IBA table 45 (RNR NAK timer field), in nanoseconds. */
    static long rnrNanos(int code) {
        return RNR_NANOS[code & 31];
    }

    private static final long[] RNR_NANOS = {
        655_360_000L, 10_000, 20_000, 30_000, 40_000, 60_000, 80_000, 120_000, 160_000, 240_000, 320_000,
        480_000, 640_000, 960_000, 1_280_000, 1_920_000, 2_560_000, 3_840_000, 5_120_000, 7_680_000,
        10_240_000, 15_360_000, 20_480_000, 30_720_000, 40_960_000, 61_440_000, 81_920_000, 122_880_000,
        163_840_000, 245_760_000, 327_680_000, 491_520_000
    };
}

package io.jrdma.engine.roce;

import io.jrdma.engine.core.Counter;
import io.jrdma.engine.link.Endpoint;
import io.jrdma.verbs.Access;
import io.jrdma.verbs.AddressVector;
import io.jrdma.verbs.MemoryRegion;
import io.jrdma.verbs.Mtu;
import io.jrdma.verbs.ProtectionDomain;
import io.jrdma.verbs.QpAttr;
import io.jrdma.verbs.QpState;
import io.jrdma.verbs.SendFlags;
import io.jrdma.verbs.SendWorkRequest;
import io.jrdma.verbs.WcStatus;
import io.jrdma.verbs.WrOpcode;
import io.jrdma.wire.AtomicEth;
import io.jrdma.wire.Bth;
import io.jrdma.wire.EthernetIp;
import io.jrdma.wire.IbOpcode;
import io.jrdma.wire.Icrc;
import io.jrdma.wire.PcapReader;
import io.jrdma.wire.Reth;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;

/**
 * A RoCE packet fuzzer against a live RC connection (two soft-RoCE contexts on an in-memory network,
 * deterministic from its seed). Four kinds of input, in turn:
 * <ol>
 * <li>random bytes (any length up to 1,200),
 * <li>valid packets of the live connection, truncated,
 * <li>packets of the golden captures (Linux rxe/perftest), mutated (bytes flipped, cut, grown), re-addressed to
 * the live QP and given a valid ICRC,
 * <li>hostile headers with a valid ICRC aimed at the live QP: every opcode, PSNs at and around the expected one,
 * RETH/AtomicETH addresses at, inside, across and far outside the target region (64-bit wrap, huge lengths,
 * misaligned atomics), the live rkey, the key of a region of another PD, random keys.
 * </ol>
 * The receiving side's target region lies between guard regions, next to a region of another PD; neither the
 * guards nor the other PD's region may change. Every input must be counted: random, truncated and mutated-ICRC
 * inputs each by exactly one drop counter; each hostile input by a drop or refusal counter, or else accepted
 * (the responder's expected PSN moved, or it answered). When a fatal NAK moves the receiver's QP to ERROR, as
 * the IBA says, the QP is reconnected and the run goes on. At the end the connection still carries a checked
 * WRITE.
 */
final class RoceFuzz {
    /** The counters by which a packet can be dropped, refused or answered without a change of the expected PSN. */
    static final Counter[] ACCOUNTED = {Counter.RCVD_MALFORMED, Counter.RCVD_ICRC_ERR, Counter.RCVD_UNKNOWN_QP,
        Counter.RCVD_BAD_ADDR, Counter.RCVD_BAD_STATE, Counter.OUT_OF_SEQ_REQUEST, Counter.DUPLICATE_REQUEST,
        Counter.RCVD_BAD_KEY, Counter.RCVD_OUT_OF_BOUNDS, Counter.RCVD_NO_ACCESS, Counter.RCVD_INV_REQ,
        Counter.SEND_RNR_ERR, Counter.RCVD_STALE_RESPONSE, Counter.RCVD_SEQ_ERR, Counter.RCVD_RNR_ERR,
        Counter.RCVD_NAK_INV_REQ, Counter.RCVD_NAK_REM_ACCESS, Counter.RCVD_NAK_REM_OP, Counter.RCVD_TOO_LONG,
        Counter.RCVD_BAD_QKEY, Counter.UD_DROPPED_NO_RECV, Counter.UC_DROPPED_MSGS};
    /** The drops of an input that cannot carry a valid ICRC. */
    static final Counter[] DROPS = {Counter.RCVD_MALFORMED, Counter.RCVD_ICRC_ERR};

    private static final int REGION = 64 * 1024;
    private static final int GUARD = 16 * 1024;
    private static final byte SENTINEL = (byte) 0xA5;

    /** What a run did. */
    record Result(long inputs, Map<Kind, Long> byKind, Map<Counter, Long> countersAtB, long reconnects,
                  long unaccounted, String firstUnaccounted) {
    }

    enum Kind { RANDOM, TRUNCATED, MUTATED_CAPTURE, HOSTILE }

    private final Pair p;
    private final SplittableRandom r;
    private final MemorySegment area;
    private final MemorySegment target;
    private final MemorySegment foreign;
    private final MemoryRegion targetMr;
    private final MemoryRegion foreignMr;
    private final ProtectionDomain otherPd;
    private final List<byte[]> captures;
    private final ByteBuffer scratch = ByteBuffer.allocateDirect(8192);
    private final Icrc icrc = new Icrc();
    private final Endpoint from;
    private final Endpoint to;
    private long reconnects;
    private long unaccounted;
    private String firstUnaccounted;

    private RoceFuzz(Pair p, long seed, List<byte[]> captures) {
        this.p = p;
        this.r = new SplittableRandom(seed);
        this.captures = captures;
        // [guard | target (the QP's PD) | guard | foreign (another PD) | guard]
        area = p.arena.allocate(3L * GUARD + 2L * REGION, 4096);
        area.fill(SENTINEL);
        target = area.asSlice(GUARD, REGION);
        foreign = area.asSlice(2L * GUARD + REGION, REGION);
        int all = Access.LOCAL_WRITE | Access.REMOTE_WRITE | Access.REMOTE_READ | Access.REMOTE_ATOMIC;
        targetMr = p.b.pd.register(target, all);
        otherPd = p.b.ctx.allocPd();
        foreignMr = otherPd.register(foreign, all);
        from = p.a.ctx.link.localEndpoints().getFirst();
        to = p.b.ctx.link.localEndpoints().getFirst();
    }

    /** RoCE payloads (BTH onward, ICRC included) of every UDP/4791 packet in the golden captures, or none. */
    static List<byte[]> goldenPackets() throws java.io.IOException {
        String dir = System.getProperty("jrdma.pcaps");
        List<byte[]> out = new ArrayList<>();
        if (dir == null || !Files.isDirectory(Path.of(dir))) {
            return out;
        }
        try (var files = Files.list(Path.of(dir))) {
            for (Path f : files.filter(x -> x.getFileName().toString().startsWith("roce-")).sorted().toList()) {
                try (PcapReader rd = PcapReader.open(f)) {
                    PcapReader.Record rec;
                    while ((rec = rd.next()) != null) {
                        ByteBuffer b = rec.buffer();
                        EthernetIp.Udp u;
                        try {
                            u = EthernetIp.parseUdp(b, rd.linkType());
                        } catch (RuntimeException e) {
                            continue;
                        }
                        if (u == null || u.dstPort() != 4791 || u.payloadLength() < Bth.LENGTH + Icrc.LENGTH
                                || u.payloadOffset() + u.payloadLength() > rec.capturedLength()) {
                            continue;
                        }
                        byte[] pkt = new byte[u.payloadLength()];
                        b.get(u.payloadOffset(), pkt);
                        out.add(pkt);
                    }
                }
            }
        }
        return out;
    }

    /**
     * Runs {@code inputs} inputs from {@code seed}; throws AssertionError on a crash (engine_errors), a touched guard
     * or foreign byte, a miscounted drop, or a connection that no longer works.
     */
    static Result run(long seed, long inputs) throws Exception {
        List<byte[]> golden = goldenPackets();
        try (Pair p = new Pair(Mtu.MTU_1024, 65536)) {
            RoceFuzz f = new RoceFuzz(p, seed, golden);
            try {
                return f.go(inputs);
            } finally {
                f.foreignMr.close();
                f.otherPd.close();
                f.targetMr.close();
            }
        }
    }

    private Result go(long inputs) {
        Map<Kind, Long> byKind = new EnumMap<>(Kind.class);
        Kind[] kinds = Kind.values();
        // no hang: each input is pumped a bounded number of steps, and the whole run has a deadline of 60 s plus
        // 5 ms an input (a loaded two-core host does about 0.6 ms)
        long deadline = System.nanoTime() + 60_000_000_000L + inputs * 5_000_000L;
        for (long i = 0; i < inputs; i++) {
            if ((i & 1023) == 0 && System.nanoTime() - deadline > 0) {
                throw new AssertionError("the fuzzer stopped making progress: " + i + " of " + inputs + " inputs");
            }
            Kind k = kinds[(int) (i % kinds.length)];
            if (k == Kind.MUTATED_CAPTURE && captures.isEmpty()) {
                k = Kind.HOSTILE;
            }
            byKind.merge(k, 1L, Long::sum);
            switch (k) {
                case RANDOM -> {
                    byte[] junk = new byte[r.nextInt(0, 1200)];
                    r.nextBytes(junk);
                    if (junk.length >= Bth.LENGTH + Icrc.LENGTH) {
                        junk[junk.length - 1] ^= 1; // an ICRC right by chance is not random input
                    }
                    expectDropped(junk, k);
                }
                case TRUNCATED -> {
                    byte[] whole = hostile();
                    byte[] cut = java.util.Arrays.copyOf(whole, r.nextInt(0, whole.length));
                    expectDropped(cut, k);
                }
                case MUTATED_CAPTURE -> {
                    byte[] pkt = captures.get(r.nextInt(captures.size())).clone();
                    pkt = mutate(pkt);
                    if (pkt.length >= Bth.LENGTH + Icrc.LENGTH && r.nextInt(4) != 0) {
                        if (r.nextBoolean()) {
                            Bth.write(MemorySegment.ofArray(pkt), 0, Bth.opcode(MemorySegment.ofArray(pkt), 0), false,
                                    false, Bth.padCnt(MemorySegment.ofArray(pkt), 0), 0xFFFF, p.b.qp.qpn(), false,
                                    p.b.qpImpl().resp.ePsn);
                        }
                        seal(pkt);
                        expectAccounted(pkt, k);
                    } else {
                        expectDropped(pkt, k); // the capture's ICRC, of other addresses (or cut below a BTH)
                    }
                }
                case HOSTILE -> expectAccounted(hostile(), k);
            }
            if (p.b.qp.state() == QpState.ERROR) {
                reconnect();
            }
        }
        checkGuards();
        if (p.b.ctx.counter(Counter.ENGINE_ERRORS) != 0 || p.a.ctx.counter(Counter.ENGINE_ERRORS) != 0) {
            throw new AssertionError("engine_errors: a " + p.b.ctx.counter(Counter.ENGINE_ERRORS) + ", b "
                    + p.a.ctx.counter(Counter.ENGINE_ERRORS));
        }
        if (p.a.qp.state() == QpState.ERROR) {
            reconnect(p.a, p.b);
        }
        if (p.b.qp.state() != QpState.RTS || insideAForgedMessage()) {
            reconnect();
        }
        stillWorks();
        checkGuards();
        Map<Counter, Long> at = new EnumMap<>(Counter.class);
        for (Counter c : Counter.values()) {
            long v = p.b.ctx.counter(c);
            if (v != 0) {
                at.put(c, v);
            }
        }
        return new Result(inputs, byKind, at, reconnects, unaccounted, firstUnaccounted);
    }

    private byte[] mutate(byte[] pkt) {
        int n = 1 + r.nextInt(4);
        for (int m = 0; m < n && pkt.length > 0; m++) {
            switch (r.nextInt(4)) {
                case 0 -> pkt[r.nextInt(pkt.length)] ^= (byte) (1 << r.nextInt(8));
                case 1 -> pkt[r.nextInt(pkt.length)] = (byte) r.nextInt(256);
                case 2 -> pkt = java.util.Arrays.copyOf(pkt, r.nextInt(0, pkt.length + 1));
                default -> pkt = java.util.Arrays.copyOf(pkt, pkt.length + r.nextInt(1, 64));
            }
        }
        return pkt;
    }

    /** A packet a→b with a valid ICRC and hostile header fields. */
    private byte[] hostile() {
        MemorySegment s = MemorySegment.ofBuffer(scratch);
        int[] opcodes = {IbOpcode.RC_SEND_FIRST, IbOpcode.RC_SEND_MIDDLE, IbOpcode.RC_SEND_LAST,
            IbOpcode.RC_SEND_ONLY, IbOpcode.RC_RDMA_WRITE_FIRST, IbOpcode.RC_RDMA_WRITE_MIDDLE,
            IbOpcode.RC_RDMA_WRITE_LAST, IbOpcode.RC_RDMA_WRITE_ONLY, IbOpcode.RC_RDMA_READ_REQUEST,
            IbOpcode.RC_COMPARE_SWAP, IbOpcode.RC_FETCH_ADD, IbOpcode.RC_ACKNOWLEDGE,
            IbOpcode.RC_RDMA_READ_RESPONSE_ONLY, IbOpcode.RC_ATOMIC_ACKNOWLEDGE};
        int opcode = r.nextInt(8) == 0 ? r.nextInt(256) : opcodes[r.nextInt(opcodes.length)];
        boolean valid = IbOpcode.valid(opcode);
        int hdr = valid ? IbOpcode.headerLength(opcode) : Bth.LENGTH;
        int payload = valid && (IbOpcode.mask(opcode) & IbOpcode.PAYLOAD) != 0
                ? (r.nextInt(4) == 0 ? r.nextInt(0, 1100) : r.nextInt(0, 64)) : (r.nextInt(10) == 0 ? r.nextInt(1, 16) : 0);
        int pad = (-payload) & 3;
        int epsn = p.b.qpImpl().resp.ePsn;
        int psn = switch (r.nextInt(6)) {
            case 0, 1, 2 -> epsn;
            case 3 -> (epsn - 1 - r.nextInt(8)) & 0xFFFFFF;
            case 4 -> (epsn + 1 + r.nextInt(8)) & 0xFFFFFF;
            default -> r.nextInt(1 << 24);
        };
        int qpn = r.nextInt(16) == 0 ? r.nextInt(1 << 24) : p.b.qp.qpn();
        s.asSlice(0, hdr + payload + pad + Icrc.LENGTH).fill((byte) 0);
        Bth.write(s, 0, opcode, r.nextInt(8) == 0, false, pad, 0xFFFF, qpn, r.nextBoolean(), psn);
        if (valid) {
            int mask = IbOpcode.mask(opcode);
            long va = address();
            int rkey = key();
            if ((mask & IbOpcode.RETH) != 0) {
                long len = switch (r.nextInt(5)) {
                    case 0 -> payload;
                    case 1 -> r.nextInt(0, 2 * REGION);
                    case 2 -> 0xFFFF_FFFFL;
                    case 3 -> REGION - (va - target.address());
                    default -> r.nextInt(0, 4096);
                };
                Reth.write(s, IbOpcode.offset(opcode, IbOpcode.RETH), va, rkey, (int) len);
            }
            if ((mask & IbOpcode.ATMETH) != 0) {
                AtomicEth.write(s, IbOpcode.offset(opcode, IbOpcode.ATMETH), r.nextInt(4) == 0 ? va | r.nextInt(1, 8) : va & ~7L,
                        rkey, r.nextLong(), r.nextLong());
            }
            for (int i = Bth.LENGTH; i < hdr; i++) {
                if (r.nextInt(64) == 0) {
                    s.set(ValueLayout.JAVA_BYTE, i, (byte) r.nextInt(256)); // now and then any header byte
                }
            }
        }
        for (int i = 0; i < payload; i++) {
            s.set(ValueLayout.JAVA_BYTE, hdr + i, (byte) r.nextInt(256));
        }
        int n = hdr + payload + pad;
        byte[] out = new byte[n + Icrc.LENGTH];
        MemorySegment.copy(s, ValueLayout.JAVA_BYTE, 0, out, 0, n);
        seal(out);
        return out;
    }

    private long address() {
        long t = target.address();
        long f = foreign.address();
        return switch (r.nextInt(9)) {
            case 0 -> t;
            case 1 -> t + r.nextInt(0, REGION);
            case 2 -> t + REGION - r.nextInt(0, 64);
            case 3 -> t - r.nextInt(1, GUARD);
            case 4 -> t + REGION + r.nextInt(0, GUARD);
            case 5 -> f + r.nextInt(0, REGION);
            case 6 -> -r.nextInt(1, 4096); // 64-bit wrap
            case 7 -> r.nextLong();
            default -> p.b.mr.address() + r.nextInt(0, 65536);
        };
    }

    private int key() {
        return switch (r.nextInt(6)) {
            case 0, 1, 2 -> targetMr.rkey();
            case 3 -> foreignMr.rkey();
            case 4 -> targetMr.lkey();
            default -> r.nextInt();
        };
    }

    /** Writes a valid ICRC a→b over {@code pkt[0, len - 4)}. */
    private void seal(byte[] pkt) {
        int n = pkt.length - Icrc.LENGTH;
        scratch.clear();
        scratch.put(0, pkt, 0, n);
        int crc = icrc.computeIpv4(from.ipv4(), to.ipv4(), 0, from.port(), to.port(), scratch, 0, n);
        MemorySegment s = MemorySegment.ofArray(pkt);
        Icrc.write(s, n, crc);
    }

    private long sum(Counter[] cs) {
        long t = 0;
        for (Counter c : cs) {
            t += p.b.ctx.counter(c);
        }
        return t;
    }

    private void deliver(byte[] pkt) {
        p.net.inject(pkt, from, to);
        p.pump(() -> false, 3);
    }

    private void expectDropped(byte[] pkt, Kind k) {
        long rcvd = p.b.ctx.counter(Counter.RCVD_PKTS);
        long drops = sum(DROPS);
        long accounted = sum(ACCOUNTED);
        deliver(pkt);
        if (p.b.ctx.counter(Counter.RCVD_PKTS) != rcvd + 1) {
            throw new AssertionError(k + ": rcvd_pkts did not count the input");
        }
        if (sum(DROPS) != drops + 1 && sum(ACCOUNTED) == accounted) {
            note(k, pkt, "a packet with no valid ICRC was not counted as a drop");
        }
    }

    private void expectAccounted(byte[] pkt, Kind k) {
        long accounted = sum(ACCOUNTED);
        long sentAcks = p.b.ctx.counter(Counter.SENT_ACKS) + p.b.ctx.counter(Counter.ACK_DEFERRED)
                + p.b.ctx.counter(Counter.SEND_NAKS);
        long recvs = p.b.ctx.counter(Counter.RDMA_RECVS);
        int epsn = p.b.qpImpl().resp.ePsn;
        int msn = p.b.qpImpl().resp.msn;
        int lastOpcode = p.b.qpImpl().resp.lastOpcode;
        long gsi = toQp1(pkt) ? gsiCount() : 0;
        deliver(pkt);
        boolean moved = (toQp1(pkt) && gsiCount() != gsi) || sum(ACCOUNTED) != accounted || p.b.qpImpl().resp.ePsn != epsn || p.b.qpImpl().resp.msn != msn
                || p.b.qpImpl().resp.lastOpcode != lastOpcode || p.b.ctx.counter(Counter.RDMA_RECVS) != recvs
                || p.b.ctx.counter(Counter.SENT_ACKS) + p.b.ctx.counter(Counter.ACK_DEFERRED)
                        + p.b.ctx.counter(Counter.SEND_NAKS) != sentAcks;
        if (!moved) {
            note(k, pkt, "a packet was neither counted nor accepted");
        }
    }

    /** A mutation can aim a packet at QP 1, where the IB CM's GSI agent takes it (the BTH's destination QP). */
    private static boolean toQp1(byte[] pkt) {
        return pkt.length >= 8 && pkt[5] == 0 && pkt[6] == 0 && pkt[7] == 1;
    }

    /** What the GSI agent received or dropped: how it accounts for the datagrams to QP 1. */
    private long gsiCount() {
        java.util.Map<String, Long> m = p.b.ctx.counters();
        return m.getOrDefault("gsi_mads_rcvd", 0L) + m.getOrDefault("gsi_mads_dropped", 0L);
    }

    private void note(Kind k, byte[] pkt, String what) {
        unaccounted++;
        if (firstUnaccounted == null) {
            StringBuilder hex = new StringBuilder();
            for (int i = 0; i < Math.min(pkt.length, 48); i++) {
                hex.append(String.format("%02x", pkt[i] & 0xFF));
            }
            firstUnaccounted = k + ": " + what + " (" + pkt.length + " B: " + hex + ")";
        }
    }

    private void checkGuards() {
        long[] guards = {0, GUARD + REGION, 2L * GUARD + 2L * REGION};
        for (long g : guards) {
            for (long i = 0; i < GUARD; i++) {
                if (area.get(ValueLayout.JAVA_BYTE, g + i) != SENTINEL) {
                    throw new AssertionError("guard byte " + (g + i) + " of the area was written");
                }
            }
        }
        for (long i = 0; i < REGION; i++) {
            if (foreign.get(ValueLayout.JAVA_BYTE, i) != SENTINEL) {
                throw new AssertionError("byte " + i + " of the other PD's region was written");
            }
        }
    }

    private void reconnect() {
        reconnect(p.b, p.a);
    }

    private void reconnect(Pair.Side s, Pair.Side peer) {
        reconnects++;
        s.qp.modify(new QpAttr().state(QpState.RESET));
        s.qp.modify(new QpAttr().state(QpState.INIT).pkeyIndex(0).portNum(1)
                .accessFlags(Access.LOCAL_WRITE | Access.REMOTE_WRITE | Access.REMOTE_READ | Access.REMOTE_ATOMIC));
        int psn = r.nextInt(1 << 24);
        s.qp.modify(new QpAttr().state(QpState.RTR).av(AddressVector.of(peer.ctx.gid(0), 0)).pathMtu(Mtu.MTU_1024)
                .destQpn(peer.qp.qpn()).rqPsn(psn).maxDestRdAtomic(16).minRnrTimer(1));
        s.qp.modify(new QpAttr().state(QpState.RTS).sqPsn(psn).timeout(14).retryCnt(7).rnrRetry(7).maxRdAtomic(16));
        p.pump(() -> false, 10);
        s.drain();
        s.completions.clear();
        // the peer's requester must start at the PSN this responder now expects
        if (s == p.b) {
            p.a.qp.modify(new QpAttr().state(QpState.ERROR));
            p.pump(() -> false, 10);
            p.a.drain();
            p.a.completions.clear();
            p.a.qp.modify(new QpAttr().state(QpState.RESET));
            p.a.qp.modify(new QpAttr().state(QpState.INIT).pkeyIndex(0).portNum(1)
                    .accessFlags(Access.LOCAL_WRITE | Access.REMOTE_WRITE | Access.REMOTE_READ | Access.REMOTE_ATOMIC));
            p.a.qp.modify(new QpAttr().state(QpState.RTR).av(AddressVector.of(p.b.ctx.gid(0), 0)).pathMtu(Mtu.MTU_1024)
                    .destQpn(p.b.qp.qpn()).rqPsn(psn).maxDestRdAtomic(16).minRnrTimer(1));
            p.a.qp.modify(new QpAttr().state(QpState.RTS).sqPsn(psn).timeout(14).retryCnt(7).rnrRetry(7)
                    .maxRdAtomic(16));
        }
    }

    /**
     * Whether the last in-sequence request B took was a forged FIRST or MIDDLE: B then waits for the rest of
     * that message, and the real FIRST of {@link #stillWorks} is, rightly, an out-of-order opcode (an invalid
     * request NAK, REM_INV_REQ_ERR at A): a forged packet at the live PSN with a valid ICRC and key is the
     * peer's as far as RC can tell. The check that the engine still works starts from a fresh connection then.
     */
    private boolean insideAForgedMessage() {
        int last = p.b.qpImpl().resp.lastOpcode;
        return last == IbOpcode.RC_SEND_FIRST || last == IbOpcode.RC_SEND_MIDDLE
                || last == IbOpcode.RC_RDMA_WRITE_FIRST || last == IbOpcode.RC_RDMA_WRITE_MIDDLE;
    }

    private void stillWorks() {
        int before = p.a.completions.size();
        for (int i = 0; i < 5000; i++) {
            p.a.buf.set(ValueLayout.JAVA_BYTE, i, (byte) (i * 7));
        }
        if (p.a.qp.postSend(new SendWorkRequest().wrId(77).opcode(WrOpcode.RDMA_WRITE).flags(SendFlags.SIGNALED)
                .sge(0, p.a.mr, 0, 5000).remote(target.address() + 100, targetMr.rkey())) != 0) {
            throw new AssertionError("the connection takes no WRITE after the fuzzing");
        }
        if (!p.pump(() -> p.a.completions.size() > before, 100_000)) {
            throw new AssertionError("the WRITE after the fuzzing did not complete");
        }
        if (p.a.completions.getLast().status() != WcStatus.SUCCESS) {
            throw new AssertionError("the WRITE after the fuzzing: " + p.a.completions.getLast());
        }
        for (int i = 0; i < 5000; i++) {
            if (target.get(ValueLayout.JAVA_BYTE, 100 + i) != (byte) (i * 7)) {
                throw new AssertionError("the WRITE after the fuzzing placed byte " + i + " wrong");
            }
        }
    }

    /** {@code RoceFuzz SEED INPUTS}: one run, its figures on stdout (the reliability script's entry point). */
    public static void main(String[] args) throws Exception {
        long seed = args.length > 0 ? Long.parseLong(args[0]) : 1;
        long n = args.length > 1 ? Long.parseLong(args[1]) : 1_000_000;
        long t0 = System.nanoTime();
        Result res = run(seed, n);
        System.out.println("roce fuzz: seed " + seed + ", " + res.inputs() + " inputs " + res.byKind() + " in "
                + (System.nanoTime() - t0) / 1_000_000 + " ms; reconnects " + res.reconnects() + "; unaccounted "
                + res.unaccounted() + (res.firstUnaccounted() != null ? " (first: " + res.firstUnaccounted() + ")" : ""));
        System.out.println("roce fuzz: receiver counters " + res.countersAtB());
        if (res.unaccounted() != 0) {
            System.exit(1);
        }
    }
}

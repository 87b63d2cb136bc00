package io.jrdma.engine.roce;

import io.jrdma.soft.SoftRoceOptions;

import io.jrdma.engine.core.Counter;
import io.jrdma.engine.link.Endpoint;
import io.jrdma.verbs.Mtu;
import io.jrdma.verbs.QpState;
import io.jrdma.verbs.SendFlags;
import io.jrdma.verbs.SendWorkRequest;
import io.jrdma.verbs.WcStatus;
import io.jrdma.verbs.WrOpcode;
import io.jrdma.wire.Bth;
import io.jrdma.wire.IbOpcode;
import io.jrdma.wire.Icrc;
import io.jrdma.wire.Reth;
import org.junit.jupiter.api.Test;

import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.util.SplittableRandom;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Bad input from the wire is dropped and counted; it never crashes the engine, never touches
 * memory outside a region, and the QP keeps working afterwards. Also pins the IPv4 ICRC
 * policy: jrdma computes and checks the ICRC with the IPv4 Identification taken as 0.
 */
class RobustnessTest {
    private static final ByteBuffer SCRATCH = ByteBuffer.allocateDirect(65536);

    /** Builds a RoCE packet a→b with a correct ICRC (IPv4 ID taken as {@code ipId}). */
    private static byte[] packet(Pair p, int opcode, int psn, byte[] payload, long va, int rkey, int len, int ipId) {
        MemorySegment s = MemorySegment.ofBuffer(SCRATCH);
        s.fill((byte) 0);
        boolean valid = IbOpcode.valid(opcode);
        int hdr = valid ? IbOpcode.headerLength(opcode) : Bth.LENGTH;
        int pad = (-payload.length) & 3;
        Bth.write(s, 0, opcode, false, false, pad, 0xFFFF, p.b.qp.qpn(), true, psn);
        int reth = valid ? IbOpcode.offset(opcode, IbOpcode.RETH) : -1;
        if (reth >= 0) {
            Reth.write(s, reth, va, rkey, len);
        }
        MemorySegment.copy(MemorySegment.ofArray(payload), 0, s, hdr, payload.length);
        int n = hdr + payload.length + pad;
        Endpoint a = p.a.ctx.link.localEndpoints().getFirst();
        Endpoint b = p.b.ctx.link.localEndpoints().getFirst();
        int crc = new Icrc().computeIpv4(a.ipv4(), b.ipv4(), ipId, a.port(), b.port(), SCRATCH, 0, n);
        Icrc.write(s, n, crc);
        byte[] out = new byte[n + 4];
        SCRATCH.get(0, out);
        return out;
    }

    private static void deliver(Pair p, byte[] data) {
        p.net.inject(data, p.a.ctx.link.localEndpoints().getFirst(), p.b.ctx.link.localEndpoints().getFirst());
        p.pump(() -> false, 3);
    }

    private static void stillWorks(Pair p) {
        int before = p.a.completions.size();
        EngineTest.fill(p.a.buf, 0, 5000, 9);
        assertEquals(0, p.a.qp.postSend(new SendWorkRequest().wrId(77).opcode(WrOpcode.RDMA_WRITE)
                .flags(SendFlags.SIGNALED).sge(0, p.a.mr, 0, 5000).remote(p.b.mr.address() + 8192, p.b.mr.rkey())));
        assertTrue(p.pump(() -> p.a.completions.size() > before, 100_000));
        assertEquals(WcStatus.SUCCESS, p.a.completions.getLast().status());
        EngineTest.check(p.b.buf, 8192, 5000, 9);
        assertEquals(QpState.RTS, p.b.qp.state());
    }

    @Test
    void ipv4IcrcIsComputedWithIdZeroAndOthersAreDropped() {
        try (Pair p = new Pair(Mtu.MTU_1024, 65536)) {
            p.net.capture = true;
            stillWorks(p);
            byte[] sent = p.net.captured.getFirst();
            ByteBuffer bb = ByteBuffer.allocateDirect(sent.length).put(sent);
            Endpoint a = p.a.ctx.link.localEndpoints().getFirst();
            Endpoint b = p.b.ctx.link.localEndpoints().getFirst();
            int withZero = new Icrc().computeIpv4(a.ipv4(), b.ipv4(), 0, a.port(), b.port(), bb, 0, sent.length - 4);
            assertEquals(withZero, Icrc.read(MemorySegment.ofArray(sent), sent.length - 4));
            // a peer that computed it with a non-zero IPv4 ID: dropped and counted, QP untouched
            int psn = p.b.qpImpl().resp.ePsn;
            deliver(p, packet(p, IbOpcode.RC_RDMA_WRITE_ONLY, psn, new byte[8], p.b.mr.address(), p.b.mr.rkey(), 8, 0x1234));
            assertEquals(1, p.b.ctx.counter(Counter.RCVD_ICRC_ERR));
            assertEquals(psn, p.b.qpImpl().resp.ePsn);
        }
    }

    @Test
    void withAnyIpv4IdAKernelPeersPacketIsAcceptedAndAForgedOneIsNot() {
        try (Pair p = new Pair(Mtu.MTU_1024, 65536, 7, 7, 14,
                io.jrdma.verbs.DeviceOptions.defaults().with(SoftRoceOptions.defaults().withAnyIpv4Id(true)))) {
            int psn = p.b.qpImpl().resp.ePsn;
            byte[] pkt = packet(p, IbOpcode.RC_RDMA_WRITE_ONLY, psn, new byte[] {1, 2, 3, 4, 5, 6, 7, 8},
                    p.b.mr.address(), p.b.mr.rkey(), 8, 0x7d12);
            byte[] forged = pkt.clone();
            forged[forged.length - 1] ^= 0x40;
            deliver(p, forged);
            assertEquals(1, p.b.ctx.counter(Counter.RCVD_ICRC_ERR), "no ID explains a corrupted ICRC");
            deliver(p, pkt);
            assertEquals(1, p.b.ctx.counter(Counter.ICRC_IPV4_ID_SOLVED));
            assertEquals((psn + 1) & 0xFFFFFF, p.b.qpImpl().resp.ePsn, "the WRITE was accepted");
            assertEquals(0x0807060504030201L, p.b.buf.get(java.lang.foreign.ValueLayout.JAVA_LONG_UNALIGNED
                    .withOrder(java.nio.ByteOrder.LITTLE_ENDIAN), 0));
        }
    }

    @Test
    void malformedPacketsAreDroppedAndCounted() {
        try (Pair p = new Pair(Mtu.MTU_1024, 65536)) {
            int psn = p.b.qpImpl().resp.ePsn;
            long regionEnd = p.b.mr.address() + p.b.mr.length();
            deliver(p, new byte[3]);                                   // shorter than a BTH
            deliver(p, packet(p, 0x1F, psn, new byte[0], 0, 0, 0, 0)); // reserved opcode
            byte[] bad = packet(p, IbOpcode.RC_SEND_ONLY, psn, new byte[16], 0, 0, 0, 0);
            bad[20] ^= 1;                                              // corrupted payload: ICRC
            deliver(p, bad);
            byte[] wrongQp = packet(p, IbOpcode.RC_SEND_ONLY, psn, new byte[16], 0, 0, 0, 0);
            MemorySegment w = MemorySegment.ofArray(wrongQp);
            w.set(java.lang.foreign.ValueLayout.JAVA_BYTE, 7, (byte) (w.get(java.lang.foreign.ValueLayout.JAVA_BYTE, 7) ^ 1));
            deliver(p, wrongQp);                                       // ICRC now wrong too: counted as ICRC
            assertEquals(2, p.b.ctx.counter(Counter.RCVD_MALFORMED));
            assertEquals(2, p.b.ctx.counter(Counter.RCVD_ICRC_ERR));
            // a well-formed WRITE that would end past the region: remote access NAK, nothing written outside
            deliver(p, packet(p, IbOpcode.RC_RDMA_WRITE_ONLY, psn, new byte[64], regionEnd - 32, p.b.mr.rkey(), 64, 0));
            assertEquals(QpState.ERROR, p.b.qp.state());
        }
    }

    @Test
    void randomGarbageNeverCrashesTheEngine() {
        try (Pair p = new Pair(Mtu.MTU_1024, 65536)) {
            SplittableRandom r = new SplittableRandom(42);
            int psn = p.b.qpImpl().resp.ePsn;
            for (int i = 0; i < 20_000; i++) {
                byte[] junk;
                if (i % 2 == 0) {
                    junk = new byte[r.nextInt(0, 200)];
                    r.nextBytes(junk);
                } else {
                    // valid ICRC and QP, random opcode, PSN, header fields and payload: exercises the responder's checks
                    byte[] payload = new byte[r.nextInt(0, 64)];
                    r.nextBytes(payload);
                    junk = packet(p, r.nextInt(0, 0x20), r.nextBoolean() ? psn : r.nextInt(1 << 24), payload,
                            r.nextLong(), r.nextBoolean() ? p.b.mr.rkey() : r.nextInt(), r.nextInt(0, 128), 0);
                }
                deliver(p, junk);
                if (p.b.qp.state() == QpState.ERROR) {
                    // a fatal NAK moved it to ERROR, as IBA says: reconnect a fresh pair and go on
                    break;
                }
            }
            assertEquals(0, p.b.ctx.counter(Counter.ENGINE_ERRORS));
        }
        try (Pair p = new Pair(Mtu.MTU_1024, 65536)) {
            SplittableRandom r = new SplittableRandom(7);
            for (int i = 0; i < 20_000; i++) {
                byte[] junk = new byte[r.nextInt(0, 1200)];
                r.nextBytes(junk);
                deliver(p, junk);
            }
            assertEquals(0, p.b.ctx.counter(Counter.ENGINE_ERRORS));
            stillWorks(p);
        }
    }
}

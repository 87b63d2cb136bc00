package io.jrdma.wire;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

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

import java.lang.foreign.MemorySegment;
import java.net.InetAddress;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HexFormat;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * The CM MADs of a real rdma_cm connection between two Linux rxe peers
 * ({@code roce-rdma_cm_ib_write_lat.pcap}: {@code ib_write_lat -R}, two connections, REQ/REP/RTU
 * each, then a DREQ from each side and their DREPs): every MAD decoded field by field and encoded
 * again byte for byte.
 */
class CmCaptureTest {
    /** One GSI datagram of the capture: frame number, UDP payload offset in the frame, the MAD. */
    record Gsi(int frame, ByteBuffer packet, int udpPayload, byte[] mad) {
    }

    static List<Gsi> gsiMads() throws Exception {
        List<Gsi> out = new ArrayList<>();
        for (PcapReader.Record r : Captures.read("roce-rdma_cm_ib_write_lat.pcap").records()) {
            ByteBuffer f = r.directBuffer();
            EthernetIp.Udp udp = EthernetIp.parseUdp(f);
            if (udp == null || udp.dstPort() != RoceV2.UDP_PORT) {
                continue;
            }
            MemorySegment s = MemorySegment.ofBuffer(f.duplicate().position(udp.payloadOffset()).slice());
            if (Bth.destQp(s, 0) != 1) {
                continue;
            }
            assertEquals(IbOpcode.UD_SEND_ONLY, Bth.opcode(s, 0), "frame " + (r.index() + 1));
            assertEquals(Deth.GSI_QKEY, Deth.qkey(s, Bth.LENGTH));
            assertEquals(1, Deth.srcQp(s, Bth.LENGTH));
            assertEquals(0xFFFF, Bth.pkey(s, 0));
            assertEquals(Bth.LENGTH + Deth.LENGTH + Mad.LENGTH + Icrc.LENGTH, udp.payloadLength());
            byte[] mad = new byte[Mad.LENGTH];
            f.get(udp.payloadOffset() + Bth.LENGTH + Deth.LENGTH, mad);
            out.add(new Gsi(r.index() + 1, f, udp.payloadOffset(), mad));
        }
        return out;
    }

    @Test
    void everyMadDecodesAndEncodesByteForByte() throws Exception {
        List<Gsi> all = gsiMads();
        assertEquals(10, all.size(), "2 × (REQ, REP, RTU) + 2 × (DREQ, DREP)");
        int[] attrs = new int[all.size()];
        for (int i = 0; i < all.size(); i++) {
            Gsi g = all.get(i);
            CmMessage m = CmMessage.decode(g.mad(), 0, g.mad().length);
            Mad h = Mad.decode(g.mad(), 0, g.mad().length);
            assertArrayEquals(g.mad(), m.toMad(h.tid()), "frame " + g.frame() + " re-encoded");
            attrs[i] = m.attrId();
        }
        assertArrayEquals(new int[] {0x10, 0x13, 0x14, 0x10, 0x13, 0x14, 0x15, 0x16, 0x15, 0x16}, attrs);
    }

    @Test
    void firstConnectionFieldByField() throws Exception {
        List<Gsi> all = gsiMads();
        Mad h = Mad.decode(all.get(0).mad(), 0, Mad.LENGTH);
        assertEquals(new Mad(1, 0x07, 2, 0x03, 0, 0, 0x00000002d0a5035bL, 0x10, 0), h);
        CmReq req = (CmReq) CmMessage.decode(all.get(0).mad(), 0, Mad.LENGTH);
        assertEquals(0x5b03a5d0, req.localCommId());
        assertEquals(CmaHeader.tcpServiceId(0x4853), req.serviceId()); // perftest's port 18515
        assertEquals(0x505400fffe770012L, req.localCaGuid());
        assertEquals(0, req.localQkey());
        assertEquals(0x19, req.localQpn());
        assertEquals(0, req.responderResources());
        assertEquals(0, req.initiatorDepth());
        assertEquals(0x14, req.remoteCmResponseTimeout());
        assertEquals(CmReq.TRANSPORT_RC, req.transportServiceType());
        assertFalse(req.endToEndFlowControl());
        assertEquals(0x87cdfb, req.startingPsn());
        assertEquals(0x14, req.localCmResponseTimeout());
        assertEquals(7, req.retryCount());
        assertEquals(0xFFFF, req.pkey());
        assertEquals(3, req.pathMtu()); // 1024
        assertEquals(7, req.rnrRetryCount());
        assertEquals(15, req.maxCmRetries());
        assertFalse(req.srq());
        CmPath p = req.primary();
        assertEquals(CmPath.PERMISSIVE_LID, p.localLid());
        assertEquals(CmPath.PERMISSIVE_LID, p.remoteLid());
        assertArrayEquals(HexFormat.of().parseHex("00000000000000000000ffff0a4d000c"), p.localGid());
        assertArrayEquals(HexFormat.of().parseHex("00000000000000000000ffff0a4d000b"), p.remoteGid());
        assertEquals(0x40, p.hopLimit());
        assertEquals(0, p.trafficClass());
        assertEquals(0x13, p.localAckTimeout());
        assertEquals(CmPath.NONE, req.alternate());
        CmaHeader cma = CmaHeader.decode(req.privateData());
        assertEquals(new CmaHeader(0, 4, 0x8ae2, InetAddress.getByName("10.77.0.12"),
                InetAddress.getByName("10.77.0.11")), cma);
        byte[] again = new byte[CmReq.PRIVATE_DATA];
        cma.encode(again);
        assertArrayEquals(req.privateData(), again);

        CmRep rep = (CmRep) CmMessage.decode(all.get(1).mad(), 0, Mad.LENGTH);
        assertEquals(0x63f9729a, rep.localCommId());
        assertEquals(req.localCommId(), rep.remoteCommId());
        assertEquals(0x19, rep.localQpn());
        assertEquals(0x63979a, rep.startingPsn());
        assertEquals(0, rep.responderResources());
        assertEquals(0, rep.initiatorDepth());
        assertEquals(15, rep.targetAckDelay());
        assertEquals(7, rep.rnrRetryCount());
        assertEquals(0x505400fffe770011L, rep.localCaGuid());
        assertEquals(h.tid(), Mad.decode(all.get(1).mad(), 0, Mad.LENGTH).tid(), "a REP answers in the REQ's transaction");

        CmRtu rtu = (CmRtu) CmMessage.decode(all.get(2).mad(), 0, Mad.LENGTH);
        assertEquals(new CmRtu(req.localCommId(), rep.localCommId(), null), rtu);

        // the second connection's disconnect, from the server (frame 89) and the client (frame 87)
        CmDreq dreq = (CmDreq) CmMessage.decode(all.get(8).mad(), 0, Mad.LENGTH);
        assertEquals(new CmDreq(0x63f9729a, 0x5b03a5d0, 0x19, null), dreq);
        CmDrep drep = (CmDrep) CmMessage.decode(all.get(9).mad(), 0, Mad.LENGTH);
        assertEquals(new CmDrep(0x5b03a5d0, 0x63f9729a, null), drep);
    }

    @Test
    void othersRoundTrip() throws Exception {
        CmRej rej = new CmRej(1, 2, CmRej.REJECTED_REQ, 0, CmRej.REASON_CONSUMER_DEFINED, null, new byte[] {9, 8});
        assertEquals(rej, CmMessage.decode(rej.toMad(77), 0, Mad.LENGTH));
        assertEquals(9, rej.privateData()[0]);
        CmMra mra = new CmMra(3, 4, 0, 20, null);
        assertEquals(mra, CmMessage.decode(mra.toMad(5), 0, Mad.LENGTH));
        CmaHeader v6 = new CmaHeader(0, 6, 4000, InetAddress.getByName("fd00::1"), InetAddress.getByName("fd00::2"));
        assertEquals(v6, CmaHeader.decode(v6.withUserData(new byte[] {1, 2, 3})));
        assertEquals(CmaHeader.USER_DATA, 56);
    }

    @Test
    void badInputIsAnExceptionThatSaysWhy() throws Exception {
        byte[] mad = gsiMads().get(0).mad();
        assertTrue(assertThrows(MadFormatException.class, () -> CmMessage.decode(mad, 0, 255)).getMessage()
                .contains("256"));
        byte[] b = mad.clone();
        b[0] = 2;
        assertThrows(MadFormatException.class, () -> CmMessage.decode(b, 0, 256));
        byte[] c = mad.clone();
        c[1] = 0x04; // a SA-class MAD
        assertTrue(assertThrows(MadFormatException.class, () -> CmMessage.decode(c, 0, 256)).getMessage()
                .contains("class"));
        byte[] d = mad.clone();
        d[17] = 0x19; // attribute 0x0019 (LAP): not taken
        assertThrows(MadFormatException.class, () -> CmMessage.decode(d, 0, 256));
        byte[] e = mad.clone();
        e[Mad.HEADER + 50] = 0x07; // path MTU code 0
        assertThrows(MadFormatException.class, () -> CmMessage.decode(e, 0, 256));
        byte[] pd = new byte[CmReq.PRIVATE_DATA];
        pd[1] = 0x50; // IP version 5
        assertThrows(MadFormatException.class, () -> CmaHeader.decode(pd));
        pd[0] = 0x10; // version 1.0
        assertThrows(MadFormatException.class, () -> CmaHeader.decode(pd));
        // every truncation and random corruption is a MadFormatException or a message, never anything else
        java.util.Random rnd = new java.util.Random(15);
        for (int i = 0; i < 20_000; i++) {
            byte[] f = mad.clone();
            f[Mad.HEADER + rnd.nextInt(Mad.DATA)] = (byte) rnd.nextInt();
            f[16] = 0;
            f[17] = (byte) (0x10 + rnd.nextInt(7));
            try {
                CmMessage m = CmMessage.decode(f, 0, 256);
                if (m instanceof CmReq r) {
                    try {
                        CmaHeader.decode(r.privateData());
                    } catch (MadFormatException expected) {
                        // fine
                    }
                }
            } catch (MadFormatException expected) {
                // fine
            }
        }
        assertInstanceOf(CmReq.class, CmMessage.decode(Arrays.copyOf(mad, 300), 0, 300));
    }
}

package io.jrdma.engine.cm;

import io.jrdma.verbs.ConnParam;
import io.jrdma.verbs.Gid;
import io.jrdma.verbs.Mtu;
import io.jrdma.verbs.RdmaException;
import org.junit.jupiter.api.Test;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.net.InetAddress;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The connection manager's hello: version 2 carries capability flags, version 1 is still read. */
class HelloCodecTest {
    private static DataInputStream body(byte[] message) {
        DataInputStream in = new DataInputStream(new ByteArrayInputStream(message));
        try {
            in.skipNBytes(4 + 1 + 2); // magic, type, length
        } catch (java.io.IOException e) {
            throw new AssertionError(e);
        }
        return in;
    }

    @Test
    void versionTwoRoundTripsTheFlags() throws Exception {
        Gid gid = Gid.of(InetAddress.getByName("10.1.2.3"));
        TcpConnectionManager.Hello h = new TcpConnectionManager.Hello(0x123456, 0xABCDEF, gid, 4791,
                new ConnParam(new byte[] {1, 2, 3}, 4, 5, 6, 7, Mtu.MTU_1024));
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        TcpConnectionManager.write(new DataOutputStream(bytes), TcpConnectionManager.REQ, h);
        byte[] m = bytes.toByteArray();
        assertEquals(2, m[7], "version");
        assertEquals(m.length - 7, ((m[5] & 0xFF) << 8) | (m[6] & 0xFF), "the length field covers the body");
        TcpConnectionManager.Hello back = TcpConnectionManager.readHello(body(m));
        assertEquals(TcpConnectionManager.FLAG_ACKS_UNREQUESTED, back.flags());
        assertEquals(h.qpn(), back.qpn());
        assertEquals(h.psn(), back.psn());
        assertEquals(gid, back.gid());
        assertArrayEquals(new byte[] {1, 2, 3}, back.param().privateData());
    }

    @Test
    void versionOneHasNoFlags() throws Exception {
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        DataOutputStream out = new DataOutputStream(bytes);
        out.writeByte(1);
        out.writeInt(7);
        out.writeInt(9);
        out.write(Gid.of(InetAddress.getByName("10.1.2.3")).raw());
        out.writeShort(4791);
        out.writeByte(Mtu.MTU_4096.code());
        out.write(new byte[] {1, 1, 7, 7});
        out.writeShort(0);
        TcpConnectionManager.Hello h = TcpConnectionManager.readHello(
                new DataInputStream(new ByteArrayInputStream(bytes.toByteArray())));
        assertEquals(0, h.flags(), "a version 1 peer never promised to ACK unrequested packets");
        assertEquals(7, h.qpn());
        assertEquals(Mtu.MTU_4096, h.param().mtu());
    }

    @Test
    void unknownVersionIsAClearError() {
        RdmaException e = assertThrows(RdmaException.class, () -> TcpConnectionManager.readHello(
                new DataInputStream(new ByteArrayInputStream(new byte[] {3, 0, 0}))));
        assertTrue(e.getMessage().contains("version 3"), e.getMessage());
    }
}

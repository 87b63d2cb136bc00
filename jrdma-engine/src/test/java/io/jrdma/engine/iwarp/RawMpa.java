package io.jrdma.engine.iwarp;

import io.jrdma.wire.iwarp.IwarpProtocolException;
import io.jrdma.wire.iwarp.Mpa;
import io.jrdma.wire.iwarp.MpaRequestReply;

import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.nio.channels.SocketChannel;

import static org.junit.jupiter.api.Assertions.assertTrue;

/** The MPA exchange of a hand-written iWARP client, for tests that play a raw peer on a blocking channel. */
final class RawMpa {
    private RawMpa() {
    }

    /** Writes one MPA frame whole. */
    static void write(SocketChannel ch, MpaRequestReply frame) throws IOException {
        ByteBuffer b = ByteBuffer.allocate(frame.length());
        frame.encode(MemorySegment.ofBuffer(b), 0);
        while (b.hasRemaining()) {
            ch.write(b);
        }
    }

    /** Sends an enhanced (revision 2) Request with IRD/ORD 4/4 and {@code privateData}; @return the Reply, read whole */
    static MpaRequestReply request(SocketChannel ch, boolean crc, byte[] privateData)
            throws IOException, IwarpProtocolException {
        write(ch, MpaRequestReply.enhanced(false, crc, false, 4, 4, false, false, false, false, privateData));
        return read(ch, true);
    }

    /** Reads one MPA frame whole, a Reply or ({@code reply} false) a Request; @return it decoded */
    static MpaRequestReply read(SocketChannel ch, boolean reply) throws IOException, IwarpProtocolException {
        ByteBuffer head = readFully(ch, ByteBuffer.allocate(Mpa.HEADER_LENGTH));
        int pdLength = Mpa.privateDataLength(MemorySegment.ofArray(head.array()), 0);
        ByteBuffer all = readFully(ch, ByteBuffer.allocate(Mpa.HEADER_LENGTH + pdLength).put(head.flip()));
        return MpaRequestReply.decode(MemorySegment.ofArray(all.array()), 0, all.capacity(), reply);
    }

    private static ByteBuffer readFully(SocketChannel ch, ByteBuffer b) throws IOException {
        while (b.hasRemaining()) {
            assertTrue(ch.read(b) >= 0, "the peer closed during MPA setup");
        }
        return b;
    }
}

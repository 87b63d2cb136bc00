package io.jrdma.tools.perf;

import java.nio.ByteBuffer;
import java.util.Arrays;

/**
 * What client and server tell each other in the connection manager's private data: the
 * client's test parameters (the server follows them) and each side's buffer (address, rkey,
 * length) and control inbox.
 */
final class Hello {
    static final int MAGIC = 0x4A525046; // "JRPF"
    static final int VERSION = 1;
    static final int FLAG_VERIFY = 1;
    /**
     * In the reply's flags (the short after the threading byte, 0 in servers before it): the send_bw server gives
     * receive credits ({@code Session.creditLeft}); a client holds its messages to them only then, so an older
     * server, which gives none, is not waited for
     */
    static final int REPLY_CREDITS = 1;

    /** The client's request. */
    record Request(PerfTest test, boolean verify, int maxSize, int txDepth, long iterations, int durationSec,
                   int numSizes, long addr, int rkey, long length, long ctrlOffset) {
    }

    /** The server's reply. */
    record Reply(boolean dedicated, int rxDepth, long addr, int rkey, long length, long ctrlOffset, boolean credits) {
    }

    private Hello() {
    }

    static byte[] encode(Request r) {
        ByteBuffer b = ByteBuffer.allocate(64);
        b.putInt(MAGIC).put((byte) VERSION).put((byte) r.test().ordinal()).put((byte) (r.verify() ? FLAG_VERIFY : 0))
                .put((byte) 0);
        b.putInt(r.maxSize()).putInt(r.txDepth()).putLong(r.iterations()).putInt(r.durationSec()).putInt(r.numSizes());
        b.putLong(r.addr()).putInt(r.rkey()).putLong(r.length()).putLong(r.ctrlOffset());
        return Arrays.copyOf(b.array(), b.position());
    }

    static byte[] encode(Reply r) {
        ByteBuffer b = ByteBuffer.allocate(48);
        b.putInt(MAGIC).put((byte) VERSION).put((byte) (r.dedicated() ? 1 : 0))
                .putShort((short) (r.credits() ? REPLY_CREDITS : 0));
        b.putInt(r.rxDepth()).putLong(r.addr()).putInt(r.rkey()).putLong(r.length()).putLong(r.ctrlOffset());
        return Arrays.copyOf(b.array(), b.position());
    }

    /** @throws IllegalArgumentException naming what is wrong, when the data is not a jrdma perf request */
    static Request decodeRequest(byte[] data) {
        ByteBuffer b = header(data, 60, "request");
        PerfTest test = PerfTest.ofOrdinal(b.get());
        int flags = b.get();
        b.get();
        if (test == null) {
            throw new IllegalArgumentException("the client asked for an unknown test");
        }
        int maxSize = b.getInt();
        int tx = b.getInt();
        long iters = b.getLong();
        int dur = b.getInt();
        int numSizes = b.getInt();
        long addr = b.getLong();
        int rkey = b.getInt();
        long len = b.getLong();
        long ctrl = b.getLong();
        if (maxSize < 1 || maxSize > PerfTest.MAX_SIZE || tx < 1 || iters < 0 || dur < 0 || ctrl < 0 || ctrl > len) {
            throw new IllegalArgumentException("the client's parameters are out of range (size " + maxSize
                    + ", tx depth " + tx + ", iterations " + iters + ")");
        }
        return new Request(test, (flags & FLAG_VERIFY) != 0, maxSize, tx, iters, dur, numSizes, addr, rkey, len, ctrl);
    }

    static Reply decodeReply(byte[] data) {
        ByteBuffer b = header(data, 40, "reply");
        boolean dedicated = b.get() != 0;
        boolean credits = (b.getShort() & REPLY_CREDITS) != 0;
        return new Reply(dedicated, b.getInt(), b.getLong(), b.getInt(), b.getLong(), b.getLong(), credits);
    }

    private static ByteBuffer header(byte[] data, int length, String what) {
        ByteBuffer b = ByteBuffer.wrap(data);
        if (data.length < length || b.getInt() != MAGIC) {
            throw new IllegalArgumentException("the peer's " + what + " is not from jrdma perf ("
                    + data.length + " bytes of private data)");
        }
        int v = b.get();
        if (v != VERSION) {
            throw new IllegalArgumentException("the peer speaks jrdma perf protocol version " + v + ", not " + VERSION);
        }
        return b;
    }
}

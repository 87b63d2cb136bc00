package io.jrdma.wire;

import java.io.BufferedInputStream;
import java.io.Closeable;
import java.io.DataInputStream;
import java.io.EOFException;
import java.io.IOException;
import java.io.InputStream;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * Reader of classic libpcap files (not pcapng): both byte orders, microsecond and nanosecond
 * timestamps, any link type (see {@link #linkType()}). For tests and tools, not the hot path.
 *
 * <pre>
 * global header (24 B): magic u32 | version major u16 | minor u16 | thiszone s32 | sigfigs u32
 *                       | snaplen u32 | network (link type) u32
 * record header (16 B): ts_sec u32 | ts_usec-or-nsec u32 | incl_len u32 | orig_len u32
 * </pre>
 * Magic {@code 0xA1B2C3D4} (microseconds) or {@code 0xA1B23C4D} (nanoseconds), written in the
 * file's byte order.
 */
public final class PcapReader implements Closeable {
    /** Link type: Ethernet. */
    public static final int LINKTYPE_ETHERNET = 1;
    /** Link type: raw IP (version from the first nibble). */
    public static final int LINKTYPE_RAW = 101;
    /** Link type: Linux cooked capture v1. */
    public static final int LINKTYPE_LINUX_SLL = 113;
    /** Link type: Linux cooked capture v2 ({@code tcpdump -i any} on current Linux): a 20-byte header, the protocol first. */
    public static final int LINKTYPE_LINUX_SLL2 = 276;
    /** Link type: raw IPv4. */
    public static final int LINKTYPE_IPV4 = 228;
    /** Link type: raw IPv6. */
    public static final int LINKTYPE_IPV6 = 229;

    static final int MAGIC_MICROS = 0xA1B2C3D4;
    static final int MAGIC_NANOS = 0xA1B23C4D;
    private static final int MAX_RECORD = 64 << 20;

    /** One captured packet. */
    public record Record(int index, long timestampNanos, int originalLength, byte[] data) {
        /** Number of captured bytes. */
        public int capturedLength() {
            return data.length;
        }

        /** A big-endian heap buffer over the captured bytes (position 0, limit = length). */
        public ByteBuffer buffer() {
            return ByteBuffer.wrap(data);
        }

        /** A new big-endian direct buffer holding a copy of the captured bytes. */
        public ByteBuffer directBuffer() {
            ByteBuffer b = ByteBuffer.allocateDirect(data.length);
            b.put(0, data);
            return b;
        }

        /** A heap segment over the captured bytes. */
        public MemorySegment segment() {
            return MemorySegment.ofArray(data);
        }
    }

    private final DataInputStream in;
    private final ByteOrder order;
    private final boolean nanos;
    private final int versionMajor;
    private final int versionMinor;
    private final int snapLength;
    private final int linkType;
    private final byte[] recordHeader = new byte[16];
    private int index;

    /** Reads the global header from {@code in}; the reader owns the stream. */
    public PcapReader(InputStream in) throws IOException {
        this.in = new DataInputStream(new BufferedInputStream(in, 1 << 16));
        byte[] h = new byte[24];
        try {
            this.in.readFully(h);
        } catch (EOFException e) {
            throw new IOException("not a pcap file: shorter than the 24-byte header", e);
        }
        ByteBuffer g = ByteBuffer.wrap(h).order(ByteOrder.LITTLE_ENDIAN);
        int magic = g.getInt(0);
        if (magic == MAGIC_MICROS || magic == MAGIC_NANOS) {
            order = ByteOrder.LITTLE_ENDIAN;
        } else if (Integer.reverseBytes(magic) == MAGIC_MICROS
                || Integer.reverseBytes(magic) == MAGIC_NANOS) {
            order = ByteOrder.BIG_ENDIAN;
            magic = Integer.reverseBytes(magic);
            g.order(order);
        } else {
            throw new IOException(String.format(
                    "not a classic pcap file (magic 0x%08X; pcapng is not supported)", magic));
        }
        nanos = magic == MAGIC_NANOS;
        versionMajor = g.getShort(4) & 0xFFFF;
        versionMinor = g.getShort(6) & 0xFFFF;
        snapLength = g.getInt(16);
        linkType = g.getInt(20) & 0xFFFF;
    }

    /** Opens a file. */
    public static PcapReader open(Path file) throws IOException {
        return new PcapReader(Files.newInputStream(file));
    }

    /** Reads all records of a file. */
    public static List<Record> readAll(Path file) throws IOException {
        try (PcapReader r = open(file)) {
            return r.readAll();
        }
    }

    /** Reads the remaining records. */
    public List<Record> readAll() throws IOException {
        List<Record> list = new ArrayList<>();
        for (Record r; (r = next()) != null; ) {
            list.add(r);
        }
        return list;
    }

    /** The next record, or null at the end of the file. */
    public Record next() throws IOException {
        int b0 = in.read();
        if (b0 < 0) {
            return null;
        }
        recordHeader[0] = (byte) b0;
        try {
            in.readFully(recordHeader, 1, 15);
        } catch (EOFException e) {
            throw new IOException("truncated pcap record header (record " + index + ")", e);
        }
        ByteBuffer h = ByteBuffer.wrap(recordHeader).order(order);
        long sec = h.getInt(0) & 0xFFFF_FFFFL;
        long frac = h.getInt(4) & 0xFFFF_FFFFL;
        int incl = h.getInt(8);
        int orig = h.getInt(12);
        if (incl < 0 || incl > MAX_RECORD) {
            throw new IOException("bad pcap record length " + Integer.toUnsignedString(incl)
                    + " (record " + index + ")");
        }
        byte[] data = new byte[incl];
        try {
            in.readFully(data);
        } catch (EOFException e) {
            throw new IOException("truncated pcap record data (record " + index + ")", e);
        }
        long ts = sec * 1_000_000_000L + (nanos ? frac : frac * 1000L);
        return new Record(index++, ts, orig, data);
    }

    /** Link type of the file (low 16 bits of the header's network field). */
    public int linkType() {
        return linkType;
    }

    /** Snapshot length from the global header. */
    public int snapLength() {
        return snapLength;
    }

    /** True if timestamps have nanosecond resolution. */
    public boolean nanosecond() {
        return nanos;
    }

    /** Byte order of the file. */
    public ByteOrder byteOrder() {
        return order;
    }

    /** Format major version (2). */
    public int versionMajor() {
        return versionMajor;
    }

    /** Format minor version (4). */
    public int versionMinor() {
        return versionMinor;
    }

    @Override
    public void close() throws IOException {
        in.close();
    }
}

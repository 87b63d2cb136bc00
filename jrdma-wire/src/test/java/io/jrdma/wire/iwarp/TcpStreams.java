package io.jrdma.wire.iwarp;

import io.jrdma.wire.EthernetIp;
import io.jrdma.wire.PcapReader;
import java.io.ByteArrayOutputStream;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Test-side TCP reassembly of a capture: parses IPv4/IPv6 TCP segments, groups them by
 * 4-tuple and direction, orders them by sequence number and rebuilds each direction's byte
 * stream. Retransmitted bytes must equal what was already received; holes fail.
 */
final class TcpStreams {
    private TcpStreams() {
    }

    static final int PROTO_TCP = 6;

    /** One direction of a connection. */
    record Flow(String src, int srcPort, String dst, int dstPort) {
        Flow reverse() {
            return new Flow(dst, dstPort, src, srcPort);
        }

        @Override
        public String toString() {
            return src + ":" + srcPort + " > " + dst + ":" + dstPort;
        }
    }

    /** A TCP segment with payload (or SYN/FIN/RST). */
    record Segment(int frame, long seq, int flags, byte[] data) {
        boolean syn() {
            return (flags & 0x02) != 0;
        }

        boolean ack() {
            return (flags & 0x10) != 0;
        }
    }

    /** The reassembled bytes of one direction. */
    static final class Stream {
        final Flow flow;
        final boolean initiator;
        final byte[] bytes;
        /** Starting stream offset and frame number of each contributing segment, ordered. */
        final long[] segmentStarts;
        final int[] segmentFrames;
        final int retransmittedBytes;

        Stream(Flow flow, boolean initiator, byte[] bytes, long[] starts, int[] frames,
                int retransmitted) {
            this.flow = flow;
            this.initiator = initiator;
            this.bytes = bytes;
            this.segmentStarts = starts;
            this.segmentFrames = frames;
            this.retransmittedBytes = retransmitted;
        }

        /** Frame number (1-based, as in Wireshark) of the segment carrying byte {@code at}. */
        int frameAt(long at) {
            int i = Arrays.binarySearch(segmentStarts, at);
            if (i < 0) {
                i = -i - 2;
            }
            return i < 0 ? -1 : segmentFrames[i];
        }

        /** Number of distinct segments a range of the stream arrived in. */
        int segmentsSpanned(long from, long to) {
            int a = Arrays.binarySearch(segmentStarts, from);
            a = a < 0 ? -a - 2 : a;
            int b = Arrays.binarySearch(segmentStarts, to - 1);
            b = b < 0 ? -b - 2 : b;
            return b - a + 1;
        }
    }

    /** A connection: both directions, initiator first. */
    record Connection(Stream initiator, Stream responder) {
    }

    /** Reads a capture and reassembles every TCP connection that was opened in it. */
    static List<Connection> read(Path file) throws Exception {
        Map<Flow, List<Segment>> flows = new LinkedHashMap<>();
        try (PcapReader r = PcapReader.open(file)) {
            int link = r.linkType();
            for (PcapReader.Record rec; (rec = r.next()) != null; ) {
                ByteBuffer b = rec.buffer();
                int ip = EthernetIp.ipOffset(b, link);
                if (ip < 0) {
                    continue;
                }
                int version = EthernetIp.ipVersion(b, ip);
                int tcp;
                int end;
                String src;
                String dst;
                if (version == 4) {
                    if ((b.get(ip + 9) & 0xFF) != PROTO_TCP) {
                        continue;
                    }
                    tcp = ip + (b.get(ip) & 0x0F) * 4;
                    end = ip + EthernetIp.ipv4TotalLength(b, ip);
                    src = ipv4(EthernetIp.ipv4Src(b, ip));
                    dst = ipv4(EthernetIp.ipv4Dst(b, ip));
                } else {
                    if ((b.get(ip + 6) & 0xFF) != PROTO_TCP) {
                        continue;
                    }
                    tcp = ip + 40;
                    end = tcp + (b.getShort(ip + 4) & 0xFFFF);
                    src = Arrays.toString(EthernetIp.ipv6Src(b, ip));
                    dst = Arrays.toString(EthernetIp.ipv6Dst(b, ip));
                }
                if (end > b.limit()) {
                    throw new IllegalStateException("frame " + (rec.index() + 1) + " truncated");
                }
                int sport = b.getShort(tcp) & 0xFFFF;
                int dport = b.getShort(tcp + 2) & 0xFFFF;
                long seq = b.getInt(tcp + 4) & 0xFFFF_FFFFL;
                int dataOff = ((b.get(tcp + 12) & 0xF0) >>> 4) * 4;
                int flags = b.get(tcp + 13) & 0x3F;
                byte[] data = Arrays.copyOfRange(rec.data(), tcp + dataOff, end);
                flows.computeIfAbsent(new Flow(src, sport, dst, dport), k -> new ArrayList<>())
                        .add(new Segment(rec.index() + 1, seq, flags, data));
            }
        }
        List<Connection> out = new ArrayList<>();
        for (Map.Entry<Flow, List<Segment>> e : flows.entrySet()) {
            List<Segment> segs = e.getValue();
            boolean initiator = segs.stream().anyMatch(s -> s.syn() && !s.ack());
            if (!initiator) {
                continue;
            }
            List<Segment> back = flows.get(e.getKey().reverse());
            if (back == null) {
                throw new IllegalStateException("no reverse direction for " + e.getKey());
            }
            out.add(new Connection(reassemble(e.getKey(), true, segs),
                    reassemble(e.getKey().reverse(), false, back)));
        }
        return out;
    }

    private static Stream reassemble(Flow flow, boolean initiator, List<Segment> segs) {
        Segment syn = segs.stream().filter(Segment::syn).findFirst()
                .orElseThrow(() -> new IllegalStateException("no SYN from " + flow));
        long isn = syn.seq();
        List<long[]> order = new ArrayList<>();          // {relative seq, index}
        for (int i = 0; i < segs.size(); i++) {
            Segment s = segs.get(i);
            if (s.data().length > 0) {
                order.add(new long[] {(s.seq() - isn - 1) & 0xFFFF_FFFFL, i});
            }
        }
        order.sort(Comparator.comparingLong((long[] a) -> a[0]).thenComparingLong(a -> a[1]));
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        List<Long> starts = new ArrayList<>();
        List<Integer> frames = new ArrayList<>();
        int retransmitted = 0;
        for (long[] o : order) {
            Segment s = segs.get((int) o[1]);
            long rel = o[0];
            long have = out.size();
            if (rel > have) {
                throw new IllegalStateException(flow + ": hole of " + (rel - have)
                        + " bytes before frame " + s.frame());
            }
            int skip = (int) (have - rel);
            byte[] prev = out.toByteArray();
            for (int i = 0; i < Math.min(skip, s.data().length); i++) {
                if (prev[(int) rel + i] != s.data()[i]) {
                    throw new IllegalStateException(flow + ": retransmission in frame "
                            + s.frame() + " differs from the original bytes");
                }
            }
            retransmitted += Math.min(skip, s.data().length);
            if (skip < s.data().length) {
                starts.add(have);
                frames.add(s.frame());
                out.write(s.data(), skip, s.data().length - skip);
            }
        }
        return new Stream(flow, initiator, out.toByteArray(),
                starts.stream().mapToLong(Long::longValue).toArray(),
                frames.stream().mapToInt(Integer::intValue).toArray(), retransmitted);
    }

    private static String ipv4(int a) {
        return (a >>> 24) + "." + ((a >>> 16) & 0xFF) + "." + ((a >>> 8) & 0xFF) + "." + (a & 0xFF);
    }
}

package io.jrdma.engine.roce;

import io.jrdma.engine.link.Endpoint;
import io.jrdma.engine.link.Link;
import io.jrdma.engine.link.PacketSink;
import io.jrdma.engine.util.NanoClock;

import java.lang.foreign.MemorySegment;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.PriorityQueue;
import java.util.SplittableRandom;

/**
 * An in-memory datagram network for engine tests: links attach at an address and port,
 * packets are delivered in order of a manual clock, and seeded faults can drop, duplicate,
 * reorder (by random extra delay), corrupt and delay them. Single-threaded, deterministic.
 */
final class MemoryNetwork {
    final ManualClock clock = new ManualClock();
    private final Map<InetSocketAddress, MemoryLink> links = new HashMap<>();
    private SplittableRandom random = new SplittableRandom(1);
    double drop;
    double duplicate;
    double reorder;
    double corrupt;
    long delayNanos = 1_000;
    /** how long each send takes its sender (the clock moves on by it): a slow or loaded transmitter */
    long sendNanos;
    long sent;
    long dropped;
    private long sequence;
    final List<byte[]> captured = new ArrayList<>();
    /** The IP hop limit and traffic class of each captured packet, as its link was asked to send it. */
    final List<int[]> capturedIp = new ArrayList<>();
    boolean capture;
    /** when set, drops every packet (a peer that is gone) */
    boolean partitioned;
    /** drops the packets it accepts (targeted loss); it sees each packet's bytes */
    java.util.function.Predicate<byte[]> dropIf = d -> false;
    /** duplicates the packets it accepts */
    java.util.function.Predicate<byte[]> duplicateIf = d -> false;

    void faults(long seed, double drop, double duplicate, double reorder, double corrupt) {
        this.random = new SplittableRandom(seed);
        this.drop = drop;
        this.duplicate = duplicate;
        this.reorder = reorder;
        this.corrupt = corrupt;
    }

    MemoryLink attach(String address, int port) {
        try {
            InetSocketAddress sa = new InetSocketAddress(InetAddress.getByName(address), port);
            MemoryLink l = new MemoryLink(new Endpoint(sa, 0));
            links.put(sa, l);
            return l;
        } catch (java.net.UnknownHostException e) {
            throw new IllegalArgumentException(e);
        }
    }

    private void route(byte[] data, Endpoint src, Endpoint dst, int hopLimit, int trafficClass) {
        sent++;
        clock.now += sendNanos;
        if (capture) {
            captured.add(data.clone());
            capturedIp.add(new int[] {hopLimit, trafficClass});
        }
        MemoryLink target = links.get(dst.socketAddress());
        if (target == null || partitioned || dropIf.test(data) || (drop > 0 && random.nextDouble() < drop)) {
            dropped++;
            return;
        }
        int copies = duplicateIf.test(data) || (duplicate > 0 && random.nextDouble() < duplicate) ? 2 : 1;
        for (int c = 0; c < copies; c++) {
            byte[] d = data.clone();
            if (corrupt > 0 && random.nextDouble() < corrupt) {
                int i = random.nextInt(d.length);
                d[i] ^= (byte) (1 << random.nextInt(8));
            }
            long at = clock.now + delayNanos;
            if (reorder > 0 && random.nextDouble() < reorder) {
                at += random.nextLong(1, 50_000);
            }
            target.inbox.add(new Pkt(d, src, at, sequence++, hopLimit, trafficClass));
        }
    }

    /** Delivers raw bytes to the link at {@code to} as if {@code from} had sent them (fuzzing, crafted packets). */
    void inject(byte[] data, Endpoint from, Endpoint to) {
        links.get(to.socketAddress()).inbox.add(new Pkt(data.clone(), from, clock.now, sequence++, DEFAULT_HOPS, 0));
    }

    /** The hop limit of packets sent without one of their own (Linux's default TTL). */
    static final int DEFAULT_HOPS = 64;

    record Pkt(byte[] data, Endpoint src, long at, long seq, int hopLimit, int trafficClass) implements Comparable<Pkt> {
        @Override
        public int compareTo(Pkt o) {
            int c = Long.compare(at, o.at);
            return c != 0 ? c : Long.compare(seq, o.seq);
        }
    }

    /** @return the time of the next packet waiting anywhere, or Long.MAX_VALUE */
    long nextDelivery() {
        long t = Long.MAX_VALUE;
        for (MemoryLink l : links.values()) {
            Pkt p = l.inbox.peek();
            if (p != null) {
                t = Math.min(t, p.at);
            }
        }
        return t;
    }

    final class MemoryLink implements Link {
        final Endpoint local;
        final PriorityQueue<Pkt> inbox = new PriorityQueue<>();
        private final ByteBuffer rx = ByteBuffer.allocateDirect(65536);
        private final MemorySegment rxSeg = MemorySegment.ofBuffer(rx);
        private final ByteBuffer staging = ByteBuffer.allocateDirect(65536);
        /** The paths {@link #attach(Endpoint, Endpoint, int, int)} made, with the IP header fields their packets carry. */
        private final java.util.IdentityHashMap<Endpoint, int[]> ipPaths = new java.util.IdentityHashMap<>();
        private int rxHopLimit = -1;
        private int rxTrafficClass = -1;

        MemoryLink(Endpoint local) {
            this.local = local;
        }

        @Override
        public List<Endpoint> localEndpoints() {
            return List.of(local);
        }

        @Override
        public int poll(PacketSink sink, int limit) {
            int n = 0;
            while (n < limit) {
                Pkt p = inbox.peek();
                if (p == null || p.at > clock.now) {
                    break;
                }
                inbox.poll();
                rx.clear();
                rx.put(p.data);
                rxHopLimit = p.hopLimit;
                rxTrafficClass = p.trafficClass;
                sink.onPacket(rx, rxSeg, p.data.length, p.src, local);
                n++;
            }
            rxHopLimit = -1;
            rxTrafficClass = -1;
            return n;
        }

        @Override
        public boolean send(ByteBuffer buf, int len, Endpoint from, Endpoint to) {
            byte[] d = new byte[len];
            buf.get(0, d, 0, len);
            int[] ip = ipPaths.get(from);
            route(d, local, to, ip == null ? DEFAULT_HOPS : ip[0], ip == null ? 0 : ip[1]);
            return true;
        }

        @Override
        public Endpoint attach(Endpoint from, Endpoint to, int hopLimit, int trafficClass) {
            Endpoint path = new Endpoint(from.socketAddress(), from.linkIndex());
            ipPaths.put(path, new int[] {hopLimit, trafficClass});
            return path;
        }

        @Override
        public void detach(Endpoint from, Endpoint path) {
            ipPaths.remove(path);
        }

        @Override
        public int receivedHopLimit() {
            return rxHopLimit;
        }

        @Override
        public int receivedTrafficClass() {
            return rxTrafficClass;
        }

        @Override
        public void close() {
            links.remove(local.socketAddress());
        }
    }

    static final class ManualClock implements NanoClock {
        long now = 1_000_000_000L;

        @Override
        public long nanoTime() {
            return now;
        }
    }
}

package io.jrdma.engine.link;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.net.Inet4Address;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.SocketAddress;
import java.net.StandardProtocolFamily;
import java.net.StandardSocketOptions;
import java.nio.ByteBuffer;
import java.nio.channels.DatagramChannel;

/**
 * One UDP socket of a {@link UdpLink}: a {@link DatagramChannel}, or a Linux socket driven
 * through FFM ({@link NativeUdp}) that also takes IPv6 datagrams with a zero checksum (as rxe
 * sends them) and receives a batch per system call. Engine thread only, after opening.
 */
abstract sealed class UdpSocket permits UdpSocket.Jdk, UdpSocket.Native {
    /** Send outcome: the datagram went out. */
    static final int SENT = 1;
    /** Send outcome: the socket buffer is full; try again later. */
    static final int FULL = 0;
    /** Send outcome: the kernel refused it (unreachable and the like): a lost packet. */
    static final int ERROR = -1;

    abstract int port() throws IOException;

    abstract void connect(InetSocketAddress remote) throws IOException;

    /** Receives what waits, up to the batch's capacity; @return how many datagrams */
    abstract int receive(RxBatch batch);

    /**
     * Sends {@code len} bytes of {@code buf} (whose memory {@code seg} is), to {@code remote},
     * or to the connected peer when {@code remote} is null.
     */
    abstract int send(ByteBuffer buf, MemorySegment seg, int len, Endpoint remote);

    abstract void close();

    /**
     * Control path: the IP header fields of the datagrams this socket sends, TTL and TOS (IPv4) or hop limit and
     * traffic class (IPv6). A {@link DatagramChannel} sets the traffic class only: Java has no unicast TTL option.
     *
     * @param hopLimit     1..255
     * @param trafficClass 0..255
     */
    abstract void ipHeader(int hopLimit, int trafficClass) throws IOException;

    /**
     * Control path: from now on each received datagram's TTL/hop limit and TOS/traffic class are reported in
     * {@link RxBatch#hopLimits} and {@link RxBatch#trafficClasses}. A {@link DatagramChannel} cannot: they stay -1.
     */
    abstract void reportIpHeader() throws IOException;

    /** Opens a socket bound to {@code a:port} (0: ephemeral), native when possible. */
    static UdpSocket open(InetAddress a, int port, int bufferBytes, boolean preferNative) throws IOException {
        if (preferNative && NativeUdp.unavailableReason() == null) {
            return new Native(NativeUdp.open(a, port, bufferBytes), a instanceof java.net.Inet6Address);
        }
        return new Jdk(a, port, bufferBytes);
    }

    // ------------------------------------------------------------------ receive batch

    /**
     * Buffers for received datagrams and the map from source address to {@link Endpoint}
     * (a small cache, so that steady-state receive allocates nothing). Engine thread only.
     */
    static final class RxBatch {
        static final int SLOT = 16384;
        private static final int CACHE = 16;
        final int capacity;
        final ByteBuffer[] bufs;
        final MemorySegment[] segs;
        final int[] lens;
        final Endpoint[] sources;
        /** Each datagram's TTL / hop limit, -1 when the socket does not report it ({@link #reportIpHeader}). */
        final int[] hopLimits;
        /** Each datagram's TOS / traffic class, -1 when the socket does not report it. */
        final int[] trafficClasses;
        // native receive: the recvmmsg vector and the source names and cmsgs it fills
        final MemorySegment vector;
        final MemorySegment names;
        final MemorySegment control;
        final MemorySegment callState;
        /**
         * Whether the receives read each datagram's IP header cmsgs (a socket of the link was asked to report
         * them): until then no control buffer is passed and {@link #hopLimits}/{@link #trafficClasses} stay -1.
         */
        boolean ipHeaders;
        int lastReceived;
        // source caches
        private final SocketAddress[] jdkKeys = new SocketAddress[CACHE];
        private final Endpoint[] jdkValues = new Endpoint[CACHE];
        private int jdkNext;
        private final MemorySegment nameKeys = MemorySegment.ofArray(new byte[CACHE * NativeUdp.SOCKADDR_SIZE]);
        private final int[] nameLens = new int[CACHE];
        private final Endpoint[] nameValues = new Endpoint[CACHE];
        private int nameNext;

        RxBatch(int capacity) {
            this.capacity = capacity;
            Arena arena = Arena.ofAuto();
            MemorySegment area = arena.allocate((long) SLOT * capacity, 4096);
            bufs = new ByteBuffer[capacity];
            segs = new MemorySegment[capacity];
            lens = new int[capacity];
            sources = new Endpoint[capacity];
            hopLimits = new int[capacity];
            trafficClasses = new int[capacity];
            vector = arena.allocate((long) NativeUdp.MMSGHDR_SIZE * capacity, 8);
            names = arena.allocate((long) NativeUdp.SOCKADDR_SIZE * capacity, 8);
            control = arena.allocate((long) NativeUdp.RX_CONTROL * capacity, 8);
            MemorySegment iovs = arena.allocate((long) NativeUdp.IOVEC_SIZE * capacity, 8);
            callState = NativeUdp.unavailableReason() == null ? NativeUdp.newCallState(arena) : null;
            for (int i = 0; i < capacity; i++) {
                segs[i] = area.asSlice((long) SLOT * i, SLOT);
                bufs[i] = segs[i].asByteBuffer();
                MemorySegment iov = iovs.asSlice((long) NativeUdp.IOVEC_SIZE * i, NativeUdp.IOVEC_SIZE);
                iov.set(ValueLayout.ADDRESS, 0, segs[i]);
                iov.set(ValueLayout.JAVA_LONG, 8, SLOT);
                long h = (long) NativeUdp.MMSGHDR_SIZE * i;
                vector.set(ValueLayout.ADDRESS, h + NativeUdp.MSG_NAME, names.asSlice((long) NativeUdp.SOCKADDR_SIZE * i));
                vector.set(ValueLayout.JAVA_INT, h + NativeUdp.MSG_NAMELEN, NativeUdp.SOCKADDR_SIZE);
                vector.set(ValueLayout.ADDRESS, h + NativeUdp.MSG_IOV, iov);
                vector.set(ValueLayout.JAVA_LONG, h + NativeUdp.MSG_IOVLEN, 1);
                hopLimits[i] = -1;
                trafficClasses[i] = -1;
            }
        }

        /** Control path: from now on each receive passes a control buffer and reads the IP header cmsgs back. */
        void readIpHeaders() {
            if (ipHeaders) {
                return;
            }
            for (int i = 0; i < capacity; i++) {
                long h = (long) NativeUdp.MMSGHDR_SIZE * i;
                vector.set(ValueLayout.ADDRESS, h + NativeUdp.MSG_CONTROL, control.asSlice((long) NativeUdp.RX_CONTROL * i));
                vector.set(ValueLayout.JAVA_LONG, h + NativeUdp.MSG_CONTROLLEN, NativeUdp.RX_CONTROL);
            }
            ipHeaders = true;
        }

        /**
         * Reads the TTL/hop limit and TOS/traffic class cmsgs the kernel wrote for datagram {@code i} into slot
         * {@code into}; -1 for what it did not report. Allocation-free.
         */
        void readIpHeader(int i, int into) {
            long h = (long) NativeUdp.MMSGHDR_SIZE * i;
            long len = Math.min(vector.get(ValueLayout.JAVA_LONG, h + NativeUdp.MSG_CONTROLLEN), NativeUdp.RX_CONTROL);
            int hops = -1;
            int tclass = -1;
            long base = (long) NativeUdp.RX_CONTROL * i;
            long off = 0;
            while (off + 16 <= len) { // struct cmsghdr { size_t len; int level; int type; } then the data, 8-aligned
                long clen = control.get(ValueLayout.JAVA_LONG, base + off);
                if (clen < 16 || off + clen > len) {
                    break;
                }
                int level = control.get(ValueLayout.JAVA_INT, base + off + 8);
                int type = control.get(ValueLayout.JAVA_INT, base + off + 12);
                long data = base + off + 16;
                if (level == NativeUdp.IPPROTO_IP && type == NativeUdp.IP_TTL
                        || level == NativeUdp.IPPROTO_IPV6 && type == NativeUdp.IPV6_HOPLIMIT) {
                    hops = control.get(ValueLayout.JAVA_INT, data) & 0xFF;
                } else if (level == NativeUdp.IPPROTO_IP && type == NativeUdp.IP_TOS) {
                    tclass = control.get(ValueLayout.JAVA_BYTE, data) & 0xFF; // one byte for IPv4
                } else if (level == NativeUdp.IPPROTO_IPV6 && type == NativeUdp.IPV6_TCLASS) {
                    tclass = control.get(ValueLayout.JAVA_INT, data) & 0xFF;
                }
                off += (clen + 7) & ~7L;
            }
            hopLimits[into] = hops;
            trafficClasses[into] = tclass;
        }

        Endpoint endpointOf(SocketAddress from) {
            for (int i = 0; i < CACHE; i++) {
                if (jdkKeys[i] == from) {
                    return jdkValues[i];
                }
            }
            for (int i = 0; i < CACHE; i++) {
                if (from.equals(jdkKeys[i])) {
                    jdkKeys[i] = from;
                    return jdkValues[i];
                }
            }
            Endpoint e = new Endpoint((InetSocketAddress) from, -1);
            jdkKeys[jdkNext] = from;
            jdkValues[jdkNext] = e;
            jdkNext = (jdkNext + 1) % CACHE;
            return e;
        }

        /** The endpoint of the source name the kernel wrote for datagram {@code i}. */
        Endpoint endpointOfName(int i, int len) {
            long off = (long) NativeUdp.SOCKADDR_SIZE * i;
            MemorySegment n = names;
            if (n.get(ValueLayout.JAVA_SHORT, off) == NativeUdp.AF_INET6) {
                n.set(ValueLayout.JAVA_INT, off + 4, 0); // IPv6 flow information: not part of the address
            }
            for (int k = 0; k < CACHE; k++) {
                long key = (long) k * NativeUdp.SOCKADDR_SIZE;
                if (nameLens[k] == len && MemorySegment.mismatch(n, off, off + len, nameKeys, key, key + len) == -1) {
                    return nameValues[k];
                }
            }
            Endpoint e = new Endpoint(NativeUdp.decode(n.asSlice(off, NativeUdp.SOCKADDR_SIZE)), -1);
            int k = nameNext;
            MemorySegment.copy(n, off, nameKeys, (long) k * NativeUdp.SOCKADDR_SIZE, len);
            nameLens[k] = len;
            nameValues[k] = e;
            nameNext = (k + 1) % CACHE;
            return e;
        }
    }

    // ------------------------------------------------------------------ DatagramChannel

    static final class Jdk extends UdpSocket {
        final DatagramChannel ch;

        Jdk(InetAddress a, int port, int bufferBytes) throws IOException {
            ch = DatagramChannel.open(a instanceof Inet4Address ? StandardProtocolFamily.INET
                    : StandardProtocolFamily.INET6);
            try {
                ch.setOption(StandardSocketOptions.SO_RCVBUF, bufferBytes);
                ch.setOption(StandardSocketOptions.SO_SNDBUF, bufferBytes);
                if (a instanceof Inet4Address) {
                    try {
                        ch.setOption(jdk.net.ExtendedSocketOptions.IP_DONTFRAGMENT, true);
                    } catch (UnsupportedOperationException ignored) {
                        // not on this platform: the kernel's default applies
                    }
                }
                ch.bind(new InetSocketAddress(a, port));
                ch.configureBlocking(false);
            } catch (IOException | RuntimeException e) {
                close();
                throw e;
            }
        }

        @Override
        int port() throws IOException {
            return ((InetSocketAddress) ch.getLocalAddress()).getPort();
        }

        @Override
        void connect(InetSocketAddress remote) throws IOException {
            ch.connect(remote);
        }

        @Override
        int receive(RxBatch batch) {
            ByteBuffer rx = batch.bufs[0];
            rx.clear();
            SocketAddress from;
            try {
                from = ch.receive(rx);
            } catch (IOException e) {
                return 0;
            }
            if (from == null) {
                return 0;
            }
            batch.lens[0] = rx.position();
            batch.sources[0] = batch.endpointOf(from);
            batch.hopLimits[0] = -1; // a DatagramChannel does not report them
            batch.trafficClasses[0] = -1;
            return 1;
        }

        @Override
        void ipHeader(int hopLimit, int trafficClass) throws IOException {
            ch.setOption(StandardSocketOptions.IP_TOS, trafficClass); // IPV6_TCLASS on an IPv6 channel; no TTL option
        }

        @Override
        void reportIpHeader() {
            // a DatagramChannel cannot report a datagram's TTL or TOS
        }

        @Override
        int send(ByteBuffer buf, MemorySegment seg, int len, Endpoint remote) {
            buf.limit(len).position(0);
            try {
                int n = remote == null ? ch.write(buf) : ch.send(buf, remote.socketAddress());
                return n > 0 ? SENT : FULL;
            } catch (IOException e) {
                return ERROR;
            }
        }

        @Override
        void close() {
            try {
                ch.close();
            } catch (IOException ignored) {
                // closing
            }
        }
    }

    // ------------------------------------------------------------------ Linux, through FFM

    static final class Native extends UdpSocket {
        final int fd;
        private final boolean v6;
        private final MemorySegment callState = NativeUdp.newCallState(Arena.ofAuto());
        private boolean closed;

        Native(int fd, boolean v6) {
            this.fd = fd;
            this.v6 = v6;
        }

        @Override
        void ipHeader(int hopLimit, int trafficClass) throws IOException {
            NativeUdp.ipHeader(fd, v6, hopLimit, trafficClass);
        }

        @Override
        void reportIpHeader() throws IOException {
            NativeUdp.reportIpHeader(fd, v6);
        }

        @Override
        int port() throws IOException {
            return NativeUdp.localPort(fd);
        }

        @Override
        void connect(InetSocketAddress remote) throws IOException {
            NativeUdp.connect(fd, remote);
        }

        @Override
        int receive(RxBatch batch) {
            MemorySegment v = batch.vector;
            boolean ip = batch.ipHeaders;
            for (int i = 0; i < batch.lastReceived; i++) { // the kernel wrote the name (and control) lengths of those
                long h = (long) NativeUdp.MMSGHDR_SIZE * i;
                v.set(ValueLayout.JAVA_INT, h + NativeUdp.MSG_NAMELEN, NativeUdp.SOCKADDR_SIZE);
                if (ip) {
                    v.set(ValueLayout.JAVA_LONG, h + NativeUdp.MSG_CONTROLLEN, NativeUdp.RX_CONTROL);
                }
            }
            int n = NativeUdp.recvmmsg(fd, v, batch.capacity, batch.callState);
            if (n <= 0) {
                batch.lastReceived = 0;
                return 0;
            }
            batch.lastReceived = n;
            int kept = 0;
            for (int i = 0; i < n; i++) {
                long h = (long) NativeUdp.MMSGHDR_SIZE * i;
                int len = v.get(ValueLayout.JAVA_INT, h + NativeUdp.MSG_LEN);
                int flags = v.get(ValueLayout.JAVA_INT, h + NativeUdp.MSG_FLAGS);
                int nameLen = v.get(ValueLayout.JAVA_INT, h + NativeUdp.MSG_NAMELEN);
                if ((flags & NativeUdp.MSG_TRUNC) != 0 || nameLen < 16) {
                    continue; // larger than any RoCE packet, or no source: dropped
                }
                if (kept != i) { // close the gap left by a dropped datagram
                    MemorySegment.copy(batch.segs[i], 0, batch.segs[kept], 0, len);
                    MemorySegment.copy(batch.names, (long) NativeUdp.SOCKADDR_SIZE * i, batch.names,
                            (long) NativeUdp.SOCKADDR_SIZE * kept, NativeUdp.SOCKADDR_SIZE);
                }
                batch.lens[kept] = len;
                batch.sources[kept] = batch.endpointOfName(kept, nameLen);
                if (ip) {
                    batch.readIpHeader(i, kept);
                }
                kept++;
            }
            return kept;
        }

        @Override
        int send(ByteBuffer buf, MemorySegment seg, int len, Endpoint remote) {
            long r = remote == null ? NativeUdp.send(fd, seg, len, callState)
                    : NativeUdp.sendto(fd, seg, len, remote.sockaddr(), remote.sockaddrLength(), callState);
            if (r >= 0) {
                return SENT;
            }
            return r == -NativeUdp.EAGAIN ? FULL : ERROR;
        }

        @Override
        void close() {
            if (!closed) {
                closed = true;
                NativeUdp.close(fd);
            }
        }
    }
}

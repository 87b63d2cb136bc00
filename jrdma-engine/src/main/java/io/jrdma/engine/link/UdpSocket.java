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

    /** Opens a socket bound to {@code a:port} (0: ephemeral), native when possible. */
    static UdpSocket open(InetAddress a, int port, int bufferBytes, boolean preferNative) throws IOException {
        if (preferNative && NativeUdp.unavailableReason() == null) {
            return new Native(NativeUdp.open(a, port, bufferBytes));
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
        // native receive: the recvmmsg vector and the source names it fills
        final MemorySegment vector;
        final MemorySegment names;
        final MemorySegment callState;
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
            vector = arena.allocate((long) NativeUdp.MMSGHDR_SIZE * capacity, 8);
            names = arena.allocate((long) NativeUdp.SOCKADDR_SIZE * capacity, 8);
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
            }
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
            return 1;
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
        private final MemorySegment callState = NativeUdp.newCallState(Arena.ofAuto());
        private boolean closed;

        Native(int fd) {
            this.fd = fd;
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
            for (int i = 0; i < batch.lastReceived; i++) { // the kernel wrote the name lengths of those
                v.set(ValueLayout.JAVA_INT, (long) NativeUdp.MMSGHDR_SIZE * i + NativeUdp.MSG_NAMELEN,
                        NativeUdp.SOCKADDR_SIZE);
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

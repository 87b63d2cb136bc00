package io.jrdma.engine.link;

import io.jrdma.verbs.RdmaException;
import io.jrdma.verbs.RdmaException.Errno;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.net.BindException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * RoCEv2 over kernel UDP sockets: one non-blocking socket per local address, all on the same
 * port (4791 unless taken), with Don't Fragment set, as rxe sends. On Linux the sockets are
 * driven through FFM ({@link NativeUdp}): IPv6 datagrams with a zero UDP checksum (all of rxe's)
 * are accepted, and one {@code recvmmsg} takes up to {@value #BATCH} datagrams; elsewhere, or
 * without native access, they are {@link java.nio.channels.DatagramChannel}s (IPv6 then cannot
 * hear rxe). Sources are mapped to {@link Endpoint}s through small caches, so steady-state
 * receive allocates nothing.
 * <p>
 * Sending goes through a <em>path</em> per (local address, peer): a socket bound to the local
 * address on an ephemeral port and connected to the peer's RoCEv2 port. A connected send skips
 * the per-datagram address conversion and route lookup that an unconnected one pays (about a
 * fifth of the cost of a 4 KiB datagram on loopback). RoCEv2 leaves the UDP source port to the
 * sender (rxe derives it from the QPN); receivers match on the destination port, so peers keep
 * sending to the shared socket. QPs to the same peer share its path.
 */
public final class UdpLink implements Link {
    private static final int SOCKET_BUFFER = 4 << 20;
    /** Datagrams per receive system call (native sockets; DatagramChannel takes one). */
    static final int BATCH = 16;
    /** Link indices of path endpoints start here; below are the shared sockets, one per address. */
    static final int PATH_BASE = 1 << 20;

    private final boolean preferNative;
    private UdpSocket[] sockets;
    private List<Endpoint> locals;
    private final UdpSocket.RxBatch batch = new UdpSocket.RxBatch(BATCH);
    private int pollStart;
    private int[] users;
    private int pollCycle;
    private long sendErrors;
    private long txCalls;
    private long rxCalls;
    private long rxEmpty;
    private ByteBuffer lastTxBuf;
    private MemorySegment lastTxSeg;
    private final Map<PathKey, Path> pathsByKey = new HashMap<>();
    /** Whether the shared sockets report each datagram's TTL and TOS ({@link #reportIpHeaders()}). */
    private boolean reportingIpHeaders;
    /** The IP header fields of the packet being delivered, -1 when not reported. */
    private int rxHopLimit = -1;
    private int rxTrafficClass = -1;
    private Path[] paths = new Path[4];
    private int pathCount;
    private boolean connectedPaths = true;

    /**
     * A path's key. Not a record: a record's equals and hashCode are bootstrapped by
     * invokedynamic on first use, tens of milliseconds in a cold JVM, and the first use is the
     * engine thread's, when a QP moves to RTR right before the peer starts sending.
     */
    private static final class PathKey {
        final int linkIndex;
        final InetSocketAddress remote;
        /** The IP header fields its socket sets, -1 for the socket's defaults. */
        final int hopLimit;
        final int trafficClass;

        PathKey(int linkIndex, InetSocketAddress remote, int hopLimit, int trafficClass) {
            this.linkIndex = linkIndex;
            this.remote = remote;
            this.hopLimit = hopLimit;
            this.trafficClass = trafficClass;
        }

        @Override
        public boolean equals(Object o) {
            return o instanceof PathKey k && k.linkIndex == linkIndex && k.remote.equals(remote)
                    && k.hopLimit == hopLimit && k.trafficClass == trafficClass;
        }

        @Override
        public int hashCode() {
            return 31 * (31 * (31 * linkIndex + remote.hashCode()) + hopLimit) + trafficClass;
        }
    }

    private static final class Path {
        final UdpSocket socket;
        final Endpoint from;
        final PathKey key;
        int refs;

        Path(UdpSocket socket, Endpoint from, PathKey key) {
            this.socket = socket;
            this.from = from;
            this.key = key;
        }
    }

    // ---- batched transmit (native sockets): packets held by reference until flush()
    /** Packets held until {@link #flush}: two full windows' worth of 64 KiB messages would not fit, a duty cycle's sends do. */
    static final int TX_HOLD = 64;
    /** At most this many segments per UDP GSO message (the kernel's UDP_MAX_SEGMENTS is 64 or more). */
    static final int GSO_MAX_SEGMENTS = 64;
    /** At most this many bytes per UDP GSO message (under the 65,507-byte UDP payload limit). */
    static final int GSO_MAX_BYTES = 65000;
    private final boolean holds;
    private final String batchReason;
    private boolean gso;
    private String gsoReason;
    private final MemorySegment[] heldSeg = new MemorySegment[TX_HOLD];
    private final int[] heldLen = new int[TX_HOLD];
    private final UdpSocket.Native[] heldSock = new UdpSocket.Native[TX_HOLD];
    private int held;
    private final int[] msgStart = new int[TX_HOLD];
    private final int[] msgCount = new int[TX_HOLD];
    private MemorySegment txVec;
    private MemorySegment txIov;
    private MemorySegment txCtl;
    private MemorySegment txState;
    private long txPackets;
    private long gsoMessages;

    private UdpLink(UdpSocket[] sockets, List<Endpoint> locals, boolean preferNative) {
        this.sockets = sockets;
        this.locals = locals;
        this.users = new int[sockets.length];
        this.preferNative = preferNative;
        String why = null;
        if (sockets.length == 0 || !(sockets[0] instanceof UdpSocket.Native)) {
            why = "DatagramChannel sockets (" + NativeUdp.unavailableReason() + ")";
        } else if (NativeUdp.sendmmsgUnavailableReason() != null) {
            why = NativeUdp.sendmmsgUnavailableReason();
        } else if (Boolean.getBoolean("jrdma.udp.noBatch")) {
            why = "disabled by -Djrdma.udp.noBatch=true";
        }
        this.batchReason = why;
        this.holds = why == null;
        if (sockets.length > 0 && sockets[0] instanceof UdpSocket.Native) {
            NativeUdp.primeTransmit(); // once per JVM: the first packet's send must not link the downcalls
        }
        if (holds) {
            Arena arena = Arena.ofAuto();
            txVec = arena.allocate((long) NativeUdp.MMSGHDR_SIZE * TX_HOLD, 8);
            txIov = arena.allocate((long) NativeUdp.IOVEC_SIZE * TX_HOLD, 8);
            txCtl = arena.allocate((long) NativeUdp.CMSG_SPACE_U16 * TX_HOLD, 8);
            txState = NativeUdp.newCallState(arena);
            for (int i = 0; i < TX_HOLD; i++) {
                long c = (long) NativeUdp.CMSG_SPACE_U16 * i;
                txCtl.set(ValueLayout.JAVA_LONG, c, NativeUdp.CMSG_LEN_U16);
                txCtl.set(ValueLayout.JAVA_INT, c + 8, NativeUdp.SOL_UDP_LEVEL);
                txCtl.set(ValueLayout.JAVA_INT, c + 12, NativeUdp.UDP_SEGMENT);
            }
            gso = !"false".equals(System.getProperty("jrdma.udp.gso"));
            gsoReason = gso ? null : "disabled by -Djrdma.udp.gso=false";
        } else {
            gsoReason = "no batched transmit";
        }
    }

    @Override
    public int heldPackets() {
        return holds ? TX_HOLD : 0;
    }

    /**
     * @return how packets leave: toward jrdma peers "sendmmsg + UDP GSO" or "sendmmsg (UDP GSO off: why)",
     *         each followed by "toward jrdma peers, one send per packet toward others"; or "one send per
     *         packet (why)" when nothing is batched (shown by {@code jrdma devices -v})
     */
    public String transmitMode() {
        if (!holds) {
            return "one send per packet (" + batchReason + ")";
        }
        return (gso ? "sendmmsg + UDP GSO" : "sendmmsg (UDP GSO off: " + gsoReason + ")") + TOWARD;
    }

    /** Batching is negotiated per QP: only a jrdma peer gets it (see {@link #send(ByteBuffer, MemorySegment, int, Endpoint, Endpoint, boolean)}). */
    static final String TOWARD = " toward jrdma peers, one send per packet toward others";

    /** @return UDP GSO messages sent (each several packets of one size) */
    public long gsoMessages() {
        return gsoMessages;
    }

    /**
     * Sends the held packets: per socket, one {@code sendmmsg} whose messages are runs of
     * equal-size packets (the last of a run may be shorter) sent as one UDP GSO message each
     * ({@code UDP_SEGMENT}: the kernel cuts it into the original datagrams, each already carrying
     * its BTH and ICRC), or single packets. What the kernel does not take now (a full socket
     * buffer) stays held, in order, for the next call. A refused GSO message (a kernel or device
     * without it) turns GSO off for this link, reported by {@link #transmitMode()}.
     */
    @Override
    public void flush() {
        int done = 0;
        while (done < held) {
            UdpSocket.Native s = heldSock[done];
            int end = done + 1;
            while (end < held && heldSock[end] == s) {
                end++;
            }
            if (end - done == 1) { // one packet (a ping-pong's): a plain send, as without batching
                long r = NativeUdp.send(s.fd, heldSeg[done], heldLen[done], txState);
                txCalls++;
                if (r >= 0) {
                    txPackets++;
                } else if (r == -NativeUdp.EAGAIN) {
                    break;
                } else {
                    sendErrors++; // unreachable peer and the like: lost, retransmission decides
                }
                done = end;
                continue;
            }
            int m = 0;
            boolean grouped = false;
            for (int p = done; p < end; ) {
                int len = heldLen[p];
                int count = 1;
                int total = len;
                if (gso) {
                    while (p + count < end && count < GSO_MAX_SEGMENTS) {
                        int l2 = heldLen[p + count];
                        if (l2 > len || total + l2 > GSO_MAX_BYTES) {
                            break;
                        }
                        count++;
                        total += l2;
                        if (l2 < len) {
                            break; // a shorter one ends the run
                        }
                    }
                }
                long h = (long) NativeUdp.MMSGHDR_SIZE * m;
                txVec.set(ValueLayout.JAVA_LONG, h + NativeUdp.MSG_NAME, 0L);
                txVec.set(ValueLayout.JAVA_INT, h + NativeUdp.MSG_NAMELEN, 0);
                txVec.set(ValueLayout.JAVA_LONG, h + NativeUdp.MSG_IOV, txIov.address() + (long) NativeUdp.IOVEC_SIZE * p);
                txVec.set(ValueLayout.JAVA_LONG, h + NativeUdp.MSG_IOVLEN, count);
                if (count > 1) {
                    long c = (long) NativeUdp.CMSG_SPACE_U16 * m;
                    txCtl.set(ValueLayout.JAVA_SHORT, c + 16, (short) len);
                    txVec.set(ValueLayout.JAVA_LONG, h + NativeUdp.MSG_CONTROL, txCtl.address() + c);
                    txVec.set(ValueLayout.JAVA_LONG, h + NativeUdp.MSG_CONTROLLEN, NativeUdp.CMSG_SPACE_U16);
                    grouped = true;
                } else {
                    txVec.set(ValueLayout.JAVA_LONG, h + NativeUdp.MSG_CONTROL, 0L);
                    txVec.set(ValueLayout.JAVA_LONG, h + NativeUdp.MSG_CONTROLLEN, 0L);
                }
                txVec.set(ValueLayout.JAVA_INT, h + NativeUdp.MSG_FLAGS, 0);
                for (int k = 0; k < count; k++) {
                    long v = (long) NativeUdp.IOVEC_SIZE * (p + k);
                    txIov.set(ValueLayout.JAVA_LONG, v, heldSeg[p + k].address());
                    txIov.set(ValueLayout.JAVA_LONG, v + 8, heldLen[p + k]);
                }
                msgStart[m] = p;
                msgCount[m++] = count;
                p += count;
            }
            int n = NativeUdp.sendmmsg(s.fd, txVec, m, txState);
            txCalls++;
            if (n == m) {
                countSent(m);
                done = end;
                continue;
            }
            if (n > 0) {
                countSent(n);
                done = msgStart[n]; // the rest waits for buffer space
                break;
            }
            int e = -n;
            if (e == NativeUdp.EAGAIN) {
                break;
            }
            if (grouped && gso && msgFailedGso(e)) {
                gso = false; // once per link: this kernel or device refuses UDP_SEGMENT
                gsoReason = "the kernel refused UDP_SEGMENT (errno " + e + ")";
                continue;
            }
            // unreachable peer and the like: the first message is lost, retransmission decides
            sendErrors++;
            done = m > 1 ? msgStart[1] : end;
        }
        if (done > 0) {
            int left = held - done;
            System.arraycopy(heldSeg, done, heldSeg, 0, left);
            System.arraycopy(heldLen, done, heldLen, 0, left);
            System.arraycopy(heldSock, done, heldSock, 0, left);
            for (int i = left; i < held; i++) {
                heldSeg[i] = null;
                heldSock[i] = null;
            }
            held = left;
        }
    }

    private static boolean msgFailedGso(int errno) {
        return errno == NativeUdp.EIO || errno == NativeUdp.EINVAL || errno == 95 /* EOPNOTSUPP */
                || errno == 92 /* ENOPROTOOPT */;
    }

    /** Counts the first {@code messages} messages of the last sendmmsg as sent. */
    private void countSent(int messages) {
        for (int k = 0; k < messages; k++) {
            txPackets += msgCount[k];
            if (msgCount[k] > 1) {
                gsoMessages++;
            }
        }
    }

    @Override
    public void use(int linkIndex, int delta) {
        if (linkIndex >= users.length) {
            users = java.util.Arrays.copyOf(users, sockets.length);
        }
        users[linkIndex] += delta;
    }

    /** @return true if the sockets are Linux sockets driven through FFM, false for DatagramChannels */
    public boolean isNative() {
        return sockets.length > 0 && sockets[0] instanceof UdpSocket.Native;
    }

    /** @return null when this platform gets native sockets, else why not (shown by {@code jrdma devices -v}) */
    public static String nativeUnavailableReason() {
        return NativeUdp.unavailableReason();
    }

    /** Control path: whether {@link #attach} gives each peer a connected socket (the default) or all share one. */
    public void connectedPaths(boolean on) {
        connectedPaths = on;
    }

    @Override
    public Endpoint attach(Endpoint local, Endpoint remote) {
        use(local.linkIndex(), 1);
        remote.sockaddr(); // made here, on the control path, not by the first send
        if (!connectedPaths) {
            return local;
        }
        Endpoint path = path(local, remote, -1, -1);
        return path != null ? path : local; // no socket to spare, say: the shared one still works
    }

    /**
     * A path whose socket sets the packets' TTL/hop limit and TOS/traffic class, even with shared sending chosen
     * ({@link #connectedPaths}): the shared socket's are the system's defaults. Over {@code DatagramChannel}s
     * only the traffic class is set (Java has no unicast TTL option): the hop limit stays the system's.
     *
     * @throws io.jrdma.verbs.RdmaException EIO when no socket can be opened for it
     */
    @Override
    public Endpoint attach(Endpoint local, Endpoint remote, int hopLimit, int trafficClass) {
        if (hopLimit < 1 || hopLimit > 255 || trafficClass < 0 || trafficClass > 255) {
            throw new RdmaException(Errno.EINVAL, "an IP hop limit is 1..255 and a traffic class 0..255, not "
                    + hopLimit + " and " + trafficClass);
        }
        remote.sockaddr();
        Endpoint path = path(local, remote, hopLimit, trafficClass);
        if (path == null) {
            throw new RdmaException(Errno.EIO, "cannot open a UDP socket from " + local + " to " + remote
                    + " for hop limit " + hopLimit + " and traffic class " + trafficClass + " (out of file descriptors?)");
        }
        use(local.linkIndex(), 1);
        return path;
    }

    /** The path from {@code local} to {@code remote} with those IP header fields (-1: defaults), one more user; null if none can be opened. */
    private Endpoint path(Endpoint local, Endpoint remote, int hopLimit, int trafficClass) {
        PathKey key = new PathKey(local.linkIndex(), remote.socketAddress(), hopLimit, trafficClass);
        Path p = pathsByKey.get(key);
        if (p == null) {
            int slot = 0;
            while (slot < pathCount && paths[slot] != null) {
                slot++;
            }
            UdpSocket sock = null;
            try {
                sock = UdpSocket.open(local.socketAddress().getAddress(), 0, SOCKET_BUFFER, preferNative);
                if (hopLimit >= 0) {
                    sock.ipHeader(hopLimit, trafficClass);
                }
                sock.connect(remote.socketAddress());
                p = new Path(sock, new Endpoint(new InetSocketAddress(local.socketAddress().getAddress(),
                        sock.port()), PATH_BASE + slot), key);
            } catch (IOException | RuntimeException e) {
                if (sock != null) {
                    sock.close();
                }
                return null;
            }
            if (slot == paths.length) {
                paths = java.util.Arrays.copyOf(paths, slot * 2);
            }
            paths[slot] = p;
            pathCount = Math.max(pathCount, slot + 1);
            pathsByKey.put(key, p);
        }
        p.refs++;
        return p.from;
    }

    @Override
    public void reportIpHeaders() {
        if (reportingIpHeaders) {
            return;
        }
        for (UdpSocket s : sockets) {
            if (s != null) {
                try {
                    s.reportIpHeader();
                } catch (IOException e) {
                    throw new RdmaException(Errno.EIO, "cannot ask the socket for the TTL and TOS of received datagrams: "
                            + e.getMessage(), e);
                }
            }
        }
        batch.readIpHeaders();
        reportingIpHeaders = true;
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
    public void detach(Endpoint local, Endpoint path) {
        use(local.linkIndex(), -1);
        int slot = path.linkIndex() - PATH_BASE;
        if (slot < 0) {
            return;
        }
        Path p = paths[slot];
        if (p != null && --p.refs == 0) {
            pathsByKey.remove(p.key);
            Path[] ps = paths.clone();
            ps[slot] = null;
            paths = ps;
            p.socket.close();
        }
    }

    /** @return how many connected paths are open (tests) */
    public int pathCount() {
        return pathsByKey.size();
    }

    /**
     * Binds one socket per address, all on {@code port}; when that port is taken and
     * {@code fallback} is set, on one free port shared by all. Native sockets where possible.
     */
    public static UdpLink open(List<InetAddress> addresses, int port, boolean fallback) {
        return open(addresses, port, fallback, true);
    }

    /** As {@link #open(List, int, boolean)}; {@code preferNative} false forces DatagramChannels. */
    public static UdpLink open(List<InetAddress> addresses, int port, boolean fallback, boolean preferNative) {
        if (addresses.isEmpty()) {
            throw new RdmaException(Errno.EINVAL, "the device has no IP address to listen on");
        }
        try {
            return bindAll(addresses, port, preferNative);
        } catch (BindException e) {
            if (!fallback) {
                throw new RdmaException(Errno.EADDRINUSE, "UDP port " + port + " is taken on "
                        + addresses + " (another jrdma process or a kernel RoCE device?); choose another port", e);
            }
        } catch (IOException e) {
            throw new RdmaException(Errno.EIO, "cannot open UDP sockets on " + addresses + ": " + e.getMessage(), e);
        }
        IOException last = null;
        for (int attempt = 0; attempt < 16; attempt++) {
            try {
                return bindAll(addresses, 0, preferNative);
            } catch (IOException e) {
                last = e;
            }
        }
        throw new RdmaException(Errno.EADDRINUSE, "no free UDP port shared by " + addresses, last);
    }

    private static UdpLink bindAll(List<InetAddress> addresses, int port, boolean preferNative) throws IOException {
        UdpSocket[] socks = new UdpSocket[addresses.size()];
        List<Endpoint> eps = new ArrayList<>();
        int chosen = port;
        try {
            for (int i = 0; i < socks.length; i++) {
                socks[i] = UdpSocket.open(addresses.get(i), chosen, SOCKET_BUFFER, preferNative);
                chosen = socks[i].port();
                eps.add(new Endpoint(new InetSocketAddress(addresses.get(i), chosen), i));
            }
        } catch (IOException | RuntimeException e) {
            for (UdpSocket s : socks) {
                if (s != null) {
                    s.close();
                }
            }
            throw e;
        }
        return new UdpLink(socks, List.copyOf(eps), preferNative);
    }

    /**
     * Engine thread (control path): listens on one more local address, on this link's port.
     *
     * @return its endpoint, whose link index is the new GID index
     */
    public Endpoint addAddress(InetAddress a) throws IOException {
        UdpSocket sock = UdpSocket.open(a, port(), SOCKET_BUFFER, preferNative);
        if (reportingIpHeaders) {
            try {
                sock.reportIpHeader();
            } catch (IOException | RuntimeException e) {
                sock.close();
                throw e;
            }
        }
        UdpSocket[] socks = java.util.Arrays.copyOf(sockets, sockets.length + 1);
        socks[sockets.length] = sock;
        Endpoint e = new Endpoint(new InetSocketAddress(a, port()), sockets.length);
        List<Endpoint> eps = new ArrayList<>(locals);
        eps.add(e);
        sockets = socks;
        locals = List.copyOf(eps);
        users = java.util.Arrays.copyOf(users, socks.length);
        return e;
    }

    /** Engine thread (control path): stops listening on the address at {@code index}; the index stays taken. */
    public void removeAddress(int index) {
        UdpSocket s = sockets[index];
        UdpSocket[] socks = sockets.clone();
        socks[index] = null;
        sockets = socks;
        if (s != null) {
            s.close();
        }
    }

    /** @return true if the socket at {@code index} is open */
    @Override
    public boolean isOpen(int index) {
        return sockets[index] != null;
    }

    /** @return the UDP port every socket of this link is bound to */
    public int port() {
        return locals.getFirst().port();
    }

    @Override
    public List<Endpoint> localEndpoints() {
        return locals;
    }

    /**
     * Receives from the sockets that QPs use, round robin; every 64th call from all of them, so
     * stray packets are still drained and counted (packets to an unused socket can only be for
     * QPs that do not exist), and from the connected paths. One empty receive is one system
     * call: skipping idle sockets halves the cost of busy polling on a device with an IPv4 and
     * an IPv6 address.
     */
    @Override
    public int poll(PacketSink sink, int limit) {
        UdpSocket[] socks = sockets;
        int[] u = users;
        boolean all = (++pollCycle & 63) == 0;
        int n = 0;
        int idle = 0;
        int i = pollStart;
        while (n < limit && idle < socks.length) {
            UdpSocket s = socks[i];
            int got = 0;
            if (s != null && (all || i >= u.length || u[i] > 0)) {
                got = s.receive(batch);
                rxCalls++;
                if (got == 0) {
                    rxEmpty++;
                }
            }
            if (got == 0) {
                idle++;
                i = i + 1 == socks.length ? 0 : i + 1;
                continue;
            }
            idle = 0;
            n += deliver(sink, got, locals.get(i));
        }
        pollStart = i;
        if (all && pathCount > 0) {
            n += drainPaths(sink);
        }
        return n;
    }

    private int deliver(PacketSink sink, int got, Endpoint dst) {
        UdpSocket.RxBatch b = batch;
        for (int k = 0; k < got; k++) {
            ByteBuffer buf = b.bufs[k];
            buf.clear();
            rxHopLimit = b.hopLimits[k];
            rxTrafficClass = b.trafficClasses[k];
            sink.onPacket(buf, b.segs[k], b.lens[k], b.sources[k], dst);
        }
        rxHopLimit = -1;
        rxTrafficClass = -1;
        return got;
    }

    /** Peers send to the shared port, but anything that does reach a path's socket is still handled. */
    private int drainPaths(PacketSink sink) {
        Path[] ps = paths;
        int n = 0;
        for (int i = 0; i < pathCount; i++) {
            Path p = ps[i];
            if (p == null) {
                continue;
            }
            int got;
            while ((got = p.socket.receive(batch)) > 0) {
                rxCalls++;
                n += deliver(sink, got, p.from);
            }
            rxCalls++;
            rxEmpty++;
        }
        return n;
    }

    @Override
    public boolean send(ByteBuffer buf, int len, Endpoint local, Endpoint remote) {
        MemorySegment seg = lastTxSeg;
        if (buf != lastTxBuf) { // callers without the segment send from one buffer: made once
            seg = MemorySegment.ofBuffer(buf);
            lastTxBuf = buf;
            lastTxSeg = seg;
        }
        return send(buf, seg, len, local, remote);
    }

    @Override
    public boolean send(ByteBuffer buf, MemorySegment seg, int len, Endpoint local, Endpoint remote) {
        return send(buf, seg, len, local, remote, false);
    }

    @Override
    public boolean send(ByteBuffer buf, MemorySegment seg, int len, Endpoint local, Endpoint remote, boolean jrdmaPeer) {
        int index = local.linkIndex();
        UdpSocket s;
        Endpoint to = remote;
        if (index >= PATH_BASE) {
            Path p = paths[index - PATH_BASE];
            s = p == null ? null : p.socket;
            to = null;
        } else {
            s = index >= 0 && index < sockets.length ? sockets[index] : null;
        }
        if (s == null) {
            sendErrors++;
            return true; // the address or path went away: the packet is lost, retransmission decides
        }
        if (holds && to == null && jrdmaPeer && s instanceof UdpSocket.Native ns) {
            if (held == TX_HOLD) {
                flush();
                if (held == TX_HOLD) {
                    return false; // the kernel takes nothing now: the caller retries later
                }
            }
            heldSeg[held] = seg;
            heldLen[held] = len;
            heldSock[held] = ns;
            held++;
            return true;
        }
        int r = s.send(buf, seg, len, to);
        txCalls++;
        if (r == UdpSocket.ERROR) {
            sendErrors++;
            return true; // unreachable peer and the like: the packet is lost, retransmission decides
        }
        return r == UdpSocket.SENT;
    }

    /** @return transmit system calls made (send, sendto, sendmmsg), for the counters */
    public long txCalls() {
        return txCalls;
    }

    /** @return receive system calls made ({@code recvmmsg} or one receive), empty ones included */
    public long rxCalls() {
        return rxCalls;
    }

    /** @return receive system calls that found nothing */
    public long rxEmpty() {
        return rxEmpty;
    }

    /** @return sends the kernel refused with an error (counted as lost packets) */
    public long sendErrors() {
        return sendErrors;
    }

    @Override
    public void close() {
        for (UdpSocket s : sockets) {
            if (s != null) {
                s.close();
            }
        }
        for (Path p : pathsByKey.values()) {
            p.socket.close();
        }
        pathsByKey.clear();
    }
}

package io.jrdma.engine.link;

import io.jrdma.verbs.RdmaException;
import io.jrdma.verbs.RdmaException.Errno;

import java.io.IOException;
import java.lang.foreign.MemorySegment;
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
    private Path[] paths = new Path[4];
    private int pathCount;
    private boolean connectedPaths = true;

    private record PathKey(int linkIndex, InetSocketAddress remote) {
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

    private UdpLink(UdpSocket[] sockets, List<Endpoint> locals, boolean preferNative) {
        this.sockets = sockets;
        this.locals = locals;
        this.users = new int[sockets.length];
        this.preferNative = preferNative;
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
        PathKey key = new PathKey(local.linkIndex(), remote.socketAddress());
        Path p = pathsByKey.get(key);
        if (p == null) {
            int slot = 0;
            while (slot < pathCount && paths[slot] != null) {
                slot++;
            }
            UdpSocket sock = null;
            try {
                sock = UdpSocket.open(local.socketAddress().getAddress(), 0, SOCKET_BUFFER, preferNative);
                sock.connect(remote.socketAddress());
                p = new Path(sock, new Endpoint(new InetSocketAddress(local.socketAddress().getAddress(),
                        sock.port()), PATH_BASE + slot), key);
            } catch (IOException | RuntimeException e) {
                if (sock != null) {
                    sock.close();
                }
                return local; // no socket to spare, say: the shared one still works
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
            sink.onPacket(buf, b.segs[k], b.lens[k], b.sources[k], dst);
        }
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
        if (buf != lastTxBuf) { // the engine sends from one buffer: made once
            seg = MemorySegment.ofBuffer(buf);
            lastTxBuf = buf;
            lastTxSeg = seg;
        }
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

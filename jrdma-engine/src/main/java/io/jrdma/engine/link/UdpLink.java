package io.jrdma.engine.link;

import io.jrdma.verbs.RdmaException;
import io.jrdma.verbs.RdmaException.Errno;

import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.net.BindException;
import java.net.Inet4Address;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.SocketAddress;
import java.net.StandardProtocolFamily;
import java.net.StandardSocketOptions;
import java.nio.ByteBuffer;
import java.nio.channels.DatagramChannel;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * RoCEv2 over kernel UDP sockets: one non-blocking {@link DatagramChannel} per local address,
 * all on the same port (4791 unless taken). IPv4 sockets are unconnected with Don't Fragment
 * set, as rxe sends. Sources are mapped to {@link Endpoint}s through a small identity cache:
 * the JDK hands back the same {@link InetSocketAddress} while the sender does not change, so
 * steady-state receive allocates nothing.
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
    private static final int RX_BUFFER = 65536;
    private static final int CACHE = 16;
    /** Link indices of path endpoints start here; below are the shared sockets, one per address. */
    static final int PATH_BASE = 1 << 20;

    private DatagramChannel[] channels;
    private List<Endpoint> locals;
    private final ByteBuffer rx = ByteBuffer.allocateDirect(RX_BUFFER);
    private final MemorySegment rxSeg = MemorySegment.ofBuffer(rx);
    private final SocketAddress[] cacheKeys = new SocketAddress[CACHE];
    private final Endpoint[] cacheValues = new Endpoint[CACHE];
    private int cacheNext;
    private int pollStart;
    private int[] users;
    private int pollCycle;
    private long sendErrors;
    private final Map<PathKey, Path> pathsByKey = new HashMap<>();
    private Path[] paths = new Path[4];
    private int pathCount;
    private boolean connectedPaths = true;

    private record PathKey(int linkIndex, InetSocketAddress remote) {
    }

    private static final class Path {
        final DatagramChannel channel;
        final Endpoint from;
        final PathKey key;
        int refs;

        Path(DatagramChannel channel, Endpoint from, PathKey key) {
            this.channel = channel;
            this.from = from;
            this.key = key;
        }
    }

    private UdpLink(DatagramChannel[] channels, List<Endpoint> locals) {
        this.channels = channels;
        this.locals = locals;
        this.users = new int[channels.length];
    }

    @Override
    public void use(int linkIndex, int delta) {
        if (linkIndex >= users.length) {
            users = java.util.Arrays.copyOf(users, channels.length);
        }
        users[linkIndex] += delta;
    }

    /** Control path: whether {@link #attach} gives each peer a connected socket (the default) or all share one. */
    public void connectedPaths(boolean on) {
        connectedPaths = on;
    }

    @Override
    public Endpoint attach(Endpoint local, Endpoint remote) {
        use(local.linkIndex(), 1);
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
            DatagramChannel ch = null;
            try {
                ch = openChannel(local.socketAddress().getAddress(), 0);
                ch.connect(remote.socketAddress());
                InetSocketAddress bound = (InetSocketAddress) ch.getLocalAddress();
                p = new Path(ch, new Endpoint(new InetSocketAddress(local.socketAddress().getAddress(),
                        bound.getPort()), PATH_BASE + slot), key);
            } catch (IOException | RuntimeException e) {
                closeQuietly(ch);
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
            Path[] ps = paths.clone(); // the send path reads the array without a lock: publish a new one
            ps[slot] = null;
            paths = ps;
            closeQuietly(p.channel);
        }
    }

    /** @return how many connected paths are open (tests) */
    public int pathCount() {
        return pathsByKey.size();
    }

    /**
     * Binds one socket per address, all on {@code port}; when that port is taken and
     * {@code fallback} is set, on one free port shared by all.
     */
    public static UdpLink open(List<InetAddress> addresses, int port, boolean fallback) {
        if (addresses.isEmpty()) {
            throw new RdmaException(Errno.EINVAL, "the device has no IP address to listen on");
        }
        try {
            return bindAll(addresses, port);
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
                return bindAll(addresses, 0);
            } catch (IOException e) {
                last = e;
            }
        }
        throw new RdmaException(Errno.EADDRINUSE, "no free UDP port shared by " + addresses, last);
    }

    private static UdpLink bindAll(List<InetAddress> addresses, int port) throws IOException {
        DatagramChannel[] chs = new DatagramChannel[addresses.size()];
        List<Endpoint> eps = new ArrayList<>();
        int chosen = port;
        try {
            for (int i = 0; i < chs.length; i++) {
                chs[i] = openChannel(addresses.get(i), chosen);
                chosen = ((InetSocketAddress) chs[i].getLocalAddress()).getPort();
                eps.add(new Endpoint(new InetSocketAddress(addresses.get(i), chosen), i));
            }
        } catch (IOException | RuntimeException e) {
            for (DatagramChannel ch : chs) {
                closeQuietly(ch);
            }
            throw e;
        }
        return new UdpLink(chs, List.copyOf(eps));
    }

    private static DatagramChannel openChannel(InetAddress a, int port) throws IOException {
        DatagramChannel ch = DatagramChannel.open(a instanceof Inet4Address ? StandardProtocolFamily.INET
                : StandardProtocolFamily.INET6);
        try {
            ch.setOption(StandardSocketOptions.SO_RCVBUF, SOCKET_BUFFER);
            ch.setOption(StandardSocketOptions.SO_SNDBUF, SOCKET_BUFFER);
            if (a instanceof Inet4Address) {
                try {
                    ch.setOption(jdk.net.ExtendedSocketOptions.IP_DONTFRAGMENT, true);
                } catch (UnsupportedOperationException ignored) {
                    // not on this platform: the kernel's default applies
                }
            }
            ch.bind(new InetSocketAddress(a, port));
            ch.configureBlocking(false);
            return ch;
        } catch (IOException | RuntimeException e) {
            closeQuietly(ch);
            throw e;
        }
    }

    private static void closeQuietly(DatagramChannel ch) {
        if (ch != null) {
            try {
                ch.close();
            } catch (IOException ignored) {
                // closing after a failure
            }
        }
    }

    /**
     * Engine thread (control path): listens on one more local address, on this link's port.
     *
     * @return its endpoint, whose link index is the new GID index
     */
    public Endpoint addAddress(InetAddress a) throws IOException {
        DatagramChannel ch = openChannel(a, port());
        DatagramChannel[] chs = java.util.Arrays.copyOf(channels, channels.length + 1);
        chs[channels.length] = ch;
        Endpoint e = new Endpoint(new InetSocketAddress(a, port()), channels.length);
        List<Endpoint> eps = new ArrayList<>(locals);
        eps.add(e);
        channels = chs;
        locals = List.copyOf(eps);
        users = java.util.Arrays.copyOf(users, chs.length);
        return e;
    }

    /** Engine thread (control path): stops listening on the address at {@code index}; the index stays taken. */
    public void removeAddress(int index) {
        closeQuietly(channels[index]);
        DatagramChannel[] chs = channels.clone();
        chs[index] = null;
        channels = chs;
    }

    /** @return true if the socket at {@code index} is open */
    public boolean isOpen(int index) {
        return channels[index] != null;
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
     * QPs that do not exist). One empty
     * receive is one system call: skipping idle sockets halves the cost of busy polling on a
     * device with an IPv4 and an IPv6 address.
     */
    @Override
    public int poll(PacketSink sink, int limit) {
        DatagramChannel[] chs = channels;
        int[] u = users;
        boolean all = (++pollCycle & 63) == 0;
        int n = 0;
        int idle = 0;
        int i = pollStart;
        while (n < limit && idle < chs.length) {
            DatagramChannel ch = chs[i];
            SocketAddress from = null;
            if (ch != null && (all || i >= u.length || u[i] > 0)) {
                rx.clear();
                try {
                    from = ch.receive(rx);
                } catch (IOException e) {
                    from = null;
                }
            }
            if (from == null) {
                idle++;
                i = i + 1 == chs.length ? 0 : i + 1;
                continue;
            }
            idle = 0;
            n++;
            sink.onPacket(rx, rxSeg, rx.position(), endpointOf(from), locals.get(i));
        }
        pollStart = i;
        if (all && pathCount > 0) {
            n += drainPaths(sink);
        }
        return n;
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
            for (;;) {
                rx.clear();
                SocketAddress from;
                try {
                    from = p.channel.receive(rx);
                } catch (IOException e) {
                    from = null;
                }
                if (from == null) {
                    break;
                }
                n++;
                sink.onPacket(rx, rxSeg, rx.position(), endpointOf(from), p.from);
            }
        }
        return n;
    }

    private Endpoint endpointOf(SocketAddress from) {
        for (int i = 0; i < CACHE; i++) {
            if (cacheKeys[i] == from) {
                return cacheValues[i];
            }
        }
        for (int i = 0; i < CACHE; i++) {
            if (from.equals(cacheKeys[i])) {
                cacheKeys[i] = from;
                return cacheValues[i];
            }
        }
        Endpoint e = new Endpoint((InetSocketAddress) from, -1);
        cacheKeys[cacheNext] = from;
        cacheValues[cacheNext] = e;
        cacheNext = (cacheNext + 1) % CACHE;
        return e;
    }

    @Override
    public boolean send(ByteBuffer buf, int len, Endpoint local, Endpoint remote) {
        buf.limit(len).position(0);
        int index = local.linkIndex();
        try {
            if (index >= PATH_BASE) {
                Path p = paths[index - PATH_BASE];
                if (p != null) {
                    return p.channel.write(buf) > 0;
                }
                index = -1;
            }
            DatagramChannel ch = index >= 0 && index < channels.length ? channels[index] : null;
            if (ch == null) {
                sendErrors++;
                return true; // the address or path went away: the packet is lost, retransmission decides
            }
            return ch.send(buf, remote.socketAddress()) > 0;
        } catch (IOException e) {
            sendErrors++;
            return true; // unreachable peer and the like: the packet is lost, retransmission decides
        }
    }

    /** @return sends the kernel refused with an error (counted as lost packets) */
    public long sendErrors() {
        return sendErrors;
    }

    @Override
    public void close() {
        for (DatagramChannel ch : channels) {
            closeQuietly(ch);
        }
        for (Path p : pathsByKey.values()) {
            closeQuietly(p.channel);
        }
        pathsByKey.clear();
    }
}

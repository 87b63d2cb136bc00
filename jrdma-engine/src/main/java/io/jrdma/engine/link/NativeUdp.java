package io.jrdma.engine.link;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemoryLayout;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.StructLayout;
import java.lang.foreign.SymbolLookup;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;
import java.lang.invoke.VarHandle;
import java.net.Inet4Address;
import java.net.Inet6Address;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.UnknownHostException;

/**
 * Linux UDP sockets through the FFM API (libc's {@code socket}, {@code bind}, {@code recvmmsg},
 * {@code sendto}...), for what {@link java.nio.channels.DatagramChannel} cannot do:
 * <ul>
 *   <li>accept IPv6 datagrams whose UDP checksum is zero ({@code UDP_NO_CHECK6_RX}). Linux
 *       rxe sends every RoCEv2 packet with checksum 0 — legal for IPv4, and for IPv6 only on
 *       sockets that opt in (RFC 6936). Without it the kernel drops rxe's IPv6 packets
 *       ({@code Udp6InCsumErrors}) before any Java code sees them;</li>
 *   <li>receive a batch of datagrams per system call ({@code recvmmsg}).</li>
 * </ul>
 * Only on Linux x86-64 and AArch64, where the structure layouts below hold, and only when native
 * access is enabled for this module; {@link #unavailableReason()} says why not otherwise, and the
 * link falls back to {@code DatagramChannel}.
 */
final class NativeUdp {
    static final int AF_INET = 2;
    static final int AF_INET6 = 10;
    private static final int SOCK_DGRAM = 2;
    private static final int SOCK_NONBLOCK = 0x800;
    private static final int SOCK_CLOEXEC = 0x80000;
    private static final int SOL_SOCKET = 1;
    private static final int SO_SNDBUF = 7;
    private static final int SO_RCVBUF = 8;
    static final int IPPROTO_IP = 0;
    private static final int IP_MTU_DISCOVER = 10;
    /** IPv4 header fields: set for a socket's datagrams, reported for each received one (a cmsg of the same type). */
    static final int IP_TOS = 1;
    static final int IP_TTL = 2;
    private static final int IP_RECVTTL = 12;
    private static final int IP_RECVTOS = 13;
    static final int IPPROTO_IPV6 = 41;
    private static final int IPV6_UNICAST_HOPS = 16;
    private static final int IPV6_RECVHOPLIMIT = 51;
    /** IPv6: the cmsg types that report a received datagram's hop limit and traffic class. */
    static final int IPV6_HOPLIMIT = 52;
    private static final int IPV6_RECVTCLASS = 66;
    static final int IPV6_TCLASS = 67;
    /** Room for the cmsgs of one received datagram: two of CMSG_SPACE(sizeof(int)) = 24 bytes each. */
    static final int RX_CONTROL = 64;
    private static final int IPV6_V6ONLY = 26;
    private static final int IPV6_MTU_DISCOVER = 23;
    private static final int PMTUDISC_DO = 2;
    private static final int SOL_UDP = 17;
    private static final int UDP_NO_CHECK6_TX = 101;
    private static final int UDP_NO_CHECK6_RX = 102;
    static final int MSG_DONTWAIT = 0x40;
    static final int MSG_TRUNC = 0x20;
    static final int EAGAIN = 11;
    static final int EINTR = 4;

    /** sockaddr_in6 is the larger: 28 bytes; a sockaddr_in takes the first 16. */
    static final int SOCKADDR_SIZE = 28;
    /** struct iovec { void *base; size_t len; } */
    static final int IOVEC_SIZE = 16;
    /** struct mmsghdr { struct msghdr hdr (56 B); unsigned msg_len; } padded to 64. */
    static final int MMSGHDR_SIZE = 64;
    static final int MSG_NAME = 0;
    static final int MSG_NAMELEN = 8;
    static final int MSG_IOV = 16;
    static final int MSG_IOVLEN = 24;
    static final int MSG_CONTROL = 32;
    static final int MSG_CONTROLLEN = 40;
    static final int MSG_FLAGS = 48;
    /** UDP_SEGMENT (Linux 4.18): a cmsg at SOL_UDP whose u16 is the segment size (UDP GSO). */
    static final int UDP_SEGMENT = 103;
    static final int SOL_UDP_LEVEL = 17;
    /** CMSG_SPACE(sizeof(uint16_t)): struct cmsghdr { size_t len; int level; int type; } + 2 bytes, 8-aligned. */
    static final int CMSG_SPACE_U16 = 24;
    /** CMSG_LEN(sizeof(uint16_t)). */
    static final int CMSG_LEN_U16 = 18;
    static final int EIO = 5;
    static final int EINVAL = 22;
    static final int MSG_LEN = 56;

    private static final String REASON;
    private static final MethodHandle SOCKET;
    private static final MethodHandle BIND;
    private static final MethodHandle CONNECT;
    private static final MethodHandle SETSOCKOPT;
    private static final MethodHandle GETSOCKNAME;
    private static final MethodHandle RECVMMSG;
    private static final MethodHandle SENDTO;
    private static final MethodHandle SEND;
    private static final MethodHandle SENDMMSG;
    private static final MethodHandle CLOSE;
    private static final StructLayout CALL_STATE;
    private static final VarHandle ERRNO;

    static {
        String reason = null;
        MethodHandle socket = null;
        MethodHandle bind = null;
        MethodHandle connect = null;
        MethodHandle setsockopt = null;
        MethodHandle getsockname = null;
        MethodHandle recvmmsg = null;
        MethodHandle sendto = null;
        MethodHandle send = null;
        MethodHandle sendmmsg = null;
        MethodHandle close = null;
        StructLayout callState = null;
        VarHandle errno = null;
        String os = System.getProperty("os.name", "");
        String arch = System.getProperty("os.arch", "");
        if (Boolean.getBoolean("jrdma.udp.noNative")) {
            reason = "disabled by -Djrdma.udp.noNative=true";
        } else if (!os.equals("Linux")) {
            reason = "not Linux (" + os + ")";
        } else if (!arch.equals("amd64") && !arch.equals("x86_64") && !arch.equals("aarch64")) {
            reason = "no struct layouts for " + arch;
        } else if (!NativeUdp.class.getModule().isNativeAccessEnabled()) {
            reason = "native access is not enabled for " + moduleName()
                    + " (java --enable-native-access=" + moduleName() + ")";
        } else {
            try {
                Linker linker = Linker.nativeLinker();
                SymbolLookup libc = linker.defaultLookup();
                Linker.Option errnoOpt = Linker.Option.captureCallState("errno");
                callState = Linker.Option.captureStateLayout();
                errno = callState.varHandle(MemoryLayout.PathElement.groupElement("errno"));
                ValueLayout.OfInt i = ValueLayout.JAVA_INT;
                ValueLayout.OfLong l = ValueLayout.JAVA_LONG;
                var p = ValueLayout.ADDRESS;
                socket = linker.downcallHandle(libc.findOrThrow("socket"), FunctionDescriptor.of(i, i, i, i), errnoOpt);
                bind = linker.downcallHandle(libc.findOrThrow("bind"), FunctionDescriptor.of(i, i, p, i), errnoOpt);
                connect = linker.downcallHandle(libc.findOrThrow("connect"), FunctionDescriptor.of(i, i, p, i), errnoOpt);
                setsockopt = linker.downcallHandle(libc.findOrThrow("setsockopt"),
                        FunctionDescriptor.of(i, i, i, i, p, i), errnoOpt);
                getsockname = linker.downcallHandle(libc.findOrThrow("getsockname"),
                        FunctionDescriptor.of(i, i, p, p), errnoOpt);
                recvmmsg = linker.downcallHandle(libc.findOrThrow("recvmmsg"),
                        FunctionDescriptor.of(i, i, p, i, i, p), errnoOpt, Linker.Option.critical(false));
                sendto = linker.downcallHandle(libc.findOrThrow("sendto"),
                        FunctionDescriptor.of(l, i, p, l, i, p, i), errnoOpt, Linker.Option.critical(false));
                send = linker.downcallHandle(libc.findOrThrow("send"),
                        FunctionDescriptor.of(l, i, p, l, i), errnoOpt, Linker.Option.critical(false));
                close = linker.downcallHandle(libc.findOrThrow("close"), FunctionDescriptor.of(i, i));
                sendmmsg = libc.find("sendmmsg").map(a -> linker.downcallHandle(a,
                        FunctionDescriptor.of(i, i, p, i, i), errnoOpt, Linker.Option.critical(false))).orElse(null);
            } catch (RuntimeException | Error e) {
                reason = "cannot link libc: " + e;
            }
        }
        REASON = reason;
        SOCKET = socket;
        BIND = bind;
        CONNECT = connect;
        SETSOCKOPT = setsockopt;
        GETSOCKNAME = getsockname;
        RECVMMSG = recvmmsg;
        SENDTO = sendto;
        SEND = send;
        SENDMMSG = sendmmsg;
        CLOSE = close;
        CALL_STATE = callState;
        ERRNO = errno;
    }

    private NativeUdp() {
    }

    private static String moduleName() {
        Module m = NativeUdp.class.getModule();
        return m.isNamed() ? m.getName() : "ALL-UNNAMED";
    }

    /** @return null when native sockets can be used, else why not */
    static String unavailableReason() {
        return REASON;
    }

    /** Per-caller scratch for errno: one per socket (each socket is used by one thread at a time). */
    static MemorySegment newCallState(Arena arena) {
        return arena.allocate(CALL_STATE);
    }

    static int errno(MemorySegment callState) {
        return (int) ERRNO.get(callState, 0L);
    }

    // ------------------------------------------------------------------ control path

    /**
     * Opens a non-blocking UDP socket bound to {@code address:port} (0: an ephemeral port),
     * with Don't Fragment, large buffers, and, for IPv6, zero checksums accepted.
     *
     * @return the file descriptor
     */
    static int open(InetAddress address, int port, int bufferBytes) throws IOException {
        boolean v6 = address instanceof Inet6Address;
        try (Arena a = Arena.ofConfined()) {
            MemorySegment st = newCallState(a);
            int fd = (int) SOCKET.invokeExact(st, v6 ? AF_INET6 : AF_INET, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
            if (fd < 0) {
                throw error("socket", st);
            }
            try {
                setInt(a, fd, SOL_SOCKET, SO_RCVBUF, bufferBytes, "SO_RCVBUF");
                setInt(a, fd, SOL_SOCKET, SO_SNDBUF, bufferBytes, "SO_SNDBUF");
                if (v6) {
                    setInt(a, fd, IPPROTO_IPV6, IPV6_V6ONLY, 1, "IPV6_V6ONLY");
                    setInt(a, fd, IPPROTO_IPV6, IPV6_MTU_DISCOVER, PMTUDISC_DO, "IPV6_MTU_DISCOVER");
                    setInt(a, fd, SOL_UDP, UDP_NO_CHECK6_RX, 1, "UDP_NO_CHECK6_RX");
                } else {
                    setInt(a, fd, IPPROTO_IP, IP_MTU_DISCOVER, PMTUDISC_DO, "IP_MTU_DISCOVER");
                }
                MemorySegment sa = a.allocate(SOCKADDR_SIZE);
                int len = encode(sa, new InetSocketAddress(address, port));
                int r = (int) BIND.invokeExact(st, fd, sa, len);
                if (r != 0) {
                    int e = errno(st);
                    throw e == 98 ? new java.net.BindException("Address already in use: " + address + ":" + port)
                            : error("bind to " + address + ":" + port, st);
                }
                return fd;
            } catch (IOException | RuntimeException | Error e) {
                close(fd);
                throw e;
            }
        } catch (IOException | RuntimeException | Error e) {
            throw e;
        } catch (Throwable t) {
            throw new IOException(t);
        }
    }

    private static void setInt(Arena a, int fd, int level, int name, int value, String what) throws Throwable {
        MemorySegment v = a.allocate(ValueLayout.JAVA_INT);
        v.set(ValueLayout.JAVA_INT, 0, value);
        MemorySegment st = newCallState(a);
        int r = (int) SETSOCKOPT.invokeExact(st, fd, level, name, v, 4);
        if (r != 0) {
            throw error("setsockopt " + what, st);
        }
    }

    /**
     * Sets the IP header fields of the socket's datagrams: TTL and TOS (IPv4) or hop limit and traffic class (IPv6).
     *
     * @param v6           whether the socket is IPv6
     * @param hopLimit     1..255
     * @param trafficClass 0..255
     */
    static void ipHeader(int fd, boolean v6, int hopLimit, int trafficClass) throws IOException {
        try (Arena a = Arena.ofConfined()) {
            if (v6) {
                setInt(a, fd, IPPROTO_IPV6, IPV6_UNICAST_HOPS, hopLimit, "IPV6_UNICAST_HOPS");
                setInt(a, fd, IPPROTO_IPV6, IPV6_TCLASS, trafficClass, "IPV6_TCLASS");
            } else {
                setInt(a, fd, IPPROTO_IP, IP_TTL, hopLimit, "IP_TTL");
                setInt(a, fd, IPPROTO_IP, IP_TOS, trafficClass, "IP_TOS");
            }
        } catch (IOException | RuntimeException | Error e) {
            throw e;
        } catch (Throwable t) {
            throw new IOException(t);
        }
    }

    /**
     * Makes the socket report each received datagram's TTL and TOS (IPv4) or hop limit and traffic class (IPv6) as
     * cmsgs ({@code IP_RECVTTL}/{@code IP_RECVTOS}, {@code IPV6_RECVHOPLIMIT}/{@code IPV6_RECVTCLASS}).
     */
    static void reportIpHeader(int fd, boolean v6) throws IOException {
        try (Arena a = Arena.ofConfined()) {
            if (v6) {
                setInt(a, fd, IPPROTO_IPV6, IPV6_RECVHOPLIMIT, 1, "IPV6_RECVHOPLIMIT");
                setInt(a, fd, IPPROTO_IPV6, IPV6_RECVTCLASS, 1, "IPV6_RECVTCLASS");
            } else {
                setInt(a, fd, IPPROTO_IP, IP_RECVTTL, 1, "IP_RECVTTL");
                setInt(a, fd, IPPROTO_IP, IP_RECVTOS, 1, "IP_RECVTOS");
            }
        } catch (IOException | RuntimeException | Error e) {
            throw e;
        } catch (Throwable t) {
            throw new IOException(t);
        }
    }

    /** Makes an IPv6 socket send with a zero UDP checksum, as Linux rxe does (tests reproduce rxe with it). */
    static void zeroChecksumTx(int fd) throws IOException {
        try (Arena a = Arena.ofConfined()) {
            setInt(a, fd, SOL_UDP, UDP_NO_CHECK6_TX, 1, "UDP_NO_CHECK6_TX");
        } catch (IOException | RuntimeException | Error e) {
            throw e;
        } catch (Throwable t) {
            throw new IOException(t);
        }
    }

    /** Connects the socket to {@code remote} (a send then needs no address). */
    static void connect(int fd, InetSocketAddress remote) throws IOException {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment st = newCallState(a);
            MemorySegment sa = a.allocate(SOCKADDR_SIZE);
            int len = encode(sa, remote);
            int r = (int) CONNECT.invokeExact(st, fd, sa, len);
            if (r != 0) {
                throw error("connect to " + remote, st);
            }
        } catch (IOException | RuntimeException | Error e) {
            throw e;
        } catch (Throwable t) {
            throw new IOException(t);
        }
    }

    /** @return the port the socket is bound to */
    static int localPort(int fd) throws IOException {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment st = newCallState(a);
            MemorySegment sa = a.allocate(SOCKADDR_SIZE);
            MemorySegment len = a.allocate(ValueLayout.JAVA_INT);
            len.set(ValueLayout.JAVA_INT, 0, SOCKADDR_SIZE);
            int r = (int) GETSOCKNAME.invokeExact(st, fd, sa, len);
            if (r != 0) {
                throw error("getsockname", st);
            }
            return port(sa);
        } catch (IOException | RuntimeException | Error e) {
            throw e;
        } catch (Throwable t) {
            throw new IOException(t);
        }
    }

    static void close(int fd) {
        try {
            int ignored = (int) CLOSE.invokeExact(fd);
        } catch (Throwable ignored) {
            // closing: nothing to do about it
        }
    }

    private static IOException error(String what, MemorySegment callState) {
        int e = errno(callState);
        return new IOException(what + " failed: errno " + e);
    }

    // ------------------------------------------------------------------ data path

    /** @return datagrams received into the vector (0 when none waits), or -errno */
    static int recvmmsg(int fd, MemorySegment vec, int vlen, MemorySegment callState) {
        try {
            int n = (int) RECVMMSG.invokeExact(callState, fd, vec, vlen, MSG_DONTWAIT, MemorySegment.NULL);
            return n >= 0 ? n : -errno(callState);
        } catch (Throwable t) {
            throw new IllegalStateException(t);
        }
    }

    /** @return bytes sent, or -errno */
    static long sendto(int fd, MemorySegment buf, long len, MemorySegment addr, int addrLen, MemorySegment callState) {
        try {
            long n = (long) SENDTO.invokeExact(callState, fd, buf, len, MSG_DONTWAIT, addr, addrLen);
            return n >= 0 ? n : -errno(callState);
        } catch (Throwable t) {
            throw new IllegalStateException(t);
        }
    }

    private static volatile boolean primed;

    /**
     * Calls each transmit function once on no descriptor (-1: EBADF, nothing is sent), once per
     * JVM on the control path: a downcall's first invocation links its method handles, which in a
     * cold JVM took milliseconds of the engine thread's time when it sent its first packet.
     */
    static void primeTransmit() {
        if (primed || REASON != null) {
            return;
        }
        try (Arena a = Arena.ofConfined()) {
            MemorySegment state = newCallState(a);
            MemorySegment buf = a.allocate(64, 8);
            MemorySegment sa = a.allocate(SOCKADDR_SIZE, 8);
            send(-1, buf, 1, state);
            sendto(-1, buf, 1, sa, SOCKADDR_SIZE, state);
            if (SENDMMSG != null) {
                sendmmsg(-1, a.allocate(MMSGHDR_SIZE, 8), 1, state);
            }
        }
        primed = true;
    }

    /** @return null when sendmmsg can be called, else why not */
    static String sendmmsgUnavailableReason() {
        return REASON != null ? REASON : SENDMMSG == null ? "libc has no sendmmsg" : null;
    }

    /** @return messages sent from the vector (connected socket), or -errno */
    static int sendmmsg(int fd, MemorySegment vec, int vlen, MemorySegment callState) {
        try {
            int n = (int) SENDMMSG.invokeExact(callState, fd, vec, vlen, MSG_DONTWAIT);
            return n >= 0 ? n : -errno(callState);
        } catch (Throwable t) {
            throw new IllegalStateException(t);
        }
    }

    /** @return bytes sent on a connected socket, or -errno */
    static long send(int fd, MemorySegment buf, long len, MemorySegment callState) {
        try {
            long n = (long) SEND.invokeExact(callState, fd, buf, len, MSG_DONTWAIT);
            return n >= 0 ? n : -errno(callState);
        } catch (Throwable t) {
            throw new IllegalStateException(t);
        }
    }

    // ------------------------------------------------------------------ socket addresses

    /** Writes a sockaddr_in or sockaddr_in6 for {@code a}; @return its length */
    static int encode(MemorySegment sa, InetSocketAddress a) {
        sa.fill((byte) 0);
        InetAddress ip = a.getAddress();
        int port = a.getPort();
        sa.set(ValueLayout.JAVA_BYTE, 2, (byte) (port >>> 8));
        sa.set(ValueLayout.JAVA_BYTE, 3, (byte) port);
        if (ip instanceof Inet4Address) {
            sa.set(ValueLayout.JAVA_SHORT, 0, (short) AF_INET);
            MemorySegment.copy(ip.getAddress(), 0, sa, ValueLayout.JAVA_BYTE, 4, 4);
            return 16;
        }
        Inet6Address v6 = (Inet6Address) ip;
        sa.set(ValueLayout.JAVA_SHORT, 0, (short) AF_INET6);
        MemorySegment.copy(v6.getAddress(), 0, sa, ValueLayout.JAVA_BYTE, 8, 16);
        sa.set(ValueLayout.JAVA_INT, 24, v6.getScopeId());
        return 28;
    }

    static int port(MemorySegment sa) {
        return ((sa.get(ValueLayout.JAVA_BYTE, 2) & 0xFF) << 8) | (sa.get(ValueLayout.JAVA_BYTE, 3) & 0xFF);
    }

    /** Control path: the Java address of a sockaddr the kernel filled in. */
    static InetSocketAddress decode(MemorySegment sa) {
        int family = sa.get(ValueLayout.JAVA_SHORT, 0);
        try {
            if (family == AF_INET) {
                byte[] b = new byte[4];
                MemorySegment.copy(sa, ValueLayout.JAVA_BYTE, 4, b, 0, 4);
                return new InetSocketAddress(InetAddress.getByAddress(b), port(sa));
            }
            byte[] b = new byte[16];
            MemorySegment.copy(sa, ValueLayout.JAVA_BYTE, 8, b, 0, 16);
            int scope = sa.get(ValueLayout.JAVA_INT, 24);
            // getByAddress turns ::ffff:a.b.c.d (a dual-stack socket's IPv4 peer) into an Inet4Address
            InetAddress ip = scope != 0 ? Inet6Address.getByAddress(null, b, scope) : InetAddress.getByAddress(b);
            return new InetSocketAddress(ip, port(sa));
        } catch (UnknownHostException e) {
            throw new IllegalStateException(e); // cannot happen for 4 or 16 bytes
        }
    }
}

package io.jrdma.bench;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SymbolLookup;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;
import java.net.Inet4Address;
import java.net.InetAddress;

/**
 * The best raw use of a UDP socket for a blast (Linux, IPv4): {@code n} datagrams of {@code size}
 * bytes per {@code sendmsg}, as one UDP GSO message ({@code UDP_SEGMENT} cmsg: the kernel cuts
 * it into {@code n} datagrams). Called through FFM, as jrdma's engine calls its sockets; the
 * receiver is {@link UdpBlast}'s, which counts datagrams as they arrive.
 */
final class GsoSender {
    private static final int AF_INET = 2;
    private static final int SOCK_DGRAM = 2;
    private static final int SOL_SOCKET = 1;
    private static final int SO_SNDBUF = 7;
    private static final int SOL_UDP = 17;
    private static final int UDP_SEGMENT = 103;

    private GsoSender() {
    }

    static void blast(String host, int port, int size, int n, long nanos) throws Throwable {
        if (size < 2 || (long) size * n > 65000) {
            Result.fail("gso: size must be at least 2 and size * gso at most 65000 bytes");
        }
        InetAddress ip = InetAddress.getByName(host);
        if (!(ip instanceof Inet4Address)) {
            Result.fail("gso: IPv4 only");
        }
        Linker linker = Linker.nativeLinker();
        SymbolLookup libc = linker.defaultLookup();
        ValueLayout.OfInt i = ValueLayout.JAVA_INT;
        ValueLayout.OfLong l = ValueLayout.JAVA_LONG;
        var p = ValueLayout.ADDRESS;
        MethodHandle socket = linker.downcallHandle(libc.findOrThrow("socket"), FunctionDescriptor.of(i, i, i, i));
        MethodHandle setsockopt = linker.downcallHandle(libc.findOrThrow("setsockopt"), FunctionDescriptor.of(i, i, i, i, p, i));
        MethodHandle connect = linker.downcallHandle(libc.findOrThrow("connect"), FunctionDescriptor.of(i, i, p, i));
        MethodHandle sendmsg = linker.downcallHandle(libc.findOrThrow("sendmsg"), FunctionDescriptor.of(l, i, p, i));
        MethodHandle send = linker.downcallHandle(libc.findOrThrow("send"), FunctionDescriptor.of(l, i, p, l, i));
        MethodHandle close = linker.downcallHandle(libc.findOrThrow("close"), FunctionDescriptor.of(i, i));
        try (Arena a = Arena.ofConfined()) {
            int fd = (int) socket.invokeExact(AF_INET, SOCK_DGRAM, 0);
            if (fd < 0) {
                Result.fail("gso: socket() failed");
            }
            MemorySegment v = a.allocate(4);
            v.set(ValueLayout.JAVA_INT, 0, UdpPingPong.SOCKET_BUFFER);
            int r = (int) setsockopt.invokeExact(fd, SOL_SOCKET, SO_SNDBUF, v, 4);
            MemorySegment sa = a.allocate(16);
            sa.set(ValueLayout.JAVA_SHORT, 0, (short) AF_INET);
            sa.set(ValueLayout.JAVA_BYTE, 2, (byte) (port >>> 8));
            sa.set(ValueLayout.JAVA_BYTE, 3, (byte) port);
            MemorySegment.copy(ip.getAddress(), 0, sa, ValueLayout.JAVA_BYTE, 4, 4);
            if ((int) connect.invokeExact(fd, sa, 16) != 0) {
                Result.fail("gso: connect() failed");
            }
            MemorySegment buf = a.allocate((long) size * n, 4096);
            MemorySegment iov = a.allocate(16, 8);
            iov.set(ValueLayout.ADDRESS, 0, buf);
            iov.set(ValueLayout.JAVA_LONG, 8, (long) size * n);
            MemorySegment ctl = a.allocate(24, 8); // struct cmsghdr + uint16_t, CMSG_SPACE(2)
            ctl.set(ValueLayout.JAVA_LONG, 0, 18);
            ctl.set(ValueLayout.JAVA_INT, 8, SOL_UDP);
            ctl.set(ValueLayout.JAVA_INT, 12, UDP_SEGMENT);
            ctl.set(ValueLayout.JAVA_SHORT, 16, (short) size);
            MemorySegment msg = a.allocate(56, 8); // struct msghdr, connected: no name
            msg.set(ValueLayout.ADDRESS, 16, iov);
            msg.set(ValueLayout.JAVA_LONG, 24, 1);
            msg.set(ValueLayout.ADDRESS, 32, ctl);
            msg.set(ValueLayout.JAVA_LONG, 40, 24);
            long cpu0 = Cpu.nanos();
            long start = System.nanoTime();
            long end = start + nanos;
            long sent = 0;
            long calls = 0;
            long now = start;
            while (now - end < 0) {
                for (int k = 0; k < 16; k++) {
                    long w = (long) sendmsg.invokeExact(fd, msg, 0);
                    if (w < 0) {
                        Result.fail("gso: sendmsg with UDP_SEGMENT failed (kernel without UDP GSO?)");
                    }
                    sent += n;
                    calls++;
                }
                now = System.nanoTime();
            }
            Cpu.print("udp_blast", "send", cpu0, start, now);
            MemorySegment one = a.allocate(1);
            for (int k = 0; k < 20; k++) {
                long ignored = (long) send.invokeExact(fd, one, 1L, 0x40);
                Thread.sleep(2);
            }
            int ignored = (int) close.invokeExact(fd);
            Result.rate("udp_blast_send", size, sent * size, sent, now - start, "gso=" + n + " calls=" + calls
                    + " sndbuf_set=" + (r == 0));
        }
    }
}

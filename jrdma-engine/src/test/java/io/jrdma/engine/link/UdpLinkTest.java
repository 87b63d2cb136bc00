package io.jrdma.engine.link;

import org.junit.jupiter.api.Test;

import java.net.InetAddress;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Connected send paths of the UDP link, on loopback. */
class UdpLinkTest {
    private static final long DEADLINE_NANOS = 5_000_000_000L;

    private static UdpLink open(String ip) throws Exception {
        return UdpLink.open(List.of(InetAddress.getByName(ip)), 0, true);
    }

    /** Polls {@code link} until a packet arrives or the deadline passes; @return its source endpoints */
    private static List<Endpoint> receive(UdpLink link) {
        List<Endpoint> from = new ArrayList<>();
        long end = System.nanoTime() + DEADLINE_NANOS;
        while (from.isEmpty() && System.nanoTime() < end) {
            link.poll((buf, seg, len, src, dst) -> from.add(src), 8);
        }
        return from;
    }

    @Test
    void qpsToOnePeerShareAConnectedPathThatLeavesFromItsOwnPort() throws Exception {
        try (UdpLink a = open("127.0.0.1"); UdpLink b = open("127.0.0.2")) {
            Endpoint local = a.localEndpoints().getFirst();
            Endpoint peer = b.localEndpoints().getFirst();
            Endpoint p1 = a.attach(local, Endpoint.of(peer.socketAddress().getAddress(), peer.port()));
            Endpoint p2 = a.attach(local, Endpoint.of(peer.socketAddress().getAddress(), peer.port()));
            assertSame(p1, p2, "one path per peer");
            assertEquals(1, a.pathCount());
            assertTrue(p1.sameAddress(local), "same source address as the GID");
            assertNotEquals(local.port(), p1.port(), "its own (ephemeral) source port");

            ByteBuffer buf = ByteBuffer.allocateDirect(64);
            assertTrue(a.send(buf, 64, p1, peer));
            a.flush(); // a batching link holds connected sends until then
            List<Endpoint> from = receive(b);
            assertEquals(1, from.size());
            assertEquals(p1.port(), from.getFirst().port(), "the peer sees the path's port");
            assertTrue(from.getFirst().sameAddress(local), "and its address: " + from.getFirst());

            a.detach(local, p1);
            assertEquals(1, a.pathCount(), "still used by the second QP");
            a.detach(local, p2);
            assertEquals(0, a.pathCount(), "closed with its last user");
            assertTrue(a.send(buf, 64, p1, peer), "a send on a closed path is a lost packet, not a failure");
            assertEquals(1, a.sendErrors());
        }
    }

    /**
     * An address handle's path: its socket puts the hop limit (TTL) and traffic class (TOS) in the IP header of
     * each datagram, the receiving kernel reads them out of the arriving header, and a link asked to report them
     * hands them to the sink with the packet (until asked, -1). Equal fields share a path, other fields get their
     * own; shared sending (no connected paths) still makes one, the shared socket's being the system's. IPv4 and,
     * where the host has it, IPv6; a datagram from a socket outside the link shows the receive side alone.
     */
    @Test
    void pathsCarryTheirHopLimitAndTrafficClassAndAReportingLinkReadsThemBack() throws Exception {
        org.junit.jupiter.api.Assumptions.assumeTrue(UdpLink.nativeUnavailableReason() == null,
                "native sockets: " + UdpLink.nativeUnavailableReason());
        for (String[] ips : new String[][] {{"127.0.0.1", "127.0.0.2"}, {"::1", "::1"}}) {
            UdpLink a;
            try {
                a = open(ips[0]);
            } catch (io.jrdma.verbs.RdmaException e) {
                org.junit.jupiter.api.Assumptions.assumeFalse(ips[0].equals("127.0.0.1"), e.getMessage());
                continue; // no IPv6 loopback on this host
            }
            try (a; UdpLink b = open(ips[1])) {
                a.connectedPaths(false);
                Endpoint local = a.localEndpoints().getFirst();
                Endpoint peer = b.localEndpoints().getFirst();
                Endpoint to = Endpoint.of(peer.socketAddress().getAddress(), peer.port());
                Endpoint p9 = a.attach(local, to, 9, 0xB8);
                assertSame(p9, a.attach(local, to, 9, 0xB8), "the same fields share a path");
                Endpoint p200 = a.attach(local, to, 200, 0x28);
                assertNotEquals(p9.port(), p200.port(), "other fields, another path");
                assertEquals(2, a.pathCount());
                ByteBuffer buf = ByteBuffer.allocateDirect(64);

                assertTrue(a.send(buf, 64, p9, peer));
                assertEquals(List.of(-1, -1), receiveIp(b), ips[1] + ": not reported until asked");
                b.reportIpHeaders();
                assertTrue(a.send(buf, 64, p9, peer));
                assertEquals(List.of(9, 0xB8), receiveIp(b), ips[1] + ": hop limit and traffic class of a path");
                assertTrue(a.send(buf, 64, p200, peer));
                assertEquals(List.of(200, 0x28), receiveIp(b), ips[1] + ": those of the other path");
                assertTrue(a.send(buf, 64, local, peer));
                java.nio.file.Path sysctl = java.nio.file.Path.of(ips[1].contains(":")
                        ? "/proc/sys/net/ipv6/conf/lo/hop_limit" : "/proc/sys/net/ipv4/ip_default_ttl");
                int shared = receiveIp(b).getFirst();
                if (java.nio.file.Files.isReadable(sysctl)) {
                    assertEquals(Integer.parseInt(java.nio.file.Files.readAllLines(sysctl).getFirst().trim()), shared,
                            ips[1] + ": the shared socket's hop limit, the system's default (" + sysctl + ")");
                }

                InetAddress from = local.socketAddress().getAddress();
                int fd = NativeUdp.open(from, 0, 1 << 16);
                try {
                    NativeUdp.ipHeader(fd, from instanceof java.net.Inet6Address, 33, 0x10);
                    java.lang.foreign.MemorySegment data = java.lang.foreign.Arena.ofAuto().allocate(64);
                    assertEquals(64, NativeUdp.sendto(fd, data, 64, peer.sockaddr(), peer.sockaddrLength(),
                            NativeUdp.newCallState(java.lang.foreign.Arena.ofAuto())));
                    assertEquals(List.of(33, 0x10), receiveIp(b), ips[1] + ": a datagram from a socket outside the link");
                } finally {
                    NativeUdp.close(fd);
                }
                a.detach(local, p9);
                a.detach(local, p9);
                a.detach(local, p200);
                assertEquals(0, a.pathCount(), "closed with their last users");
                io.jrdma.verbs.RdmaException zero = org.junit.jupiter.api.Assertions.assertThrows(
                        io.jrdma.verbs.RdmaException.class, () -> a.attach(local, to, 0, 0));
                assertEquals(io.jrdma.verbs.RdmaException.Errno.EINVAL, zero.errno(), zero.getMessage());
            }
        }
    }

    /** Polls {@code link} until a packet arrives or the deadline passes; @return its hop limit and traffic class */
    private static List<Integer> receiveIp(UdpLink link) {
        List<Integer> got = new ArrayList<>();
        long end = System.nanoTime() + DEADLINE_NANOS;
        while (got.isEmpty() && System.nanoTime() < end) {
            link.poll((buf, seg, len, src, dst) -> {
                got.add(link.receivedHopLimit());
                got.add(link.receivedTrafficClass());
            }, 1);
        }
        assertEquals(2, got.size(), "one packet within the deadline");
        return got;
    }

    @Test
    void sharedModeSendsFromTheListeningSocket() throws Exception {
        try (UdpLink a = open("127.0.0.1"); UdpLink b = open("127.0.0.2")) {
            a.connectedPaths(false);
            Endpoint local = a.localEndpoints().getFirst();
            Endpoint peer = b.localEndpoints().getFirst();
            Endpoint p = a.attach(local, Endpoint.of(peer.socketAddress().getAddress(), peer.port()));
            assertSame(local, p);
            assertEquals(0, a.pathCount());
            assertTrue(a.send(ByteBuffer.allocateDirect(64), 64, p, peer));
            Endpoint src = receive(b).getFirst();
            assertEquals(local.port(), src.port());
            assertTrue(src.sameAddress(local), src.toString());
            a.detach(local, p);
        }
    }

    @Test
    void nativeSocketsOnLinuxAndTheJdkFallbackBothCarryDatagrams() throws Exception {
        for (boolean preferNative : new boolean[] {true, false}) {
            try (UdpLink a = UdpLink.open(List.of(InetAddress.getByName("127.0.0.1")), 0, true, preferNative);
                 UdpLink b = UdpLink.open(List.of(InetAddress.getByName("127.0.0.2")), 0, true, preferNative)) {
                if (preferNative && UdpLink.nativeUnavailableReason() == null) {
                    assertTrue(a.isNative(), "native sockets where the platform has them");
                }
                if (!preferNative) {
                    org.junit.jupiter.api.Assertions.assertFalse(a.isNative());
                }
                Endpoint local = a.localEndpoints().getFirst();
                Endpoint peer = b.localEndpoints().getFirst();
                ByteBuffer buf = ByteBuffer.allocateDirect(2048);
                for (int i = 0; i < 40; i++) { // more than one receive batch
                    buf.put(0, (byte) i);
                    assertTrue(a.send(buf, 100 + i, local, peer));
                }
                List<Integer> lens = new ArrayList<>();
                List<Integer> firsts = new ArrayList<>();
                long end = System.nanoTime() + DEADLINE_NANOS;
                while (lens.size() < 40 && System.nanoTime() < end) {
                    b.poll((bb, seg, len, src, dst) -> {
                        assertTrue(src.sameAddress(local) && src.port() == local.port(), src.toString());
                        assertEquals(peer, dst);
                        lens.add(len);
                        firsts.add((int) seg.get(java.lang.foreign.ValueLayout.JAVA_BYTE, 0));
                    }, 64);
                }
                assertEquals(40, lens.size(), "native " + preferNative);
                for (int i = 0; i < 40; i++) {
                    assertEquals(100 + i, lens.get(i));
                    assertEquals(i, firsts.get(i));
                }
            }
        }
    }

    /**
     * Found against Linux rxe: it sends RoCEv2 over IPv6 with a zero UDP checksum, which the
     * kernel drops for sockets that did not opt in (Udp6InCsumErrors). A sender with
     * UDP_NO_CHECK6_TX reproduces rxe on ::1; the native link hears it, a DatagramChannel
     * (the fallback) cannot.
     */
    @Test
    void ipv6DatagramsWithAZeroChecksumReachTheNativeLinkOnly() throws Exception {
        org.junit.jupiter.api.Assumptions.assumeTrue(UdpLink.nativeUnavailableReason() == null,
                "native sockets: " + UdpLink.nativeUnavailableReason());
        InetAddress v6 = InetAddress.getByName("::1");
        int fd = NativeUdp.open(v6, 0, 1 << 16);
        try (UdpLink nat = UdpLink.open(List.of(v6), 0, true, true);
             UdpLink jdk = UdpLink.open(List.of(v6), 0, true, false)) {
            NativeUdp.zeroChecksumTx(fd);
            java.lang.foreign.MemorySegment callState = NativeUdp.newCallState(java.lang.foreign.Arena.ofAuto());
            java.lang.foreign.MemorySegment data = java.lang.foreign.Arena.ofAuto().allocate(64);
            for (UdpLink l : List.of(nat, jdk)) {
                Endpoint to = l.localEndpoints().getFirst();
                assertEquals(64, NativeUdp.sendto(fd, data, 64, to.sockaddr(), to.sockaddrLength(), callState));
            }
            assertEquals(1, receive(nat).size(), "the native link takes rxe's zero-checksum datagram");
            // the same datagram to the DatagramChannel link is dropped by the kernel: nothing comes
            // while the native link, sent a second one now, hears it (so the wait was long enough)
            Endpoint natEp = nat.localEndpoints().getFirst();
            assertEquals(64, NativeUdp.sendto(fd, data, 64, natEp.sockaddr(), natEp.sockaddrLength(), callState));
            assertEquals(1, receive(nat).size());
            List<Endpoint> got = new ArrayList<>();
            jdk.poll((b, seg, len, src, dst) -> got.add(src), 8);
            assertEquals(0, got.size(), "a DatagramChannel never sees it");
        } finally {
            NativeUdp.close(fd);
        }
    }

    /**
     * Batched transmit on a connected path: packets are held until flush, then leave with one
     * sendmmsg whose runs of equal-size packets are UDP GSO messages; the peer receives every
     * datagram, in order, with its own length and bytes. With -Djrdma.udp.gso=false the same
     * packets leave as single messages of the sendmmsg.
     */
    @Test
    void heldPacketsLeaveInOrderWithOneSystemCallAndGso() throws Exception {
        // {gso, jrdmaPeer}: only toward a jrdma peer are packets held and batched (toward Linux rxe each
        // leaves at once: over IPv4 the kernel would number GSO segments' IDs, which rxe's ICRC check sees)
        for (boolean[] mode : new boolean[][] {{true, true}, {true, false}, {false, true}}) {
            boolean gso = mode[0];
            boolean jrdmaPeer = mode[1];
            if (!gso) {
                System.setProperty("jrdma.udp.gso", "false");
            }
            try (UdpLink a = open("127.0.0.1"); UdpLink b = open("127.0.0.2")) {
                if (!a.isNative() || a.heldPackets() == 0) {
                    assertEquals(0, a.heldPackets(), a.transmitMode());
                    return; // not Linux or no native access: one send per packet, nothing to check here
                }
                assertEquals((gso ? "sendmmsg + UDP GSO" : "sendmmsg (UDP GSO off: disabled by -Djrdma.udp.gso=false)")
                        + " toward jrdma peers, one send per packet toward others", a.transmitMode());
                Endpoint local = a.localEndpoints().getFirst();
                Endpoint peer = b.localEndpoints().getFirst();
                Endpoint path = a.attach(local, Endpoint.of(peer.socketAddress().getAddress(), peer.port()));
                // 1 first packet of 4128 B, 14 of 4112 B, a last one of 2000 B, then 20 small ones of 40 B
                int[] lens = new int[36];
                lens[0] = 4128;
                for (int i = 1; i < 15; i++) {
                    lens[i] = 4112;
                }
                lens[15] = 2000;
                for (int i = 16; i < 36; i++) {
                    lens[i] = 40;
                }
                ByteBuffer[] bufs = new ByteBuffer[lens.length];
                long calls = a.txCalls();
                for (int i = 0; i < lens.length; i++) {
                    bufs[i] = ByteBuffer.allocateDirect(lens[i]);
                    for (int k = 0; k < lens[i]; k++) {
                        bufs[i].put(k, (byte) (i * 7 + k));
                    }
                    assertTrue(a.send(bufs[i], java.lang.foreign.MemorySegment.ofBuffer(bufs[i]), lens[i], path, peer, jrdmaPeer));
                }
                if (jrdmaPeer) {
                    assertEquals(calls, a.txCalls(), "held, not sent, until flush");
                    a.flush();
                    assertEquals(calls + 1, a.txCalls(), "one sendmmsg for all of them");
                } else {
                    assertEquals(calls + lens.length, a.txCalls(), "toward another peer: one send per packet, at once");
                    a.flush();
                }
                assertEquals(gso && jrdmaPeer ? 3 : 0, a.gsoMessages(),
                        "GSO messages: 14 + 1 of 4112/2000 B, 20 of 40 B, none for the single; none toward another peer");
                List<byte[]> got = new ArrayList<>();
                long end = System.nanoTime() + DEADLINE_NANOS;
                while (got.size() < lens.length && System.nanoTime() < end) {
                    b.poll((bb, seg, len, src, dst) -> got.add(seg.asSlice(0, len).toArray(
                            java.lang.foreign.ValueLayout.JAVA_BYTE)), 64);
                }
                assertEquals(lens.length, got.size(), "every datagram arrives");
                for (int i = 0; i < lens.length; i++) {
                    assertEquals(lens[i], got.get(i).length, "datagram " + i + "'s length");
                    for (int k = 0; k < lens[i]; k++) {
                        if (got.get(i)[k] != (byte) (i * 7 + k)) {
                            throw new AssertionError("datagram " + i + " byte " + k);
                        }
                    }
                }
                a.detach(local, path);
            } finally {
                System.clearProperty("jrdma.udp.gso");
            }
        }
    }
}

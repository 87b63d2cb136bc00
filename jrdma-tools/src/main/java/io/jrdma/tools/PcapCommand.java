package io.jrdma.tools;

import io.jrdma.wire.Bth;
import io.jrdma.wire.EthernetIp;
import io.jrdma.wire.IbOpcode;
import io.jrdma.wire.Icrc;
import io.jrdma.wire.PcapReader;

import java.io.IOException;
import java.io.PrintStream;
import java.net.InetAddress;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * {@code jrdma pcap FILE [--from IP]}: checks the ICRC of every RoCEv2 packet (UDP port 4791)
 * in a capture against its real IP and UDP headers, and prints, per source address, how many
 * packets carry a correct ICRC and which opcodes were seen. With {@code --from}, exits 1 unless
 * every packet from that address is correct (the interop suite's check of what jrdma sent).
 *
 * <p>Link types: Ethernet, raw IP, Linux cooked capture v1 and v2 (v2 is what {@code tcpdump -i any}
 * writes on current Linux). A frame the capture cut short (its captured length below its length on
 * the wire: tcpdump's {@code -s}) or shorter than its own IP or UDP header says, or a UDP/4791 datagram
 * too short for a BTH and an ICRC, cannot be checked: such frames are counted and reported, and with
 * {@code --from} one that may be a RoCEv2 packet from that address fails the check.
 */
final class PcapCommand {
    static final String USAGE = """
            usage: jrdma pcap FILE [--from IP [--timeout-us T]] [-v]

            Checks the RoCEv2 ICRC of every UDP/4791 packet in a pcap capture (Ethernet, raw IP, Linux
            cooked v1 or v2 as 'tcpdump -i any' writes), using each packet's real IPv4/IPv6 and UDP
            headers, and prints per source address the packets with a correct and with a wrong ICRC,
            and how many frames were truncated (cut by the capture's snap length, or shorter than their
            headers say): those cannot be checked.
              --from IP   exit 1 unless at least one packet came from IP and all of them are correct
                          (a truncated frame that may be one of them fails too)
              -v          list every packet with a wrong ICRC
              --timeout-us T  with --from: also account for every retransmitted request. A peer's
                          retransmission is jrdma's fault only if jrdma had not acknowledged the PSN
                          for T microseconds (the QP's timeout; 67109 for timeout 14); one that comes
                          sooner or after jrdma's ACK is the peer's own timer (Linux rxe arms it once
                          and does not restart it on ACKs). A retransmission by jrdma fails the check
                          unless the peer had left the PSN unanswered for a whole timeout.
            """;

    private PcapCommand() {
    }

    private static final class Tally {
        long ok;
        long bad;
        final Map<String, Long> opcodes = new TreeMap<>();
    }

    static int run(List<String> args, PrintStream out, PrintStream err) {
        String file = null;
        String from = null;
        boolean verbose = false;
        long timeoutNanos = 67_108_864L;
        boolean retries = false;
        for (int i = 0; i < args.size(); i++) {
            String a = args.get(i);
            switch (a) {
                case "-h", "--help" -> {
                    out.print(USAGE);
                    return 0;
                }
                case "-v" -> verbose = true;
                case "--timeout-us" -> {
                    if (i + 1 == args.size()) {
                        err.println("jrdma pcap: --timeout-us needs a number");
                        return 2;
                    }
                    try {
                        timeoutNanos = Long.parseLong(args.get(++i)) * 1000;
                    } catch (NumberFormatException e) {
                        err.println("jrdma pcap: --timeout-us needs a number, not " + args.get(i));
                        return 2;
                    }
                    retries = true;
                }
                case "--from" -> {
                    if (i + 1 == args.size()) {
                        err.println("jrdma pcap: --from needs an IP address");
                        return 2;
                    }
                    from = args.get(++i);
                }
                default -> {
                    if (a.startsWith("-") || file != null) {
                        err.println("jrdma pcap: unexpected argument '" + a + "'");
                        err.print(USAGE);
                        return 2;
                    }
                    file = a;
                }
            }
        }
        if (file == null) {
            err.println("jrdma pcap: missing capture file");
            err.print(USAGE);
            return 2;
        }
        String fromKey;
        try {
            fromKey = from == null ? null : InetAddress.getByName(from).getHostAddress();
        } catch (IOException e) {
            err.println("jrdma pcap: not an IP address: " + from);
            return 2;
        }
        Map<String, Tally> bySource = new TreeMap<>();
        Retries rt = new Retries(timeoutNanos);
        Icrc icrc = new Icrc();
        Others others = new Others();
        long truncated = 0;
        long truncatedMaybeRoce = 0;
        long truncatedMaybeFrom = 0;
        try (PcapReader r = PcapReader.open(Path.of(file))) {
            if (EthernetIp.linkHeaderLength(r.linkType()) < 0) {
                err.println("jrdma pcap: " + file + " has link type " + r.linkType() + ", which jrdma pcap does not"
                        + " read: it reads Ethernet (1), raw IP (101, 228, 229) and Linux cooked captures (113, 276)");
                return 1;
            }
            PcapReader.Record rec;
            while ((rec = r.next()) != null) {
                ByteBuffer b = rec.directBuffer();
                EthernetIp.Udp u;
                try {
                    u = EthernetIp.parseUdp(b, r.linkType());
                } catch (RuntimeException e) {
                    u = null; // not IP/UDP
                }
                if (u == null || u.dstPort() != 4791 || u.roceLengthWithoutIcrc() < Bth.LENGTH) {
                    Cut c = u == null ? Cut.of(b, r.linkType(), rec.originalLength())
                            : u.dstPort() == 4791 ? new Cut(true, sourceOf(b, u.ipOffset(), b.limit())) // no BTH + ICRC
                            : null;
                    if (c != null) {
                        truncated++;
                        if (c.mayBeRoce()) {
                            truncatedMaybeRoce++;
                            if (fromKey != null && (c.source() == null || c.source().equals(fromKey))) {
                                truncatedMaybeFrom++;
                            }
                        }
                        continue;
                    }
                    others.count(b, r.linkType(), u != null);
                    continue;
                }
                InetAddress src = InetAddress.getByAddress(u.ipVersion() == 6 ? EthernetIp.ipv6Src(b, u.ipOffset())
                        : ipv4(EthernetIp.ipv4Src(b, u.ipOffset())));
                Tally t = bySource.computeIfAbsent(src.getHostAddress(), k -> new Tally());
                int len = u.roceLengthWithoutIcrc();
                int expected = icrc.computeFromIpHeader(b, u.ipOffset(), len);
                int got = Icrc.read(rec.segment(), u.payloadOffset() + len);
                int opcode = b.get(u.payloadOffset()) & 0xFF;
                t.opcodes.merge(IbOpcode.name(opcode), 1L, Long::sum);
                if (fromKey != null && IbOpcode.valid(opcode)) {
                    int aeth = IbOpcode.offset(opcode, IbOpcode.AETH);
                    int syndrome = aeth >= 0 ? io.jrdma.wire.Aeth.syndrome(rec.segment(), u.payloadOffset() + aeth) : 0;
                    // a sequence NAK or an RNR NAK: both ask for their PSN and every later one again
                    boolean rnr = aeth >= 0 && io.jrdma.wire.Aeth.isRnrNak(syndrome);
                    boolean nak = rnr || aeth >= 0 && io.jrdma.wire.Aeth.isNak(syndrome);
                    if (rnr && !src.getHostAddress().equals(fromKey)) {
                        rt.peerRnrNaks++;
                    }
                    rt.packet(src.getHostAddress().equals(fromKey), IbOpcode.mask(opcode),
                            Bth.destQp(rec.segment(), u.payloadOffset()), Bth.psn(rec.segment(), u.payloadOffset()),
                            nak, rec.timestampNanos());
                }
                if (expected == got) {
                    t.ok++;
                } else {
                    t.bad++;
                    if (verbose) {
                        out.printf("packet %d from %s: ICRC %08x on the wire, %08x computed%n", rec.index(),
                                src.getHostAddress(), got, expected);
                    }
                }
            }
        } catch (java.nio.file.NoSuchFileException e) {
            err.println("jrdma pcap: cannot read " + file + ": no such file");
            return 1;
        } catch (java.nio.file.AccessDeniedException e) {
            err.println("jrdma pcap: cannot read " + file + ": permission denied");
            return 1;
        } catch (IOException e) {
            String why = e.getMessage() == null || e.getMessage().equals(file) ? e.getClass().getSimpleName()
                    : e.getMessage();
            err.println("jrdma pcap: cannot read " + file + ": " + why);
            return 1;
        }
        String cutLine = truncated == 0 ? null : truncated + " frame" + (truncated == 1 ? "" : "s") + " truncated (cut by"
                + " the capture's snap length, or shorter than their headers say; " + truncatedMaybeRoce + " of them may"
                + " be RoCEv2): not checked; capture whole packets (tcpdump -s 0)";
        if (bySource.isEmpty()) {
            err.println("jrdma pcap: no RoCEv2 packets (UDP port 4791) in " + file + ": " + others
                    + (cutLine == null ? "" : "; " + cutLine) + "; jrdma pcap checks RoCEv2 captures");
            return 1;
        }
        for (Map.Entry<String, Tally> e : bySource.entrySet()) {
            Tally t = e.getValue();
            out.printf("%s: %d packets, ICRC correct %d, wrong %d; %s%n", e.getKey(), t.ok + t.bad, t.ok, t.bad, t.opcodes);
        }
        if (cutLine != null) {
            out.println(cutLine);
        }
        if (fromKey != null) {
            Tally t = bySource.get(fromKey);
            if (t == null) {
                err.println("jrdma pcap: no RoCEv2 packet from " + from + " in " + file);
                return 1;
            }
            if (t.bad > 0) {
                err.println("jrdma pcap: " + t.bad + " packets from " + from + " carry a wrong ICRC");
                return 1;
            }
            if (truncatedMaybeFrom > 0) {
                err.println("jrdma pcap: " + truncatedMaybeFrom + " truncated frame" + (truncatedMaybeFrom == 1 ? "" : "s")
                        + " may be RoCEv2 packets from " + from + ": their ICRC cannot be checked (capture whole"
                        + " packets: tcpdump -s 0)");
                return 1;
            }
            if (retries) {
                int rc = rt.report(err);
                if (rc != 0) {
                    return rc;
                }
            }
            out.printf("from %s: %d packets, every ICRC correct%s%n", from, t.ok, retries ? rt.summary() : "");
        }
        return 0;
    }

    /** What a capture holds besides RoCEv2: told when it holds no RoCEv2 packet at all (an iWARP capture, say). */
    private static final class Others {
        private static final byte[] MPA_KEY = "MPA ID Req Frame".getBytes(java.nio.charset.StandardCharsets.US_ASCII);
        long frames;
        long tcp;
        long tcpWithData;
        long udp;
        boolean mpa;

        void count(ByteBuffer b, int linkType, boolean isUdp) {
            frames++;
            if (isUdp) {
                udp++;
                return;
            }
            int ip = EthernetIp.ipOffset(b, linkType);
            if (ip < 0 || ip + 20 > b.limit()) {
                return;
            }
            int v = EthernetIp.ipVersion(b, ip);
            int proto;
            int tcpAt;
            int end;
            if (v == 4) {
                proto = b.get(ip + 9) & 0xFF;
                tcpAt = ip + (b.get(ip) & 0x0F) * 4;
                end = Math.min(b.limit(), ip + (b.getShort(ip + 2) & 0xFFFF));
            } else if (v == 6 && ip + 40 <= b.limit()) {
                proto = b.get(ip + 6) & 0xFF;
                tcpAt = ip + 40;
                end = Math.min(b.limit(), ip + 40 + (b.getShort(ip + 4) & 0xFFFF));
            } else {
                return;
            }
            if (proto != 6 || tcpAt + 20 > end) {
                return;
            }
            tcp++;
            int data = tcpAt + ((b.get(tcpAt + 12) & 0xF0) >>> 4) * 4;
            if (data < end) {
                tcpWithData++;
                mpa |= startsWith(b, data, end, MPA_KEY); // an MPA Request: the start of an iWARP connection
            }
        }

        private static boolean startsWith(ByteBuffer b, int at, int end, byte[] key) {
            if (end - at < key.length) {
                return false;
            }
            for (int i = 0; i < key.length; i++) {
                if (b.get(at + i) != key[i]) {
                    return false;
                }
            }
            return true;
        }

        @Override
        public String toString() {
            return frames + " frames: " + tcp + " TCP segments (" + tcpWithData + " with data), " + udp
                    + " other UDP datagrams" + (mpa ? "; it holds an MPA Request: an iWARP capture (RDMAP/DDP/MPA over"
                    + " TCP), which Wireshark's iWARP dissectors check" : "");
        }
    }

    /**
     * Requests seen twice in one direction of a connection, and who is to blame: the capture holds
     * RC connections between jrdma ("ours") and its peer, one or several (perftest's -q, an SRQ
     * ping-pong). Requests name the QP they go to and ACKs the QP they answer, so each ACK is
     * paired with the request stream whose PSN it acknowledges (PSNs start at random, so two
     * streams do not share them), and a retransmission is judged by its own connection's ACKs.
     */
    private static final class Retries {
        /** First sending time per (destination QP, PSN) of the peer's requests. */
        private final Map<Long, Long> peerFirstSent = new java.util.HashMap<>();
        /** jrdma's acknowledgements (ACK, READ response or atomic ACK) per request stream (the peer's requests' QP). */
        private final Map<Integer, java.util.TreeMap<Long, Integer>> ourAcks = new java.util.HashMap<>();
        /** PSN to the destination QP of the requests it was sent in, per direction. */
        private final Map<Integer, Integer> ourRequestQp = new java.util.HashMap<>();
        private final Map<Integer, Integer> peerRequestQp = new java.util.HashMap<>();
        /** The request stream an ACK's destination QP was last paired with (for responses whose PSN no request had). */
        private final Map<Integer, Integer> ourAckStream = new java.util.HashMap<>();
        private final Map<Integer, Integer> peerAckStream = new java.util.HashMap<>();
        long peerRetries;
        long peerRetriesOurs;
        long peerRetriesEarly;
        long peerRetriesAfterAck;
        long peerRetriesAfterNak;
        long ourRetries;
        /** RNR NAKs the peer sent (its receive queue empty): each in a stream of requests in flight makes it NAK the next one out of sequence too */
        long peerRnrNaks;

        void packet(boolean ours, int mask, int destQp, int psn, boolean nak, long at) {
            boolean request = (mask & IbOpcode.REQ) != 0;
            if (!request) {
                // an answer to the other side's requests: find which of its streams it answers
                Integer stream = (ours ? peerRequestQp : ourRequestQp).get(psn);
                Map<Integer, Integer> pairs = ours ? ourAckStream : peerAckStream;
                if (stream != null) {
                    pairs.put(destQp, stream);
                } else {
                    stream = pairs.getOrDefault(destQp, -1);
                }
                if (nak) { // RNR or sequence NAK: the requester resends from its PSN on, rightly
                    (ours ? ourNaks : peerNaks).computeIfAbsent(stream, k -> new java.util.TreeMap<>()).put(at, psn);
                } else {
                    (ours ? ourAcks : peerAcks).computeIfAbsent(stream, k -> new java.util.TreeMap<>()).put(at, psn);
                }
                return;
            }
            (ours ? ourRequestQp : peerRequestQp).put(psn, destQp);
            Map<Long, Long> sent = ours ? ourFirstSent : peerFirstSent;
            Long first = sent.putIfAbsent(((long) destQp << 24) | psn, at);
            if (first == null) {
                return;
            }
            // a retransmission: was the PSN left unacknowledged by the other side for a whole timeout?
            boolean acked = acknowledgedBefore((ours ? peerAcks : ourAcks).get(destQp), psn, at);
            boolean nakked = nakkedSince((ours ? peerNaks : ourNaks).get(destQp), psn, first, at);
            boolean waitedOut = !acked && !nakked && at - first >= timeoutNanos * 9 / 10;
            if (ours) {
                ourRetries++;
                // go-back-N resends everything after the PSN that timed out or was NAKed: a PSN that follows
                // the previous retransmission of the stream belongs to its burst, and is as right as the burst
                Integer next = ourBurstNext.get(destQp);
                boolean justified = waitedOut || (nakked && !acked);
                if (next != null && next == psn && ourBurstJustified.getOrDefault(destQp, false)) {
                    justified = true;
                } else {
                    ourBurstJustified.put(destQp, justified);
                }
                ourBurstNext.put(destQp, (psn + 1) & 0xFFFFFF);
                if (justified) {
                    ourRetriesPeerSilent++; // after a whole timeout, or asked for by the peer's NAK
                }
            } else {
                peerRetries++;
                if (acked) {
                    peerRetriesAfterAck++;
                } else if (nakked) {
                    peerRetriesAfterNak++; // jrdma asked for it (RNR or sequence NAK)
                } else if (!waitedOut) {
                    peerRetriesEarly++;
                } else {
                    peerRetriesOurs++;
                }
            }
        }

        private final Map<Long, Long> ourFirstSent = new java.util.HashMap<>();
        private final Map<Integer, java.util.TreeMap<Long, Integer>> peerAcks = new java.util.HashMap<>();
        long ourRetriesPeerSilent;

        private final long timeoutNanos;

        Retries(long timeoutNanos) {
            this.timeoutNanos = timeoutNanos;
        }

        /** Per stream of jrdma's requests: the PSN that would continue the last retransmission burst, and whether it was justified. */
        private final Map<Integer, Integer> ourBurstNext = new java.util.HashMap<>();
        private final Map<Integer, Boolean> ourBurstJustified = new java.util.HashMap<>();
        /** NAKs (RNR, sequence error) per answered request stream, jrdma's and the peer's. */
        private final Map<Integer, java.util.TreeMap<Long, Integer>> ourNaks = new java.util.HashMap<>();
        private final Map<Integer, java.util.TreeMap<Long, Integer>> peerNaks = new java.util.HashMap<>();

        /** @return true when a NAK between the first sending and {@code at} asked for {@code psn} again (its PSN at or before it) */
        private static boolean nakkedSince(java.util.TreeMap<Long, Integer> naks, int psn, long first, long at) {
            if (naks == null) {
                return false;
            }
            for (int nakPsn : naks.subMap(first, false, at, false).values()) {
                int d = ((psn - nakPsn) << 8) >> 8; // 24-bit signed difference
                if (d >= 0 && d < (1 << 22)) {
                    return true;
                }
            }
            return false;
        }

        private static boolean acknowledgedBefore(java.util.TreeMap<Long, Integer> acks, int psn, long at) {
            if (acks == null) {
                return false;
            }
            for (Map.Entry<Long, Integer> e : acks.headMap(at, false).entrySet()) {
                int d = ((e.getValue() - psn) << 8) >> 8; // 24-bit signed difference
                if (d >= 0) {
                    return true;
                }
            }
            return false;
        }

        int report(PrintStream err) {
            if (ourRetries > ourRetriesPeerSilent) {
                err.println("jrdma pcap: jrdma retransmitted " + (ourRetries - ourRetriesPeerSilent)
                        + " requests before a whole timeout without an answer had passed");
                return 1;
            }
            if (peerRetriesOurs > 0) {
                err.println("jrdma pcap: the peer retransmitted " + peerRetriesOurs
                        + " requests that jrdma had left unacknowledged for a whole timeout");
                return 1;
            }
            return 0;
        }

        String summary() {
            String ours = ourRetries == 0 ? "no retransmission by jrdma"
                    : "jrdma retransmitted " + ourRetries + " requests, each after a whole timeout without an answer"
                            + " or asked for by a NAK";
            return "; " + ours + (peerRetries == 0 ? "; none by the peer"
                    : "; the peer's " + peerRetries + " came from its own timer (" + peerRetriesAfterAck
                            + " after jrdma's ACK, " + peerRetriesEarly + " within one timeout)"
                            + (peerRetriesAfterNak == 0 ? "" : " or were asked for by jrdma's NAKs ("
                            + peerRetriesAfterNak + ")"))
                    + (peerRnrNaks == 0 ? "" : "; the peer sent " + peerRnrNaks + " RNR NAK" + (peerRnrNaks == 1 ? "" : "s"));
        }
    }

    /**
     * A frame that cannot be checked because bytes are missing: the capture kept fewer than the frame had, or its IP or
     * UDP header claims more than there is.
     *
     * @param mayBeRoce whether it is, or may be, a UDP/4791 datagram (its UDP header or its protocol missing)
     * @param source    its IP source address when captured, else null
     */
    private record Cut(boolean mayBeRoce, String source) {
        /** @return the frame as cut short, or null when no byte is missing (it is simply no RoCEv2 packet) */
        static Cut of(ByteBuffer b, int linkType, int originalLength) {
            int lim = b.limit();
            boolean snapped = lim < originalLength;
            if (lim < Math.max(1, EthernetIp.linkHeaderLength(linkType))) {
                return new Cut(true, null); // not even its link-layer header
            }
            int ip = EthernetIp.ipOffset(b, linkType);
            if (ip < 0) {
                return snapped ? new Cut(false, null) : null; // not IP (ARP, say)
            }
            int v = EthernetIp.ipVersion(b, ip);
            if (ip + (v == 4 ? 20 : 40) > lim) {
                return new Cut(true, sourceOf(b, ip, lim));
            }
            int proto;
            int l4;
            int end;
            boolean fragment = false;
            if (v == 4) {
                proto = b.get(ip + 9) & 0xFF;
                l4 = ip + (b.get(ip) & 0x0F) * 4;
                end = ip + EthernetIp.ipv4TotalLength(b, ip);
                fragment = (EthernetIp.ipv4FlagsFragment(b, ip) & 0x3FFF) != 0;
            } else {
                proto = b.get(ip + 6) & 0xFF;
                l4 = ip + 40;
                end = ip + 40 + (((b.get(ip + 4) & 0xFF) << 8) | (b.get(ip + 5) & 0xFF));
            }
            String src = sourceOf(b, ip, lim);
            if (proto != EthernetIp.PROTO_UDP || fragment) {
                return snapped || end > lim ? new Cut(false, src) : null;
            }
            if (l4 + 8 > lim) {
                return new Cut(true, src); // its UDP header is missing: it may be RoCEv2
            }
            boolean roce = EthernetIp.udpDstPort(b, l4) == 4791;
            return snapped || end > lim || l4 + EthernetIp.udpLength(b, l4) > lim ? new Cut(roce, src) : null;
        }
    }

    /** @return the IP source address of the packet at {@code ip}, or null when it was not captured */
    private static String sourceOf(ByteBuffer b, int ip, int lim) {
        try {
            if (EthernetIp.ipVersion(b, ip) == 4) {
                return ip + 16 <= lim ? InetAddress.getByAddress(ipv4(EthernetIp.ipv4Src(b, ip))).getHostAddress() : null;
            }
            return ip + 24 <= lim ? InetAddress.getByAddress(EthernetIp.ipv6Src(b, ip)).getHostAddress() : null;
        } catch (java.net.UnknownHostException e) {
            return null; // cannot happen for 4 or 16 bytes
        }
    }

    private static byte[] ipv4(int a) {
        return new byte[] {(byte) (a >>> 24), (byte) (a >>> 16), (byte) (a >>> 8), (byte) a};
    }
}

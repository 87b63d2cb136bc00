#!/bin/bash
# prove.sh - end-to-end proof: two guests, rxe + siw tests between them,
# captures on the host side of the bridge (inside the namespace), decodes,
# reference numbers.  Assumes build-image.sh has run; boots 2 guests if they
# are not up.  Writes, next to this script:
#   pcaps/*.pcap                   captures (host-side taps, inside the netns);
#                                  the repository's golden set is a copy of
#                                  these in testdata/pcaps
#   results/*.txt                  tool outputs, decodes, timings
# Needs root, vm.sh's packages, and on the host:
#   apt-get install tcpdump tshark python3      (and a JDK for "ipid")
# Usage: prove.sh [captures|bench|ipid|decode|all]   (default all)
set -uo pipefail
what=${1:-all}
case "$what" in
    -h|--help) sed -n '2,12p' "$0"; exit 0 ;;
    captures|bench|ipid|decode|all) ;;
    *) echo "prove.sh: unknown step $what (see --help)" >&2; exit 2 ;;
esac
HERE=$(cd "$(dirname "$0")" && pwd)
cd "$HERE"
VM=./vm.sh
P=pcaps; R=results
mkdir -p "$P" "$R"
NS=${NS:-rdmatest}
G1_0=10.77.0.11; G1_1=10.77.1.11; G2_0=10.77.0.12

log() { echo "== $*" | tee -a "$R/prove.log"; }

capture_start() {   # iface file filter...
    local ifc=$1 f=$2; shift 2
    rm -f "$f"
    ip netns exec "$NS" tcpdump -i "$ifc" -s 0 -U -w "$f" "$@" 2>"$f.tcpdump.log" &
    CAP_PID=$!
    for _ in $(seq 1 50); do grep -q listening "$f.tcpdump.log" 2>/dev/null && break; sleep 0.1; done
}
capture_stop() {
    sleep 1
    kill -INT "$CAP_PID" 2>/dev/null; wait "$CAP_PID" 2>/dev/null
    tail -n 3 "$1.tcpdump.log" | grep -E 'captured|dropped' | tr '\n' ' '; echo
    rm -f "$1.tcpdump.log"
}

# pair NAME 'server cmd' 'client cmd' [iface 'filter']
# Server on g1, client on g2; retried (up to $RETRIES) when the client fails:
# under TCG perftest's TSC calibration sometimes fails ("Correlation
# coefficient r^2 < 0.9") and then the run aborts.
pair() {
    local name=$1 scmd=$2 ccmd=$3 ifc=${4:-} filt=${5:-} T=${TEST_TIMEOUT:-180} try crc src spid t0
    log "$name"
    for try in $(seq 1 "${RETRIES:-3}"); do
        [ -n "$ifc" ] && capture_start "$ifc" "$P/$name.pcap" $filt
        echo "# g1 (server): $scmd   [attempt $try]" > "$R/$name.txt"
        $VM exec 1 "echo \$\$ > /tmp/pair-server.pid; exec timeout $T $scmd" >> "$R/$name.txt" 2>&1 &
        spid=$!
        sleep "${SERVER_WAIT:-3}"
        { echo; echo "# g2 (client): $ccmd"; } >> "$R/$name.txt"
        t0=$(date +%s.%N)
        $VM exec 2 "timeout $T $ccmd" >> "$R/$name.txt" 2>&1; crc=$?
        [ $crc = 0 ] || { sleep 1; $VM exec 1 'kill $(cat /tmp/pair-server.pid) 2>/dev/null'; }
        wait $spid; src=$?
        printf '# client rc=%s server rc=%s wall=%.2fs attempt=%s\n' $crc $src \
            "$(awk -v a="$(date +%s.%N)" -v b="$t0" 'BEGIN{print a-b}')" $try >> "$R/$name.txt"
        tail -n 1 "$R/$name.txt"
        [ -n "$ifc" ] && capture_stop "$P/$name.pcap"
        [ $crc = 0 ] && [ $src = 0 ] && break
        cp "$R/$name.txt" "$R/$name.failed-attempt-$try.txt"
        [ -n "$ifc" ] && cp "$P/$name.pcap" "$R/$name.failed-attempt-$try.pcap"
        sleep 2
    done
    return 0
}

captures() {
    local RF="udp port 4791" X="-d rxe0 -x 1"
    pair roce-rc_pingpong   "ibv_rc_pingpong -d rxe0 -g 1 -n 10"  "ibv_rc_pingpong -d rxe0 -g 1 -n 10 $G1_0" tap10 "$RF"
    pair roce-ib_send_bw    "ib_send_bw $X -s 4096 -n 16"   "ib_send_bw $X -s 4096 -n 16 $G1_0"   tap10 "$RF"
    pair roce-ib_write_bw   "ib_write_bw $X -s 4096 -n 16"  "ib_write_bw $X -s 4096 -n 16 $G1_0"  tap10 "$RF"
    pair roce-ib_write_lat  "ib_write_lat $X -n 10"         "ib_write_lat $X -n 10 $G1_0"         tap10 "$RF"
    pair roce-ib_read_bw    "ib_read_bw $X -s 4096 -n 16"   "ib_read_bw $X -s 4096 -n 16 $G1_0"   tap10 "$RF"
    pair roce-ib_read_lat   "ib_read_lat $X -n 10"          "ib_read_lat $X -n 10 $G1_0"          tap10 "$RF"
    pair roce-ib_atomic_bw_fetch_add "ib_atomic_bw $X -n 16 -A FETCH_AND_ADD" "ib_atomic_bw $X -n 16 -A FETCH_AND_ADD $G1_0" tap10 "$RF"
    pair roce-ib_atomic_bw_cmp_swap  "ib_atomic_bw $X -n 16 -A CMP_AND_SWAP"  "ib_atomic_bw $X -n 16 -A CMP_AND_SWAP $G1_0"  tap10 "$RF"
    # rdma_cm over RoCE (CM MADs on QP1 over UDP 4791)
    pair roce-rdma_cm_ib_write_lat "ib_write_lat -d rxe0 -R -n 10" "ib_write_lat -d rxe0 -R -n 10 $G1_0" tap10 "$RF"
    # iWARP: siw on eth1 (10.77.1.x); iWARP needs rdma_cm (-R)
    pair iwarp-rping        "rping -s -a $G1_1 -C 3 -S 64 -v" "rping -c -a $G1_1 -C 3 -S 64 -v" tap11 "tcp port 7174"
    pair iwarp-ib_send_bw   "ib_send_bw -d siw0 -R -s 4096 -n 16"  "ib_send_bw -d siw0 -R -s 4096 -n 16 $G1_1"  tap11 "tcp port 18515"
    pair iwarp-ib_write_bw  "ib_write_bw -d siw0 -R -s 4096 -n 16" "ib_write_bw -d siw0 -R -s 4096 -n 16 $G1_1" tap11 "tcp port 18515"
    pair iwarp-ib_read_lat  "ib_read_lat -d siw0 -R -n 10"         "ib_read_lat -d siw0 -R -n 10 $G1_1"         tap11 "tcp port 18515"
    pair iwarp-ib_read_bw   "ib_read_bw -d siw0 -R -s 4096 -n 16"  "ib_read_bw -d siw0 -R -s 4096 -n 16 $G1_1"  tap11 "tcp port 18515"
}

bench() {   # default sizes/iterations, no capture
    for t in ib_write_bw ib_write_lat ib_read_lat ib_read_bw ib_send_bw ib_send_lat; do
        pair "bench-rxe-$t" "$t -d rxe0 -x 1" "$t -d rxe0 -x 1 $G1_0"
        pair "bench-siw-$t" "$t -d siw0 -R" "$t -d siw0 -R $G1_1"
    done
}

ipid() {   # IPv4 ID / DF of host-kernel UDP sends vs rxe's own packets
    log "host UDP socket sends to $G2_0:4791 (captured on br0)"
    capture_start br0 "$P/host-udp-socket-ipid.pcap" "udp port 4791"
    ip netns exec "$NS" python3 - "$G2_0" <<'EOF'
import socket, sys
dst = (sys.argv[1], 4791)
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)          # unconnected
for i in range(3): s.sendto(b'py-unconnected-%d' % i, dst)
c = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); c.connect(dst)   # connected
for i in range(3): c.send(b'py-connected-%d' % i)
EOF
    mkdir -p "$R/java" && cat > "$R/java/UdpId.java" <<'EOF'
import java.net.*; import java.nio.ByteBuffer; import java.nio.channels.DatagramChannel;
public class UdpId { public static void main(String[] a) throws Exception {
  InetSocketAddress dst = new InetSocketAddress(a[0], 4791);
  try (DatagramSocket s = new DatagramSocket()) {                       // unconnected
    for (int i = 0; i < 3; i++) { byte[] b = ("java-DatagramSocket-unconnected-" + i).getBytes();
      s.send(new DatagramPacket(b, b.length, dst)); } }
  try (DatagramChannel ch = DatagramChannel.open()) {                   // unconnected channel
    for (int i = 0; i < 3; i++) ch.send(ByteBuffer.wrap(("java-DatagramChannel-unconnected-" + i).getBytes()), dst); }
  try (DatagramChannel ch = DatagramChannel.open()) { ch.connect(dst); // connected channel
    for (int i = 0; i < 3; i++) ch.write(ByteBuffer.wrap(("java-DatagramChannel-connected-" + i).getBytes())); }
}}
EOF
    ip netns exec "$NS" java "$R/java/UdpId.java" "$G2_0"
    capture_stop "$P/host-udp-socket-ipid.pcap"
    {
      echo "# host-kernel UDP sends (src 10.77.0.1): ip.id, DF, payload"
      tshark -r "$P/host-udp-socket-ipid.pcap" --disable-protocol infiniband -o data.show_as_text:TRUE -T fields -e ip.src -e ip.dst -e ip.id -e ip.flags.df -e ip.ttl -e data.text 2>/dev/null
      echo "# rxe packets (guests): distinct (ip.src, ip.id, DF) samples from roce-ib_write_bw.pcap"
      tshark -r "$P/roce-ib_write_bw.pcap" -T fields -e ip.src -e ip.id -e ip.flags.df -e ip.ttl -e ip.dsfield 2>/dev/null | head -n 12
    } > "$R/ipid.txt"
    cat "$R/ipid.txt"
}

decode() {
    for f in "$P"/*.pcap; do
        local b; b=$(basename "$f" .pcap)
        tshark -r "$f" -V > "$R/decode-$b.txt" 2>&1
        { echo "# $f"; tshark -r "$f" 2>/dev/null | awk '{ $1=$2=""; print }' | sed -E 's/^ +//' |
            sed -E 's/ (QP=|PSN=|Seq=|Ack=|Len=|Win=|TSval=|TSecr=)[^ ]*//g' | sort | uniq -c | sort -rn | head -n 25; } > "$R/summary-$b.txt"
    done
}

if ! $VM status | grep -q 'g2 running'; then
    t0=$(date +%s); $VM up 2 | tee -a "$R/prove.log"; echo "boot of 2 guests: $(( $(date +%s) - t0 ))s" | tee -a "$R/prove.log"
fi
case "$what" in
    captures) captures; decode ;;
    bench) bench ;;
    ipid) ipid ;;
    decode) decode ;;
    all) captures; ipid; decode; bench ;;
esac

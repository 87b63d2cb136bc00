#!/bin/bash
# interop/rdmacore-rdmacm.sh - rdma_cm over the rdma-core provider (librdmacm through FFM) against Linux's
# rdma_cm applications: guests 1 and 2 of the interop harness, jrdma (this build and the host's JDK, shared
# over 9p) in guest 1 on rxe0 (RoCE) and siw0 (iWARP), rdma-core's rping and perftest 4.5 (-R) in guest 2,
# both roles; then, in guest 1 alone, RdmaCmConnectionTest (rdma_cm between two contexts of one device) on
# rxe0 and siw0 and the conformance suite on siw0 (whose QPs connect only through rdma_cm).
#
# usage: interop/rdmacore-rdmacm.sh [--no-build] [--keep] [--attempts N] [GROUP...]
#   GROUP       unit, rping, perf, tck (default: all four, in that order)
#   --no-build  use the build as it is (else: ./mvnw package -DskipTests of jrdma-tools and jrdma-rdmacore)
#   --keep      leave the guests running (by default they are stopped again if this script started them)
#   --attempts  tries per perftest case (default 2): perftest -R over siw sometimes hangs in its own handshake
# Env: JDK (a JDK 25 or newer; default $JAVA_HOME), VM (the harness's vm.sh), SHARE, CACHE, RUN, NS, VCPUS
#      (1 unless set), as for vm.sh; OUT (results, default interop/results/rdmacore-rdmacm-<UTC time>);
#      TCK_CLASSES (the TCK subclasses to run on siw0; default all that apply to iWARP); RPING_SIZES (4096);
#      PERF_TESTS (write_bw send_bw read_lat); PERF_DEVICES (rxe0 siw0); PERF_BW_SIZES (the bandwidth tests'
#      message sizes, 65536); CAPTURE=1 (each perf case's traffic, captured on guest 1's tap in the harness's
#      namespace, the first 160 bytes of each frame, into $OUT/<case>.pcap; siw's TERMINATEs are decoded from it
#      into $OUT/<case>.terminate when tshark is there).
# Needs root (vm.sh). Exit status 0 when every case passed. Run it under the guests' lock when they are shared:
#   flock /path/to/vm.lock interop/rdmacore-rdmacm.sh
set -euo pipefail

. "$(dirname "$0")/lib.sh"
rdmacore_args rdmacore-rdmacm.sh "$@"
OUT=${OUT:-$INTEROP/results/rdmacore-rdmacm-$(date -u +%Y%m%dT%H%M%SZ)}
attempts=2 groups=()
set -- "${ARGS[@]}"
while [ $# -gt 0 ]; do
    case "$1" in
        --attempts) attempts=$2; shift ;;
        unit|rping|perf|tck) groups+=("$1") ;;
        *) echo "rdmacore-rdmacm.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
    esac
    shift
done
[ ${#groups[@]} -gt 0 ] || groups=(unit rping perf tck)
rdmacore_checks
rdmacore_build jrdma-tools,jrdma-rdmacore

# --- what the guests see under /mnt/host/rdmacore: the tools, the test classes and their classpath, the JDK
rdmacore_share_tools rdmacore
rdmacore_share_tck rdmacore
rdmacore_guests 2 rdmacore

mkdir -p "$OUT"
{ "$VM" exec 1 'uname -r; rdma link show; dpkg-query -W libibverbs1 librdmacm1 rdmacm-utils perftest'
  echo "host: $(uptime)"; echo "commit: $(cd "$ROOT" && git rev-parse --short HEAD)$(cd "$ROOT" && git diff --quiet || echo +dirty)"
} > "$OUT/guest.txt"

# C1 only and the serial collector: a JVM under TCG with one vCPU starts in a minute, not two (no figure is taken here)
J="$(rdmacore_jrdma rdmacore -XX:TieredStopAtLevel=1 -XX:+UseSerialGC)"
declare -A IP=([rxe0,1]=10.77.0.11 [rxe0,2]=10.77.0.12 [siw0,1]=10.77.1.11 [siw0,2]=10.77.1.12)
: > "$OUT/summary.md"
rc=0
result() { # case verdict detail
    printf '| %s | %s | %s |\n' "$1" "$2" "$3" | tee -a "$OUT/summary.md"
    [ "$2" = PASS ] || rc=1
}

# pair NAME SERVER_GUEST SERVER_CMD CLIENT_GUEST CLIENT_CMD [READY]: the server in the background; when READY (a
# regex) is given, the client starts once the server's output has it (a JVM under TCG takes a minute to start),
# else it is retried (every second, at most 60 times) while it is refused because the server does not listen yet;
# outputs in $OUT/NAME.server and $OUT/NAME.client; returns 0 when both exited 0
pair() {
    local name=$1 sg=$2 scmd=$3 cg=$4 ccmd=$5 ready=${6:-} i crc=1 src=0
    "$VM" exec "$sg" "timeout 300 bash -c '$scmd'" > "$OUT/$name.server" 2>&1 &
    local spid=$!
    if [ -n "$ready" ]; then
        for i in $(seq 1 240); do
            grep -qE "$ready" "$OUT/$name.server" && break
            kill -0 $spid 2>/dev/null || break
            sleep 1
        done
    fi
    for i in $(seq 1 60); do
        crc=0
        "$VM" exec "$cg" "timeout 240 bash -c '$ccmd'" > "$OUT/$name.client" 2>&1 || crc=$?
        [ $crc = 0 ] && break
        kill -0 $spid 2>/dev/null || break   # the server is gone: no point in trying again
        grep -qiE 'refused|REJECTED|reason 8|unable to perform rdma_client|connect error' \
            "$OUT/$name.client" || break     # not "nobody listens yet": a real failure
        cp "$OUT/$name.client" "$OUT/$name.client.try$i"
        sleep 1
    done
    wait $spid || src=$?
    [ $crc = 0 ] && [ $src = 0 ]
}

lines() { grep -c "$1" "$2" 2>/dev/null || true; }

# capture_start DEVICE NAME: tcpdump on guest 1's tap of DEVICE (rxe0: tap10, siw0: tap11) in the harness's namespace,
# the first 160 bytes of each frame (headers and a credit WRITE's 4 bytes), into $OUT/NAME.pcap; its pid in NAME.tcpdump
capture_start() {
    local tap=tap10; [ "$1" = siw0 ] && tap=tap11
    "$VM" ns sh -c "echo \$\$ > '$OUT/$2.tcpdump'; exec timeout 600 tcpdump --immediate-mode -i $tap -s 160 -U -w '$OUT/$2.pcap'" \
        > "$OUT/$2.tcpdump.txt" 2>&1 &
    local i; for i in $(seq 1 50); do grep -q 'listening on' "$OUT/$2.tcpdump.txt" 2>/dev/null && break; sleep 0.1; done
}

# capture_stop NAME: ends the tcpdump capture_start began (by its pid), and decodes the TERMINATEs in its capture
capture_stop() {
    [ -s "$OUT/$1.tcpdump" ] || return 0
    kill -INT "$(cat "$OUT/$1.tcpdump")" 2>/dev/null || true
    local i; for i in $(seq 1 50); do kill -0 "$(cat "$OUT/$1.tcpdump")" 2>/dev/null || break; sleep 0.1; done
    rm -f "$OUT/$1.tcpdump"
    if command -v tshark > /dev/null; then
        tshark -r "$OUT/$1.pcap" -Y 'iwarp_rdma.opcode == 0x07' -V 2>/dev/null \
            | grep -E '^Frame|Layer|Error|Terminate|Etype|Code|Hdr' > "$OUT/$1.terminate" || true
    fi
}

for group in "${groups[@]}"; do
    case $group in
    unit)
        for dev in rxe0 siw0; do
            "$VM" exec 1 "cd /tmp && ulimit -l unlimited && /mnt/host/rdmacore/jdk/bin/java -Xmx256m -Xshare:off \
                --enable-native-access=ALL-UNNAMED --add-opens java.base/sun.nio.ch=ALL-UNNAMED \
                -Djrdma.tck.rdmacore.device=$dev \
                -cp '$TCK_CP' \
                TckMain io.jrdma.rdmacore.RdmaCmConnectionTest" > "$OUT/unit-$dev.txt" 2>&1 && v=PASS || v=FAIL
            result "RdmaCmConnectionTest on $dev (two contexts of guest 1)" $v "$(tail -1 "$OUT/unit-$dev.txt")"
        done ;;
    rping)
        for dev in rxe0 siw0; do
            for S in ${RPING_SIZES:-4096}; do
                n="rping-$dev-jserver-$S"
                if pair "$n" 1 "$J rping -s -d -a ${IP[$dev,1]} -D $dev -S $S -v --timeout 120" \
                        2 "rping -c -a ${IP[$dev,1]} -C 10 -S $S -v -V" "listening on"; then
                    c=$(lines 'ping data:' "$OUT/$n.client"); s=$(lines 'server ping data:' "$OUT/$n.server")
                    [ "$c" = 10 ] && [ "$s" = 10 ] && v=PASS || v=FAIL
                    result "jrdma rping -s -D $dev <- Linux rping -c -C 10 -S $S" $v "client ping lines $c, server $s"
                else
                    result "jrdma rping -s -D $dev <- Linux rping -c -C 10 -S $S" FAIL "exit status (see $n.*)"
                fi
                n="rping-$dev-jclient-$S"
                if pair "$n" 2 "rping -s -a ${IP[$dev,2]} -S $S -v" \
                        1 "$J rping -c -a ${IP[$dev,2]} -D $dev -C 10 -S $S -v -V --timeout 120"; then
                    c=$(lines 'ping data:' "$OUT/$n.client"); s=$(lines 'server ping data:' "$OUT/$n.server")
                    [ "$c" = 10 ] && [ "$s" = 10 ] && v=PASS || v=FAIL
                    result "jrdma rping -c -D $dev -> Linux rping -s (-C 10 -S $S)" $v "client ping lines $c, server $s"
                else
                    result "jrdma rping -c -D $dev -> Linux rping -s (-C 10 -S $S)" FAIL "exit status (see $n.*)"
                fi
            done
        done ;;
    perf)
        for dev in ${PERF_DEVICES:-rxe0 siw0}; do
            for t in ${PERF_TESTS:-write_bw send_bw read_lat}; do
              case $t in *_lat) sizes=2 ;; *) sizes=${PERF_BW_SIZES:-65536} ;; esac
              for s in $sizes; do
                opt="-s $s -n 500"
                # perftest takes -d's device for its own parameters: without it, the first device's (rxe0's, IB), even
                # where rdma_cm then connects over siw0, and an ib_send_bw that thinks itself on IB neither writes nor
                # expects iWARP's receive credits (ctx_alloc_credit), which jrdma on siw0 does (2026-11-26 14:20)
                for role in jserver jclient; do
                    n="perf-$dev-$t-$role"
                    case $t/$s in *_lat/2|*_bw/65536) ;; *) n="$n-s$s" ;; esac
                    v=FAIL detail="exit status (see $n.*)"
                    for a in $(seq 1 "$attempts"); do
                        [ "${CAPTURE:-0}" = 1 ] && capture_start "$dev" "$n.attempt$a"
                        if [ $role = jserver ]; then
                            ok=0; pair "$n" 1 "$J perf $t -R -d $dev $opt --timeout 120" 2 "ib_$t -R -d $dev $opt ${IP[$dev,1]}" "Waiting for client" || ok=$?
                        else
                            ok=0; pair "$n" 2 "ib_$t -R -d $dev $opt" 1 "$J perf $t -R -d $dev $opt --timeout 120 ${IP[$dev,2]}" || ok=$?
                        fi
                        if [ $ok = 0 ] && grep -A3 '#bytes' "$OUT/$n.client" | grep -qE '^ *[0-9]+ +[0-9]+'; then
                            v=PASS; detail="$(grep -A3 '#bytes' "$OUT/$n.client" | grep -E '^ *[0-9]+ +[0-9]+' | head -1 | tr -s ' ')"
                            [ "$a" = 1 ] || detail="$detail (attempt $a)"
                            break
                        fi
                        [ "${CAPTURE:-0}" = 1 ] && capture_stop "$n.attempt$a"
                        for f in server client; do cp "$OUT/$n.$f" "$OUT/$n.$f.attempt$a" 2>/dev/null || true; done
                    done
                    [ "${CAPTURE:-0}" = 1 ] && [ $v = PASS ] && capture_stop "$n.attempt$a"
                    what="jrdma perf $t -R -d $dev -s $s as $([ $role = jserver ] && echo server || echo client) with ib_$t -R -d $dev"
                    result "$what" $v "$detail"
                done
              done
            done
        done ;;
    tck)
        TCK=${TCK_CLASSES:-"io.jrdma.rdmacore.tck.RdmaCoreConnectionTest io.jrdma.rdmacore.tck.RdmaCoreDataPathTest
          io.jrdma.rdmacore.tck.RdmaCoreCompletionChannelTest io.jrdma.rdmacore.tck.RdmaCoreErrorTest
          io.jrdma.rdmacore.tck.RdmaCoreOrderingTest io.jrdma.rdmacore.tck.RdmaCoreSrqTest
          io.jrdma.rdmacore.tck.RdmaCoreAsyncEventTest io.jrdma.rdmacore.tck.RdmaCoreUnsupportedVerbsTest"}
        "$VM" exec 1 "cd /tmp && ulimit -l unlimited && /mnt/host/rdmacore/jdk/bin/java -Xmx256m -Xshare:off \
            --enable-native-access=ALL-UNNAMED --add-opens java.base/sun.nio.ch=ALL-UNNAMED \
            -Djrdma.tck.rdmacore.device=siw0 -Djrdma.tck.rdmacore.manyQps=${MANY_QPS:-32} \
            -cp '$TCK_CP' \
            TckMain $(echo $TCK)" > "$OUT/tck-siw0.txt" 2>&1 && v=PASS || v=FAIL
        result "the TCK on siw0 (connections through rdma_cm)" $v "$(tail -1 "$OUT/tck-siw0.txt")" ;;
    esac
done
echo "results in $OUT"
exit $rc

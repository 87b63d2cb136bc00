#!/usr/bin/env bash
# Interop suite of rdma_cm over RoCE: rdma-core's rping, rdma_server/rdma_client and perftest 4.5 with -R against jrdma, both
# directions, with a Linux Soft-RoCE (rxe) peer: the connections are made by the InfiniBand CM (MADs to
# QP 1 over RoCEv2), with IPv4 and IPv6 link-local addresses. See interop/README.md.
#
#   interop/run-rdmacm.sh [options]                 peer = guest 1 of the QEMU harness in interop/harness
#   interop/run-rdmacm.sh --vm VM.SH [options]      the same with another copy of the harness (its vm.sh)
#   interop/run-rdmacm.sh --ssh root@HOST [options] peer = any Linux host with rxe (or a RoCE NIC) and the tools
#
# Options:
#   --vm VM.SH         the harness's vm.sh (or its directory); its CACHE/RUN env vars pass through
#   --ssh TARGET       ssh destination of the peer host (key-based login)
#   --peer-ip IP       the peer's IPv4 address on its RoCE interface (vm: 10.77.0.11)
#   --peer-if IF       the peer's RoCE interface (eth0), for its IPv6 link-local address
#   --peer-dev DEV     the peer's RDMA device (rxe0)
#   --local-if IF      the local interface facing the peer (vm: br0); jrdma's device is roce_IF
#   --only REGEX       run only the cases whose name matches
#   --quick            one size per test
#   --attempts N       tries per case (default 2)
#   --out DIR          results directory (default interop/results/rdmacm-<UTC time>)
#   --jrdma PATH       the jrdma launcher (default: ./jrdma of this checkout)
# Every case captures UDP 4791; a case fails if either side exits non-zero, the expected output is missing,
# or tshark does not decode the capture's CM MADs cleanly (a REQ, a REP and an RTU, no malformed MAD).
# Exit status: 0 when every case passed.
# Needs root (tcpdump) and, on this side: apt-get install tcpdump tshark iproute2.
set -uo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/.." && pwd)
VMDIR="" SSH="" PEER_IP="" PEER_IF=eth0 PEER_DEV=rxe0 LOCAL_IF="" ONLY="" QUICK=0 OUT="" ATTEMPTS=2
JRDMA="$ROOT/jrdma"
while [ $# -gt 0 ]; do
  case "$1" in
    --vm) VMDIR=$2; shift ;;
    --ssh) SSH=$2; shift ;;
    --peer-ip) PEER_IP=$2; shift ;;
    --peer-if) PEER_IF=$2; shift ;;
    --peer-dev) PEER_DEV=$2; shift ;;
    --local-if) LOCAL_IF=$2; shift ;;
    --only) ONLY=$2; shift ;;
    --quick) QUICK=1 ;;
    --attempts) ATTEMPTS=$2; shift ;;
    --out) OUT=$2; shift ;;
    --jrdma) JRDMA=$2; shift ;;
    -h|--help) sed -n '2,26p' "$0"; exit 0 ;;
    *) echo "interop/run-rdmacm.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
  esac
  shift
done

. "$HERE/lib.sh"
connect_peer interop/run-rdmacm.sh 10.77.0.11
need_tools interop/run-rdmacm.sh timeout:coreutils tcpdump:tcpdump tshark:tshark ip:iproute2 ss:iproute2 bc:bc

OUT=${OUT:-$HERE/results/rdmacm-$(date -u +%Y%m%dT%H%M%SZ)}
mkdir -p "$OUT"
SUMMARY="$OUT/summary.md"
LOCAL_DEV="roce_$LOCAL_IF"
LOCAL_IP4=$(here ip -4 -o addr show dev "$LOCAL_IF" | awk '{print $4}' | cut -d/ -f1 | grep -F "${PEER_IP%.*}." | head -1)
LOCAL_IP6=$(here ip -6 -o addr show dev "$LOCAL_IF" scope link | awk '{print $4}' | cut -d/ -f1 | head -1)
PEER_IP6=$(peer "ip -6 -o addr show dev $PEER_IF scope link" | awk '{print $4}' | cut -d/ -f1 | head -1)
[ -n "$LOCAL_IP4" ] || { echo "no IPv4 address of $LOCAL_IF in ${PEER_IP%.*}.0/24" >&2; exit 2; }
[ -n "$LOCAL_IP6" ] || { echo "no IPv6 link-local address on $LOCAL_IF: enable IPv6 there (sysctl net.ipv6.conf.$LOCAL_IF.disable_ipv6=0)" >&2; exit 2; }
[ -n "$PEER_IP6" ] || { echo "the peer has no IPv6 link-local address on $PEER_IF" >&2; exit 2; }
here "$JRDMA" devices | grep -q "$LOCAL_DEV" || { echo "jrdma has no device $LOCAL_DEV" >&2; exit 2; }

# cm_check PCAP -> "" or what is wrong with the IB CM MADs as tshark decodes them
cm_check() {
  local counts
  # the MADs only (QP 1): Wireshark 4.0 marks some of rxe's own small RC SENDs "Malformed" (the golden
  # capture of two Linux peers has them too), and the data packets are cut at the capture's snap length
  counts=$(tshark -r "$1" -V -Y 'infiniband.bth.destqp == 1' 2>/dev/null | awk '
    /CM ConnectRequest/ { req++ } /CM ConnectReply/ { rep++ } /CM ReadyToUse/ { rtu++ }
    /CM DisconnectRequest/ { dreq++ } /CM DisconnectReply/ { drep++ } /CM ConnectReject/ { rej++ }
    /Malformed Packet/ { bad++ } /Expert Info \(Error/ && !/Checksum/ { bad++ }   # rxe sends IPv6 with UDP checksum 0
    END { printf "%d %d %d %d %d %d %d %d\n", NR, req, rep, rtu, dreq, drep, rej, bad }')
  local lines req rep rtu dreq drep rej bad
  read -r lines req rep rtu dreq drep rej bad <<< "$counts"
  [ "${lines:-0}" -gt 0 ] || { echo "capture unreadable;"; return; }
  [ "$req" -gt 0 ] && [ "$rep" -gt 0 ] && [ "$rtu" -gt 0 ] || echo -n "CM decoded: $req REQ, $rep REP, $rtu RTU;"
  [ "$bad" -gt 0 ] && echo -n "$bad malformed packets;"
  echo "REQ $req REP $rep RTU $rtu DREQ $dreq DREP $drep REJ $rej" > "$1.cm"
}

PASS=0 FAIL=0
echo "| case | result | seconds | notes |" > "$SUMMARY"
echo "|---|---|---|---|" >> "$SUMMARY"

# one_try DIR SERVER_SIDE(jrdma|peer) SERVER_CMD CLIENT_CMD PORT CHECK -> sets NOTE ("" = pass)
one_try() {
  local dir=$1 side=$2 scmd=$3 ccmd=$4 port=$5 check=$6 rc_s rc_c
  mkdir -p "$dir"
  peer "pkill -x rping; pkill -x rdma_server; pkill -f '^ib_(write|read|send)_'; true" >/dev/null 2>&1
  here timeout 300 tcpdump --immediate-mode -B 65536 -i "$LOCAL_IF" -U -s 512 -w "$dir/capture.pcap" "udp port 4791" > "$dir/tcpdump.txt" 2>&1 &
  local cap=$! waited=0
  until grep -q 'listening on' "$dir/tcpdump.txt" 2>/dev/null || [ $waited -ge 100 ]; do sleep 0.1; waited=$((waited + 1)); done
  NOTE=""
  if [ "$side" = jrdma ]; then
    here timeout 180 $scmd > "$dir/server.txt" 2>&1 &
  else
    peer "timeout 180 $scmd" > "$dir/server.txt" 2>&1 &
  fi
  local spid=$!
  # rdma_cm over RoCE listens on no TCP port: give the server time to bind its listener
  sleep "$([ "$side" = jrdma ] && echo 4 || echo 3)"
  if [ "$side" = jrdma ]; then
    peer "timeout 150 $ccmd" > "$dir/client.txt" 2>&1; rc_c=$?
  else
    here timeout 150 $ccmd > "$dir/client.txt" 2>&1; rc_c=$?
  fi
  if [ "$side" = peer ] && [ $rc_c -ne 0 ]; then
    peer "pkill -f '^ib_(write|read|send)_'; pkill -x rping; true" >/dev/null 2>&1
  fi
  wait $spid; rc_s=$?
  sleep 0.5
  pkill -INT -f "tcpdump --immediate-mode -B 65536 -i $LOCAL_IF -U -s 512 -w $dir/capture.pcap" 2>/dev/null
  wait $cap 2>/dev/null
  [ $rc_s -ne 0 ] && NOTE="$NOTE server exit $rc_s;"
  [ $rc_c -ne 0 ] && NOTE="$NOTE client exit $rc_c;"
  NOTE="$NOTE$($check "$dir")$(cm_check "$dir/capture.pcap")"
}

# run_case NAME SERVER_SIDE SERVER_CMD CLIENT_CMD PORT CHECK
run_case() {
  local name=$1
  if [ -n "$ONLY" ] && ! [[ $name =~ $ONLY ]]; then return; fi
  local t0 secs i failed=""
  t0=$(date +%s.%N)
  for i in $(seq 1 "$ATTEMPTS"); do
    one_try "$OUT/$name/try$i" "${@:2}"
    [ -z "$NOTE" ] && break
    failed="$failed try $i:$NOTE"
  done
  secs=$(echo "$(date +%s.%N) - $t0" | bc)
  if [ -z "$NOTE" ]; then
    PASS=$((PASS + 1))
    printf '| %s | pass | %.1f | %s%s |\n' "$name" "$secs" "$(cat "$OUT/$name/try$i/capture.pcap.cm" 2>/dev/null)" \
      "${failed:+; passed on try $i; earlier:$failed}" >> "$SUMMARY"
  else
    FAIL=$((FAIL + 1))
    printf '| %s | **FAIL** | %.1f | %s |\n' "$name" "$secs" "$failed" >> "$SUMMARY"
  fi
  tail -1 "$SUMMARY"
}

J="$JRDMA"
RPING_C=10
rping_check() {
  local d=$1 c s
  c=$(grep -c '^ping data: rdma-ping-[0-9]*: ' "$d/client.txt")
  s=$(grep -c '^server ping data: rdma-ping-[0-9]*: ' "$d/server.txt")
  [ "$c" -eq $RPING_C ] || echo -n "client printed $c of $RPING_C pings;"
  [ "$s" -eq $RPING_C ] || echo -n "server printed $s of $RPING_C pings;"
  grep -q 'data mismatch' "$d/client.txt" && echo -n "data mismatch;"
}
BW_ROW='^ *[0-9]+[[:space:]]+[0-9]+[[:space:]]+[0-9.]+[[:space:]]+[0-9.]+[[:space:]]+[0-9.]+'
perf_check_both() {
  grep -Eq "$BW_ROW" "$1/client.txt" || echo -n "no result row from the client;"
  grep -Eq "$BW_ROW" "$1/server.txt" || echo -n "no result row from the server;"
}
perf_check_client() {
  grep -Eq "$BW_ROW" "$1/client.txt" || echo -n "no result row from the client;"
}

# IPv4 addresses: rxe's IPv4-mapped GIDs; jrdma sends with IP ID 0 and the harness's rule makes the wire agree
if [ -n "$VMDIR" ]; then "$VM" ipid-zero on >/dev/null; fi

# --- rping -v -V over RoCE: every ping READ by the server and WRITTEN back, IPv4 and IPv6 link-local
if [ $QUICK = 1 ]; then RPING_SIZES="64"; else RPING_SIZES="64 4096 65535"; fi
for s in $RPING_SIZES; do
  run_case "rping-S$s-ipv4-jrdma-server" jrdma \
    "$J rping -s -a $LOCAL_IP4 -D $LOCAL_DEV -S $s -v --timeout 120" \
    "rping -c -a $LOCAL_IP4 -S $s -C $RPING_C -v -V" 7174 rping_check
  run_case "rping-S$s-ipv4-jrdma-client" peer \
    "rping -s -a $PEER_IP -S $s -v" \
    "$J rping -c -a $PEER_IP -D $LOCAL_DEV -S $s -C $RPING_C -v -V --timeout 120" 7174 rping_check
  run_case "rping-S$s-ipv6-jrdma-server" jrdma \
    "$J rping -s -a $LOCAL_IP6%$LOCAL_IF -D $LOCAL_DEV -S $s -v --timeout 120" \
    "rping -c -a $LOCAL_IP6%$PEER_IF -S $s -C $RPING_C -v -V" 7174 rping_check
  run_case "rping-S$s-ipv6-jrdma-client" peer \
    "rping -s -a $PEER_IP6%$PEER_IF -S $s -v" \
    "$J rping -c -a $PEER_IP6%$LOCAL_IF -D $LOCAL_DEV -S $s -C $RPING_C -v -V --timeout 120" 7174 rping_check
done

# --- perftest -R: the comm connection, then the test's, both through the IB CM
perftest_pair() { # test size
  local t=$1 s=$2 n check=perf_check_both
  case $t in *_lat) n=200 ;; *) n=500 ;; esac
  case $t in read_lat) check=perf_check_client ;; esac
  run_case "$t-R-s$s-ipv4-jrdma-server" jrdma \
    "$J perf $t -R -d $LOCAL_DEV -s $s -n $n --timeout 120" \
    "ib_$t -R -d $PEER_DEV -s $s -n $n $LOCAL_IP4" 18515 $check
  run_case "$t-R-s$s-ipv4-jrdma-client" peer \
    "ib_$t -R -d $PEER_DEV -s $s -n $n" \
    "$J perf $t -R -d $LOCAL_DEV -s $s -n $n --timeout 120 $PEER_IP" 18515 $check
  # (no IPv6 perftest -R cases: perftest 6.06's rdma_cm client resolves IPv4 only -- "Address family for
  #  hostname not supported" for fe80::...%eth0, --ipv6 or not -- and its server listens on 0.0.0.0, so it
  #  rejects an IPv6 request with REJ 28; rping and rdma_server/rdma_client cover IPv6 both ways)
}
if [ $QUICK = 1 ]; then SIZES="4096"; else SIZES="2 4096 65536"; fi
for t in write_bw send_bw read_lat; do for s in $SIZES; do perftest_pair $t "$s"; done; done

# --- librdmacm's rdma_server / rdma_client examples: one 16-byte SEND each way, then a disconnect
rdmacm_check() {
  grep -q 'rdma_client: end 0' "$1/client.txt" || echo -n "client did not end 0;"
  grep -q 'rdma_server: end 0' "$1/server.txt" || echo -n "server did not end 0;"
}
run_case "rdma_server-ipv4-jrdma-server" jrdma \
  "$J rdma_server -s $LOCAL_IP4 -D $LOCAL_DEV --timeout 120" \
  "rdma_client -s $LOCAL_IP4 -p 7471" 7471 rdmacm_check
run_case "rdma_client-ipv4-jrdma-client" peer \
  "rdma_server -p 7471" \
  "$J rdma_client -s $PEER_IP -D $LOCAL_DEV --timeout 120" 7471 rdmacm_check
run_case "rdma_server-ipv6-jrdma-server" jrdma \
  "$J rdma_server -s $LOCAL_IP6%$LOCAL_IF -D $LOCAL_DEV --timeout 120" \
  "rdma_client -s $LOCAL_IP6%$PEER_IF -p 7471" 7471 rdmacm_check
# (no IPv6 case with Linux's rdma_server: it listens on 0.0.0.0 only, and rejects an IPv6 request with REJ 28)

# --- the peer goes away mid-transfer: Linux rping's client is killed while it pings; jrdma's server must
#     learn it from the connection manager (the kernel's DREQ for the dead process's connection)
disconnect_case() {
  local name=disconnect-mid-transfer dir note=""
  if [ -n "$ONLY" ] && ! [[ $name =~ $ONLY ]]; then return; fi
  dir="$OUT/$name"; mkdir -p "$dir"
  local t0; t0=$(date +%s.%N)
  here timeout 60 "$J" rping -s -d -a "$LOCAL_IP4" -D "$LOCAL_DEV" -S 4096 --timeout 30 > "$dir/server.txt" 2>&1 &
  local spid=$!
  sleep 4
  peer "timeout -s KILL 5 rping -c -a $LOCAL_IP4 -S 4096 -C 0; true" > "$dir/client.txt" 2>&1
  wait $spid; local rc=$?
  grep -q 'server DISCONNECT EVENT' "$dir/server.txt" || note="no DISCONNECT event at jrdma's server (exit $rc);"
  [ "$rc" -eq 0 ] || note="$note jrdma's server exited $rc;"
  local secs; secs=$(echo "$(date +%s.%N) - $t0" | bc)
  if [ -z "$note" ]; then
    PASS=$((PASS + 1)); printf '| %s | pass | %.1f | rping killed after 5 s of pings: jrdma got DISCONNECTED |\n' "$name" "$secs" >> "$SUMMARY"
  else
    FAIL=$((FAIL + 1)); printf '| %s | **FAIL** | %.1f | %s |\n' "$name" "$secs" "$note" >> "$SUMMARY"
  fi
  tail -1 "$SUMMARY"
}
disconnect_case

if [ -n "$VMDIR" ]; then "$VM" ipid-zero off >/dev/null; fi
{
  echo
  echo "passed $PASS, failed $FAIL — $(date -u +%Y-%m-%dT%H:%MZ), peer ${VMDIR:+QEMU guest 1 }${SSH} ($PEER_DEV at $PEER_IP), jrdma $(git -C "$ROOT" rev-parse --short HEAD)"
} >> "$SUMMARY"
tail -1 "$SUMMARY"
[ $FAIL -eq 0 ]

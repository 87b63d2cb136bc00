#!/usr/bin/env bash
# Interop suite: rdma-core's ibv_rc/uc/ud/srq_pingpong and perftest 4.5 (RC, --use-srq, and UC/UD where
# perftest has them) against jrdma, both directions,
# over RoCEv2 with a Linux rdma_rxe peer (or a RoCE NIC). See interop/README.md.
#
#   interop/run.sh [options]                 peer = guest 1 of the QEMU harness in interop/harness
#   interop/run.sh --vm VM.SH [options]      the same with another copy of the harness (its vm.sh)
#   interop/run.sh --ssh root@HOST [options] peer = any Linux host with rxe/RoCE and the tools
#
# Options:
#   --vm VM.SH         the harness's vm.sh (or its directory); its CACHE/RUN env vars pass through
#   --ssh TARGET       ssh destination of the peer host (key-based login)
#   --peer-ip IP       the peer's IPv4 address for the TCP side channel (vm: 10.77.0.11)
#   --peer-dev DEV     the peer's RDMA device (rxe0)
#   --peer-gid6 N      the peer's IPv6 link-local GID index (0)
#   --peer-gid4 N      the peer's IPv4-mapped GID index (1)
#   --local-if IF      the local interface facing the peer (vm: br0); jrdma's device is roce_IF
#   --only REGEX       run only the cases whose name matches
#   --quick            one size (1024) per test instead of the whole matrix
#   --qp-timeout N     perftest's -u on both sides (default 14, about 67 ms): a shared or emulated
#                      host that stalls a side for longer makes the peer retransmit, rightly
#   --out DIR          results directory (default interop/results/<UTC time>)
#   --jrdma PATH       the jrdma launcher (default: ./jrdma of this checkout)
# Env: SRQ_PP_SIZES   the ibv_srq_pingpong sizes (default "1 1024 4096"; --quick: 1024)
# Exit status: 0 when every case passed.
# Needs root (tcpdump) and, on this side: apt-get install tcpdump iproute2; the harness's own packages are
# listed in interop/harness/README.md.
set -uo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/.." && pwd)
QPT=14 VMDIR="" SSH="" PEER_IP="" PEER_DEV=rxe0 PEER_GID6=0 PEER_GID4=1 LOCAL_IF="" ONLY="" QUICK=0 OUT=""
JRDMA="$ROOT/jrdma"
while [ $# -gt 0 ]; do
  case "$1" in
    --vm) VMDIR=$2; shift ;;
    --ssh) SSH=$2; shift ;;
    --peer-ip) PEER_IP=$2; shift ;;
    --peer-dev) PEER_DEV=$2; shift ;;
    --peer-gid6) PEER_GID6=$2; shift ;;
    --peer-gid4) PEER_GID4=$2; shift ;;
    --local-if) LOCAL_IF=$2; shift ;;
    --only) ONLY=$2; shift ;;
    --quick) QUICK=1 ;;
    --qp-timeout) QPT=$2; shift ;;
    --out) OUT=$2; shift ;;
    --jrdma) JRDMA=$2; shift ;;
    -h|--help) sed -n '2,26p' "$0"; exit 0 ;;
    *) echo "interop/run.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
  esac
  shift
done

. "$HERE/lib.sh"
connect_peer interop/run.sh 10.77.0.11
need_tools interop/run.sh timeout:coreutils tcpdump:tcpdump ip:iproute2 ss:iproute2
if [ -n "$VMDIR" ]; then
  LINK_DOWN() { "$VM" ns ip link set tap10 "$1"; }
else
  LINK_DOWN() { peer "ip link set \$(ip -o route get $LOCAL_IP4 | sed -n 's/.* dev \\([^ ]*\\).*/\\1/p') $1"; }
fi

OUT=${OUT:-$HERE/results/$(date -u +%Y%m%dT%H%M%SZ)}
mkdir -p "$OUT"
SUMMARY="$OUT/summary.md"
LOCAL_DEV="roce_$LOCAL_IF"
LOCAL_IP4=$(here ip -4 -o addr show dev "$LOCAL_IF" | awk '{print $4}' | cut -d/ -f1 | grep -F "${PEER_IP%.*}." | head -1)
LOCAL_IP6=$(here ip -6 -o addr show dev "$LOCAL_IF" scope link | awk '{print $4}' | cut -d/ -f1 | head -1)
[ -n "$LOCAL_IP4" ] || { echo "no IPv4 address of $LOCAL_IF in ${PEER_IP%.*}.0/24" >&2; exit 2; }
[ -n "$LOCAL_IP6" ] || { echo "no IPv6 link-local address on $LOCAL_IF: enable IPv6 there (sysctl net.ipv6.conf.$LOCAL_IF.disable_ipv6=0)" >&2; exit 2; }

DEVINFO=$(here "$JRDMA" devices -v 2>&1)
gid_of() { # index of the GID whose address is $1 in jrdma's table of $LOCAL_DEV
  echo "$DEVINFO" | awk -v dev="$LOCAL_DEV" -v ip="$1" '
    /^hca_id:/ {on = ($2 == dev)}
    on && /GID\[/ && index($0, "(" ip ")") {match($0, /GID\[ *[0-9]+\]/); g = substr($0, RSTART, RLENGTH); gsub(/[^0-9]/, "", g); print g; exit}'
}
LOCAL_GID6=$(gid_of "$LOCAL_IP6")
LOCAL_GID4=$(gid_of "$LOCAL_IP4")
[ -n "$LOCAL_GID6" ] && [ -n "$LOCAL_GID4" ] || { echo "jrdma has no GID for $LOCAL_IP6 / $LOCAL_IP4 on $LOCAL_DEV:"; echo "$DEVINFO"; exit 2; } >&2

# Counters that must not move. completer_retry_err is judged from the capture instead: rxe arms
# its retransmit timer once and does not restart it on ACKs, so it retries now and then even
# against itself (see testdata/pcaps: rxe-to-rxe runs show the same); `jrdma pcap --timeout-us`
# fails the case when a retry was jrdma's fault (a PSN left unacknowledged for a whole timeout).
# duplicate_request likewise: under software emulation the guest sometimes leaves a message
# unacknowledged for longer than the QP timeout (rxe's ack_deferred throttling), and jrdma then
# rightly retransmits; the capture check fails any retransmission by jrdma that came sooner.
STRICT="out_of_seq_request rcvd_seq_err retry_exceeded_err retry_rnr_exceeded_err rcvd_rnr_err"
COUNTERS="$STRICT completer_retry_err duplicate_request"
peer_counters() {
  peer "cd /sys/class/infiniband/$PEER_DEV/ports/1/hw_counters && for c in $COUNTERS; do echo \$c=\$(cat \$c 2>/dev/null || echo 0); done" | tr '\n' ' '
}
counter_delta() { # before after -> "name+N ..." for every counter that moved
  local b=$1 a=$2 out="" c vb va
  for c in $COUNTERS; do
    vb=$(echo "$b" | tr ' ' '\n' | sed -n "s/^$c=//p"); va=$(echo "$a" | tr ' ' '\n' | sed -n "s/^$c=//p")
    [ "${va:-0}" != "${vb:-0}" ] && [[ " $STRICT " == *" $c "* ]] && out="$out $c+$(( ${va:-0} - ${vb:-0} ))"
  done
  echo "$out"
}

PASS=0 FAIL=0
echo "| case | result | seconds | notes |" > "$SUMMARY"
echo "|---|---|---|---|" >> "$SUMMARY"

# run_case NAME SERVER_SIDE(jrdma|peer) SERVER_CMD CLIENT_CMD FROM_IP
run_case() {
  local name=$1 side=$2 scmd=$3 ccmd=$4 from=$5
  if [ -n "$ONLY" ] && ! [[ $name =~ $ONLY ]]; then return; fi
  local dir="$OUT/$name" t0 rc_s rc_c note="" before after delta
  mkdir -p "$dir"
  peer "pkill -x 'ibv_(rc|uc|ud|srq)_pingpong'; pkill -f '^ib_(write|read|send|atomic)_'; true" >/dev/null 2>&1
  before=$(peer_counters)
  here timeout 300 tcpdump --immediate-mode -B 131072 -i "$LOCAL_IF" -U -s 0 -w "$dir/capture.pcap" "udp port 4791" > "$dir/tcpdump.txt" 2>&1 &
  local cap=$! waited=0
  until grep -q 'listening on' "$dir/tcpdump.txt" 2>/dev/null || [ $waited -ge 100 ]; do sleep 0.1; waited=$((waited + 1)); done
  t0=$(date +%s.%N)
  if [ "$side" = jrdma ]; then
    here timeout 240 $scmd > "$dir/server.txt" 2>&1 &
  else
    peer "timeout 240 $scmd" > "$dir/server.txt" 2>&1 &
  fi
  local spid=$!
  if ! wait_listen "$side" 18515 30; then
    note="server never listened"
  fi
  if [ "$side" = jrdma ]; then
    peer "timeout 240 $ccmd" > "$dir/client.txt" 2>&1; rc_c=$?
  else
    here timeout 240 $ccmd > "$dir/client.txt" 2>&1; rc_c=$?
  fi
  wait $spid; rc_s=$?
  local secs; secs=$(echo "$(date +%s.%N) - $t0" | bc)
  sleep 0.3
  pkill -INT -f "tcpdump --immediate-mode -B 131072 -i $LOCAL_IF -U -s 0 -w $dir/capture.pcap" 2>/dev/null
  wait $cap 2>/dev/null
  after=$(peer_counters)
  delta=$(counter_delta "$before" "$after")
  [ $rc_s -ne 0 ] && note="$note server exit $rc_s;"
  [ $rc_c -ne 0 ] && note="$note client exit $rc_c;"
  if grep -q '[1-9][0-9]* packets dropped by kernel' "$dir/tcpdump.txt"; then
    note="$note capture incomplete ($(grep 'dropped by kernel' "$dir/tcpdump.txt"));"
  fi
  if ! here "$JRDMA" pcap "$dir/capture.pcap" --from "$from" --timeout-us $(( (4096 << QPT) / 1000 )) > "$dir/icrc.txt" 2>&1; then
    if [ "${SILENT_RECEIVER:-0}" = 1 ] && tail -1 "$dir/icrc.txt" | grep -q '^jrdma pcap: no RoCEv2 packet from'; then
      # a UC/UD bandwidth receiver sends nothing back (no ACKs in UC or UD): nothing of jrdma's to check
      echo "from $from: no packets, as a UC/UD receiver should (no ACKs)" >> "$dir/icrc.txt"
    else
      note="$note ICRC: $(tail -1 "$dir/icrc.txt");"
    fi
  fi
  # rxe NAKs one request out of sequence after each RNR NAK it sent to a stream of requests in flight (the next
  # request after the refused one; check_psn counts it once per episode): that many out_of_seq_request are the RNR's
  rnr=$(tail -1 "$dir/icrc.txt" | sed -n 's/.*the peer sent \([0-9]*\) RNR NAK.*/\1/p')
  oos=$(echo "$delta" | tr ' ' '\n' | sed -n 's/^out_of_seq_request+//p')
  if [ -n "$oos" ] && [ -n "$rnr" ] && [ "$oos" -le "$rnr" ]; then
    delta=$(echo "$delta" | tr ' ' '\n' | grep -v '^out_of_seq_request+' | tr '\n' ' ' | sed 's/ *$//')
    [ -n "$delta" ] && delta=" ${delta# }"
  fi
  [ -n "$delta" ] && note="$note peer counters:$delta;"
  if [ -z "$note" ]; then
    PASS=$((PASS + 1))
    printf '| %s | pass | %.1f | %s |\n' "$name" "$secs" "jrdma sent $(tail -1 "$dir/icrc.txt" | sed 's/^from [^:]*: //')" >> "$SUMMARY"
    rm -f "$dir/capture.pcap"
  else
    FAIL=$((FAIL + 1))
    printf '| %s | **FAIL** | %.1f | %s |\n' "$name" "$secs" "$note" >> "$SUMMARY"
  fi
  tail -1 "$SUMMARY"
}

if [ $QUICK = 1 ]; then SIZES="1024"; PP_SIZES="1024"; else SIZES="2 1024 4096 65536"; PP_SIZES="1 1024 4096 65536"; fi
J="$JRDMA"

# --- ibv_rc_pingpong, IPv6 link-local GIDs, MTU 1024
for s in $PP_SIZES; do
  n=50
  run_case "pingpong-s$s-jrdma-server" jrdma \
    "$J pingpong -d $LOCAL_DEV -g $LOCAL_GID6 -s $s -m 1024 -n $n --timeout 120" \
    "ibv_rc_pingpong -d $PEER_DEV -g $PEER_GID6 -s $s -m 1024 -n $n $LOCAL_IP4" "$LOCAL_IP6"
  run_case "pingpong-s$s-jrdma-client" peer \
    "ibv_rc_pingpong -d $PEER_DEV -g $PEER_GID6 -s $s -m 1024 -n $n" \
    "$J pingpong -d $LOCAL_DEV -g $LOCAL_GID6 -s $s -m 1024 -n $n --timeout 120 $PEER_IP" "$LOCAL_IP6"
done

# --- perftest, IPv6 link-local GIDs
perftest_pair() { # test size family(6|4) gid_local gid_peer from [connection type]
  local t=$1 s=$2 fam=$3 gl=$4 gp=$5 from=$6 conn=${7:-} n extra="" tag=$1
  case $t in *_lat) n=100 ;; *) n=200 ;; esac
  case $t in atomic_*) extra="-A FETCH_AND_ADD" ;; esac
  extra="$extra -u $QPT"
  if [ -n "$conn" ]; then extra="$extra -c $conn"; tag="$t-$conn"; fi
  local sz="-s $s"
  case $t in atomic_*) sz="" ;; esac
  # a UC/UD bandwidth server only receives, and UC/UD receivers send no ACKs
  case "$conn:$t" in UC:*_bw | UD:*_bw) SILENT_RECEIVER=1 ;; esac
  run_case "$tag-s$s-ipv$fam-jrdma-server" jrdma \
    "$J perf $t -d $LOCAL_DEV -x $gl $sz -n $n $extra --timeout 120" \
    "ib_$t -d $PEER_DEV -x $gp $sz -n $n $extra $LOCAL_IP4" "$from"
  SILENT_RECEIVER=0
  run_case "$tag-s$s-ipv$fam-jrdma-client" peer \
    "ib_$t -d $PEER_DEV -x $gp $sz -n $n $extra" \
    "$J perf $t -d $LOCAL_DEV -x $gl $sz -n $n $extra --timeout 120 $PEER_IP" "$from"
}
for t in write_bw read_bw send_bw write_lat read_lat send_lat; do
  for s in $SIZES; do perftest_pair $t "$s" 6 "$LOCAL_GID6" "$PEER_GID6" "$LOCAL_IP6"; done
done
for t in atomic_bw atomic_lat; do perftest_pair $t 8 6 "$LOCAL_GID6" "$PEER_GID6" "$LOCAL_IP6"; done

# --- UC and UD (issue 12): rdma-core's uc/ud pingpong and perftest -c UC|UD, IPv6 link-local GIDs.
# UD messages are one packet: sizes up to the path MTU (rxe on a 1500-byte link: 1024).
if [ $QUICK = 1 ]; then UD_SIZES="1024"; else UD_SIZES="1 1024"; fi
for s in $PP_SIZES; do
  n=50
  run_case "uc-pingpong-s$s-jrdma-server" jrdma \
    "$J pingpong --uc -d $LOCAL_DEV -g $LOCAL_GID6 -s $s -m 1024 -n $n --timeout 120" \
    "ibv_uc_pingpong -d $PEER_DEV -g $PEER_GID6 -s $s -m 1024 -n $n $LOCAL_IP4" "$LOCAL_IP6"
  run_case "uc-pingpong-s$s-jrdma-client" peer \
    "ibv_uc_pingpong -d $PEER_DEV -g $PEER_GID6 -s $s -m 1024 -n $n" \
    "$J pingpong --uc -d $LOCAL_DEV -g $LOCAL_GID6 -s $s -m 1024 -n $n --timeout 120 $PEER_IP" "$LOCAL_IP6"
done
for s in $UD_SIZES; do
  n=50
  run_case "ud-pingpong-s$s-jrdma-server" jrdma \
    "$J pingpong --ud -d $LOCAL_DEV -g $LOCAL_GID6 -s $s -n $n --timeout 120" \
    "ibv_ud_pingpong -d $PEER_DEV -g $PEER_GID6 -s $s -n $n $LOCAL_IP4" "$LOCAL_IP6"
  run_case "ud-pingpong-s$s-jrdma-client" peer \
    "ibv_ud_pingpong -d $PEER_DEV -g $PEER_GID6 -s $s -n $n" \
    "$J pingpong --ud -d $LOCAL_DEV -g $LOCAL_GID6 -s $s -n $n --timeout 120 $PEER_IP" "$LOCAL_IP6"
done
for t in send_bw send_lat; do
  for s in $UD_SIZES; do perftest_pair $t "$s" 6 "$LOCAL_GID6" "$PEER_GID6" "$LOCAL_IP6" UD; done
done
# UC send_bw stops at 4 KiB: at 64 KiB the emulated guest drops some of the 12,800 back-to-back
# packets jrdma sends (every one with a correct ICRC), UC loses those messages by design, and ib_send_bw
# then waits for them forever (seen 2026-11-25; two rxe peers would do the same)
if [ $QUICK = 1 ]; then UC_SEND_SIZES="1024"; else UC_SEND_SIZES="2 1024 4096"; fi
for s in $SIZES; do perftest_pair write_bw "$s" 6 "$LOCAL_GID6" "$PEER_GID6" "$LOCAL_IP6" UC; done
for s in $UC_SEND_SIZES; do perftest_pair send_bw "$s" 6 "$LOCAL_GID6" "$PEER_GID6" "$LOCAL_IP6" UC; done
# --- shared receive queues, IPv6 link-local GIDs: ibv_srq_pingpong (16 QPs on one SRQ, 256 addresses
#     exchanged each way) and ib_send_bw --use-srq (every QP's receives from one SRQ).
# ibv_srq_pingpong stops at 4 KiB: at 64 KiB (16 QPs, 64 packets each in flight) jrdma as server falls
# into the emulated guest's retransmission storm until RETRY_EXC_ERR; two rxe guests need 217 ms an iteration (docs/interop.md)
if [ -n "${SRQ_PP_SIZES:-}" ]; then :; elif [ $QUICK = 1 ]; then SRQ_PP_SIZES="1024"; else SRQ_PP_SIZES="1 1024 4096"; fi
for s in $SRQ_PP_SIZES; do
  n=200
  run_case "srq-pingpong-s$s-jrdma-server" jrdma \
    "$J pingpong --srq -d $LOCAL_DEV -g $LOCAL_GID6 -s $s -m 1024 -n $n --timeout 120" \
    "ibv_srq_pingpong -d $PEER_DEV -g $PEER_GID6 -s $s -m 1024 -n $n $LOCAL_IP4" "$LOCAL_IP6"
  run_case "srq-pingpong-s$s-jrdma-client" peer \
    "ibv_srq_pingpong -d $PEER_DEV -g $PEER_GID6 -s $s -m 1024 -n $n" \
    "$J pingpong --srq -d $LOCAL_DEV -g $LOCAL_GID6 -s $s -m 1024 -n $n --timeout 120 $PEER_IP" "$LOCAL_IP6"
done
for s in $SIZES; do
  run_case "send_bw-use-srq-s$s-jrdma-server" jrdma \
    "$J perf send_bw --use-srq -q 4 -d $LOCAL_DEV -x $LOCAL_GID6 -s $s -n 200 -u $QPT --timeout 120" \
    "ib_send_bw --use-srq -q 4 -d $PEER_DEV -x $PEER_GID6 -s $s -n 200 -u $QPT $LOCAL_IP4" "$LOCAL_IP6"
  run_case "send_bw-use-srq-s$s-jrdma-client" peer \
    "ib_send_bw --use-srq -q 4 -d $PEER_DEV -x $PEER_GID6 -s $s -n 200 -u $QPT" \
    "$J perf send_bw --use-srq -q 4 -d $LOCAL_DEV -x $LOCAL_GID6 -s $s -n 200 -u $QPT --timeout 120 $PEER_IP" "$LOCAL_IP6"
done

# --- IPv4: needs the peer to see IP ID 0 from us (vm.sh ipid-zero on; see README)
if [ -n "$VMDIR" ]; then "$VM" ipid-zero on >/dev/null; fi
for t in write_bw read_lat; do
  for s in $SIZES; do perftest_pair $t "$s" 4 "$LOCAL_GID4" "$PEER_GID4" "$LOCAL_IP4"; done
done

# --- the peer disappears mid-transfer: RETRY_EXC_ERR within the timeout, then a clean reconnect
linkdown_case() {
  local name=linkdown-retry-exceeded dir
  if [ -n "$ONLY" ] && ! [[ $name =~ $ONLY ]]; then return; fi
  dir="$OUT/$name"; mkdir -p "$dir"
  peer "pkill -f '^ib_write_bw'; true" >/dev/null 2>&1
  peer "timeout 120 ib_write_bw -d $PEER_DEV -x $PEER_GID6 -s 65536 -n 100000" > "$dir/server.txt" 2>&1 &
  local spid=$! note="" t0 t1
  wait_listen peer 18515 30 || note="server never listened;"
  here timeout 100 "$J" perf write_bw -d "$LOCAL_DEV" -x "$LOCAL_GID6" -s 65536 -n 100000 --timeout 90 "$PEER_IP" > "$dir/client.txt" 2>&1 &
  local cpid=$!
  # wait for data to flow (the table header is printed once the QPs are connected)
  local deadline=$(( $(date +%s) + 60 ))
  until grep -q 'BW peak\|#bytes' "$dir/client.txt" 2>/dev/null || [ "$(date +%s)" -ge $deadline ]; do sleep 0.2; done
  sleep 2
  t0=$(date +%s.%N)
  LINK_DOWN down
  wait $cpid; local rc=$?
  t1=$(date +%s.%N)
  LINK_DOWN up
  peer "pkill -f '^ib_write_bw'; true" >/dev/null 2>&1; wait $spid 2>/dev/null
  local secs; secs=$(echo "$t1 - $t0" | bc)
  grep -q 'RETRY_EXC_ERR' "$dir/client.txt" || note="$note no RETRY_EXC_ERR in jrdma's output (exit $rc);"
  [ "$rc" -ne 0 ] || note="$note jrdma exited 0;"
  # recovery: a new connection works at once
  sleep 1
  peer "timeout 60 ibv_rc_pingpong -d $PEER_DEV -g $PEER_GID6 -s 1024 -m 1024 -n 20" > "$dir/recover-server.txt" 2>&1 &
  local ppid=$!
  wait_listen peer 18515 30 || note="$note recovery server never listened;"
  here timeout 60 "$J" pingpong -d "$LOCAL_DEV" -g "$LOCAL_GID6" -s 1024 -m 1024 -n 20 "$PEER_IP" > "$dir/recover-client.txt" 2>&1 || note="$note reconnect failed;"
  wait $ppid || note="$note recovery peer failed;"
  if [ -z "$note" ]; then
    PASS=$((PASS + 1)); printf '| %s | pass | %.1f | RETRY_EXC_ERR %.1f s after link down; reconnect ok |\n' "$name" "$secs" "$secs" >> "$SUMMARY"
  else
    FAIL=$((FAIL + 1)); printf '| %s | **FAIL** | %.1f | %s |\n' "$name" "$secs" "$note" >> "$SUMMARY"
  fi
  tail -1 "$SUMMARY"
}
linkdown_case
if [ -n "$VMDIR" ]; then "$VM" ipid-zero off >/dev/null; fi

{
  echo
  echo "passed $PASS, failed $FAIL — $(date -u +%Y-%m-%dT%H:%MZ), peer ${VMDIR:+QEMU guest 1 }${SSH} ($PEER_DEV), jrdma $(git -C "$ROOT" rev-parse --short HEAD)"
} >> "$SUMMARY"
tail -1 "$SUMMARY"
[ $FAIL -eq 0 ]

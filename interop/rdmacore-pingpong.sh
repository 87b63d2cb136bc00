#!/bin/bash
# interop/rdmacore-pingpong.sh - `jrdma pingpong -d rxe0` over the rdma-core provider (Linux rxe through
# libibverbs, no jrdma engine) against rdma-core's ibv_rc_pingpong: jrdma (this build and the host's JDK,
# shared over 9p) in guest 1, ibv_rc_pingpong in guest 2, in both roles, with the data checked (-c).
#
# usage: interop/rdmacore-pingpong.sh [--no-build] [--keep] [SIZE...]   (default sizes: 1 4096 65536)
#   --no-build  use jrdma-tools/target as it is (else: ./mvnw package of jrdma-tools and what it needs)
#   --keep      leave the guests running (by default they are stopped again if this script started them)
# Env: JDK, VM, SHARE, CACHE, RUN, NS, VCPUS (1 unless set) as for vm.sh; OUT (results folder, default
#      interop/results/rdmacore-pingpong-<UTC time>); ITERS (iterations per run, default 500); GID (the GID
#      index both use, default 1: the IPv4-mapped one).
# Needs root (vm.sh). Exit status 0 when every run passed.
set -euo pipefail

. "$(dirname "$0")/lib.sh"
rdmacore_args rdmacore-pingpong.sh "$@"
OUT=${OUT:-$INTEROP/results/rdmacore-pingpong-$(date -u +%Y%m%dT%H%M%SZ)}
ITERS=${ITERS:-500} GID=${GID:-1}
sizes=()
for a in "${ARGS[@]}"; do
    case "$a" in
        -*) echo "rdmacore-pingpong.sh: unknown argument '$a' (see --help)" >&2; exit 2 ;;
        *) sizes+=("$a") ;;
    esac
done
[ ${#sizes[@]} -gt 0 ] || sizes=(1 4096 65536)
rdmacore_checks
rdmacore_build jrdma-tools
rdmacore_share_tools rdmacore
rdmacore_guests 2 rdmacore

mkdir -p "$OUT"
"$VM" exec 1 'uname -r; rdma link show; dpkg-query -W libibverbs1 ibverbs-utils' > "$OUT/guest.txt"
G1=10.77.0.11 G2=10.77.0.12
JRDMA="$(rdmacore_jrdma rdmacore) pingpong"


rc=0
for s in "${sizes[@]}"; do
    opt="-d rxe0 -g $GID -s $s -n $ITERS -c"
    r=0; rdmacore_pair "ibv_rc_pingpong" 2 "ibv_rc_pingpong $opt" 1 "$JRDMA $opt $G2" "$OUT/s$s-jrdma-client" || r=$?
    echo "size $s, jrdma client -> ibv_rc_pingpong server: $([ $r = 0 ] && echo PASS || echo "FAIL ($r)"); $(grep -h 'iters in' "$OUT/s$s-jrdma-client.client" | head -1)"
    [ $r = 0 ] || rc=1
    r=0; rdmacore_pair "ibv_rc_pingpong" 1 "$JRDMA $opt" 2 "ibv_rc_pingpong $opt $G1" "$OUT/s$s-jrdma-server" || r=$?
    echo "size $s, ibv_rc_pingpong client -> jrdma server: $([ $r = 0 ] && echo PASS || echo "FAIL ($r)"); $(grep -h 'iters in' "$OUT/s$s-jrdma-server.client" | head -1)"
    [ $r = 0 ] || rc=1
done
echo "results in $OUT"
exit $rc

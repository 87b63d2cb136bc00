#!/bin/bash
# interop/rdmacore-privdata.sh - how much MPA private data a connection between jrdma's own soft-iWARP engine and
# Linux siw carries (interop/rdmacore/SiwPrivateData.java): guests 1 and 2 of the interop harness; a client on jrdma's
# engine (iwarp_eth1) in guest 1 against a listener over the rdma-core provider on siw0 (Linux siw through librdmacm)
# in guest 2, one connection per length; then the reverse (the engine listening in guest 1, siw0's client in guest 2).
# The engine's client appends its 16-byte jrdma trailer when it fits (application data up to 236 bytes: 256 on the
# wire with MPA's 4 IRD/ORD bytes), so 236 is the longest MPA Request it sends.
#
# usage: interop/rdmacore-privdata.sh [--no-build] [--keep]
# Env: JDK, VM, SHARE, CACHE, RUN, NS, VCPUS (1 unless set) as for vm.sh; OUT (results, default
#      interop/results/rdmacore-privdata-<UTC time>); LENS (the engine client's lengths: 200 236 237 252 253);
#      REV_LENS (siw0's client's: 200 235 251).
# Needs root (vm.sh). Exit status 0 when both sides ran (the outcome per length is in summary.txt).
set -euo pipefail

. "$(dirname "$0")/lib.sh"
rdmacore_args rdmacore-privdata.sh "$@"
OUT=${OUT:-$INTEROP/results/rdmacore-privdata-$(date -u +%Y%m%dT%H%M%SZ)}
LENS=${LENS:-200 236 237 252 253} REV_LENS=${REV_LENS:-200 235 251}
rdmacore_checks
rdmacore_build jrdma-rdmacore
rdmacore_share_jdk rdmacore
rdmacore_share_tck rdmacore
"$JDK/bin/javac" -d "$SHARE/rdmacore/privdata" -cp "$SHARE/rdmacore/tck/classes:$(
    cd "$SHARE/rdmacore/tck" && for m in jrdma-*; do printf '%s:' "$SHARE/rdmacore/tck/$m"; done)" \
    "$INTEROP/rdmacore/SiwPrivateData.java"
rdmacore_guests 2 rdmacore
mkdir -p "$OUT"
{ "$VM" exec 1 'uname -r; rdma link show; dpkg-query -W libibverbs1 librdmacm1'
  echo "host: $(uptime)"; echo "commit: $(cd "$ROOT" && git rev-parse --short HEAD)$(cd "$ROOT" && git diff --quiet || echo +dirty)"
} > "$OUT/guest.txt"

P="cd /tmp && ulimit -l unlimited && /mnt/host/rdmacore/jdk/bin/java -Xmx256m -Xshare:off -XX:TieredStopAtLevel=1 \
    -XX:+UseSerialGC --enable-native-access=ALL-UNNAMED --add-opens java.base/sun.nio.ch=ALL-UNNAMED \
    -cp /mnt/host/rdmacore/privdata:$TCK_CP SiwPrivateData"
# side NAME SERVER_GUEST SERVER_ARGS CLIENT_GUEST CLIENT_ARGS: the server, then the client once it listens
side() {
    "$VM" exec "$2" "timeout 400 bash -c '$P $3'" > "$OUT/$1.server" 2>&1 &
    local spid=$! i
    for i in $(seq 1 240); do
        grep -q 'listening on' "$OUT/$1.server" 2>/dev/null && break
        kill -0 $spid 2>/dev/null || break # the server is gone
        sleep 1
    done
    "$VM" exec "$4" "timeout 300 bash -c '$P $5'" > "$OUT/$1.client" 2>&1 || true
    wait $spid || true
}
n() { echo $#; }
side engine-to-siw 2 "server siw0 10.77.1.12 7471 $(n $LENS)" 1 "client iwarp_eth1 10.77.1.12 7471 $LENS"
side siw-to-engine 1 "server iwarp_eth1 10.77.1.11 7472 $(n $REV_LENS)" 2 "client siw0 10.77.1.11 7472 $REV_LENS"
{ for f in engine-to-siw siw-to-engine; do echo "== $f"; grep -hE 'bytes of private data|failed|no connection' \
    "$OUT/$f.client" "$OUT/$f.server" || true; done; } | tee "$OUT/summary.txt"
echo "results in $OUT"

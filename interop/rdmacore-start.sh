#!/bin/bash
# interop/rdmacore-start.sh - how long a jrdma tool takes to start in a guest, and Rdma.resolve by address
# on Linux rxe and siw: in guest 1 of the interop harness (rxe0 on eth0 10.77.0.11, siw0 on eth1 10.77.1.11),
# with this build and the host's JDK shared into the guest over 9p.
#
#   1. start time: the seconds from the start of `jrdma perf write_bw -d rxe0` (a server) until TCP port 18515
#      listens, measured as rdmacore_pair measures a server (rdmacore_wait_listening, lib.sh), for this build
#      with its AOT cache ("aot"), this build without it ("lazy"), and the build of --before DIR ("before",
#      no cache), the order rotating each round; each server is killed once it listens;
#   2. `jrdma devices --resolve` for guest 1's addresses on rxe0 and siw0, the host's bridge addresses reached
#      through each (10.77.0.1, 10.77.1.1: rdma_resolve_addr) and 127.0.0.1;
#   3. jrdma-rdmacore's ResolveTest on both devices (every IPv4 address of each resolves to it and its GID entry),
#      and RdmaCoreAllocationTest on rxe0 (no allocation per operation on the data path).
#
# usage: interop/rdmacore-start.sh [--no-build] [--keep] [--rounds N] [--before DIR] [--skip-resolve]
#   --rounds N    rounds of step 1 (default 2)
#   --before DIR  a jrdma-tools.jar and its lib/ of another build (e.g. main's) to compare with; none: no "before"
# Env: JDK (a JDK 25 or newer; default $JAVA_HOME), VM, SHARE, CACHE, RUN, NS, VCPUS (1 unless set) as for vm.sh;
#      OUT (results folder, default interop/results/rdmacore-start-<UTC time>); DEADLINE_S (default 1200: no round
#      starts after this many seconds from the script's start).
# Needs root (vm.sh). Exit status 0 when every step ran and passed.
set -uo pipefail

. "$(dirname "$0")/lib.sh"
rdmacore_args rdmacore-start.sh "$@"
OUT=${OUT:-$INTEROP/results/rdmacore-start-$(date -u +%Y%m%dT%H%M%SZ)}
ROUNDS=2 BEFORE="" RESOLVE=1
set -- "${ARGS[@]}"
while [ $# -gt 0 ]; do
    case "$1" in
        --rounds) ROUNDS=$2; shift ;;
        --before) BEFORE=$2; shift ;;
        --skip-resolve) RESOLVE=0 ;;
        *) echo "rdmacore-start.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
    esac
    shift
done
T0=$(date +%s)
rdmacore_checks
rdmacore_build jrdma-tools,jrdma-rdmacore || exit 1
rdmacore_share_tools rdmacore
[ "$RESOLVE" = 0 ] || rdmacore_share_tck rdmacore
if [ -n "$BEFORE" ]; then
    [ -f "$BEFORE/jrdma-tools.jar" ] || { echo "rdmacore-start.sh: no jrdma-tools.jar in $BEFORE" >&2; exit 2; }
    rm -rf "$SHARE/before" && mkdir -p "$SHARE/before/jrdma"
    cp -p "$BEFORE/jrdma-tools.jar" "$SHARE/before/jrdma/" && cp -rp "$BEFORE/lib" "$SHARE/before/jrdma/lib"
fi
rdmacore_guests 1 rdmacore
mkdir -p "$OUT"
"$VM" exec 1 'uname -r; nproc; rdma link show' > "$OUT/guest.txt" 2>&1

AOT_CMD="$(rdmacore_jrdma rdmacore)"
LAZY_CMD="${AOT_CMD/-XX:AOTCache=jrdma.aot -Xlog:aot\*=off -Xlog:cds\*=off /}"
BEFORE_CMD="${LAZY_CMD/cd \/mnt\/host\/rdmacore\/jrdma/cd /mnt/host/before/jrdma}"
variants=(aot lazy)
[ -n "$BEFORE" ] && variants+=(before)
[ "$AOT_CMD" != "$LAZY_CMD" ] || { echo "rdmacore-start.sh: no AOT cache was made: 'aot' is not measured" >&2; variants=("${variants[@]:1}"); }

listen_once() { # NAME CMD: one server, its seconds to listen into $OUT/listen.txt
    local name=$1 cmd=$2 spid java=/mnt/host/rdmacore/jdk/bin/java
    cmd=${cmd/$java/echo \$\$ > /tmp/jrdma-start.pid; exec $java} # the server's pid: the shell's, then java's
    "$VM" exec 1 "timeout 400 bash -c '$cmd perf write_bw -d rxe0 -p 18515'" > "$OUT/$name.$r.server" 2>&1 &
    spid=$!
    # as rdmacore_wait_listening, but a server that ended is not waited for
    local start; start=$(date +%s) LISTEN_AFTER=""
    while [ $(( $(date +%s) - start )) -lt 300 ] && kill -0 "$spid" 2> /dev/null; do
        if "$VM" exec 1 "ss -ltn | grep -q ':18515 '" 2> /dev/null; then LISTEN_AFTER=$(( $(date +%s) - start )); break; fi
        sleep 0.5
    done
    if [ -n "$LISTEN_AFTER" ]; then
        echo "$name round $r: listening after $LISTEN_AFTER s (load $(cut -d' ' -f1 /proc/loadavg))" | tee -a "$OUT/listen.txt"
    else
        echo "$name round $r: not listening after $(( $(date +%s) - start )) s: $(tail -n 1 "$OUT/$name.$r.server")" \
            | tee -a "$OUT/listen.txt"; rc=1
    fi
    "$VM" exec 1 'kill $(cat /tmp/jrdma-start.pid) 2>/dev/null; true' > /dev/null 2>&1
    wait "$spid" 2> /dev/null
}

rc=0
echo "rdmacore-start.sh: $(date -u '+%F %T UTC'), host load $(cut -d' ' -f1-3 /proc/loadavg); variants ${variants[*]}" \
    | tee "$OUT/listen.txt"
for r in $(seq 1 "$ROUNDS"); do
    if [ $(( $(date +%s) - T0 )) -gt "${DEADLINE_S:-1200}" ]; then
        echo "round $r not started: past DEADLINE_S" | tee -a "$OUT/listen.txt"; break
    fi
    k=${#variants[@]}
    for j in $(seq 0 $((k - 1))); do
        v=${variants[$(( (j + r - 1) % k ))]}
        case $v in
            aot) listen_once aot "$AOT_CMD" ;;
            lazy) listen_once lazy "$LAZY_CMD" ;;
            before) listen_once before "$BEFORE_CMD" ;;
        esac
    done
done

if [ "$RESOLVE" = 1 ]; then
    start=$(date +%s)
    "$VM" exec 1 "$AOT_CMD devices --resolve 10.77.0.11 10.77.1.11 10.77.0.1 10.77.1.1 127.0.0.1" \
        > "$OUT/resolve.txt" 2>&1 || rc=1
    echo "devices --resolve ($(( $(date +%s) - start )) s):"; cat "$OUT/resolve.txt"
    grep -q '^10.77.0.11 RoCEv2: rxe0 (provider rdmacore)' "$OUT/resolve.txt" || rc=1
    grep -q '^10.77.1.11 iWARP: siw0 (provider rdmacore)' "$OUT/resolve.txt" || rc=1
    grep -q '^10.77.0.1 RoCEv2: rxe0 (provider rdmacore)' "$OUT/resolve.txt" || rc=1
    grep -q '^10.77.1.1 iWARP: siw0 (provider rdmacore)' "$OUT/resolve.txt" || rc=1
    "$VM" exec 1 "cd /tmp && ulimit -l unlimited && /mnt/host/rdmacore/jdk/bin/java -Xmx256m \
        --enable-native-access=ALL-UNNAMED --add-opens java.base/sun.nio.ch=ALL-UNNAMED -cp '$TCK_CP' \
        TckMain io.jrdma.rdmacore.ResolveTest" > "$OUT/resolve-test.txt" 2>&1 || rc=1
    echo "ResolveTest:"; cat "$OUT/resolve-test.txt"
    # the data path after the change to Downcall: still no allocation per operation on rxe0
    "$VM" exec 1 "cd /tmp && ulimit -l unlimited && /mnt/host/rdmacore/jdk/bin/java -Xmx256m \
        --enable-native-access=ALL-UNNAMED --add-opens java.base/sun.nio.ch=ALL-UNNAMED -Djrdma.tck.rdmacore.device=rxe0 \
        -cp '$TCK_CP' TckMain io.jrdma.rdmacore.RdmaCoreAllocationTest" > "$OUT/allocation-rxe0.txt" 2>&1 || rc=1
    echo "RdmaCoreAllocationTest on rxe0:"; cat "$OUT/allocation-rxe0.txt"
fi
echo "rdmacore-start.sh: done $(date -u '+%F %T UTC') (exit $rc); outputs in $OUT"
exit $rc

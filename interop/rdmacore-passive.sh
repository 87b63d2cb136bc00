#!/bin/bash
# interop/rdmacore-passive.sh - what a passive `write_bw` server costs the CPU it shares with the kernel's RDMA work:
# in guest 1 of the interop harness, a server on rxe0 that only waits while `ib_write_bw` in guest 2 writes into its
# memory for a whole run (perftest's duration mode, -D 90 --margin 30); the server's CPU time (utime + stime of
# /proc/PID/stat, in clock ticks, and per thread) is read 35 s and 80 s after it listens, inside the client's
# measured middle, so the difference is what the waiting server used while the kernel served the WRITEs. Each round
# runs the C server (ib_write_bw), this build's jrdma server and, with --before DIR, another build's, in that order;
# the C client's bandwidth is kept too. A count, not a clock: it does not depend on how fast the emulation runs.
#
# usage: interop/rdmacore-passive.sh [--no-build] [--keep] [--rounds N] [--before DIR]
#   --rounds N    rounds (default 2)
#   --before DIR  a jrdma-tools.jar and its lib/ of another build (e.g. main's) to compare with
# Env: JDK (a JDK 25 or newer; default $JAVA_HOME), VM, SHARE, CACHE, RUN, NS, VCPUS (1 unless set) as for vm.sh;
#      OUT (results folder, default interop/results/rdmacore-passive-<UTC time>). Neither jrdma build gets an AOT
#      cache (RDMACORE_AOT=0), so that both start alike.
# Needs root (vm.sh). Exit status 0 when every run completed.
set -uo pipefail

. "$(dirname "$0")/lib.sh"
rdmacore_args rdmacore-passive.sh "$@"
OUT=${OUT:-$INTEROP/results/rdmacore-passive-$(date -u +%Y%m%dT%H%M%SZ)}
ROUNDS=2 BEFORE=""
set -- "${ARGS[@]}"
while [ $# -gt 0 ]; do
    case "$1" in
        --rounds) ROUNDS=$2; shift ;;
        --before) BEFORE=$2; shift ;;
        *) echo "rdmacore-passive.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
    esac
    shift
done
if [ -n "$BEFORE" ] && { [ ! -f "$BEFORE/jrdma-tools.jar" ] || [ ! -d "$BEFORE/lib" ]; }; then
    echo "rdmacore-passive.sh: --before $BEFORE has no jrdma-tools.jar and lib/" >&2; exit 2
fi
export RDMACORE_AOT=0
rdmacore_checks
rdmacore_build jrdma-tools
rdmacore_share_tools rdmacore
if [ -n "$BEFORE" ]; then
    rm -rf "$SHARE/before" && mkdir -p "$SHARE/before/jrdma"
    cp -p "$BEFORE/jrdma-tools.jar" "$SHARE/before/jrdma/" && cp -rp "$BEFORE/lib" "$SHARE/before/jrdma/lib"
fi
rdmacore_guests 2 rdmacore

mkdir -p "$OUT"
{ "$VM" exec 1 'uname -r; dpkg-query -W libibverbs1 perftest'
  echo "host: $(uptime)"; echo "commit: $(cd "$ROOT" && git rev-parse --short HEAD)$(cd "$ROOT" && git diff --quiet || echo +dirty)"
  echo "before: ${BEFORE:-none}"
} > "$OUT/guest.txt"
G1=10.77.0.11
OPT="-d rxe0 -x 1 -s 65536 -D 90 --margin 30"
JRDMA="$(rdmacore_jrdma rdmacore) perf write_bw --timeout 120"
JRDMA_BEFORE="${JRDMA/cd \/mnt\/host\/rdmacore\/jrdma/cd /mnt/host/before/jrdma}"

# ticks PROCESS: the process's utime + stime in clock ticks, then each thread's, most first
ticks() {
    "$VM" exec 1 'p=$(pgrep -x '"$1"' | head -1); [ -n "$p" ] || exit 1; awk "{print \$14+\$15}" /proc/$p/stat
        for t in /proc/$p/task/*; do echo "$(awk "{print \$14+\$15}" $t/stat) $(cat $t/comm)"; done | sort -rn'
}

rc=0
one() { # NAME SERVER_COMMAND PROCESS
    local out=$OUT/$1 p i
    rdmacore_pair "ib_write_bw" 1 "$2 $OPT" 2 "ib_write_bw $OPT $G1" "$out" &
    p=$!
    for i in $(seq 1 200); do [ -e "$out.listen" ] && break; sleep 1; done
    sleep 35; ticks "$3" > "$out.ticks1" || rc=1
    sleep 45; ticks "$3" > "$out.ticks2" || rc=1
    wait $p || rc=1
    echo "$1 done (rc so far $rc)"
}
for r in $(seq 1 "$ROUNDS"); do
    one "r$r-C" "ib_write_bw" ib_write_bw
    one "r$r-J" "$JRDMA" java
    [ -z "$BEFORE" ] || one "r$r-B" "$JRDMA_BEFORE" java
done

python3 - "$OUT" "$ROUNDS" > "$OUT/summary.md" <<'PY' || rc=1
import re, sys
out, rounds = sys.argv[1], int(sys.argv[2])

def bw(path):
    try:
        lines = open(path, errors="replace").read().splitlines()
    except OSError:
        return None
    for i, line in enumerate(lines):
        if "#bytes" in line and "BW average" in line:
            for nxt in lines[i + 1:i + 4]:
                f = nxt.split()
                if len(f) >= 5 and re.match(r"^\d+$", f[0]):
                    return float(f[3])
    return None

def ticks(path):
    """{thread or '': ticks} from a ticks file"""
    try:
        lines = open(path).read().splitlines()
    except OSError:
        return None
    d = {"": int(lines[0])}
    for l in lines[1:]:
        n, name = l.split(" ", 1)
        d[name] = d.get(name, 0) + int(n)
    return d

print("| round | server | C client's BW (MB/s) | server CPU in the 45 s window (ticks) | busiest threads (ticks) |")
print("|---|---|---|---|---|")
for r in range(1, rounds + 1):
    for k, name in (("C", "ib_write_bw"), ("J", "jrdma (this build)"), ("B", "jrdma (--before)")):
        a, b = ticks(f"{out}/r{r}-{k}.ticks1"), ticks(f"{out}/r{r}-{k}.ticks2")
        if a is None and b is None and k == "B":
            continue
        delta = {t: b[t] - a.get(t, 0) for t in b} if a and b else {}
        top = sorted(((v, t) for t, v in delta.items() if t), reverse=True)[:3]
        print(f"| {r} | {name} | {bw(f'{out}/r{r}-{k}.client')} | {delta.get('', '-')} | "
              + ", ".join(f"{t} {v}" for v, t in top) + " |")
PY
cat "$OUT/summary.md"
echo "results in $OUT"
exit $rc

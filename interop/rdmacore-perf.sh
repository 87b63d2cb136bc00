#!/bin/bash
# interop/rdmacore-perf.sh - `jrdma perf` over the rdma-core provider (-d rxe0: Linux rxe through
# libibverbs, no jrdma engine) against C perftest on the same device pair: guests 1 and 2 of the
# interop harness, jrdma (this build and the host's JDK, shared over 9p) in guest 1, perftest in guest 2,
# both roles; and C against C on the same pair in the same run, alternating, so that each Java/C ratio
# compares runs of the same sitting. Prints a table of BW average (MB/s) or t_typical (usec) per round.
#
# usage: interop/rdmacore-perf.sh [--no-build] [--keep] [--rounds N] [TEST...]
#   TEST        write_bw send_bw read_lat (default), or any of perftest's that jrdma perf has
#   --rounds N  A/B rounds per test and role (default 3)
#   --no-build  use jrdma-tools/target as it is (else: ./mvnw package of jrdma-tools and what it needs)
#   --keep      leave the guests running (by default they are stopped again if this script started them)
# Env: JDK, VM, SHARE, CACHE, RUN, NS, VCPUS (1 unless set) as for vm.sh; OUT (results folder, default
#      interop/results/rdmacore-perf-<UTC time>); SIZE_BW (65536), SIZE_LAT (2), N_BW (500), N_LAT (500);
#      WARMUP=1 gives both sides of the bandwidth tests --perform_warm_up (perftest's: a write, read or atomic bw
#      client posts tx_depth requests per QP and waits for them before it measures; send_bw ignores it).
#      DURATION=SEC replaces -n with perftest's duration mode, -D SEC, on both sides of every run (C and jrdma):
#      each run lasts SEC seconds and measures only from MARGIN seconds after its start to MARGIN seconds before
#      its end (MARGIN=SEC optional, passed as --margin; perftest's default is SEC/4, and SEC > 2*MARGIN), so a
#      JVM's JIT warm-up falls in the first margin. The bw tests then report no peak, the lat tests perftest's
#      duration table (the ratio is then of t_avg, not t_typical). Keep SEC well under the client's 200 s bound
#      less the JVM's start in a guest (25-60 s).
#      EVENTS=1 adds -e (perftest's events mode: each wait for a completion sleeps on the completion channel)
#      to both sides of every run; perftest refuses it with the WRITE tests and with -D, so give tests without
#      write_* and N_BW/N_LAT instead of DURATION.
#      PAIR_BOUND=SEC: each client is killed after SEC seconds (default 200; the JVM's start in a guest counts).
# Needs root (vm.sh) and python3. Exit status 0 when every run completed.
set -euo pipefail

. "$(dirname "$0")/lib.sh"
rdmacore_args rdmacore-perf.sh "$@"
OUT=${OUT:-$INTEROP/results/rdmacore-perf-$(date -u +%Y%m%dT%H%M%SZ)}
SIZE_BW=${SIZE_BW:-65536} SIZE_LAT=${SIZE_LAT:-2} N_BW=${N_BW:-500} N_LAT=${N_LAT:-500}
rounds=3 tests=()
set -- "${ARGS[@]}"
while [ $# -gt 0 ]; do
    case "$1" in
        --rounds) rounds=$2; shift ;;
        -*) echo "rdmacore-perf.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
        *) tests+=("$1") ;;
    esac
    shift
done
[ ${#tests[@]} -gt 0 ] || tests=(write_bw send_bw read_lat)
rdmacore_checks
rdmacore_build jrdma-tools
rdmacore_share_tools rdmacore
rdmacore_guests 2 rdmacore

mkdir -p "$OUT"
{ "$VM" exec 1 'uname -r; rdma link show; dpkg-query -W libibverbs1 perftest'
  echo "host: $(uptime)"; echo "commit: $(cd "$ROOT" && git rev-parse --short HEAD)$(cd "$ROOT" && git diff --quiet || echo +dirty)"
  echo "WARMUP=${WARMUP:-0} DURATION=${DURATION:-} MARGIN=${MARGIN:-} EVENTS=${EVENTS:-0}"
} > "$OUT/guest.txt"
G1=10.77.0.11 G2=10.77.0.12
JRDMA="$(rdmacore_jrdma rdmacore) perf"
C_TOOLS="ib_write_bw ib_send_bw ib_read_lat" # killed in the server's guest before each run

rc=0
: > "$OUT/runs.txt"
for t in "${tests[@]}"; do
    case $t in *_lat) s=$SIZE_LAT n=$N_LAT ;; *) s=$SIZE_BW n=$N_BW ;; esac
    if [ -n "${DURATION:-}" ]; then
        copt="-d rxe0 -x 1 -s $s -D $DURATION${MARGIN:+ --margin $MARGIN}"
    else
        copt="-d rxe0 -x 1 -s $s -n $n"
    fi
    [ "${WARMUP:-0}" = 1 ] && [[ $t == *_bw ]] && copt="$copt --perform_warm_up"
    if [ "${EVENTS:-0}" = 1 ]; then
        [[ $t == write_* ]] && { echo "rdmacore-perf.sh: EVENTS=1: perftest has no -e for $t (WRITE verb)" >&2; exit 2; }
        copt="$copt -e"
    fi
    for r in $(seq 1 "$rounds"); do
        # jrdma client in g1 -> C server in g2, and its baseline: C client in g1 -> C server in g2
        rdmacore_pair "$C_TOOLS" 2 "ib_$t $copt" 1 "ib_$t $copt $G2" "$OUT/$t-r$r-C-client" || rc=1
        rdmacore_pair "$C_TOOLS" 2 "ib_$t $copt" 1 "$JRDMA $t $copt --timeout 120 $G2" "$OUT/$t-r$r-J-client" || rc=1
        # jrdma server in g1 <- C client in g2, and its baseline: C server in g1 <- C client in g2
        rdmacore_pair "$C_TOOLS" 1 "ib_$t $copt" 2 "ib_$t $copt $G1" "$OUT/$t-r$r-C-server" || rc=1
        rdmacore_pair "$C_TOOLS" 1 "$JRDMA $t $copt --timeout 120" 2 "ib_$t $copt $G1" "$OUT/$t-r$r-J-server" || rc=1
        echo "$t round $r done (rc so far $rc)" | tee -a "$OUT/runs.txt"
    done
done

python3 - "$OUT" "$rounds" "${tests[@]}" > "$OUT/summary.md" <<'PY' || rc=1
import os, re, sys
out, rounds, tests = sys.argv[1], int(sys.argv[2]), sys.argv[3:]

def result(path, lat):
    """BW average [MB/s] (bw), t_typical [usec] (lat) or t_avg [usec] (lat with -D) from a perftest report, or None."""
    try:
        lines = open(path, errors="replace").read().splitlines()
    except OSError:
        return None
    for i, line in enumerate(lines):
        if "#bytes" in line and ("BW average" in line or "t_typical" in line or "t_avg" in line):
            duration_lat = "t_typical" not in line and "BW average" not in line  # #bytes #iterations t_avg tps
            for nxt in lines[i + 1:i + 4]:
                f = nxt.split()
                if len(f) >= (4 if duration_lat else 5) and re.match(r"^\d+$", f[0]):
                    return float(f[2] if duration_lat else f[4] if lat else f[3])
    return None

print("| test | role of jrdma | round | C (MB/s or usec) | jrdma (MB/s or usec) | jrdma/C |")
print("|---|---|---|---|---|---|")
for t in tests:
    lat = t.endswith("_lat")
    for role in ("client", "server"):
        ratios = []
        for r in range(1, rounds + 1):
            # the initiating side reports latency; bandwidth is read on the client (perftest prints it on both)
            side = "client"
            c = result(f"{out}/{t}-r{r}-C-{role}.{side}", lat)
            j = result(f"{out}/{t}-r{r}-J-{role}.{side}", lat)
            ratio = (j / c) if c and j else None
            if ratio:
                ratios.append(ratio)
            print(f"| {t} | {role} | {r} | {c} | {j} | {ratio:.3f} |" if ratio else f"| {t} | {role} | {r} | {c} | {j} | - |")
        if ratios:
            print(f"| {t} | {role} | min-max | | | {min(ratios):.3f}-{max(ratios):.3f} |")

def listen(path):
    try:
        return open(path).read().split()[2]
    except (OSError, IndexError):
        return "-"

print()
print("Seconds from the server's start until it listened (jrdma / C), per round:")
for t in tests:
    print(f"- {t}: " + ", ".join(f"{listen(f'{out}/{t}-r{r}-J-server.listen')} / {listen(f'{out}/{t}-r{r}-C-server.listen')}"
                                 for r in range(1, rounds + 1)))
PY
cat "$OUT/summary.md"
echo "results in $OUT"
exit $rc

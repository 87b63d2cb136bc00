#!/usr/bin/env bash
# reliability/churn.sh [CYCLES] [WARMUP] [--jrdma-cm]: connect/transfer/disconnect cycles against one server process.
#
# Starts `jrdma perf write_bw --server` (roce_lo, 4 KiB x 200 WRITEs per client; perftest's exchange, or with
# --jrdma-cm jrdma's connection manager) and one client process that runs CYCLES + WARMUP clients in a row
# (`--clients N`). The server reports its own file descriptors, threads, heap (after its last GC) and direct memory
# after every client; the script prints them after the warm-up and after the last cycle, with the server's /proc fd
# count and thread count at both points.
set -uo pipefail
CYCLES=${1:-1000}; WARMUP=${2:-20}; MODE=${3:-}
case "$MODE" in
  ""|--jrdma-cm) ;;
  *) echo "usage: reliability/churn.sh [CYCLES] [WARMUP] [--jrdma-cm]" >&2; exit 2 ;;
esac
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
out="$(mktemp -d /tmp/jrdma-churn.XXXXXX)"
port=$(( 34000 + $$ % 1000 ))
total=$((CYCLES + WARMUP))
test=(write_bw -d roce_lo -s 4096 -n 200 -p "$port" --timeout 30 $MODE)
echo "churn.sh: $(date -u '+%F %T UTC'), load $(cut -d' ' -f1-3 /proc/loadavg); $CYCLES cycles after $WARMUP warm-up ones${MODE:+ ($MODE)}"
"$here/jrdma" perf "${test[@]}" --server --clients $((total + 1)) > "$out/server.txt" 2>&1 &
server=$!
for i in $(seq 1 600); do grep -q "for client after client" "$out/server.txt" 2> /dev/null && break; sleep 0.1; done
# the server process is the java child of the launcher (or the launcher itself when it execs)
spid=$(pgrep -P "$server" java || echo "$server")
proc() { echo "fds $(ls /proc/"$spid"/fd 2> /dev/null | wc -l), threads $(awk '/^Threads/ {print $2}' /proc/"$spid"/status), rss $(awk '/^VmRSS/ {print $2 " " $3}' /proc/"$spid"/status)"; }
"$here/jrdma" perf "${test[@]}" --clients "$WARMUP" 127.0.0.1 > "$out/warmup.txt" 2>&1 || { echo "warm-up failed"; cat "$out/warmup.txt"; }
for i in $(seq 1 100); do grep -q " client $WARMUP: " "$out/server.txt" && break; sleep 0.1; done
before="$(grep " client $WARMUP: " "$out/server.txt")"; before_proc="$(proc)"
t0=$(date +%s.%N)
"$here/jrdma" perf "${test[@]}" --clients "$CYCLES" 127.0.0.1 > "$out/clients.txt" 2>&1; rc=$?
t1=$(date +%s.%N)
for i in $(seq 1 100); do grep -q " client $total: " "$out/server.txt" && break; sleep 0.1; done
after_proc="$(proc)"
after="$(grep " client $total: " "$out/server.txt")"
kill "$spid" 2> /dev/null; wait "$server" 2> /dev/null   # the server would wait for one more client
echo "clients: exit $rc, $(grep -c ': done' "$out/server.txt") of $total served, $(grep -c ': failed' "$out/server.txt") failed; $CYCLES cycles in $(awk -v a="$t0" -v b="$t1" 'BEGIN {printf "%.1f", b - a}') s"
echo "server after the warm-up:   ${before#*; }"
echo "                  (/proc)   $before_proc"
echo "server after $CYCLES cycles: ${after#*; }"
echo "                  (/proc)   $after_proc"
echo "churn.sh: done $(date -u '+%F %T UTC'), load $(cut -d' ' -f1-3 /proc/loadavg); output in $out"
[ "$rc" = 0 ] && [ "$(grep -c ': failed' "$out/server.txt")" = 0 ]

#!/usr/bin/env bash
# bench/profile.sh: counts per message for one jrdma perf pair on loopback, independent of the clock.
#
#   bench/profile.sh write_bw 65536 [--perftest] [-n ITERS] [--strace] [--jfr]
#
# Runs `jrdma perf <test>` as a server and a client process on 127.0.0.1 (jrdma's connection
# manager, or perftest's exchange with --perftest), each with -Djrdma.perf.counters=true, and prints
# per message: packets sent and received by each side, ACKs, transmit and receive system calls
# (the engine's own counts), the CPU time (user+sys) of each process, and with --strace the
# system calls `strace -c -f` saw (strace slows the run: use its counts, not its speed). With
# --jfr each process records a JFR file (-XX:StartFlightRecording) into the output directory.
set -uo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
test=${1:?test}; size=${2:?size}; shift 2
mode=cm; iters=""; strace=0; jfr=0
while [ $# -gt 0 ]; do
  case "$1" in
    --perftest) mode=perftest ;;
    -n) iters="$2"; shift ;;
    --strace) strace=1 ;;
    --jfr) jfr=1 ;;
    *) echo "profile.sh: unknown option $1" >&2; exit 2 ;;
  esac
  shift
done
JAVA_HOME="$("$here/jrdma" --java-home)" || exit 1
out="$(mktemp -d /tmp/jrdma-profile.XXXXXX)"
tools="${JRDMA_TOOLS_DIR:-$here/jrdma-tools/target}" # another build: a directory with jrdma-tools.jar and lib/
jar="$tools/jrdma-tools.jar"; lib="$tools/lib"
port=$(( 30000 + $$ % 2000 ))
run() { # run NAME ARGS...
  local name=$1; shift
  local j=()
  [ "$jfr" = 1 ] && j=(-XX:StartFlightRecording=filename="$out/$name.jfr",settings=profile)
  local cmd=("$JAVA_HOME/bin/java" --enable-native-access=io.jrdma.engine --add-opens java.base/sun.nio.ch=io.jrdma.engine
             ${JRDMA_JAVA_OPTS:-} -Djrdma.perf.counters=true "${j[@]}" -XX:+UseParallelGC -Xss1m
             -p "$jar:$lib" -m io.jrdma.tools/io.jrdma.tools.Main perf "$test" "$@")
  if [ "$strace" = 1 ]; then cmd=(strace -c -f -o "$out/$name.strace" "${cmd[@]}"); fi
  /usr/bin/time -f "CPU $name user=%U sys=%S" "${cmd[@]}" > "$out/$name.out" 2>&1
}
extra=(); [ "$mode" = cm ] && extra=(--jrdma-cm -d roce_lo)
nargs=(); [ -n "$iters" ] && nargs=(-n "$iters")
run server "${extra[@]}" -p "$port" --timeout 60 &
spid=$!
for _ in $(seq 1 200); do grep -q "Listening on TCP port\|Waiting for client" "$out/server.out" 2>/dev/null && break; sleep 0.05; done
[ "$mode" = perftest ] && sleep 0.3
run client "${extra[@]}" -s "$size" "${nargs[@]}" -p "$port" --timeout 60 127.0.0.1
wait "$spid"
awk '/^ #bytes/ {h=1; next} h && NF >= 5 && $1 ~ /^[0-9]+$/ {print "ROW " $0; exit}' "$out/client.out"
msgs=$(awk '/^ #bytes/ {h=1; next} h && NF >= 5 && $1 ~ /^[0-9]+$/ {print $2; exit}' "$out/client.out")
grep -h '^COUNTERS\|^CPU' "$out/server.out" "$out/client.out"
if [ "$strace" = 1 ]; then
  for s in server client; do
    echo "STRACE $s: $(awk '$NF ~ /^(sendto|sendmsg|sendmmsg|recvmmsg|recvfrom|write|writev|read|futex|sched_yield|epoll_wait|poll)$/ {printf "%s=%s ", $NF, $4}' "$out/$s.strace")"
  done
fi
echo "messages (client's row): $msgs; outputs in $out"

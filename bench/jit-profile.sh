#!/usr/bin/env bash
# bench/jit-profile.sh: where one Java process spends its CPU, by inlined source method or line.
#
#   bench/jit-profile.sh [--freq HZ] [--by method|line|stack] [--top N] [--all-threads] -- JAVA_ARGS...
#
# Runs `java JAVA_ARGS...` (JDK 25, as ./jrdma finds it) under `perf record -e cpu-clock:u` with bench/jitlog's
# JVMTI agent, which logs the code of every method the JIT compiles and the inlining stack (method, bytecode index,
# line) at each PC it describes. Each sample of the busiest thread is then given to the innermost io.jrdma frame
# at its PC (bench/jitlog/attribute.py): C2 inlines a whole path into one compiled method, which perf's own
# per-symbol report shows as one line. A software clock event, so it works in guests without a PMU; a sample lands
# a few instructions late (interrupt skid), so read shares of some percent, not single lines.
#
# Needs perf (Debian: apt-get install linux-perf), gcc (apt-get install gcc) and
# /proc/sys/kernel/perf_event_paranoid <= 2. Example, one side's turn of the 8 B SEND ping-pong on shm0:
#
#   ./mvnw -q -DskipTests package
#   cp='jrdma-benchmarks/target/jrdma-benchmarks.jar:jrdma-benchmarks/target/lib/*'
#   bench/jit-profile.sh -- --enable-native-access=ALL-UNNAMED -XX:+UseParallelGC -cp "$cp" \
#       io.jrdma.bench.ShmOpCost rounds=3 n=1000000 only=turn8
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
freq=20000; by=method; top=30; all=()
while [ $# -gt 0 ]; do
  case "$1" in
    --freq) freq="$2"; shift ;;
    --by) by="$2"; shift ;;
    --top) top="$2"; shift ;;
    --all-threads) all=(--all-threads) ;;
    --) shift; break ;;
    *) echo "jit-profile.sh: unknown option $1 (the Java command goes after --)" >&2; exit 2 ;;
  esac
  shift
done
[ $# -gt 0 ] || { echo "jit-profile.sh: no Java command after --" >&2; exit 2; }
command -v perf > /dev/null || { echo "jit-profile.sh: needs perf (apt-get install linux-perf)" >&2; exit 1; }
command -v gcc > /dev/null || { echo "jit-profile.sh: needs gcc (apt-get install gcc)" >&2; exit 1; }
JAVA_HOME="$("$here/jrdma" --java-home)"
out="$(mktemp -d /tmp/jrdma-jit-profile.XXXXXX)"
gcc -O2 -shared -fPIC -I"$JAVA_HOME/include" -I"$JAVA_HOME/include/linux" -o "$out/libjitlog.so" "$here/bench/jitlog/jitlog.c"
perf record -q -e cpu-clock:u -F "$freq" -o "$out/perf.data" -- \
  "$JAVA_HOME/bin/java" -agentpath:"$out/libjitlog.so=$out" "$@"
python3 "$here/bench/jitlog/attribute.py" "$out/index.txt" "$out/perf.data" --by "$by" --top "$top" "${all[@]}"
echo "jit-profile.sh: perf.data, the agent's index.txt and code.bin are in $out"

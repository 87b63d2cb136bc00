#!/usr/bin/env bash
# bench/ab.sh: alternating A/B rounds of two builds of jrdma perf, in one sitting.
#
#   bench/ab.sh A_DIR B_DIR [ROUNDS]
#
# A_DIR and B_DIR each hold a jrdma-tools.jar and its lib/ (copies of jrdma-tools/target from two
# builds, e.g. main and a branch), and optionally a jvm.options file (one line of extra JVM options for
# that build, e.g. -Djrdma.stat=false). Each round runs, for A then B (B then A in even rounds), the
# same figures: --jrdma-cm write_bw 4 KiB / 64 KiB / 1 MiB / 8 B for 2 s, write_lat 8 B (20,000
# iterations), and the README's first command (perftest's exchange, --loopback, its default 5,000
# iterations) at 64 KiB. Prints one line per figure and build, then medians with min-max and B/A.
set -uo pipefail
A=${1:?A_DIR}; B=${2:?B_DIR}; ROUNDS=${3:-3}
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
JAVA_HOME="$("$here/jrdma" --java-home)" || exit 1
AB_DEV="${AB_DEV:-roce_lo}" # the device of the --jrdma-cm pairs: AB_DEV=iwarp_lo bench/ab.sh ... for soft-iWARP
out="$(mktemp -d /tmp/jrdma-ab.XXXXXX)"
raw="$out/raw.txt"; : > "$raw"
port=$(( 31000 + $$ % 1000 ))
perf() { # perf DIR ARGS...
  local d=$1; shift
  local opts=()
  if [ -f "$d/jvm.options" ]; then read -r -a opts < "$d/jvm.options"; fi # extra JVM options of that build, one line
  timeout 120 "$JAVA_HOME/bin/java" --enable-native-access=io.jrdma.engine --add-opens java.base/sun.nio.ch=io.jrdma.engine \
    "${opts[@]}" -XX:+UseParallelGC -Xss1m -p "$d/jrdma-tools.jar:$d/lib" -m io.jrdma.tools/io.jrdma.tools.Main perf "$@"
}
row() { awk '/^ #bytes/ {h=1; next} h && NF >= 5 && $1 ~ /^[0-9]+$/ {print; exit}'; }
pair() { # pair DIR TEST ARGS... : a --jrdma-cm server and client on 127.0.0.1; prints the client's row
  local d=$1 t=$2; shift 2
  port=$((port + 1))
  perf "$d" "$t" --jrdma-cm -d "$AB_DEV" -p "$port" --timeout 60 > "$out/srv.out" 2>&1 &
  local sp=$! i=0
  while ! grep -q "Listening on TCP port" "$out/srv.out" 2> /dev/null && [ $i -lt 300 ]; do sleep 0.05; i=$((i + 1)); done
  perf "$d" "$t" --jrdma-cm -d "$AB_DEV" -p "$port" --timeout 60 "$@" 127.0.0.1 2>&1 | row
  wait "$sp"
}
one() { # one NAME DIR
  local n=$1 d=$2 r
  for s in 4096 65536 1048576 8; do
    r="$(pair "$d" write_bw -s "$s" -D 2)"; set -- $r
    echo "$n write_bw.$s $(awk -v m="${4:-0}" 'BEGIN {printf "%.4f", m * 1048576 / 1e9}') mpps=${5:-}" | tee -a "$raw"
  done
  r="$(pair "$d" write_lat -s 8 -n 20000)"; set -- $r
  echo "$n write_lat.8 ${5:-} p99=${8:-}" | tee -a "$raw"
  r="$(perf "$d" write_bw --loopback -s 65536 2>&1 | row)"; set -- $r
  echo "$n readme.write_bw.65536 $(awk -v m="${4:-0}" 'BEGIN {printf "%.4f", m * 1048576 / 1e9}')" | tee -a "$raw"
}
echo "ab.sh: $(date -u '+%F %T UTC'), load $(cut -d' ' -f1-3 /proc/loadavg); A=$A B=$B; $ROUNDS rounds"
for r in $(seq 1 "$ROUNDS"); do
  echo "round $r, load $(cut -d' ' -f1 /proc/loadavg)"
  echo "load $(cut -d' ' -f1 /proc/loadavg)" >> "$raw"
  if [ $((r % 2)) = 1 ]; then one A "$A"; one B "$B"; else one B "$B"; one A "$A"; fi
done
echo "ab.sh: done $(date -u '+%F %T UTC'), load $(cut -d' ' -f1-3 /proc/loadavg)"
awk '$1 == "A" || $1 == "B" {v[$1 " " $2] = v[$1 " " $2] " " $3; if ($4 ~ /^p99=/) {sub(/p99=/, "", $4); v[$1 " " $2 ".p99"] = v[$1 " " $2 ".p99"] " " $4}
     if ($4 ~ /^mpps=/) {sub(/mpps=/, "", $4); v[$1 " " $2 ".mpps"] = v[$1 " " $2 ".mpps"] " " $4}}
     $1 == "load" {l = l " " $2}
     function med(s,   a, n, i, j, t) { n = split(s, a, " "); for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] + 0 < a[i] + 0) {t = a[i]; a[i] = a[j]; a[j] = t}
        m = (n % 2) ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2; lo = a[1]; hi = a[n]; return m }
     END { print "loads at round starts:" l; printf "%-28s %-28s %-28s %s\n", "figure", "A median (min-max)", "B median (min-max)", "B/A";
       for (k in v) { split(k, p, " "); if (p[1] != "A") continue; f = p[2]; ma = med(v["A " f]); la = lo; ha = hi; mb = med(v["B " f]); lb = lo; hb = hi;
         printf "%-28s %-28s %-28s %.2f\n", f, sprintf("%.4g (%.4g-%.4g)", ma, la, ha), sprintf("%.4g (%.4g-%.4g)", mb, lb, hb), (ma > 0 ? mb / ma : 0) } }' "$raw" | sort
echo "raw: $raw"

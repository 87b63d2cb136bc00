#!/usr/bin/env bash
# bench/start-time.sh: how long the jrdma CLI takes to start, for builds or JVM options side by side, in
# alternated rounds of one sitting.
#
#   bench/start-time.sh [-r ROUNDS] NAME=DIR[,OPTIONS_FILE] [NAME=DIR[,OPTIONS_FILE]...]
#
# Each DIR holds a jrdma-tools.jar and its lib/ (a copy of jrdma-tools/target); OPTIONS_FILE (default
# DIR/jvm.options, if there is one) holds one line of extra JVM options for that variant, such as
# -XX:AOTCache=/path/jrdma.aot. OPTIONS_FILE "aot" makes an AOT cache for that variant first, as the ./jrdma
# launcher does (a training run of `jrdma aot-training` with -XX:AOTCacheOutput), and uses it.
# The java command is the launcher's (./jrdma) without its build check. Per round and variant (the order
# rotates each round), two figures:
#   devices  the wall time of `jrdma devices -v` (start to exit)
#   listen   the time from the start of `jrdma perf write_bw -d roce_lo -p PORT` (a server) until its TCP
#            port listens (ss, polled every 10 ms), as interop/lib.sh measures a server in the guests
# then, once per variant, counts that do not depend on the machine's load (from -Xlog:class+load of one
# `devices -v`): classes loaded, those from the CDS/AOT archive, those generated at run time (hidden
# classes: lambda forms, the FFM's downcall adapters). Prints medians with min-max, and each variant's
# ratio to the first one's median.
set -uo pipefail
ROUNDS=5
if [ "${1:-}" = -r ]; then ROUNDS=$2; shift 2; fi
[ $# -ge 1 ] || { sed -n '2,/^[^#]/p' "$0" | grep '^#' | sed 's/^# \{0,1\}//'; exit 2; }
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
JAVA_HOME="$("$here/jrdma" --java-home)" || exit 1
names=() dirs=() optfiles=()
for v in "$@"; do
  names+=("${v%%=*}"); v=${v#*=}; d=${v%%,*}; dirs+=("$d")
  if [ "$v" != "$d" ]; then optfiles+=("${v#*,}"); else optfiles+=("$d/jvm.options"); fi
  [ -f "$d/jrdma-tools.jar" ] || { echo "start-time.sh: no jrdma-tools.jar in $d" >&2; exit 2; }
done
out="$(mktemp -d /tmp/jrdma-start.XXXXXX)"
raw="$out/raw.txt"; : > "$raw"
port=$(( 32000 + $$ % 1000 ))
jr() { # jr DIR OPTIONS_FILE ARGS...: the jrdma CLI of that build, as ./jrdma runs it
  local d=$1 f=$2; shift 2
  local opts=()
  if [ -f "$f" ]; then read -r -a opts < "$f"; fi
  "$JAVA_HOME/bin/java" --enable-native-access=io.jrdma.engine,io.jrdma.rdmacore \
    --add-opens java.base/sun.nio.ch=io.jrdma.engine "${opts[@]}" -XX:+UseParallelGC -Xss1m \
    -p "$d/jrdma-tools.jar:$d/lib" -m io.jrdma.tools/io.jrdma.tools.Main "$@"
}
ms() { echo $(( ($(date +%s%N) - $1) / 1000000 )); }
one() { # one NAME DIR OPTIONS_FILE
  local n=$1 d=$2 f=$3 t0 pid
  t0=$(date +%s%N)
  timeout 60 bash -c "$(declare -f jr); JAVA_HOME='$JAVA_HOME' jr '$d' '$f' devices -v" > /dev/null 2>&1
  echo "$n devices $(ms "$t0")" | tee -a "$raw"
  port=$((port + 1))
  t0=$(date +%s%N)
  jr "$d" "$f" perf write_bw -d roce_lo -p "$port" > "$out/srv.out" 2>&1 &
  pid=$!
  local deadline=$(( $(date +%s) + 60 )) got=""
  while [ "$(date +%s)" -lt $deadline ]; do
    if ss -ltnH "sport = :$port" | grep -q .; then got=$(ms "$t0"); break; fi
    kill -0 "$pid" 2> /dev/null || break
    sleep 0.01
  done
  kill "$pid" 2> /dev/null; wait "$pid" 2> /dev/null
  if [ -n "$got" ]; then echo "$n listen $got" | tee -a "$raw"
  else echo "$n listen: did not listen within 60 s ($(tail -n 3 "$out/srv.out" | tr '\n' ' '))" | tee -a "$raw"; fi
}
for i in "${!names[@]}"; do
  [ "${optfiles[$i]}" = aot ] || continue
  t0=$(date +%s%N)
  echo "-XX:AOTCacheOutput=$out/${names[$i]}.aot -Xlog:aot*=off -Xlog:cds*=off" > "$out/${names[$i]}.train"
  jr "${dirs[$i]}" "$out/${names[$i]}.train" aot-training > /dev/null 2>&1
  echo "-XX:AOTCache=$out/${names[$i]}.aot -Xlog:aot*=off -Xlog:cds*=off" > "$out/${names[$i]}.opts"
  [ -s "$out/${names[$i]}.aot" ] || { echo "start-time.sh: no AOT cache made for ${names[$i]}" >&2; exit 1; }
  echo "${names[$i]}: AOT cache made in $(ms "$t0") ms ($(du -m "$out/${names[$i]}.aot" | cut -f1) MB)"
  optfiles[$i]="$out/${names[$i]}.opts"
done
echo "start-time.sh: $(date -u '+%F %T UTC'), load $(cut -d' ' -f1-3 /proc/loadavg), $(nproc) CPUs; $ROUNDS rounds;" \
  "$("$JAVA_HOME/bin/java" -version 2>&1 | head -n 1)"
k=${#names[@]}
for r in $(seq 1 "$ROUNDS"); do
  echo "round $r, load $(cut -d' ' -f1 /proc/loadavg)"
  echo "load $(cut -d' ' -f1 /proc/loadavg)" >> "$raw"
  for j in $(seq 0 $((k - 1))); do
    i=$(( (j + r - 1) % k ))
    one "${names[$i]}" "${dirs[$i]}" "${optfiles[$i]}"
  done
done
echo "start-time.sh: done $(date -u '+%F %T UTC'), load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "classes loaded by one 'devices -v' (total / from the CDS or AOT archive / generated at run time):"
for i in $(seq 0 $((k - 1))); do
  d=${dirs[$i]}; opts=()
  if [ -f "${optfiles[$i]}" ]; then read -r -a opts < "${optfiles[$i]}"; fi
  "$JAVA_HOME/bin/java" -Xlog:class+load:file="$out/cl.$i.txt" --enable-native-access=io.jrdma.engine,io.jrdma.rdmacore \
    --add-opens java.base/sun.nio.ch=io.jrdma.engine "${opts[@]}" -XX:+UseParallelGC -Xss1m \
    -p "$d/jrdma-tools.jar:$d/lib" -m io.jrdma.tools/io.jrdma.tools.Main devices -v > /dev/null 2>&1 || true
  printf '  %-12s %5d / %5d / %5d\n' "${names[$i]}" "$(grep -c . "$out/cl.$i.txt")" \
    "$(grep -c 'source: shared objects file' "$out/cl.$i.txt")" "$(grep -cE '/0x[0-9a-f]+ source|LambdaForm\$' "$out/cl.$i.txt")"
done
awk -v order="${names[*]}" '
  $1 == "load" {l = l " " $2; next}
  NF == 3 {v[$1 " " $2] = v[$1 " " $2] " " $3}
  function med(s,   a, n, i, j, t) { n = split(s, a, " "); for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] + 0 < a[i] + 0) {t = a[i]; a[i] = a[j]; a[j] = t}
     lo = a[1]; hi = a[n]; return (n % 2) ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2 }
  END { print "loads at round starts:" l
        k = split(order, nm, " ")
        printf "%-8s %-12s %-26s %s\n", "figure", "variant", "median ms (min-max)", "median / " nm[1] "'"'"'s"
        split("devices listen", figs, " ")
        for (f = 1; f <= 2; f++) { base = ""
          for (i = 1; i <= k; i++) { s = v[nm[i] " " figs[f]]; if (s == "") continue
            m = med(s); if (i == 1) base = m
            printf "%-8s %-12s %-26s %s\n", figs[f], nm[i], sprintf("%d (%d-%d)", m, lo, hi), (base > 0 ? sprintf("%.2f", m / base) : "-") } } }' "$raw"
echo "raw figures: $raw"

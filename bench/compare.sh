#!/usr/bin/env bash
# bench/compare.sh: jrdma against its baselines and peers, in one run on this host.
#
#   bench/compare.sh                  # full run: 5 rounds (about 15 minutes on 2 cores)
#   bench/compare.sh --quick          # 2 rounds, fewer iterations (about 4 minutes)
#   bench/compare.sh --shm            # only the shared-memory section (issue 13), a few minutes
#   bench/compare.sh --rounds 3 --install-peers --no-jmh
#
# Options: --quick, --rounds N, --shm (only the shared-memory rows: jrdma over shm0 and its
# baselines, results in bench/results/shm.md), --install-peers (apt-get install ucx-utils when
# ucx_perftest is missing), --no-peers, --no-jmh, --out FILE (default bench/results/latest.md),
# --keep (keep the raw outputs in the work directory it prints).
# Environment: SHM_DEV (default shm0) names the shared-memory device whose rows run when
# `jrdma devices` lists it; SHM_PERF_OPTS adds options to both sides of its `jrdma perf` runs.
#
# Every figure comes from two processes on loopback (server started first, client once the server
# listens), each side with the threading perf uses: the active side one busy-polling thread driving
# its engine (INVOKER), the passive side a DEDICATED engine thread; the baselines and peers copy
# that. Nothing is pinned (the host is shared). Rounds are interleaved (round 1 runs everything,
# then round 2 ...), so a noisy minute hits jrdma and its baselines alike; the table shows the
# median over the rounds with the min-max. Every wait has a timeout and every process started here
# is killed on exit.
set -uo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$here"

ROUNDS=5
QUICK=0
INSTALL_PEERS=0
PEERS=1
JMH=1
KEEP=0
OUT=""
SHM_ONLY=0
while [ $# -gt 0 ]; do
  case "$1" in
    --quick) QUICK=1; ROUNDS=2 ;;
    --rounds) ROUNDS="${2:?--rounds needs a number}"; shift ;;
    --install-peers) INSTALL_PEERS=1 ;;
    --no-peers) PEERS=0 ;;
    --no-jmh) JMH=0 ;;
    --shm) SHM_ONLY=1; JMH=0 ;;
    --keep) KEEP=1 ;;
    --out) OUT="${2:?--out needs a file}"; shift ;;
    -h|--help) awk 'NR > 1 && /^#/ {print; next} NR > 1 {exit}' "$0"; exit 0 ;;
    *) echo "compare.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
  esac
  shift
done
if [ -z "$OUT" ]; then
  if [ "$SHM_ONLY" = 1 ]; then OUT="bench/results/shm.md"; else OUT="bench/results/latest.md"; fi
fi
SHM_DEV="${SHM_DEV:-shm0}"
read -r -a SHM_OPTS <<< "${SHM_PERF_OPTS:-}"

say() { printf '%s\n' "$*" >&2; }
started=$(date +%s)
elapsed() { echo $(( $(date +%s) - started )); }

# ---------------------------------------------------------------- JDK and build
if ! JAVA_HOME="$(./jrdma --java-home)"; then
  say "compare.sh: no JDK 25 found (see ./jrdma)"; exit 1
fi
export JAVA_HOME
JAVA="$JAVA_HOME/bin/java"
work="$(mktemp -d /tmp/jrdma-bench.XXXXXX)"
raw="$work/raw.txt"
: > "$raw"
notes="$work/notes.txt"
: > "$notes"
note() { say "  note: $*"; printf -- '- %s\n' "$*" >> "$notes"; }

# The run uses a copy of the built jars (in its work directory), so a rebuild of the work tree
# while it runs (an IDE, another terminal) cannot pull them away.
dist="$work/dist"
build() { # build [-Paeron]
  ./mvnw -q -B -DskipTests "$@" package > "$work/build.log" 2>&1 || return 1
  rm -rf "$dist"; mkdir -p "$dist/tools" "$dist/bench"
  cp -r jrdma-tools/target/jrdma-tools.jar jrdma-tools/target/lib "$dist/tools/" 2> /dev/null \
    && cp -r jrdma-benchmarks/target/jrdma-benchmarks.jar jrdma-benchmarks/target/lib "$dist/bench/" 2> /dev/null
}
say "compare.sh: building (./mvnw -q -DskipTests package, with the Aeron profile when it resolves)..."
AERON=1
if ! build -Paeron && ! build -Paeron; then
  AERON=0
  if ! build && ! build; then
    cat "$work/build.log" >&2; say "compare.sh: build failed"; exit 1
  fi
  note "Aeron peer skipped: the build with -Paeron failed (io.aeron:aeron-all not resolvable?)"
fi

# -Djrdma.perf.decimals=3: latency columns to the nanosecond, as ucx_perftest's and the floor's (perftest: 0.01 µs)
TOOLS=("$JAVA" --enable-native-access=io.jrdma.engine --add-opens java.base/sun.nio.ch=io.jrdma.engine ${JRDMA_JAVA_OPTS:-} -XX:+UseParallelGC -Xss1m -Djrdma.perf.cpu=true -Djrdma.perf.decimals=3
       -p "$dist/tools/jrdma-tools.jar:$dist/tools/lib" -m io.jrdma.tools/io.jrdma.tools.Main)
BCP="$dist/bench/jrdma-benchmarks.jar:$dist/bench/lib/*"
BENCH=("$JAVA" --enable-native-access=ALL-UNNAMED -XX:+UseParallelGC -cp "$BCP")
AERON_JAVA=("$JAVA" -XX:+UseParallelGC --add-exports java.base/jdk.internal.misc=ALL-UNNAMED
            --add-opens java.base/jdk.internal.misc=ALL-UNNAMED --add-opens java.base/sun.nio.ch=ALL-UNNAMED
            --sun-misc-unsafe-memory-access=allow --enable-native-access=ALL-UNNAMED -cp "$BCP")
ls "$dist"/bench/lib/aeron-all-*.jar > /dev/null 2>&1 || AERON=0

UCX=0
if [ "$PEERS" = 1 ]; then
  if ! command -v ucx_perftest > /dev/null 2>&1 && [ "$INSTALL_PEERS" = 1 ]; then
    say "compare.sh: installing ucx-utils..."
    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq ucx-utils) > "$work/apt.log" 2>&1 \
      || note "apt-get install ucx-utils failed (see $work/apt.log)"
  fi
  if command -v ucx_perftest > /dev/null 2>&1; then
    UCX=1
  else
    note "UCX peer skipped: ucx_perftest is not installed (Debian package ucx-utils; pass --install-peers)"
  fi
else
  AERON=0
  note "peers skipped (--no-peers)"
fi

# The shared-memory device (issue 13): its rows run only when `jrdma devices` lists it.
SHM=0
timeout 60 "${TOOLS[@]}" devices > "$work/devices.txt" 2>&1
if grep -q "^hca_id:[[:space:]]*$SHM_DEV\$" "$work/devices.txt"; then
  SHM=1
else
  note "jrdma over $SHM_DEV: provider absent (\`jrdma devices\` lists no $SHM_DEV): its rows are skipped, its baselines still ran"
  printf 'shm.absent 1\n' >> "$raw"
fi

# ---------------------------------------------------------------- processes
# Each process runs in its own process group (setsid), so that it and its children can be ended
# together. Only groups started here and not yet reaped are ever signalled (a reaped id may be reused).
declare -A LIVE=()
AERON_PORTS=() # the media drivers' directories (/dev/shm/jrdma-bench-aeron-PORT...) left by a killed run
MAPPED_PORTS=() # the mapped ping-pong's files (/dev/shm/jrdma-bench-mapped-PORT) left by a killed run
SHAPE_PORTS=() # SendShape's files (/dev/shm/jrdma-bench-sendshape-PORT) likewise
cleanup() {
  local g
  for g in "${!LIVE[@]}"; do kill -TERM -- "-$g" 2> /dev/null; done
  [ "${#LIVE[@]}" -gt 0 ] && sleep 0.3
  for g in "${!LIVE[@]}"; do kill -KILL -- "-$g" 2> /dev/null; done
  local p
  for p in "${AERON_PORTS[@]}"; do rm -rf /dev/shm/jrdma-bench-aeron-"$p" /dev/shm/jrdma-bench-aeron-"$p"-* 2> /dev/null; done
  for p in "${MAPPED_PORTS[@]}"; do rm -f /dev/shm/jrdma-bench-mapped-"$p" 2> /dev/null; done
  for p in "${SHAPE_PORTS[@]}"; do rm -f /dev/shm/jrdma-bench-sendshape-"$p" 2> /dev/null; done
  if [ "$KEEP" = 1 ]; then say "compare.sh: raw outputs kept in $work"; else rm -rf "$work"; fi
}
trap cleanup EXIT
trap 'say "compare.sh: interrupted"; exit 130' INT TERM

start_bg() { # start_bg OUTFILE CMD... ; sets BG
  setsid "${@:2}" > "$1" 2>&1 < /dev/null &
  BG=$!
  LIVE[$BG]=1
}

reap() { wait "$1" 2> /dev/null; local rc=$?; unset "LIVE[$1]"; return $rc; }

stop_group() {
  kill -TERM -- "-$1" 2> /dev/null
  local i=0
  while kill -0 "$1" 2> /dev/null && [ "$i" -lt 20 ]; do sleep 0.1; i=$((i + 1)); done
  kill -KILL -- "-$1" 2> /dev/null
  reap "$1"
}

wait_exit() { # wait_exit PID SECONDS: 0 if it ended by itself in time
  local i=0 max=$(( $2 * 10 ))
  while kill -0 "$1" 2> /dev/null; do
    if [ "$i" -ge "$max" ]; then stop_group "$1"; return 1; fi
    sleep 0.1; i=$((i + 1))
  done
  reap "$1"
  return 0
}

wait_ready() { # wait_ready FILE PATTERN PID SECONDS
  local i=0 max=$(( $4 * 20 ))
  while ! grep -q -- "$2" "$1" 2> /dev/null; do
    kill -0 "$3" 2> /dev/null || return 1
    [ "$i" -ge "$max" ] && return 1
    sleep 0.05; i=$((i + 1))
  done
}

# Ports: a block per invocation below the ephemeral range, 3 per run.
PORT=$(( 20000 + ($$ % 16) * 700 ))
next_port() { PORT=$(( PORT + 3 )); [ "$PORT" -gt 32000 ] && PORT=20000; }

# run_pair NAME TIMEOUT READY_PATTERN ; with SRV=(...) and CLI=(...) set: outputs in $work/NAME.{server,client}.out
# Arguments may contain @PORT@, replaced by the run's port.
run_pair() {
  local name=$1 tmo=$2 ready=$3 sp cp ok=0
  local so="$work/$name.server.out" co="$work/$name.client.out"
  local srv=("${SRV[@]//@PORT@/$PORT}") cli=("${CLI[@]//@PORT@/$PORT}")
  start_bg "$so" "${srv[@]}"; sp=$BG
  if ! wait_ready "$so" "$ready" "$sp" 30; then
    note "$name: the server did not start listening within 30 s (round $ROUND): $(tail -n 3 "$so" | tr '\n' ' ' | cut -c1-300)"
    stop_group "$sp"; next_port; return 1
  fi
  start_bg "$co" "${cli[@]}"; cp=$BG
  if ! wait_exit "$cp" "$tmo"; then
    note "$name: the client did not finish within $tmo s (round $ROUND); killed"
    ok=1
  fi
  wait_exit "$sp" 15 || note "$name: the server did not exit within 15 s after the client (round $ROUND); killed"
  next_port
  return $ok
}

put() { printf '%s %s\n' "$1" "$2" >> "$raw"; }

# perf output: the row under the column header (" #bytes ...")
perf_row() { awk '/^ #bytes/ {h=1; next} h && NF >= 5 && $1 ~ /^[0-9]+$/ {print; exit}' "$1"; }

# ---------------------------------------------------------------- the runs
# latency: iterations (perf -n, baselines iters=); bandwidth and rates: seconds (perf -D, baselines secs=)
if [ "$QUICK" = 1 ]; then
  LAT_N=5000; LAT_N_BIG=1000; UDP_ITERS=5000; UDP_ITERS_BIG=1000; SECS=1; UCX_N=20000; UCX_BW_N=1200
  SHM_LAT_N=100000; SHM_ITERS=100000; MAPPED_N=300000; SHM_BW_N=200000; SHM_COST_N=100000
else
  LAT_N=20000; LAT_N_BIG=3000; UDP_ITERS=20000; UDP_ITERS_BIG=3000; SECS=2; UCX_N=50000; UCX_BW_N=3000
  SHM_LAT_N=200000; SHM_ITERS=200000; MAPPED_N=1000000; SHM_BW_N=500000; SHM_COST_N=300000
fi

# jrdma over soft-RoCE (roce_lo, keys jrdma.*) or, with a third argument iwarp, over soft-iWARP
# (iwarp_lo: RDMAP/DDP/MPA over TCP, keys iwarp.*; -d on both sides, the connection manager is implied)
jrdma_lat() { # test size [iwarp]
  local t=$1 s=$2 n=$LAT_N dev=roce_lo key=jrdma name="$1.$2"
  [ "${3:-}" = iwarp ] && { dev=iwarp_lo; key=iwarp; name="iwarp.$t.$s"; }
  [ "$s" -ge 65536 ] && n=$LAT_N_BIG
  SRV=("${TOOLS[@]}" perf "$t" --jrdma-cm -d "$dev" -p @PORT@ --timeout 30)
  CLI=("${TOOLS[@]}" perf "$t" --jrdma-cm -d "$dev" -s "$s" -n "$n" -p @PORT@ --timeout 30 127.0.0.1)
  run_pair "r$ROUND.$name" 120 "Listening on TCP port" || return
  local row; row="$(perf_row "$work/r$ROUND.$name.client.out")"
  if [ -z "$row" ]; then
    note "$t -s $s -d $dev: no result (round $ROUND): $(tail -n 2 "$work/r$ROUND.$name.client.out" | tr '\n' ' ' | cut -c1-300)"; return
  fi
  set -- $row
  put "$key.$t.$s" "$5"
  put "$key.$t.$s.p99" "$8"
}

jrdma_bw() { # test size [iwarp]: runs for $SECS s (perf -D), after perf's own warm-up
  local t=$1 s=$2 dev=roce_lo key=jrdma name="$1.$2"
  [ "${3:-}" = iwarp ] && { dev=iwarp_lo; key=iwarp; name="iwarp.$t.$s"; }
  SRV=("${TOOLS[@]}" perf "$t" --jrdma-cm -d "$dev" -p @PORT@ --timeout 30)
  CLI=("${TOOLS[@]}" perf "$t" --jrdma-cm -d "$dev" -s "$s" -D "$SECS" -p @PORT@ --timeout 30 127.0.0.1)
  run_pair "r$ROUND.$name" 120 "Listening on TCP port" || return
  local row; row="$(perf_row "$work/r$ROUND.$name.client.out")"
  if [ -z "$row" ]; then
    note "$t -s $s -d $dev: no result (round $ROUND): $(tail -n 2 "$work/r$ROUND.$name.client.out" | tr '\n' ' ' | cut -c1-300)"; return
  fi
  set -- $row
  local g; g="$(awk -v m="$4" 'BEGIN {printf "%.6f", m * 1048576 / 1e9}')"
  put "$key.$t.$s" "$g"
  put "$key.$t.$s.mpps" "$5"
  local c; c="$(pair_cores "$work/r$ROUND.$name.client.out" "$work/r$ROUND.$name.server.out")"
  put_cpu "$key.$t.$s" "$c" "$g"
  put_cpu "$key.$t.$s.mpps" "$c" "$5"
}

# CPU use of a pair over its measured interval: the sum of both sides' "CPU ... cores=X" lines
# (CPU seconds per wall second, user + system, all threads of each process).
pair_cores() { # pair_cores FILE...
  cat "$@" 2> /dev/null | awk '/^CPU / {for (i = 1; i <= NF; i++) if ($i ~ /^cores=/) {sub(/^cores=/, "", $i); c += $i; n++}} END {if (n == 2) printf "%.4f", c}'
}

# put_cpu KEY CORES RATE: KEY.cpu = CPU seconds per unit of RATE (per GB for GB/s, µs per message for Mpps)
put_cpu() {
  [ -n "$2" ] && [ -n "$3" ] && awk -v c="$2" -v r="$3" 'BEGIN {exit !(r > 0)}' && put "$1.cpu" "$(awk -v c="$2" -v r="$3" 'BEGIN {printf "%.4f", c / r}')"
}

# RESULT line field: result_field FILE NAME FIELD
result_field() { grep "^RESULT $2 " "$1" | head -n 1 | tr ' ' '\n' | sed -n "s/^$3=//p"; }

base_pair() { # NAME TIMEOUT RESULT_FILE_SIDE(server|client) RESULT_NAME FIELD KEY
  local name=$1 tmo=$2 side=$3 rname=$4 field=$5 key=$6 v
  run_pair "r$ROUND.$name" "$tmo" "LISTENING" || return
  v="$(result_field "$work/r$ROUND.$name.$side.out" "$rname" "$field")"
  if [ -z "$v" ]; then
    note "$name: no result (round $ROUND): $(cat "$work/r$ROUND.$name.$side.out" "$work/r$ROUND.$name.server.out" | grep -v '^LISTENING' | tail -n 2 | tr '\n' ' ' | cut -c1-300)"
    return
  fi
  put "$key" "$v"
}

udp_pingpong() { # size
  local s=$1 it=$UDP_ITERS
  [ "$s" -ge 65536 ] && it=$UDP_ITERS_BIG
  SRV=("${BENCH[@]}" io.jrdma.bench.UdpPingPong role=server port=@PORT@ size="$s" iters="$it" warmup=$((it / 4)))
  CLI=("${BENCH[@]}" io.jrdma.bench.UdpPingPong role=client port=@PORT@ size="$s" iters="$it" warmup=$((it / 4)))
  base_pair "udp_pingpong.$s" 120 client udp_pingpong median_us "udp_pingpong.$s"
  local v; v="$(result_field "$work/r$ROUND.udp_pingpong.$s.client.out" udp_pingpong p99_us)"
  [ -n "$v" ] && put "udp_pingpong.$s.p99" "$v"
}

udp_blast() { # datagram size [unconnected | gso N]: gso = the best raw use, N datagrams per UDP GSO send
  local s=$1 key="udp_blast.$1" conn=true extra=()
  [ "${2:-}" = unconnected ] && { key="udp_blast_unconnected.$1"; conn=false; }
  [ "${2:-}" = gso ] && { key="udp_blast_gso.$1"; extra=(gso="$3"); }
  SRV=("${BENCH[@]}" io.jrdma.bench.UdpBlast role=recv port=@PORT@ warm=0.5)
  CLI=("${BENCH[@]}" io.jrdma.bench.UdpBlast role=send port=@PORT@ size="$s" secs=$((SECS + 1)) connected=$conn "${extra[@]}")
  base_pair "$key" 60 server udp_blast gbps "$key" || return
  [ "$conn" = false ] && return
  local f="$work/r$ROUND.$key" g m c
  g="$(result_field "$f.server.out" udp_blast gbps)"; m="$(result_field "$f.server.out" udp_blast mpps)"
  put "$key.mpps" "$m"
  c="$(pair_cores "$f.server.out" "$f.client.out")"
  put_cpu "$key" "$c" "$g"
  put_cpu "$key.mpps" "$c" "$m"
  [ "${2:-}" = gso ] && return
  put "udp_blast_send.$s" "$(result_field "$f.client.out" udp_blast_send gbps)"
}

tcp_pingpong() { # size
  local s=$1 it=$UDP_ITERS
  [ "$s" -ge 65536 ] && it=$UDP_ITERS_BIG
  SRV=("${BENCH[@]}" io.jrdma.bench.TcpPingPong role=server port=@PORT@ size="$s" iters="$it" warmup=$((it / 4)))
  CLI=("${BENCH[@]}" io.jrdma.bench.TcpPingPong role=client port=@PORT@ size="$s" iters="$it" warmup=$((it / 4)))
  base_pair "tcp_pingpong.$s" 120 client tcp_pingpong median_us "tcp_pingpong.$s"
  local v; v="$(result_field "$work/r$ROUND.tcp_pingpong.$s.client.out" tcp_pingpong p99_us)"
  [ -n "$v" ] && put "tcp_pingpong.$s.p99" "$v"
}

tcp_stream() { # size
  local s=$1
  SRV=("${BENCH[@]}" io.jrdma.bench.TcpPingPong role=server mode=stream port=@PORT@ size="$s" warm=0.5)
  CLI=("${BENCH[@]}" io.jrdma.bench.TcpPingPong role=client mode=stream port=@PORT@ size="$s" secs=$((SECS + 1)))
  base_pair "tcp_stream.$s" 60 server tcp_stream gbps "tcp_stream.$s" || return
  local f="$work/r$ROUND.tcp_stream.$s"
  put_cpu "tcp_stream.$s" "$(pair_cores "$f.server.out" "$f.client.out")" "$(result_field "$f.server.out" tcp_stream gbps)"
}

memcopy() { # [hot]: one source and one destination buffer (span=size) instead of perf's working set
  local name=memcopy sizes=4096,65536,1048576 args=() s v
  [ "${1:-}" = hot ] && { name=memcopy_hot; sizes=65536,1048576; args=(span=size); }
  local f="$work/r$ROUND.$name.out"
  start_bg "$f" "${BENCH[@]}" io.jrdma.bench.MemCopy sizes="$sizes" secs=1 warm=0.3 "${args[@]}"
  wait_exit "$BG" 60 || { note "$name: did not finish within 60 s (round $ROUND)"; return; }
  for s in ${sizes//,/ }; do
    v="$(grep "^RESULT $name size=$s " "$f" | tr ' ' '\n' | sed -n 's/^gbps=//p')"
    if [ -n "$v" ]; then put "$name.$s" "$v"; else note "$name $s B: no result (round $ROUND): $(tail -n 2 "$f" | tr '\n' ' ' | cut -c1-300)"; fi
  done
}

qpscale() { # qps size
  local q=$1 s=$2 f
  SRV=("${BENCH[@]}" io.jrdma.bench.QpScale role=server port=@PORT@ qps="$q" size="$s" timeout=60)
  CLI=("${BENCH[@]}" io.jrdma.bench.QpScale role=client port=@PORT@ qps="$q" size="$s" secs="$SECS" warm=0.5)
  run_pair "r$ROUND.qpscale.$s.q$q" 150 "LISTENING" || return
  f="$work/r$ROUND.qpscale.$s.q$q"
  local g m
  g="$(result_field "$f.client.out" qpscale gbps)"; m="$(result_field "$f.client.out" qpscale mpps)"
  if [ -z "$g" ]; then
    note "QpScale $q QPs $s B: no result (round $ROUND): $(grep -v '^COUNTERS' "$f.client.out" | tail -n 2 | tr '\n' ' ' | cut -c1-300)"; return
  fi
  put "qpscale.$s.q$q.gbps" "$g"
  put "qpscale.$s.q$q.mpps" "$m"
  if [ "$q" -ge 1000 ]; then
    put qpmem.client.heap "$(result_field "$f.client.out" qp_mem heap_per_qp)"
    put qpmem.client.direct "$(result_field "$f.client.out" qp_mem direct_per_qp)"
    put qpmem.server.heap "$(result_field "$f.server.out" qp_mem heap_per_qp)"
    put qpscale.connect_ms_per_qp "$(grep '^CONNECT ' "$f.client.out" | tr ' ' '\n' | sed -n 's/^ms_per_qp=//p')"
  fi
}

ucx() { # tls test size iterations key
  local tls=$1 t=$2 s=$3 n=$4 key=$5 row
  # stdbuf: the server's "Waiting for connection" line must reach the file at once
  SRV=(env UCX_TLS="$tls" UCX_NET_DEVICES=lo stdbuf -oL ucx_perftest -p @PORT@)
  CLI=(env UCX_TLS="$tls" UCX_NET_DEVICES=lo ucx_perftest 127.0.0.1 -p @PORT@ -t "$t" -s "$s" -n "$n" -w $((n / 10)) -f)
  run_pair "r$ROUND.ucx.$tls.$t.$s" 90 "Waiting for connection" || return
  # the final row: iterations, 50%ile, average, overall (latency or overhead, usec), bw average, bw overall (MB/s), rates
  row="$(awk 'NF == 8 && $1 ~ /^[0-9]+$/ {r = $0} END {print r}' "$work/r$ROUND.ucx.$tls.$t.$s.client.out")"
  if [ -z "$row" ]; then
    note "ucx_perftest $t $s ($tls): no result (round $ROUND): $(tail -n 2 "$work/r$ROUND.ucx.$tls.$t.$s.client.out" | tr '\n' ' ' | cut -c1-300)"; return
  fi
  set -- $row
  case "$t" in
    *_lat) put "$key" "$2" ;;
    *) put "$key" "$(awk -v m="$6" 'BEGIN {printf "%.6f", m * 1048576 / 1e9}')" ;;
  esac
}

aeron() { # transport mode size [iterations [pause]]
  local tr=$1 mode=$2 s=$3 it=${4:-$UDP_ITERS} pa=${5:-false}
  local common=(io.jrdma.bench.aeron.AeronBench mode="$mode" transport="$tr" port=@PORT@ size="$s" timeout=20 pause="$pa")
  AERON_PORTS+=("$PORT")
  if [ "$mode" = pingpong ]; then
    SRV=("${AERON_JAVA[@]}" "${common[@]}" role=server iters="$it" warmup=$((it / 4)))
    CLI=("${AERON_JAVA[@]}" "${common[@]}" role=client iters="$it" warmup=$((it / 4)))
    base_pair "aeron.$tr.$mode.$s" 90 client "aeron_${tr}_pingpong" median_us "aeron.$tr.pingpong.$s"
  else
    SRV=("${AERON_JAVA[@]}" "${common[@]}" role=server warm=0.5)
    CLI=("${AERON_JAVA[@]}" "${common[@]}" role=client secs=$((SECS + 1)))
    base_pair "aeron.$tr.$mode.$s" 90 server "aeron_${tr}_stream" gbps "aeron.$tr.stream.$s"
  fi
}

# ---------------------------------------------------------------- shared memory (issue 13)
# The floor (two JVMs, one mapped file, a flag word), MemorySegment.copy, Aeron IPC, ucx_perftest over
# posix shared memory, and jrdma over the shared-memory device between two processes when it is there.
# The floor waits two ways, one right after the other: spinning on the flag alone (perftest's loop) and with a
# PAUSE per turn (Thread.onSpinWait); which is faster depends on the host (docs/shm-performance.md, "The wait: the
# floor's faster one, for the floor and jrdma alike"). The faster is the round's floor (key mapped.SIZE), and
# jrdma's latency rows and ShmPingPong wait the same way in that round (SHM_PAUSE: perf --pause, pause=true).
SHM_PAUSE=()
mapped_pingpong() { # size
  local s=$1 v w spin pause best=""
  for w in false true; do
    MAPPED_PORTS+=("$PORT")
    SRV=("${BENCH[@]}" io.jrdma.bench.MappedPingPong role=server port=@PORT@ size="$s" iters="$MAPPED_N" warmup=$((MAPPED_N / 4)) pause="$w")
    CLI=("${BENCH[@]}" io.jrdma.bench.MappedPingPong role=client port=@PORT@ size="$s" iters="$MAPPED_N" warmup=$((MAPPED_N / 4)) pause="$w")
    base_pair "mapped_pingpong.$s.pause-$w" 90 client mapped_pingpong median_us "mapped.$s.pause-$w" || continue
  done
  spin="$(result_field "$work/r$ROUND.mapped_pingpong.$s.pause-false.client.out" mapped_pingpong median_us)"
  pause="$(result_field "$work/r$ROUND.mapped_pingpong.$s.pause-true.client.out" mapped_pingpong median_us)"
  if [ -n "$pause" ] && { [ -z "$spin" ] || awk -v p="$pause" -v s="$spin" 'BEGIN {exit !(p < s)}'; }; then
    best=true; SHM_PAUSE=(--pause)
  elif [ -n "$spin" ]; then
    best=false; SHM_PAUSE=()
  fi
  [ -n "$best" ] || return
  put "mapped.$s" "$([ "$best" = true ] && echo "$pause" || echo "$spin")"
  put "shm.wait.pause" "$([ "$best" = true ] && echo 1 || echo 0)"
  v="$(result_field "$work/r$ROUND.mapped_pingpong.$s.pause-$best.client.out" mapped_pingpong p99_us)"
  [ -n "$v" ] && put "mapped.$s.p99" "$v"
}

# perftest's exchange (the default) takes the same -s and -n on both sides and has no -D: a bandwidth
# run is SHM_BW_N iterations (scaled by size); with SHM_PERF_OPTS=--jrdma-cm the client alone sets them
# and a bandwidth run lasts $SECS s (-D). Between two jrdma sides the client warms up before the measured
# run until its JIT's compiler threads are quiet, then with a run of the measured length (perftest's C needs
# no warm-up, and a C peer gets none); SHM_BW_N makes a run ~33 GB (~1 s at copy speed), which also holds the
# spread down (docs/shm-performance.md, "Bandwidth: a short run ..." and "Bandwidth against the copy").
shm_perf() { # test size: jrdma perf -d $SHM_DEV between two processes; keys shm.TEST.SIZE
  [ "$SHM" = 1 ] || return 0
  local t=$1 s=$2 name="shm.$1.$2" run=() srv=() row cm=0 o
  for o in "${SHM_OPTS[@]}"; do [ "$o" = --jrdma-cm ] && cm=1; done
  case "$t" in
    *_lat) run=(-s "$s" -n "$SHM_LAT_N") ;;
    *) if [ "$cm" = 1 ]; then run=(-s "$s" -D "$SECS"); else run=(-s "$s" -n $(( SHM_BW_N * 65536 / s ))); fi ;;
  esac
  case "$t" in *_lat) [ "$cm" = 1 ] || run+=("${SHM_PAUSE[@]}") ;; esac # the floor's faster wait (perftest's exchange)
  [ "$cm" = 1 ] || srv=("${run[@]}")
  SRV=("${TOOLS[@]}" perf "$t" -d "$SHM_DEV" "${SHM_OPTS[@]}" "${srv[@]}" -p @PORT@ --timeout 30)
  CLI=("${TOOLS[@]}" perf "$t" -d "$SHM_DEV" "${SHM_OPTS[@]}" "${run[@]}" -p @PORT@ --timeout 30 127.0.0.1)
  run_pair "r$ROUND.$name" 120 "Waiting for client" || return
  row="$(perf_row "$work/r$ROUND.$name.client.out")"
  if [ -z "$row" ]; then
    note "$t -s $s -d $SHM_DEV: no result (round $ROUND): $(tail -n 2 "$work/r$ROUND.$name.client.out" | tr '\n' ' ' | cut -c1-300)"; return
  fi
  set -- $row
  case "$t" in
    *_lat) put "shm.$t.$s" "$5"; put "shm.$t.$s.p99" "$8" ;;
    *) put "shm.$t.$s" "$(awk -v m="$4" 'BEGIN {printf "%.6f", m * 1048576 / 1e9}')"; put "shm.$t.$s.mpps" "$5" ;;
  esac
}

# ShmPingPong: the 8 B WRITE ping-pong of write_lat stripped step by step (docs/shm-performance.md, "Where write_lat's
# time goes"): unsig (an unsignaled WRITE, done inside the post), sig (signaled, and the poll of its completion),
# perf (as sig, and a duty cycle per turn of the wait, as jrdma perf's loop); keys shmpp.STEP
shm_pause() { [ "${#SHM_PAUSE[@]}" -gt 0 ] && echo true || echo false; }

shm_steps() {
  [ "$SHM" = 1 ] || return 0
  local s
  for s in unsig sig perf; do
    SRV=("${BENCH[@]}" io.jrdma.bench.ShmPingPong role=server dir="$work/shmpp.@PORT@" step="$s" iters="$SHM_ITERS" dev="$SHM_DEV" pause="$(shm_pause)")
    CLI=("${BENCH[@]}" io.jrdma.bench.ShmPingPong role=client dir="$work/shmpp.@PORT@" step="$s" iters="$SHM_ITERS" dev="$SHM_DEV" pause="$(shm_pause)")
    base_pair "shm_pingpong.$s" 90 client shm_pingpong median_us "shmpp.$s" || continue
  done
}

# ShmPingPong step=pair: blocks of the floor and of a signaled 8 B WRITE in turn, in the same two processes (the
# vCPUs' placement, which moves the floor 3x, is the same for neighbouring blocks); keys shmpair.write, shmpair.floor
shm_pair() {
  [ "$SHM" = 1 ] || return 0
  local v
  SRV=("${BENCH[@]}" io.jrdma.bench.ShmPingPong role=server dir="$work/shmpair.@PORT@" step=pair blocks=10 block=$((SHM_ITERS / 10)) dev="$SHM_DEV" pause="$(shm_pause)")
  CLI=("${BENCH[@]}" io.jrdma.bench.ShmPingPong role=client dir="$work/shmpair.@PORT@" step=pair blocks=10 block=$((SHM_ITERS / 10)) dev="$SHM_DEV" pause="$(shm_pause)")
  base_pair "shm_pingpong_pair" 120 client shm_pingpong_pair write_us "shmpair.write" || return
  v="$(result_field "$work/r$ROUND.shm_pingpong_pair.client.out" shm_pingpong_pair floor_us)"
  [ -n "$v" ] && put "shmpair.floor" "$v"
}

# ShmOpCost: one process, one thread, two shm0 contexts: the CPU time of a WRITE/READ/FETCH_ADD/SEND (post and
# poll) and of an empty poll, and WRITE/READ bandwidth next to MemorySegment.copy of the same buffers in the same
# round: figures a shared host's scheduling does not blur (keys shmcost.NAME)
shm_opcost() {
  [ "$SHM" = 1 ] || return 0
  local f="$work/r$ROUND.shmcost.out" n v
  start_bg "$f" "${BENCH[@]}" io.jrdma.bench.ShmOpCost rounds=1 n="$SHM_COST_N" secs=0.3 sizes=65536,1048576 dev="$SHM_DEV"
  wait_exit "$BG" 120 || { note "ShmOpCost: did not finish within 120 s (round $ROUND)"; return; }
  for n in write8 post8 read8 fadd8 poll0 send8 turn8 write.65536 read.65536 copy.65536 write.1048576 read.1048576 copy.1048576; do
    v="$(grep "^RESULT shm_op_cost name=$n " "$f" | tr ' ' '\n' | sed -n 's/^median=//p')"
    if [ -n "$v" ]; then put "shmcost.$n" "$v"; else note "ShmOpCost $n: no result (round $ROUND): $(tail -n 2 "$f" | tr '\n' ' ' | cut -c1-300)"; fi
  done
}

# The SEND ping-pong in shm0's ring layout with no provider around it (SendShape: bare, verbs, staged; keys shape.*.8)
send_shape() { # shape
  local sh=$1
  SHAPE_PORTS+=("$PORT")
  # the wait jrdma's SEND waited with in this round (the floor's faster one: SHM_PAUSE)
  SRV=("${BENCH[@]}" io.jrdma.bench.SendShape role=server port=@PORT@ shape="$sh" iters="$SHM_ITERS" warmup=$((SHM_ITERS / 4)) timeout=20 pause="$(shm_pause)")
  CLI=("${BENCH[@]}" io.jrdma.bench.SendShape role=client port=@PORT@ shape="$sh" iters="$SHM_ITERS" warmup=$((SHM_ITERS / 4)) timeout=20 pause="$(shm_pause)")
  base_pair "send_shape.$sh" 90 client "send_shape_$sh" median_us "shape.$sh.8"
}

# Aeron IPC's turn, one process, one thread: the figure ShmOpCost's turn8 gives for jrdma's SEND (key aeron.turn)
aeron_turn() {
  [ "$AERON" = 1 ] || return 0
  local f="$work/r$ROUND.aeron.turn.out" v
  AERON_PORTS+=("$PORT")
  start_bg "$f" "${AERON_JAVA[@]}" io.jrdma.bench.aeron.AeronBench mode=turn port="$PORT" size=8 n="$SHM_COST_N" rounds=1 timeout=20
  next_port
  wait_exit "$BG" 120 || { note "AeronBench mode=turn: did not finish within 120 s (round $ROUND)"; return; }
  v="$(result_field "$f" aeron_ipc_turn median_ns)"
  if [ -n "$v" ]; then put "aeron.turn" "$v"; else note "AeronBench mode=turn: no result (round $ROUND): $(tail -n 2 "$f" | tr '\n' ' ' | cut -c1-300)"; fi
}

shm_section() {
  say "round $ROUND/$ROUNDS ($(elapsed) s): shared memory"
  shm_opcost
  aeron_turn
  # the latency rows that a target compares run next to each other (the floor, jrdma's WRITE, UCX's put; Aeron's
  # ping-pong, jrdma's SEND): a host whose cores' distance changes every few tens of seconds then gives both sides
  # of a ratio the same distance more often (docs/shm-performance.md, "The initiator's own hold, and the wait's PAUSE")
  mapped_pingpong 8
  shm_perf write_lat 8
  [ "$UCX" = 1 ] && ucx posix,self ucp_put_lat 8 $((UCX_N * 4)) ucx.posix.put_lat.8
  # Aeron's ping-pong waits as jrdma's SEND does in this round (a PAUSE per empty poll is how Aeron's own Ping and
  # Pong samples wait, BusySpinIdleStrategy); docs/shm-performance.md, "The 8 B SEND ping-pong, eleventh pass"
  [ "$AERON" = 1 ] && aeron ipc pingpong 8 "$SHM_ITERS" "$(shm_pause)"
  shm_perf send_lat 8
  send_shape verbs; send_shape staged; send_shape bare
  [ "$UCX" = 1 ] && ucx posix,self tag_lat 8 $((UCX_N * 4)) ucx.posix.tag_lat.8
  shm_steps
  shm_pair
  shm_perf atomic_lat 8
  memcopy
  memcopy hot
  local s
  for s in 65536 1048576; do
    shm_perf write_bw "$s"
    shm_perf read_bw "$s"
  done
  if [ "$UCX" = 1 ]; then
    ucx posix,self ucp_put_bw 65536 $((UCX_BW_N * 10)) ucx.posix.put_bw.65536
    ucx posix,self ucp_put_bw 1048576 $((UCX_BW_N * 2)) ucx.posix.put_bw.1048576
  fi
}

# ---------------------------------------------------------------- soft-RoCE, soft-iWARP and their baselines
network_sections() {
  say "round $ROUND/$ROUNDS ($(elapsed) s): latency"
  for s in 8 4096 65536; do
    jrdma_lat write_lat "$s"; udp_pingpong "$s"
    jrdma_lat read_lat "$s"; jrdma_lat send_lat "$s"
    tcp_pingpong "$s"
  done
  jrdma_lat atomic_lat 8
  say "round $ROUND/$ROUNDS ($(elapsed) s): bandwidth"
  udp_blast 4112; udp_blast 4112 unconnected; udp_blast 4112 gso 15
  for t in write_bw read_bw send_bw; do
    jrdma_bw "$t" 4096; jrdma_bw "$t" 65536; jrdma_bw "$t" 1048576
  done
  tcp_stream 65536; tcp_stream 1048576
  say "round $ROUND/$ROUNDS ($(elapsed) s): iWARP"
  for s in 8 4096 65536; do jrdma_lat write_lat "$s" iwarp; done
  jrdma_bw write_bw 65536 iwarp; jrdma_bw write_bw 1048576 iwarp
  say "round $ROUND/$ROUNDS ($(elapsed) s): message rate and scale"
  udp_blast 40; udp_blast 40 gso 64
  jrdma_bw write_bw 8
  qpscale 1 8; qpscale 16 8
  qpscale 1 65536; qpscale 1000 65536
  if [ "$UCX" = 1 ]; then
    say "round $ROUND/$ROUNDS ($(elapsed) s): UCX"
    ucx tcp ucp_put_lat 8 "$UCX_N" ucx.tcp.put_lat.8
    ucx tcp ucp_put_bw 65536 $((UCX_BW_N * 2)) ucx.tcp.put_bw.65536
    ucx tcp ucp_put_bw 1048576 $((UCX_BW_N / 6)) ucx.tcp.put_bw.1048576
  fi
  if [ "$AERON" = 1 ]; then
    say "round $ROUND/$ROUNDS ($(elapsed) s): Aeron"
    aeron udp pingpong 8; aeron udp pingpong 4096
    aeron ipc pingpong 4096
    aeron udp stream 4096; aeron udp stream 65536
    aeron ipc stream 4096
  fi
}

say "compare.sh: $ROUNDS rounds$([ "$QUICK" = 1 ] && echo ' (quick)')$([ "$SHM_ONLY" = 1 ] && echo ', shared memory only'), work directory $work"
for ROUND in $(seq 1 "$ROUNDS"); do
  put loadavg "$(cut -d' ' -f1 /proc/loadavg)"
  [ "$SHM_ONLY" = 1 ] || network_sections
  shm_section
done

# ---------------------------------------------------------------- JMH
jmh_csv="$work/jmh.csv"
if [ "$JMH" = 1 ]; then
  say "JMH ($(elapsed) s)..."
  if [ "$QUICK" = 1 ]; then jmh_opts=(-wi 1 -w 1s -i 2 -r 1s); else jmh_opts=(-wi 2 -w 1s -i 3 -r 1s); fi
  start_bg "$work/jmh.out" "${BENCH[@]}" org.openjdk.jmh.Main -f 1 "${jmh_opts[@]}" -prof gc -rf csv -rff "$jmh_csv" 'io.jrdma.bench.jmh.*'
  wait_exit "$BG" 400 || note "JMH did not finish within 400 s; killed"
  [ -s "$jmh_csv" ] || note "JMH produced no results: $(tail -n 3 "$work/jmh.out" | tr '\n' ' ' | cut -c1-300)"
fi

# ---------------------------------------------------------------- report
sum_opts=(); [ "$SHM_ONLY" = 1 ] && sum_opts=(--shm)
table="$("${BENCH[@]}" io.jrdma.bench.Summarize "$raw" "$jmh_csv" "${sum_opts[@]}")" || { say "compare.sh: summarizing failed"; exit 1; }
mkdir -p "$(dirname "$OUT")"
{
  echo "# jrdma benchmark results"
  echo
  echo "Written by \`bench/compare.sh$([ "$QUICK" = 1 ] && echo ' --quick')$([ "$SHM_ONLY" = 1 ] && echo ' --shm')\` ($ROUNDS rounds, $(elapsed) s). Each cell: median over the rounds (min–max)."
  echo "Ratio = jrdma median / baseline median (per-round ratios: the two figures' ratio within each round, median and min–max); RoCE targets from issue 11 (iWARP rows: issue 5, shared-memory rows: issue 13). Two processes for every pair (on loopback where a network is involved)."
  echo
  echo "## Machine"
  echo
  echo "- date: $(date -u '+%Y-%m-%d %H:%M UTC')"
  echo "- CPU: $(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n 1), nproc $(nproc)"
  echo "- kernel: $(uname -sr)"
  echo "- JDK: $("$JAVA" -version 2>&1 | head -n 1)"
  echo "- memory: $(awk '/MemTotal/ {printf "%.1f GiB", $2 / 1048576}' /proc/meminfo)"
  echo "- load average at the end: $(cut -d' ' -f1-3 /proc/loadavg) (the host is shared: other jobs ran during the run)"
  echo "- shared-memory device: $SHM_DEV $([ "$SHM" = 1 ] && echo 'present' || echo 'absent (its rows are skipped)')"
  echo "- peers: UCX $([ "$UCX" = 1 ] && ucx_info -v 2>/dev/null | sed -n 's/^# Version //p' | head -n 1 || echo 'not installed'), Aeron $([ "$AERON" = 1 ] && ls "$dist"/bench/lib/ | sed -n 's/^aeron-all-\(.*\)\.jar$/\1/p' || echo 'not built')"
  echo
  echo "## Results"
  echo
  echo "$table"
  echo
  echo "## Notes"
  echo
  if [ -s "$notes" ]; then cat "$notes"; else echo "- none: every run produced its figure"; fi
  cat << 'EOF'
- Threading (as `jrdma perf`): latency tests run a busy-polling INVOKER engine on both sides; bandwidth
  tests a busy-polling INVOKER client and a DEDICATED (BACKOFF) server engine. The baselines use one
  busy-polling thread per side; UDP and TCP sockets are non-blocking, UDP sockets have jrdma's 4 MiB buffers.
- READ latency is compared with the WRITE round trip (both are one network round trip: the primary
  rows) and, as printed by perftest, with the WRITE one-way figure ("as printed" rows): the issue's
  "READ ≤ 1.3× WRITE" can be read either way.
- UDP ping-pong sends a message above 4 KiB as 4 KiB datagrams (as jrdma segments by its 4 KiB MTU).
  The UDP blast uses 4112-byte datagrams (the size of a full-MTU WRITE packet: BTH + 4096 B + ICRC)
  for every bandwidth row, and 40-byte ones (an 8 B WRITE-only packet) for the message rate; the
  receiver counts what arrives after a 0.5 s warm-up.
- QpScale: all QPs on one device and one CQ per side; at most 128 messages outstanding in total, at
  most max(1, 128/QPs) per QP, round robin; memory = heap after full GC (and direct buffers) per QP.
- Aeron: media driver in INVOKER mode driven by the benchmark thread; UDP mtu 4128, 4 MiB socket
  buffers, 2 MiB receiver window; IPC with the driver in the server process.
- UCX: ucx_perftest with UCX_NET_DEVICES=lo; latency is its 50th percentile (one-way), bandwidth its average.
- iWARP rows: `jrdma perf ... -d iwarp_lo` on both sides (the connection manager over MPA/TCP, no MPA CRC:
  two jrdma peers negotiate it away unless -Djrdma.iwarp.crc=true; FPDUs of one loopback TCP segment), same threading as the RoCE rows; baselines are the raw Java
  TCP ping-pong and streaming of the same round. A WRITE over iWARP completes once TCP took it.
- Shared memory (issue 13), every pair two processes with at most one spinning thread each (2 cores):
  the floor is `MappedPingPong` (two JVMs map one file in /dev/shm and spin on a flag word, getAcquire /
  setRelease, 8 B, one-way = half the round trip; one clock read per round trip, right after the ping's
  store, as jrdma perf's loops read theirs after the post: none between a message's arrival and the reply), run
  twice in each round, its wait spinning on the flag alone and with a PAUSE per turn: the faster of the two is
  the round's floor, and jrdma's latency rows and the ping-pong steps wait the same way in that round (perf
  --pause, ShmPingPong pause=true; "Other figures" gives both floors and which one each round took); `MemCopy` is MemorySegment.copy between two native
  buffers on one thread, "one buffer each way" (the working set of perftest's exchange, which jrdma's
  rows use, and of ucx_perftest: the targets' rows) or cycling through 4 MiB (64 KiB) and 8 MiB (1 MiB)
  as `jrdma perf --jrdma-cm` does (the RoCE rows' copy); Aeron IPC is a ping-pong
  between two processes, the media driver embedded in the server process in INVOKER mode (no driver
  thread: each side's one thread runs the driver's and its client's duty cycles every 64 empty polls;
  the clock read once per round trip, right after the offer; in the shared-memory section it waits as that
  round's jrdma rows do, a PAUSE per empty poll or none, as Aeron's own Ping and Pong samples pause),
  where Aeron's own samples run the driver in threads of its own; UCX is `ucx_perftest` with
  UCX_TLS=posix,self. jrdma's rows are `jrdma perf <test> -d shm0` between two processes (perftest's
  exchange: the same -s and -n on both sides, bandwidth over 33 GB per run, 13 GB with --quick; between two
  jrdma sides the client warms up until its JIT's compiler threads are quiet and then with one run of the
  measured length, and MemCopy waits for a quiet JIT the same way before its measured second: until
  2026-11-27 the jrdma rows' measured runs held their own JIT's compilations, which cost 10-15% on a 2-core
  host, while the copy's mostly did not; docs/shm-performance.md, "Bandwidth against the copy"),
  skipped while `jrdma devices` lists no shm0. The "ping-pong" rows are `ShmPingPong`, write_lat's loop
  stripped step by step (an unsignaled WRITE done inside the post; signaled, with the poll of its
  completion; and a duty cycle per turn of the wait, as `jrdma perf` does), against the same floor. READ bandwidth is compared with ucp_put_bw, as
  the issue's target says; FETCH_ADD (perftest's whole-operation latency) with WRITE's one-way figure,
  both as printed. `ShmOpCost` rows: one process, one thread, two INVOKER shm0 contexts, measured on the
  thread's CPU-time clock (so a busy host's scheduling does not enter): ns per signaled 8 B operation
  (post and the poll that returns it), per empty poll, per SEND into a posted receive (both sides' work),
  and WRITE/READ GB/s per CPU second against MemorySegment.copy of the same two buffers in the same round.
EOF
} > "$OUT"
echo "$table"
say "compare.sh: done in $(elapsed) s; results in $OUT"

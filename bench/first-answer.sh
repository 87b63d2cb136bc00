#!/usr/bin/env bash
# bench/first-answer.sh: how long a freshly started jrdma server leaves a peer's first requests
# unanswered. A Linux rxe peer retransmits after the QP timeout (perftest's default: 4.096 us x 2^14,
# about 67 ms), so a cold server slower than that makes the interop suites fail.
#
#   bench/first-answer.sh [ROUNDS] [TEST] [DIR ...]
#
# Each round starts a `jrdma perf TEST` server (perftest's exchange, -d roce_lo, so UDP port 4791,
# which must be free) in a new JVM, runs
# a client against it on 127.0.0.1 and captures loopback with tcpdump; the figure is the time from
# the first RoCE packet the client sent to the first packet the server sent back. DIR: checkouts
# whose ./jrdma launcher to compare (default: this one), alternated within each round.
# Needs root and: apt-get install tcpdump tshark
set -uo pipefail
ROUNDS=${1:-5}; TEST=${2:-write_bw}; shift $(( $# > 2 ? 2 : $# ))
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
dirs=("$@"); [ ${#dirs[@]} -gt 0 ] || dirs=("$here")
for t in tcpdump tshark; do
  command -v $t >/dev/null || { echo "first-answer.sh: needs $t (apt-get install tcpdump tshark)" >&2; exit 1; }
done
port=$(( 32000 + $$ % 1000 ))
once() { # once DIR: prints the milliseconds to the server's first packet
  local d=$1 w; w="$(mktemp -d /tmp/jrdma-first.XXXXXX)"
  port=$((port + 1))
  tcpdump -i lo -w "$w/lo.pcap" -U udp >/dev/null 2>&1 & local tp=$!
  sleep 0.7
  "$d/jrdma" perf "$TEST" -d roce_lo -p $port > "$w/srv.txt" 2>&1 & local sp=$!
  local i=0
  while ! grep -q "Waiting for client" "$w/srv.txt" 2>/dev/null && [ $i -lt 200 ]; do sleep 0.05; i=$((i + 1)); done
  "$d/jrdma" perf "$TEST" -d roce_lo -p $port -n 300 127.0.0.1 > "$w/cli.txt" 2>&1
  wait $sp; sleep 0.3; kill $tp; wait $tp 2>/dev/null
  # the server listens on 4791 (a warm-up's contexts take ports the kernel picks, and their traffic
  # ends before either side connects): from the first datagram to 4791 to the first the other way
  tshark -r "$w/lo.pcap" -T fields -e frame.time_epoch -e udp.dstport 2>/dev/null \
    | awk '!t0 && $2 == 4791 {t0 = $1; next} t0 && $2 != 4791 {printf "%.1f\n", ($1 - t0) * 1000; exit}'
  rm -rf "$w"
}
for d in "${dirs[@]}"; do "$d/jrdma" --version >/dev/null || exit 1; done # builds what is stale first
echo "# $(date -u '+%Y-%m-%d %H:%M UTC'), $TEST, $ROUNDS rounds, load $(cut -d' ' -f1-3 /proc/loadavg)"
declare -A all
for r in $(seq 1 "$ROUNDS"); do
  line="round $r:"
  for d in "${dirs[@]}"; do
    ms="$(once "$d")"; all[$d]="${all[$d]:-} $ms"; line="$line  $(basename "$d") ${ms:-?} ms"
  done
  echo "$line"
done
for d in "${dirs[@]}"; do
  echo "$(basename "$d"): $(echo ${all[$d]} | tr ' ' '\n' | sort -n | awk '{v[NR] = $1} END {if (NR) printf "median %s ms (%s-%s) over %d rounds", v[int((NR + 1) / 2)], v[1], v[NR], NR}')"
done

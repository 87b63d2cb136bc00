#!/usr/bin/env bash
# reliability/fuzz.sh [INPUTS] [SEED]: the test suite's fuzzers at a larger scale.
#
# INPUTS RoCE packets (default 1,000,000: random, truncated, mutated golden captures, hostile valid-ICRC headers
# at a live QP), INPUTS/100 MPA requests and connection-manager messages, INPUTS/1000 iWARP connections of hostile
# FPDUs; prints each fuzzer's figures (inputs, time, receiver counters by reason). Fails on a crash, a hang (the
# tests' timeouts), a byte touched outside the target region, or an input no counter accounts for.
set -euo pipefail
N=${1:-1000000}; SEED=${2:-1}
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
JAVA_HOME="$("$here/jrdma" --java-home)"; export JAVA_HOME
cd "$here"
echo "fuzz.sh: $(date -u '+%F %T UTC'), load $(cut -d' ' -f1-3 /proc/loadavg); $N inputs, seed $SEED"
./mvnw -q -DskipTests install
./mvnw -pl jrdma-engine test-compile surefire:test@default-test -Dsurefire.failIfNoSpecifiedTests=false \
  -Dtest='RoceFuzzTest,IwarpFuzzTest,CmFuzzTest' -Djrdma.fuzz.seed="$SEED" -Djrdma.fuzz.inputs="$N" \
  -Djrdma.fuzz.mpa=$((N / 100)) -Djrdma.fuzz.cm=$((N / 100)) -Djrdma.fuzz.fpduConnections=$((N / 1000)) \
  | grep -E 'fuzz:|Tests run:|FAIL|BUILD'
echo "fuzz.sh: done $(date -u '+%F %T UTC'), load $(cut -d' ' -f1-3 /proc/loadavg)"

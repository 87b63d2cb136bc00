#!/usr/bin/env bash
# reliability/soak.sh [SECONDS] [SEED]: the soak under seeded faults (default an hour).
#
# Rounds of 120 requests of every RC opcode through jrdma's in-memory test network dropping, duplicating,
# reordering and corrupting packets at 1 %, 5 % and 10 % in turn, a new seed each round; every request must
# complete exactly once, in order, with the right data (SoakTest). Prints the requests and drops per rate.
set -euo pipefail
SECONDS_=${1:-3600}; SEED=${2:-1}
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
JAVA_HOME="$("$here/jrdma" --java-home)"; export JAVA_HOME
cd "$here"
echo "soak.sh: $(date -u '+%F %T UTC'), load $(cut -d' ' -f1-3 /proc/loadavg); $SECONDS_ s, seed $SEED"
./mvnw -q -DskipTests install
./mvnw -pl jrdma-engine test-compile surefire:test@default-test -Dsurefire.failIfNoSpecifiedTests=false \
  -Dtest=SoakTest -Djrdma.soak.seconds="$SECONDS_" -Djrdma.soak.seed="$SEED" | grep -E 'soak:|Tests run:|FAIL|BUILD'
echo "soak.sh: done $(date -u '+%F %T UTC'), load $(cut -d' ' -f1-3 /proc/loadavg)"

#!/bin/bash
# interop/rdmacore-tck.sh - the conformance suite (jrdma-tck) and the allocation test over the rdma-core
# provider on Linux rxe and siw: in guest 1 of the interop harness, with this build and the host's JDK
# shared into it over 9p, the TCK subclasses of jrdma-rdmacore run once with -Djrdma.tck.rdmacore.device=rxe0
# and once with siw0, then RdmaCoreAllocationTest on each device.
#
# usage: interop/rdmacore-tck.sh [--no-build] [--keep] [DEVICE...]   (default devices: rxe0 siw0)
#   --no-build  use the build as it is (else: ./mvnw package -DskipTests of jrdma-rdmacore and what it needs)
#   --keep      leave guest 1 running (by default it is stopped again if this script started it)
# Env: JDK (a JDK 25 or newer; default $JAVA_HOME), VM (the harness's vm.sh), SHARE, CACHE, RUN, NS, VCPUS
#      (1 unless set), as for vm.sh; OUT (results folder, default interop/results/rdmacore-tck-<UTC time>);
#      CM_LOG=1 prints the connection manager's debug log (why a connection failed on the passive side);
#      TCK="CLASS[#METHOD] ..." runs those instead of every TCK class; ALLOC=0 leaves the allocation tests out;
#      MANY_QPS (default 32): the QPs of SrqTck.oneSrqSharedByAThousandQps (1,000 outside these guests: under TCG
#      one QP takes about half a second to make and connect, past the test's 60 s long before 1,000).
# Needs root (vm.sh). Exit status 0 when no test failed.
set -euo pipefail

. "$(dirname "$0")/lib.sh"
rdmacore_args rdmacore-tck.sh "$@"
OUT=${OUT:-$INTEROP/results/rdmacore-tck-$(date -u +%Y%m%dT%H%M%SZ)}
devices=()
for a in "${ARGS[@]}"; do
    case "$a" in
        -*) echo "rdmacore-tck.sh: unknown argument '$a' (see --help)" >&2; exit 2 ;;
        *) devices+=("$a") ;;
    esac
done
[ ${#devices[@]} -gt 0 ] || devices=(rxe0 siw0)
rdmacore_checks
rdmacore_build jrdma-rdmacore

# the build, its test classpath, the runner and the JDK, where the guest sees them as /mnt/host/rdmacore
rdmacore_share_tck rdmacore
printf 'handlers=java.util.logging.ConsoleHandler\n.level=INFO\njava.util.logging.ConsoleHandler.level=ALL\nio.jrdma.engine.cm.level=%s\n' \
    "$([ "${CM_LOG:-0}" = 1 ] && echo FINE || echo INFO)" > "$SHARE/rdmacore/tck/logging.properties"
rdmacore_share_jdk rdmacore
rdmacore_guests 1 rdmacore

mkdir -p "$OUT"
"$VM" exec 1 'uname -r; rdma link show; dpkg-query -W libibverbs1 ibverbs-providers' > "$OUT/guest.txt"
run() { # device out classes...
    local dev=$1 out=$2; shift 2
    "$VM" exec 1 "cd /tmp && ulimit -l unlimited && /mnt/host/rdmacore/jdk/bin/java -Xmx256m -Xshare:off \
        --enable-native-access=ALL-UNNAMED --add-opens java.base/sun.nio.ch=ALL-UNNAMED \
        -Djrdma.tck.rdmacore.device=$dev -Djrdma.tck.rdmacore.manyQps=${MANY_QPS:-32} -Djava.util.logging.config.file=/mnt/host/rdmacore/tck/logging.properties \
        -cp '$TCK_CP' \
        TckMain $*" > "$out" 2>&1
}
TCK=${TCK:-"io.jrdma.rdmacore.tck.RdmaCoreDataPathTest io.jrdma.rdmacore.tck.RdmaCoreConnectionTest
  io.jrdma.rdmacore.tck.RdmaCoreCompletionChannelTest io.jrdma.rdmacore.tck.RdmaCoreErrorTest
  io.jrdma.rdmacore.tck.RdmaCoreOrderingTest io.jrdma.rdmacore.tck.RdmaCoreUdTest io.jrdma.rdmacore.tck.RdmaCoreUcTest
  io.jrdma.rdmacore.tck.RdmaCoreSrqTest io.jrdma.rdmacore.tck.RdmaCoreAsyncEventTest
  io.jrdma.rdmacore.tck.RdmaCoreMemoryWindowTest io.jrdma.rdmacore.tck.RdmaCoreUnsupportedVerbsTest
  io.jrdma.rdmacore.tck.RdmaCorePortTest"}
rc=0
for dev in "${devices[@]}"; do
    run "$dev" "$OUT/tck-$dev.txt" $TCK || rc=1
    echo "$dev: $(tail -1 "$OUT/tck-$dev.txt")"
done
if [ "${ALLOC:-1}" = 1 ]; then
    for dev in "${devices[@]}"; do
        run "$dev" "$OUT/allocation-$dev.txt" io.jrdma.rdmacore.RdmaCoreAllocationTest || rc=1
        echo "allocation $dev: $(tail -1 "$OUT/allocation-$dev.txt")"
    done
fi
echo "results in $OUT"
exit $rc

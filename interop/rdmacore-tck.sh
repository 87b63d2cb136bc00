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

HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(dirname "$HERE")
VM=${VM:-$HERE/harness/vm.sh}
JDK=${JDK:-${JAVA_HOME:-}}
export SHARE=${SHARE:-$HERE/harness/share}
export VCPUS=${VCPUS:-1}
OUT=${OUT:-$HERE/results/rdmacore-tck-$(date -u +%Y%m%dT%H%M%SZ)}
build=1 keep=0 devices=()
for a in "$@"; do
    case "$a" in
        --no-build) build=0 ;;
        --keep) keep=1 ;;
        -h|--help) sed -n '2,15p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        -*) echo "rdmacore-tck.sh: unknown argument '$a' (see --help)" >&2; exit 2 ;;
        *) devices+=("$a") ;;
    esac
done
[ ${#devices[@]} -gt 0 ] || devices=(rxe0 siw0)
[ "$(id -u)" = 0 ] || { echo "rdmacore-tck.sh: run as root (the harness's namespace and taps)" >&2; exit 1; }
if [ -z "$JDK" ] || ! "$JDK/bin/java" -version 2>&1 | grep -qE 'version "(2[5-9]|[3-9][0-9])'; then
    echo "rdmacore-tck.sh: set JDK (or JAVA_HOME) to a JDK 25 or newer; got '${JDK}'" >&2; exit 1
fi
if [ "$build" = 1 ]; then
    (cd "$ROOT" && JAVA_HOME=$JDK ./mvnw -q -B -DskipTests -Dmaven.javadoc.skip=true -Dmaven.source.skip=true \
        package -pl jrdma-rdmacore -am)
fi
cp_file=$(mktemp)
(cd "$ROOT" && JAVA_HOME=$JDK ./mvnw -q -B -o dependency:build-classpath -Dmdep.outputFile="$cp_file" \
    -Dmdep.includeScope=test -pl jrdma-rdmacore) >/dev/null
launcher=$(ls "$HOME"/.m2/repository/org/junit/platform/junit-platform-launcher/1.11.4/junit-platform-launcher-1.11.4.jar)

# the build, its test classpath, the runner and the JDK, where the guest sees them as /mnt/host/rdmacore
dest=$SHARE/rdmacore
rm -rf "$dest/tck"
mkdir -p "$dest/tck/lib"
cp -r "$ROOT/jrdma-rdmacore/target/classes" "$dest/tck/classes"
cp -r "$ROOT/jrdma-rdmacore/target/test-classes" "$dest/tck/test-classes"
# jrdma's own modules from this checkout's build, not from the local Maven repository (which may hold another build)
for j in $(tr ':' ' ' < "$cp_file") "$launcher"; do
    case "$j" in
        */io/jrdma/jrdma-*) m=$(basename "$(dirname "$(dirname "$j")")")
            [ -d "$ROOT/$m/target/classes" ] || { echo "rdmacore-tck.sh: no $m/target/classes: build first" >&2; exit 1; }
            cp -r "$ROOT/$m/target/classes" "$dest/tck/$m" ;;
        *) cp "$j" "$dest/tck/lib/" ;;
    esac
done
rm -f "$cp_file"
printf 'handlers=java.util.logging.ConsoleHandler\n.level=INFO\njava.util.logging.ConsoleHandler.level=ALL\nio.jrdma.engine.cm.level=%s\n' \
    "$([ "${CM_LOG:-0}" = 1 ] && echo FINE || echo INFO)" > "$dest/tck/logging.properties"
"$JDK/bin/javac" -d "$dest/tck/runner" -cp "$dest/tck/lib/*" "$HERE/rdmacore/TckMain.java"
if [ ! -x "$dest/jdk/bin/java" ] || [ "$(cat "$dest/jdk.from" 2>/dev/null)" != "$(readlink -f "$JDK")" ]; then
    rm -rf "$dest/jdk"
    cp -a "$(readlink -f "$JDK")" "$dest/jdk"
    readlink -f "$JDK" > "$dest/jdk.from"
fi

started=0
if ! "$VM" exec 1 true 2>/dev/null; then
    "$VM" up 1
    started=1
fi
stop() { if [ "$started" = 1 ] && [ "$keep" = 0 ]; then "$VM" down || true; fi; }
trap stop EXIT

mkdir -p "$OUT"
"$VM" exec 1 'mountpoint -q /mnt/host || mount -t 9p -o trans=virtio,version=9p2000.L,msize=262144 host /mnt/host'
"$VM" exec 1 'test -x /mnt/host/rdmacore/jdk/bin/java' \
    || { echo "rdmacore-tck.sh: guest 1 does not see $dest as /mnt/host/rdmacore: was it booted with another SHARE?" >&2; exit 1; }
"$VM" exec 1 'uname -r; rdma link show; dpkg-query -W libibverbs1 ibverbs-providers' > "$OUT/guest.txt"
modules=$(cd "$dest/tck" && for m in jrdma-*; do printf '/mnt/host/rdmacore/tck/%s:' "$m"; done)
run() { # device out classes...
    local dev=$1 out=$2; shift 2
    "$VM" exec 1 "cd /tmp && ulimit -l unlimited && /mnt/host/rdmacore/jdk/bin/java -Xmx256m -Xshare:off \
        --enable-native-access=ALL-UNNAMED --add-opens java.base/sun.nio.ch=ALL-UNNAMED \
        -Djrdma.tck.rdmacore.device=$dev -Djrdma.tck.rdmacore.manyQps=${MANY_QPS:-32} -Djava.util.logging.config.file=/mnt/host/rdmacore/tck/logging.properties \
        -cp '/mnt/host/rdmacore/tck/runner:/mnt/host/rdmacore/tck/test-classes:/mnt/host/rdmacore/tck/classes:$modules/mnt/host/rdmacore/tck/lib/*' \
        TckMain $*" > "$out" 2>&1
}
TCK=${TCK:-"io.jrdma.rdmacore.tck.RdmaCoreDataPathTest io.jrdma.rdmacore.tck.RdmaCoreConnectionTest
  io.jrdma.rdmacore.tck.RdmaCoreCompletionChannelTest io.jrdma.rdmacore.tck.RdmaCoreErrorTest
  io.jrdma.rdmacore.tck.RdmaCoreOrderingTest io.jrdma.rdmacore.tck.RdmaCoreUdTest io.jrdma.rdmacore.tck.RdmaCoreUcTest
  io.jrdma.rdmacore.tck.RdmaCoreSrqTest io.jrdma.rdmacore.tck.RdmaCoreAsyncEventTest
  io.jrdma.rdmacore.tck.RdmaCoreMemoryWindowTest io.jrdma.rdmacore.tck.RdmaCoreUnsupportedVerbsTest"}
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

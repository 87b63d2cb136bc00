#!/bin/bash
# interop/rdmacore-pingpong.sh - `jrdma pingpong -d rxe0` over the rdma-core provider (Linux rxe through
# libibverbs, no jrdma engine) against rdma-core's ibv_rc_pingpong: jrdma (this build and the host's JDK,
# shared over 9p) in guest 1, ibv_rc_pingpong in guest 2, in both roles, with the data checked (-c).
#
# usage: interop/rdmacore-pingpong.sh [--no-build] [--keep] [SIZE...]   (default sizes: 1 4096 65536)
#   --no-build  use jrdma-tools/target as it is (else: ./mvnw package of jrdma-tools and what it needs)
#   --keep      leave the guests running (by default they are stopped again if this script started them)
# Env: JDK, VM, SHARE, CACHE, RUN, NS, VCPUS (1 unless set) as for vm.sh; OUT (results folder, default
#      interop/results/rdmacore-pingpong-<UTC time>); ITERS (iterations per run, default 500); GID (the GID
#      index both use, default 1: the IPv4-mapped one).
# Needs root (vm.sh). Exit status 0 when every run passed.
set -euo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(dirname "$HERE")
VM=${VM:-$HERE/harness/vm.sh}
JDK=${JDK:-${JAVA_HOME:-}}
export SHARE=${SHARE:-$HERE/harness/share}
export VCPUS=${VCPUS:-1}
OUT=${OUT:-$HERE/results/rdmacore-pingpong-$(date -u +%Y%m%dT%H%M%SZ)}
ITERS=${ITERS:-500} GID=${GID:-1}
build=1 keep=0 sizes=()
for a in "$@"; do
    case "$a" in
        --no-build) build=0 ;;
        --keep) keep=1 ;;
        -h|--help) sed -n '2,12p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        -*) echo "rdmacore-pingpong.sh: unknown argument '$a' (see --help)" >&2; exit 2 ;;
        *) sizes+=("$a") ;;
    esac
done
[ ${#sizes[@]} -gt 0 ] || sizes=(1 4096 65536)
[ "$(id -u)" = 0 ] || { echo "rdmacore-pingpong.sh: run as root (the harness's namespace and taps)" >&2; exit 1; }
if [ -z "$JDK" ] || ! "$JDK/bin/java" -version 2>&1 | grep -qE 'version "(2[5-9]|[3-9][0-9])'; then
    echo "rdmacore-pingpong.sh: set JDK (or JAVA_HOME) to a JDK 25 or newer; got '${JDK}'" >&2; exit 1
fi
if [ "$build" = 1 ]; then
    (cd "$ROOT" && JAVA_HOME=$JDK ./mvnw -q -B -DskipTests -Dmaven.javadoc.skip=true -Dmaven.source.skip=true \
        package -pl jrdma-tools -am)
fi
dest=$SHARE/rdmacore
rm -rf "$dest/jrdma"
mkdir -p "$dest/jrdma"
cp "$ROOT/jrdma-tools/target/jrdma-tools.jar" "$dest/jrdma/"
cp -r "$ROOT/jrdma-tools/target/lib" "$dest/jrdma/lib"
if [ ! -x "$dest/jdk/bin/java" ] || [ "$(cat "$dest/jdk.from" 2>/dev/null)" != "$(readlink -f "$JDK")" ]; then
    rm -rf "$dest/jdk"
    cp -a "$(readlink -f "$JDK")" "$dest/jdk"
    readlink -f "$JDK" > "$dest/jdk.from"
fi

started=0
if ! "$VM" exec 1 true 2>/dev/null || ! "$VM" exec 2 true 2>/dev/null; then
    "$VM" up 2
    started=1
fi
stop() { if [ "$started" = 1 ] && [ "$keep" = 0 ]; then "$VM" down || true; fi; }
trap stop EXIT

mkdir -p "$OUT"
"$VM" exec 1 'mountpoint -q /mnt/host || mount -t 9p -o trans=virtio,version=9p2000.L,msize=262144 host /mnt/host'
"$VM" exec 1 'test -x /mnt/host/rdmacore/jdk/bin/java' \
    || { echo "rdmacore-pingpong.sh: guest 1 does not see $dest as /mnt/host/rdmacore: booted with another SHARE?" >&2; exit 1; }
"$VM" exec 1 'uname -r; rdma link show; dpkg-query -W libibverbs1 ibverbs-utils' > "$OUT/guest.txt"
G1=10.77.0.11 G2=10.77.0.12
JRDMA="cd /mnt/host/rdmacore/jrdma && ulimit -l unlimited && /mnt/host/rdmacore/jdk/bin/java -Xmx256m \
 --enable-native-access=io.jrdma.engine,io.jrdma.rdmacore --add-opens java.base/sun.nio.ch=io.jrdma.engine \
 -p jrdma-tools.jar:lib -m io.jrdma.tools/io.jrdma.tools.Main pingpong"

# the server's TCP port 18515 is listening (both tools' default): polled, bounded (a JVM under TCG with one vCPU
# takes 20-60 s to start, more when the host is loaded)
sleep_until_listening() {
    local g=$1 deadline=$(( $(date +%s) + 180 ))
    while [ "$(date +%s)" -lt $deadline ]; do
        "$VM" exec "$g" "ss -ltn | grep -q ':18515 '" 2>/dev/null && return 0
        sleep 0.5
    done
    echo "rdmacore-pingpong.sh: no server listening on guest $g after 180 s" >&2
    return 1
}
# one run: server in guest $1 with command $2, client in guest $3 with command $4; outputs in $5.{server,client}
pair() {
    local sg=$1 scmd=$2 cg=$3 ccmd=$4 out=$5
    "$VM" exec "$sg" "pkill -x ibv_rc_pingpong; true" >/dev/null 2>&1 || true
    "$VM" exec "$sg" "timeout 400 bash -c '$scmd'" > "$out.server" 2>&1 &
    local spid=$!
    local rc=0
    sleep_until_listening "$sg" || rc=1
    "$VM" exec "$cg" "timeout 200 bash -c '$ccmd'" > "$out.client" 2>&1 || rc=$?
    wait $spid || rc=$?
    return $rc
}

rc=0
for s in "${sizes[@]}"; do
    opt="-d rxe0 -g $GID -s $s -n $ITERS -c"
    r=0; pair 2 "ibv_rc_pingpong $opt" 1 "$JRDMA $opt $G2" "$OUT/s$s-jrdma-client" || r=$?
    echo "size $s, jrdma client -> ibv_rc_pingpong server: $([ $r = 0 ] && echo PASS || echo "FAIL ($r)"); $(grep -h 'iters in' "$OUT/s$s-jrdma-client.client" | head -1)"
    [ $r = 0 ] || rc=1
    r=0; pair 1 "$JRDMA $opt" 2 "ibv_rc_pingpong $opt $G1" "$OUT/s$s-jrdma-server" || r=$?
    echo "size $s, ibv_rc_pingpong client -> jrdma server: $([ $r = 0 ] && echo PASS || echo "FAIL ($r)"); $(grep -h 'iters in' "$OUT/s$s-jrdma-server.client" | head -1)"
    [ $r = 0 ] || rc=1
done
echo "results in $OUT"
exit $rc

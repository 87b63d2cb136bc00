# Shared by interop/run.sh, interop/run-iwarp.sh and (further down) the interop/rdmacore-*.sh scripts (sourced, not run).

# The QEMU harness in this repository (interop/harness): the peer when neither --vm nor --ssh is given.
HARNESS="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/harness"

# connect_peer NAME DEFAULT_PEER_IP: defines peer() (runs a command line on the peer) and here() (runs a
# command on this side, in the harness's namespace for --vm) from VMDIR or SSH (neither: VMDIR is the
# in-repository harness); with --vm, PEER_IP and LOCAL_IF default to the harness's guest 1 address and
# br0; sets VM to the harness script.
connect_peer() {
  local name=$1 default_ip=$2
  [ -n "$VMDIR" ] || [ -n "$SSH" ] || VMDIR=$HARNESS
  if [ -n "$VMDIR" ]; then
    VM=$VMDIR; [ -d "$VM" ] && VM="$VM/vm.sh"
    [ -x "$VM" ] || { echo "no harness script $VM" >&2; exit 2; }
    local status; status=$("$VM" status 2>/dev/null) # not piped into grep -q: with pipefail, a second guest's
    if ! grep -q '^g1 running' <<< "$status"; then      # line would meet a closed pipe and fail the check
      echo "$name: guest 1 of the harness ($VM) is not running; as root, once:" >&2
      echo "  ${VM%/vm.sh}/build-image.sh && VCPUS=1 $VM up 1   (packages: interop/harness/README.md)" >&2
      echo "or give another peer with --ssh (see --help)" >&2
      exit 2
    fi
    peer() { "$VM" exec 1 "$*"; }
    here() { "$VM" ns "$@"; }
    PEER_IP=${PEER_IP:-$default_ip}
    LOCAL_IF=${LOCAL_IF:-br0}
  elif [ -n "$SSH" ]; then
    peer() { ssh -o BatchMode=yes -o ConnectTimeout=10 "$SSH" "$*"; }
    here() { "$@"; }
    [ -n "$PEER_IP" ] && [ -n "$LOCAL_IF" ] || { echo "--ssh needs --peer-ip and --local-if" >&2; exit 2; }
  fi
}

# need_tools NAME CMD:PACKAGE...: exits with the apt-get line when a command this side needs is missing
need_tools() {
  local name=$1 t missing=() pkgs=(); shift
  for t in "$@"; do
    command -v "${t%%:*}" >/dev/null || { missing+=("${t%%:*}"); pkgs+=("${t#*:}"); }
  done
  [ ${#missing[@]} = 0 ] && return 0
  echo "$name: ${missing[*]} not found; as root: apt-get install ${pkgs[*]}" >&2
  exit 2
}

# wait_listen SIDE(jrdma|peer) PORT SECS: waits until something listens on TCP PORT on that side
wait_listen() {
  local deadline=$(( $(date +%s) + $3 ))
  while [ "$(date +%s)" -lt $deadline ]; do
    if [ "$1" = jrdma ]; then here ss -ltnH "sport = :$2" | grep -q . && return 0
    else peer "ss -ltnH 'sport = :$2'" | grep -q . && return 0; fi
    sleep 0.2
  done
  return 1
}

# ---------------------------------------------------------------------------------------------------------------
# The rdmacore-*.sh scripts (jrdma over the rdma-core provider inside the harness's guests): their common
# argument parsing, checks, build, what they share into the guests over 9p, and the guests' start and stop.

INTEROP="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"

# rdmacore_args NAME "$@": parses --no-build, --keep and -h/--help (prints the script's header comment) and
# leaves everything else, in order, in ARGS; sets build (1) and keep (0); exports SHARE and VCPUS (1 unless set);
# sets ROOT, VM (the harness's vm.sh unless given) and JDK (default $JAVA_HOME).
rdmacore_args() {
    RDMACORE_NAME=$1; shift
    ROOT=$(dirname "$INTEROP")
    VM=${VM:-$INTEROP/harness/vm.sh}
    JDK=${JDK:-${JAVA_HOME:-}}
    export SHARE=${SHARE:-$INTEROP/harness/share}
    export VCPUS=${VCPUS:-1}
    build=1 keep=0 ARGS=()
    while [ $# -gt 0 ]; do
        case "$1" in
            --no-build) build=0 ;;
            --keep) keep=1 ;;
            -h|--help) sed -n '2,/^[^#]/p' "$0" | grep '^#' | sed 's/^# \{0,1\}//'; exit 0 ;;
            *) ARGS+=("$1") ;;
        esac
        shift
    done
}

# rdmacore_checks: root (the harness's namespace and taps) and a JDK 25 or newer in JDK
rdmacore_checks() {
    [ "$(id -u)" = 0 ] || { echo "$RDMACORE_NAME: run as root (the harness's namespace and taps)" >&2; exit 1; }
    if [ -z "$JDK" ] || ! "$JDK/bin/java" -version 2>&1 | grep -qE 'version "(2[5-9]|[3-9][0-9])'; then
        echo "$RDMACORE_NAME: set JDK (or JAVA_HOME) to a JDK 25 or newer; got '${JDK}'" >&2; exit 1
    fi
}

# rdmacore_build MODULES: unless --no-build, ./mvnw package -DskipTests of MODULES (comma-separated) and what they need
rdmacore_build() {
    [ "$build" = 1 ] || return 0
    (cd "$ROOT" && JAVA_HOME=$JDK ./mvnw -q -B -DskipTests -Dmaven.javadoc.skip=true -Dmaven.source.skip=true \
        package -pl "$1" -am)
}

# rdmacore_share_tools DIR: jrdma-tools' jar and its lib/ into $SHARE/DIR/jrdma, and the JDK into $SHARE/DIR/jdk
# (copied again only when JDK names another one); the guests see $SHARE as /mnt/host
rdmacore_share_tools() {
    local dest=$SHARE/$1
    [ -f "$ROOT/jrdma-tools/target/jrdma-tools.jar" ] \
        || { echo "$RDMACORE_NAME: no jrdma-tools/target/jrdma-tools.jar: build first" >&2; exit 1; }
    rm -rf "$dest/jrdma"
    mkdir -p "$dest/jrdma"
    # -p: the AOT cache below records each jar's size and time, which the guests' JVM checks
    cp -p "$ROOT/jrdma-tools/target/jrdma-tools.jar" "$dest/jrdma/"
    cp -rp "$ROOT/jrdma-tools/target/lib" "$dest/jrdma/lib"
    rdmacore_share_jdk "$1"
    rdmacore_aot_cache "$1"
}

# The JVM options of every jrdma run in the guests (rdmacore_jrdma) and of the AOT cache's training run: those the
# cache depends on are the same in both (the serial GC is what a JVM picks on the guests' one vCPU anyway).
RDMACORE_JVM="-Xmx256m -XX:+UseSerialGC --enable-native-access=io.jrdma.engine,io.jrdma.rdmacore --add-opens java.base/sun.nio.ch=io.jrdma.engine"

# rdmacore_aot_cache DIR: unless RDMACORE_AOT=0, the JVM's AOT cache of the tools (JEP 483/514, as ./jrdma makes its
# own) into $SHARE/DIR/jrdma/jrdma.aot, trained here on the host with the shared JDK and jars ('jrdma aot-training'),
# which the guests then read the classes from instead of loading them from the jars over 9p. The training runs where
# the guests run, /mnt/host/DIR/jrdma ($SHARE bind-mounted there in a mount namespace of its own; an empty /mnt/host
# is made on the host as its mount point): the cache keeps the modules' absolute locations, and a cache trained
# elsewhere sends the guests' ServiceLoader to jars that are not there. A JVM that finds the cache stale or
# foreign runs without it (silently).
rdmacore_aot_cache() {
    local d=$SHARE/$1/jrdma start
    rm -f "$d/jrdma.aot"
    [ "${RDMACORE_AOT:-1}" != 0 ] || return 0
    command -v unshare > /dev/null || { echo "$RDMACORE_NAME: no unshare (util-linux): no AOT cache" >&2; return 0; }
    start=$(date +%s)
    # shellcheck disable=SC2086
    if unshare -m bash -c "mkdir -p /mnt/host && mount --bind '$SHARE' /mnt/host && cd /mnt/host/$1/jrdma \
            && /mnt/host/$1/jdk/bin/java -XX:AOTCacheOutput=jrdma.aot -Xlog:aot*=off -Xlog:cds*=off $RDMACORE_JVM \
            -p jrdma-tools.jar:lib -m io.jrdma.tools/io.jrdma.tools.Main aot-training" > /dev/null 2>&1 \
            && [ -s "$d/jrdma.aot" ]; then
        echo "$RDMACORE_NAME: AOT cache for the guests made in $(( $(date +%s) - start )) s" >&2
    else
        rm -f "$d/jrdma.aot"
        echo "$RDMACORE_NAME: no AOT cache (the JVM's -XX:AOTCacheOutput failed): the guests' JVMs start without one" >&2
    fi
}

# rdmacore_share_jdk DIR: the JDK into $SHARE/DIR/jdk, unless that is a copy of the same JDK already
rdmacore_share_jdk() {
    local dest=$SHARE/$1
    mkdir -p "$dest"
    if [ ! -x "$dest/jdk/bin/java" ] || [ "$(cat "$dest/jdk.from" 2>/dev/null)" != "$(readlink -f "$JDK")" ]; then
        rm -rf "$dest/jdk"
        cp -a "$(readlink -f "$JDK")" "$dest/jdk"
        readlink -f "$JDK" > "$dest/jdk.from"
    fi
}

# rdmacore_share_tck DIR: jrdma-rdmacore's classes and test classes, its test classpath (jrdma's own modules from
# this checkout's target/, not from the local Maven repository, which may hold another build), the JUnit
# launcher and interop/rdmacore/TckMain.java compiled, into $SHARE/DIR/tck; sets TCK_CP to the guest's classpath
rdmacore_share_tck() {
    local dest=$SHARE/$1 cp_file launcher j m
    cp_file=$(mktemp)
    (cd "$ROOT" && JAVA_HOME=$JDK ./mvnw -q -B -o dependency:build-classpath -Dmdep.outputFile="$cp_file" \
        -Dmdep.includeScope=test -pl jrdma-rdmacore) >/dev/null
    launcher=$(ls "$HOME"/.m2/repository/org/junit/platform/junit-platform-launcher/1.11.4/junit-platform-launcher-1.11.4.jar)
    rm -rf "$dest/tck"
    mkdir -p "$dest/tck/lib"
    cp -r "$ROOT/jrdma-rdmacore/target/classes" "$dest/tck/classes"
    cp -r "$ROOT/jrdma-rdmacore/target/test-classes" "$dest/tck/test-classes"
    for j in $(tr ':' ' ' < "$cp_file") "$launcher"; do
        case "$j" in
            */io/jrdma/jrdma-*) m=$(basename "$(dirname "$(dirname "$j")")")
                [ -d "$ROOT/$m/target/classes" ] || { echo "$RDMACORE_NAME: no $m/target/classes: build first" >&2; exit 1; }
                cp -r "$ROOT/$m/target/classes" "$dest/tck/$m" ;;
            *) cp "$j" "$dest/tck/lib/" ;;
        esac
    done
    rm -f "$cp_file"
    "$JDK/bin/javac" -d "$dest/tck/runner" -cp "$dest/tck/lib/*" "$INTEROP/rdmacore/TckMain.java"
    local g=/mnt/host/$1/tck modules
    modules=$(cd "$dest/tck" && for m in jrdma-*; do printf '%s/%s:' "$g" "$m"; done)
    TCK_CP="$g/runner:$g/test-classes:$g/classes:$modules$g/lib/*"
}

# rdmacore_guests N DIR: starts guests 1..N when one of them does not answer (and stops them again at exit
# unless --keep), mounts the host's share in each and checks that guest 1 sees $SHARE/DIR
rdmacore_guests() {
    local n=$1 dir=$2 g up=1
    for g in $(seq 1 "$n"); do "$VM" exec "$g" true 2>/dev/null || up=0; done
    started=0
    if [ "$up" = 0 ]; then
        "$VM" up "$n"
        started=1
    fi
    trap rdmacore_stop EXIT
    for g in $(seq 1 "$n"); do
        "$VM" exec "$g" 'mountpoint -q /mnt/host || mount -t 9p -o trans=virtio,version=9p2000.L,msize=262144 host /mnt/host'
    done
    "$VM" exec 1 "test -x /mnt/host/$dir/jdk/bin/java" || { echo "$RDMACORE_NAME: guest 1 does not see $SHARE/$dir as" \
        "/mnt/host/$dir: was it booted with another SHARE? (vm.sh down, then run again)" >&2; exit 1; }
    rdmacore_local_jdk "$dir"
}

# rdmacore_local_jdk DIR: guest 1 reads the shared JDK from its own disk. The 9p share is mounted without a cache
# (every read a round trip to the host, slow under emulation): a JVM took 8-16 s for -version from it, 2-3 s with
# the share's files cached. So the JDK is copied once into /var/tmp/jrdma-jdk (again when $SHARE/DIR/jdk.from names
# another JDK; one copy for every DIR) and bind-mounted over /mnt/host/DIR/jdk: every command line keeps its path.
rdmacore_local_jdk() {
    local dir=$1 t0; t0=$(date +%s)
    "$VM" exec 1 "set -e; j=/mnt/host/$dir/jdk; l=/var/tmp/jrdma-jdk
        same=0; [ -x \$l/jdk/bin/java ] && cmp -s /mnt/host/$dir/jdk.from \$l/jdk.from && same=1
        if mountpoint -q \$j; then [ \$same = 1 ] && exit 0; umount \$j; fi
        if [ \$same = 0 ]; then
            rm -rf \$l; mkdir -p \$l; cp -a \$j \$l/jdk; cp /mnt/host/$dir/jdk.from \$l/jdk.from
        fi
        mount --bind \$l/jdk \$j" \
        || { echo "$RDMACORE_NAME: guest 1 could not copy the JDK to its disk; it reads it over 9p (slower)" >&2; return 0; }
    echo "$RDMACORE_NAME: guest 1 runs the JDK from its disk ($(( $(date +%s) - t0 )) s to set up)"
}

rdmacore_stop() {
    if [ "$started" = 1 ] && [ "$keep" = 0 ]; then "$VM" down || true; fi
}

# rdmacore_jrdma DIR [JVM OPTION...]: prints the guest's command line that runs the jrdma CLI from the build
# rdmacore_share_tools shared as /mnt/host/DIR (append the tool and its arguments), with its AOT cache if it made one
rdmacore_jrdma() {
    local dir=$1 aot=""; shift
    [ -s "$SHARE/$dir/jrdma/jrdma.aot" ] && aot="-XX:AOTCache=jrdma.aot -Xlog:aot*=off -Xlog:cds*=off "
    echo "cd /mnt/host/$dir/jrdma && ulimit -l unlimited && /mnt/host/$dir/jdk/bin/java $aot$RDMACORE_JVM $*" \
        "-p jrdma-tools.jar:lib -m io.jrdma.tools/io.jrdma.tools.Main"
}

# rdmacore_pair "PROCESS..." SERVER_GUEST SERVER_CMD CLIENT_GUEST CLIENT_CMD OUT: one run of a server that listens on
# TCP port 18515 (perftest's and ibv_*_pingpong's exchange) and its client; the PROCESSes (C tools left from an
# earlier run) are killed in the server's guest first; outputs in OUT.{server,client,listen}; 0 when both exited 0;
# the client is killed after PAIR_BOUND seconds (default 200), the server 200 s after that
rdmacore_pair() {
    local kill=$1 sg=$2 scmd=$3 cg=$4 ccmd=$5 out=$6 p k=""
    for p in $kill; do k="${k}pkill -x $p; "; done
    "$VM" exec "$sg" "${k}true" >/dev/null 2>&1 || true
    local bound=${PAIR_BOUND:-200}
    "$VM" exec "$sg" "timeout $(( bound + 200 )) bash -c '$scmd'" > "$out.server" 2>&1 &
    local spid=$!
    local rc=0
    rdmacore_wait_listening "$sg" 18515 180 && echo "server listening ${LISTEN_AFTER} s after its start" > "$out.listen" \
        || rc=1
    "$VM" exec "$cg" "timeout $bound bash -c '$ccmd'" > "$out.client" 2>&1 || rc=$?
    wait $spid || rc=$?
    return $rc
}

# rdmacore_wait_listening GUEST PORT SECS: waits until something listens on TCP PORT in GUEST (a JVM under TCG
# with one vCPU takes 20-60 s to start, more when the host is loaded); sets LISTEN_AFTER to the seconds it took;
# 1 with a message when nothing did in time
rdmacore_wait_listening() {
    local start; start=$(date +%s)
    local deadline=$(( start + $3 ))
    while [ "$(date +%s)" -lt $deadline ]; do
        if "$VM" exec "$1" "ss -ltn | grep -q ':$2 '" 2>/dev/null; then
            LISTEN_AFTER=$(( $(date +%s) - start ))
            return 0
        fi
        sleep 0.5
    done
    echo "$RDMACORE_NAME: nothing listening on TCP port $2 in guest $1 after $3 s" >&2
    return 1
}

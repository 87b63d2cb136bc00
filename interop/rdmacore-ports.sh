#!/bin/bash
# interop/rdmacore-ports.sh - the ports of the rdma-core provider's devices on Linux rxe and siw: in guest 1 of the
# interop harness (rxe0 on eth0 10.77.0.11, siw0 on eth1 10.77.1.11), with this build and the host's JDK shared into
# the guest over 9p.
#
#   1. the TCK's PortTck (RdmaCorePortTest) and ResolveTest on each DEVICE: every port 1..phys_port_cnt answers
#      queryPort(n), gid(n, i) and gidIndexOf(n, gid) as the no-argument forms do for port 1; ports 0 and
#      phys_port_cnt + 1 are EINVAL naming the range; a QP moved to INIT on port phys_port_cnt + 1 (and an AH on
#      it, where the device has AHs) is refused; each address of the device resolves to it, its port and its GID;
#   2. `jrdma devices -v` (each port of each device, with its state, MTUs, link layer, GID table and counters) and
#      `jrdma devices --resolve` for guest 1's addresses and the host's bridge addresses (the port each is on);
#   3. `jrdma pingpong -d DEVICE -i 2` and `jrdma perf write_bw -d DEVICE -i 2`: each refused (exit 2) naming the
#      device's ports 1..1, before anything listens (perf on siw0: refused because on iWARP it connects through
#      jrdma's connection manager, which picks the port, not through perftest's exchange that -i belongs to).
# Linux rxe and siw devices have one port each: port 2 and above are exercised only as ports that do not exist.
#
# usage: interop/rdmacore-ports.sh [--no-build] [--keep] [DEVICE...]   (default devices: rxe0 siw0)
#   --no-build  use the build as it is (else: ./mvnw package -DskipTests of jrdma-tools, jrdma-rdmacore and what
#               they need)
#   --keep      leave guest 1 running (by default it is stopped again if this script started it)
# Env: JDK (a JDK 25 or newer; default $JAVA_HOME), VM, SHARE, CACHE, RUN, NS, VCPUS (1 unless set) as for vm.sh;
#      OUT (results folder, default interop/results/rdmacore-ports-<UTC time>).
# Needs root (vm.sh). Exit status 0 when every step ran and passed.
set -uo pipefail

. "$(dirname "$0")/lib.sh"
rdmacore_args rdmacore-ports.sh "$@"
OUT=${OUT:-$INTEROP/results/rdmacore-ports-$(date -u +%Y%m%dT%H%M%SZ)}
devices=()
for a in "${ARGS[@]}"; do
    case "$a" in
        -*) echo "rdmacore-ports.sh: unknown argument '$a' (see --help)" >&2; exit 2 ;;
        *) devices+=("$a") ;;
    esac
done
[ ${#devices[@]} -gt 0 ] || devices=(rxe0 siw0)
rdmacore_checks
rdmacore_build jrdma-tools,jrdma-rdmacore || exit 1
rdmacore_share_tools rdmacore-ports
rdmacore_share_tck rdmacore-ports
rdmacore_guests 1 rdmacore-ports

mkdir -p "$OUT"
"$VM" exec 1 'uname -r; rdma link show; dpkg-query -W libibverbs1' > "$OUT/guest.txt" 2>&1
rc=0
for dev in "${devices[@]}"; do
    "$VM" exec 1 "cd /tmp && ulimit -l unlimited && /mnt/host/rdmacore-ports/jdk/bin/java -Xmx256m -Xshare:off \
        --enable-native-access=ALL-UNNAMED --add-opens java.base/sun.nio.ch=ALL-UNNAMED \
        -Djrdma.tck.rdmacore.device=$dev -cp '$TCK_CP' \
        TckMain io.jrdma.rdmacore.tck.RdmaCorePortTest io.jrdma.rdmacore.ResolveTest" > "$OUT/tck-$dev.txt" 2>&1 || rc=1
    echo "PortTck and ResolveTest on $dev: $(tail -1 "$OUT/tck-$dev.txt")"
done

JRDMA="$(rdmacore_jrdma rdmacore-ports)"
"$VM" exec 1 "$JRDMA devices -v" > "$OUT/jrdma-devices-v.txt" 2> "$OUT/jrdma-devices-v.err" || rc=1
"$VM" exec 1 "$JRDMA devices --resolve 10.77.0.11 10.77.1.11 10.77.0.1 10.77.1.1" > "$OUT/resolve.txt" 2>&1 || rc=1
# each rdma-core device lists its phys_port_cnt and a "port:" block for each port; the addresses resolve to port 1
python3 - "$OUT/jrdma-devices-v.txt" "${devices[@]}" > "$OUT/ports.txt" <<'EOF' || rc=1
import re, sys
text, bad = open(sys.argv[1]).read(), 0
blocks = {m.group(1): m.group(2) for m in re.finditer(r"hca_id:\s*(\S+)\n(.*?)(?=\nhca_id:|\Z)", text, re.S)}
for dev in sys.argv[2:]:
    b = blocks.get(dev)
    if b is None:
        print(f"{dev}: not in jrdma devices -v"); bad += 1; continue
    n = int(re.search(r"phys_port_cnt:\s*(\d+)", b).group(1))
    ports = [int(p) for p in re.findall(r"\n\t\tport:\t(\d+)", b)]
    ok = ports == list(range(1, n + 1))
    bad += not ok
    gids = len(re.findall(r"GID\[\s*\d+\]", b))
    print(f"{dev}: phys_port_cnt {n}, port blocks {ports}, {gids} GID(s): {'ok' if ok else 'DIFFERS'}")
print(f"{'PASS' if bad == 0 else 'FAIL'}: {bad} problem(s)")
sys.exit(1 if bad else 0)
EOF
for want in '^10.77.0.11 RoCEv2: rxe0 (provider rdmacore), port 1, GID' '^10.77.1.11 iWARP: siw0 (provider rdmacore), port 1, GID' \
        '^10.77.0.1 RoCEv2: rxe0 (provider rdmacore), port 1, GID' '^10.77.1.1 iWARP: siw0 (provider rdmacore), port 1, GID'; do
    grep -q "$want" "$OUT/resolve.txt" || { echo "resolve: no line matching '$want'" >> "$OUT/ports.txt"; rc=1; }
done
# a port the device lacks, given to a tool: refused naming the device's ports (exit 2), before anything listens
for dev in "${devices[@]}"; do
    for tool in "pingpong" "perf write_bw"; do
        f="$OUT/${tool%% *}-i2-$dev.txt"
        want="option -i/--ib-port: port 2 of $dev does not exist: valid ports are 1..1" what="refused naming 1..1"
        if [ "$tool" != pingpong ] && [[ $dev == siw* ]]; then # iWARP: no perftest exchange without -R, so no -i
            want="option --ib-port belongs to perftest's exchange: drop -i" what="refused: -i is perftest's exchange's"
        fi
        "$VM" exec 1 "timeout 120 bash -c '$JRDMA $tool -d $dev -i 2'" > "$f" 2>&1; prc=$?
        if [ $prc = 2 ] && grep -qF "$want" "$f"; then
            echo "jrdma $tool -d $dev -i 2: exit 2, $what: ok" >> "$OUT/ports.txt"
        else
            echo "jrdma $tool -d $dev -i 2: exit $prc, not the expected refusal (see $(basename "$f"))" >> "$OUT/ports.txt"; rc=1
        fi
    done
done
echo "jrdma devices -v, pingpong and perf -i 2:"; cat "$OUT/ports.txt"
echo "jrdma devices --resolve:"; cat "$OUT/resolve.txt"
echo "rdmacore-ports.sh: done $(date -u '+%F %T UTC') (exit $rc); outputs in $OUT"
exit $rc

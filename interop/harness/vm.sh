#!/bin/bash
# vm.sh - Soft-RoCE (rdma_rxe) / SoftiWARP (siw) guests for interop tests.
#
# Everything lives in one network namespace ($NS, default "rdmatest") that
# this script creates: bridge br0 with the host side's addresses
# 10.77.0.1/24 (RoCE subnet) and 10.77.1.1/24 (iWARP subnet), and per guest i
# two taps: tap<i>0 -> guest eth0 = 10.77.0.(10+i) with rxe0 on it,
#           tap<i>1 -> guest eth1 = 10.77.1.(10+i) with siw0 on it.
# (rxe and siw sit on different NICs/subnets so that rdma_cm picks the
#  intended device from the IP address.)  QEMU runs inside the namespace, so
# the guests can reach nothing but that bridge.
#
# Commands:
#   vm.sh up [N]           create netns, boot N guests (default 2), wait for ssh
#   vm.sh exec I CMD...    run CMD in guest I (ssh as root), prints output, returns its exit status
#   vm.sh ns CMD...        run a host-side command inside the namespace (e.g. java, tcpdump, python3)
#   vm.sh console I        attach to guest I's serial console (socat; ^] or ^C to leave)
#   vm.sh ipid-zero on|off nft rule in the namespace: host-originated UDP to port 4791 gets
#                          IPv4 ID 0 (Linux gives unconnected DF UDP sends non-zero IDs; the
#                          RoCEv2 ICRC covers the ID; needs the nftables package)
#   vm.sh status           list guests and namespace
#   vm.sh down             stop the guests (QMP quit, else kill by pid), delete the namespace
# Env: NS VCPUS(2) MEM(1024 MiB) NET0(10.77.0) NET1(10.77.1) KVM(auto; 1 = KVM, 0 = TCG)
#      SHARE (host dir exported to guests as /mnt/host via 9p; default ./share)
#      LINKS (rxe0:eth0,siw0:eth1; "none" to create no rdma links at boot)
#      CACHE (the image from build-image.sh; default ./cache)  RUN (guest state; default ./run)
# Needs root and these Debian packages on the host:
#   apt-get install qemu-system-x86 qemu-utils socat iproute2 openssh-client   (nftables for ipid-zero)
set -euo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
CACHE=${CACHE:-$HERE/cache}
RUN=${RUN:-$HERE/run}
NS=${NS:-rdmatest}
VCPUS=${VCPUS:-2}
MEM=${MEM:-1024}
NET0=${NET0:-10.77.0}
NET1=${NET1:-10.77.1}
# KVM only where it is real VT-x/AMD-V (kvm_intel/kvm_amd); a /dev/kvm backed by
# kvm_pvm (PVM, as some nested cloud VMs offer) cannot run an unmodified Debian
# kernel: it hangs in the decompressor.  Else TCG.
if [ -z "${KVM:-}" ]; then
    if [ -c /dev/kvm ] && { [ -d /sys/module/kvm_intel ] || [ -d /sys/module/kvm_amd ]; }; then KVM=1; else KVM=0; fi
fi
SHARE=${SHARE:-$HERE/share}
LINKS=${LINKS:-rxe0:eth0,siw0:eth1}
KEY=$CACHE/id_ed25519

SSH_OPTS=(-i "$KEY" -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null
          -o LogLevel=ERROR -o BatchMode=yes -o ConnectTimeout=3
          -o ControlMaster=auto -o "ControlPath=$RUN/ssh-%h.sock" -o ControlPersist=600)

nsx() { ip netns exec "$NS" "$@"; }
gip() { echo "$NET0.$((10 + $1))"; }

ns_up() {
    if ip netns list | grep -qw "^$NS"; then return 0; fi
    ip netns add "$NS"
    # no IPv6 chatter from the host side of the bridge
    nsx sysctl -qw net.ipv6.conf.all.disable_ipv6=1 net.ipv6.conf.default.disable_ipv6=1
    nsx ip link set lo up
    nsx ip link add br0 type bridge stp_state 0 forward_delay 0
    nsx ip addr add "$NET0.1/24" dev br0
    nsx ip addr add "$NET1.1/24" dev br0
    nsx ip link set br0 up
}

boot_guest() {
    local i=$1
    local ip0="$NET0.$((10 + i))" ip1="$NET1.$((10 + i))"
    for t in 0 1; do
        nsx ip tuntap add "tap$i$t" mode tap
        nsx ip link set "tap$i$t" master br0 up
    done
    rm -f "$RUN/g$i.qcow2" "$RUN/g$i.console.log"
    qemu-img create -q -f qcow2 -b "$CACHE/base.img" -F raw "$RUN/g$i.qcow2"
    local accel=(-machine q35 -accel kvm -cpu host)
    [ "$KVM" = 1 ] || accel=(-machine q35 -accel tcg,thread=multi -cpu max)
    local share=()
    [ -d "$SHARE" ] && share=(-virtfs "local,path=$SHARE,mount_tag=host,security_model=none,id=share0")
    date +%s.%N > "$RUN/g$i.started"
    nsx qemu-system-x86_64 -name "g$i" "${accel[@]}" -smp "$VCPUS" -m "$MEM" \
        -nodefaults -no-user-config -display none \
        -kernel "$CACHE/vmlinuz" -initrd "$CACHE/initrd.img" \
        -append "console=ttyS0,115200 root=/dev/vda rw net.ifnames=0 quiet systemd.hostname=g$i rdmatest.eth0=$ip0/24 rdmatest.eth1=$ip1/24 rdmatest.links=$LINKS" \
        -drive "file=$RUN/g$i.qcow2,if=virtio,format=qcow2,discard=unmap" \
        -netdev "tap,id=n0,ifname=tap${i}0,script=no,downscript=no" \
        -device "virtio-net-pci,netdev=n0,mac=52:54:00:77:00:$((10 + i))" \
        -netdev "tap,id=n1,ifname=tap${i}1,script=no,downscript=no" \
        -device "virtio-net-pci,netdev=n1,mac=52:54:00:77:01:$((10 + i))" \
        -device virtio-rng-pci \
        "${share[@]}" \
        -chardev "socket,id=ser0,path=$RUN/g$i.serial,server=on,wait=off,logfile=$RUN/g$i.console.log" \
        -serial chardev:ser0 \
        -qmp "unix:$RUN/g$i.qmp,server=on,wait=off" \
        -daemonize -pidfile "$RUN/g$i.pid"
}

wait_ssh() {
    local i=$1 t0 deadline
    t0=$(cat "$RUN/g$i.started"); deadline=$(( $(date +%s) + ${BOOT_TIMEOUT:-300} ))
    until nsx ssh "${SSH_OPTS[@]}" -o ControlMaster=no "root@$(gip "$i")" true 2>/dev/null; do
        [ "$(date +%s)" -lt $deadline ] || { echo "g$i: no ssh after ${BOOT_TIMEOUT:-300}s; see $RUN/g$i.console.log" >&2; return 1; }
        kill -0 "$(cat "$RUN/g$i.pid")" 2>/dev/null || { echo "g$i: qemu died" >&2; return 1; }
        sleep 0.2
    done
    printf 'g%s up: %s (eth0) / %s (eth1), ssh ready %.1fs after qemu start\n' "$i" "$(gip "$i")" \
        "$NET1.$((10 + i))" "$(awk -v a="$(date +%s.%N)" -v b="$t0" 'BEGIN{print a-b}')"
}

# need CMD PACKAGE...: exits with the apt-get line when CMD is missing
need() {
    local c=$1; shift
    command -v "$c" >/dev/null || { echo "vm.sh: $c not found; as root: apt-get install $*" >&2; exit 1; }
}

cmd_up() {
    local n=${1:-2}
    [ "$(id -u)" = 0 ] || { echo "vm.sh: run as root (network namespace, taps)" >&2; exit 1; }
    need qemu-system-x86_64 qemu-system-x86; need qemu-img qemu-utils; need ip iproute2
    need ssh openssh-client; need socat socat
    [ -f "$CACHE/base.img" ] || { echo "no $CACHE/base.img: run build-image.sh first" >&2; exit 1; }
    mkdir -p "$RUN" "$SHARE"
    ns_up
    local booted=()
    for i in $(seq 1 "$n"); do
        if [ -f "$RUN/g$i.pid" ] && kill -0 "$(cat "$RUN/g$i.pid")" 2>/dev/null; then echo "g$i already running"; continue; fi
        boot_guest "$i"; booted+=("$i")
    done
    for i in "${booted[@]}"; do wait_ssh "$i"; done
}

cmd_exec() {
    local i=$1; shift
    nsx ssh "${SSH_OPTS[@]}" "root@$(gip "$i")" "$@"
}

cmd_down() {
    shopt -s nullglob
    for pf in "$RUN"/g*.pid; do
        local g pid; g=$(basename "$pf" .pid); pid=$(cat "$pf")
        if kill -0 "$pid" 2>/dev/null; then
            # the guest's disk is a throw-away overlay: no need for a clean
            # shutdown, QMP "quit" ends QEMU at once (kill by pid as fallback)
            printf '{"execute":"qmp_capabilities"}\n{"execute":"quit"}\n' |
                timeout 3 socat - "UNIX-CONNECT:$RUN/$g.qmp" >/dev/null 2>&1 || true
            for _ in $(seq 1 25); do kill -0 "$pid" 2>/dev/null || break; sleep 0.2; done
            if kill -0 "$pid" 2>/dev/null; then echo "$g: still running after 5s, kill $pid"; kill "$pid"; sleep 0.5; fi
            echo "$g (pid $pid) stopped"
        fi
        rm -f "$pf"
    done
    for s in "$RUN"/ssh-*.sock; do
        ssh -o "ControlPath=$s" -O exit dummy >/dev/null 2>&1 || true; rm -f "$s"
    done
    if ip netns list | grep -qw "^$NS"; then ip netns del "$NS"; echo "netns $NS deleted"; fi
    rm -f "$RUN"/g*.qcow2 "$RUN"/g*.qmp "$RUN"/g*.serial
}

cmd_status() {
    shopt -s nullglob
    ip netns list | grep -w "^$NS" >/dev/null && { echo "netns $NS:"; nsx ip -br addr; } || echo "netns $NS absent"
    for pf in "$RUN"/g*.pid; do
        local g; g=$(basename "$pf" .pid)
        kill -0 "$(cat "$pf")" 2>/dev/null && echo "$g running (pid $(cat "$pf"))" || echo "$g dead (stale $pf)"
    done
}

cmd_ipid_zero() {
    need nft nftables
    nsx nft delete table ip rdmatest_ipid 2>/dev/null || true
    [ "${1:-on}" = off ] && { echo "ipid-zero off"; return 0; }
    nsx nft -f - <<'EOF'
table ip rdmatest_ipid {
  chain out {
    type filter hook output priority 0; policy accept;
    udp dport 4791 ip id set 0
  }
}
EOF
    echo "ipid-zero on: host-originated UDP dport 4791 leaves $NS with IPv4 ID 0"
}

case "${1:-}" in
    up)      shift; cmd_up "$@" ;;
    exec)    shift; cmd_exec "$@" ;;
    ns)      shift; nsx "$@" ;;
    console) socat "STDIO,raw,echo=0,escape=0x1d" "UNIX-CONNECT:$RUN/g$2.serial" ;;
    ipid-zero) shift; cmd_ipid_zero "$@" ;;
    status)  cmd_status ;;
    down)    cmd_down ;;
    -h|--help|help) sed -n '2,28p' "$0" ;;
    *) sed -n '2,28p' "$0" >&2; exit 2 ;;
esac

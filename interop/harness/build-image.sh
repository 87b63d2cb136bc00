#!/bin/bash
# build-image.sh - build the guest artefacts for the RDMA interop harness,
# from Debian packages only:
#   cache/vmlinuz, cache/initrd.img   guest kernel (Debian linux-image-amd64, 6.1)
#   cache/base.img                    ext4 root fs (debootstrap bookworm + rdma tools)
#   cache/id_ed25519{,.pub}           ssh key baked into the image (root login)
#   cache/build-info.txt              versions, sizes, timings
#
# Debian's kernels do not enable CONFIG_RDMA_SIW (checked: bookworm 6.1 and
# bookworm-backports 6.12, generic and cloud flavours), so siw.ko is compiled
# inside the chroot from Debian's linux-source-6.1 against the matching
# linux-headers package, installed to /lib/modules/$KVER/updates/, and the
# build tools are purged again.
#
# No loop mounts: the image is made with `mkfs.ext4 -d`.  Needs root (chroot,
# bind mounts of /proc,/sys,/dev into the chroot), network access to a Debian
# mirror, and these Debian packages on the host:
#   apt-get install debootstrap e2fsprogs openssh-client
#
# Usage: build-image.sh [--force]   (CACHE=DIR puts the artefacts elsewhere; ~2.5 min, 1.6 GiB)
set -euo pipefail
case "${1:-}" in
    -h|--help) sed -n '2,20p' "$0"; exit 0 ;;
    ""|--force) ;;
    *) echo "build-image.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
esac

HERE=$(cd "$(dirname "$0")" && pwd)
CACHE=${CACHE:-$HERE/cache}
SUITE=${SUITE:-bookworm}
MIRROR=${MIRROR:-http://deb.debian.org/debian}
SECMIRROR=${SECMIRROR:-http://deb.debian.org/debian-security}
IMG_SIZE=${IMG_SIZE:-3G}
ROOT=$CACHE/rootfs
FORCE=0
[ "${1:-}" = "--force" ] && FORCE=1

if [ -f "$CACHE/base.img" ] && [ -f "$CACHE/vmlinuz" ] && [ -f "$CACHE/initrd.img" ] && [ $FORCE = 0 ]; then
    echo "artefacts already in $CACHE (use --force to rebuild)"; exit 0
fi
[ "$(id -u)" = 0 ] || { echo "must run as root" >&2; exit 1; }
for t in debootstrap mkfs.ext4 chroot ssh-keygen; do
    command -v $t >/dev/null || { echo "missing $t (apt-get install debootstrap e2fsprogs openssh-client)" >&2; exit 1; }
done

mkdir -p "$CACHE"
LOG=$CACHE/build.log
: > "$LOG"
T0=$(date +%s)
stamp() { echo "[$(( $(date +%s) - T0 ))s] $*" | tee -a "$LOG"; }

umount_chroot() {
    for m in dev/pts dev proc sys; do
        mountpoint -q "$ROOT/$m" 2>/dev/null && umount -l "$ROOT/$m" || true
    done
}
trap umount_chroot EXIT

# ---------------------------------------------------------------- debootstrap
umount_chroot
PKGS=systemd-sysv,udev,kmod,iproute2,iputils-ping,procps,ethtool,less,netbase
PKGS=$PKGS,openssh-server,tcpdump,strace,psmisc
PKGS=$PKGS,rdma-core,ibverbs-providers,ibverbs-utils,rdmacm-utils,perftest,infiniband-diags
if [ "${REUSE_ROOTFS:-0}" = 1 ] && [ -x "$ROOT/usr/bin/apt-get" ]; then
    stamp "REUSE_ROOTFS=1: reusing $ROOT (development only)"
else
    rm -rf "$ROOT"
    stamp "debootstrap $SUITE (minbase) ..."
    debootstrap --variant=minbase --include=$PKGS "$SUITE" "$ROOT" "$MIRROR" >>"$LOG" 2>&1
    stamp "debootstrap done"
fi

# ---------------------------------------------------------------- chroot setup
cat > "$ROOT/etc/apt/sources.list" <<EOF
deb $MIRROR $SUITE main
deb $MIRROR $SUITE-updates main
deb $SECMIRROR $SUITE-security main
EOF
mount -t proc proc "$ROOT/proc"
mount -t sysfs sys "$ROOT/sys"
mount --bind /dev "$ROOT/dev"
mount --bind /dev/pts "$ROOT/dev/pts"
cr() { chroot "$ROOT" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root \
        DEBIAN_FRONTEND=noninteractive LC_ALL=C "$@"; }
APT="apt-get -y -o Dpkg::Options::=--force-confdef -o Dpkg::Options::=--force-confold"

# initramfs: virtio + ext4 is all we need; keep it small (MODULES=list)
mkdir -p "$ROOT/etc/initramfs-tools/conf.d"
cat > "$ROOT/etc/initramfs-tools/conf.d/rdmatest.conf" <<'EOF'
MODULES=list
BUSYBOX=auto
COMPRESS=zstd
EOF
cat > "$ROOT/etc/initramfs-tools/modules" <<'EOF'
virtio_pci
virtio_blk
virtio_net
ext4
crc32c_generic
EOF

stamp "apt-get update/upgrade + kernel + build deps ..."
cr apt-get update >>"$LOG" 2>&1
cr dpkg --configure -a --force-confold >>"$LOG" 2>&1 || true   # only matters with REUSE_ROOTFS
cr $APT dist-upgrade >>"$LOG" 2>&1
cr $APT --no-install-recommends install initramfs-tools zstd linux-image-amd64 >>"$LOG" 2>&1
KVER=$(ls "$ROOT/lib/modules" | sort -V | tail -1)
KPKGVER=$(cr dpkg-query -W -f='${Version}' linux-image-$KVER)
stamp "kernel $KVER ($KPKGVER)"

# ---------------------------------------------------------------- siw.ko
SRCPKG=linux-source-${KVER%%.0-*}   # 6.1.0-56-amd64 -> linux-source-6.1
cr $APT --no-install-recommends install gcc make libc6-dev linux-headers-$KVER "$SRCPKG=$KPKGVER" xz-utils >>"$LOG" 2>&1
stamp "building siw.ko from $SRCPKG $KPKGVER against linux-headers-$KVER ..."
SRCTAR=$(ls "$ROOT"/usr/src/linux-source-*.tar.xz | head -1)
rm -rf "$ROOT/tmp/siwbuild"; mkdir -p "$ROOT/tmp/siwbuild"
tar -C "$ROOT/tmp/siwbuild" -xJf "$SRCTAR" --wildcards '*/drivers/infiniband/sw/siw/*'
SIWDIR=$(cd "$ROOT/tmp/siwbuild" && ls -d */drivers/infiniband/sw/siw)
cr make -C /lib/modules/$KVER/build M=/tmp/siwbuild/$SIWDIR CONFIG_RDMA_SIW=m modules >>"$LOG" 2>&1
mkdir -p "$ROOT/lib/modules/$KVER/updates"
cp "$ROOT/tmp/siwbuild/$SIWDIR/siw.ko" "$ROOT/lib/modules/$KVER/updates/siw.ko"
cr depmod -a "$KVER"
cr modinfo -k "$KVER" siw | grep -E '^(filename|alias|vermagic)' | tee -a "$LOG"
rm -rf "$ROOT/tmp/siwbuild"
cr $APT purge gcc make libc6-dev linux-headers-$KVER "$SRCPKG" >>"$LOG" 2>&1
cr $APT autoremove --purge >>"$LOG" 2>&1
cr apt-get clean
stamp "siw.ko built, build deps purged"

# ---------------------------------------------------------------- configuration
echo rdmaguest > "$ROOT/etc/hostname"
printf '127.0.0.1 localhost\n' > "$ROOT/etc/hosts"
for i in $(seq 1 9); do printf '10.77.0.1%s g%s\n' $i $i >> "$ROOT/etc/hosts"; done
printf '/dev/vda / ext4 rw,noatime 0 1\n' > "$ROOT/etc/fstab"
# optional host share (vm.sh passes -virtfs ...,mount_tag=host): /mnt/host
printf 'host /mnt/host 9p trans=virtio,version=9p2000.L,msize=262144,nofail,x-systemd.device-timeout=2s 0 0\n' >> "$ROOT/etc/fstab"
mkdir -p "$ROOT/mnt/host"
cr passwd -d root >/dev/null

# ssh: key baked in (host side keeps the private half in cache/)
[ -f "$CACHE/id_ed25519" ] || ssh-keygen -q -t ed25519 -N '' -C rdmatest -f "$CACHE/id_ed25519"
install -d -m 700 "$ROOT/root/.ssh"
install -m 600 "$CACHE/id_ed25519.pub" "$ROOT/root/.ssh/authorized_keys"
cat > "$ROOT/etc/ssh/sshd_config.d/rdmatest.conf" <<'EOF'
PermitRootLogin prohibit-password
UseDNS no
GSSAPIAuthentication no
EOF

# serial console: autologin root (debug: vm.sh console N)
mkdir -p "$ROOT/etc/systemd/system/serial-getty@ttyS0.service.d"
cat > "$ROOT/etc/systemd/system/serial-getty@ttyS0.service.d/autologin.conf" <<'EOF'
[Service]
ExecStart=
ExecStart=-/sbin/agetty --autologin root --noclear --keep-baud 115200 %I $TERM
EOF

# network + rdma links from the kernel command line:
#   rdmatest.eth0=10.77.0.11/24 rdmatest.eth1=10.77.1.11/24
#   rdmatest.links=rxe0:eth0,siw0:eth1   (or "none")
cat > "$ROOT/usr/local/sbin/rdmatest-net" <<'EOF'
#!/bin/sh
# configure NICs and rdma links from /proc/cmdline (see build-image.sh)
LINKS=rxe0:eth0,siw0:eth1
for w in $(cat /proc/cmdline); do
  case "$w" in
    rdmatest.eth*=*) k=${w%%=*}; dev=${k#rdmatest.}; addr=${w#*=}
        ip link set "$dev" up
        ip addr add "$addr" dev "$dev" ;;
    rdmatest.links=*) LINKS=${w#*=} ;;
  esac
done
ip link set lo up
[ "$LINKS" = none ] && exit 0
exec /usr/local/sbin/rdmatest-links "$LINKS"
EOF
cat > "$ROOT/usr/local/sbin/rdmatest-links" <<'EOF'
#!/bin/sh
# rdmatest-links rxe0:eth0,siw0:eth1  - (re)create soft RDMA links
modprobe ib_uverbs; modprobe rdma_ucm
for l in $(echo "$1" | tr ',' ' '); do
  name=${l%%:*}; dev=${l#*:}
  case "$name" in rxe*) type=rxe ;; siw*) type=siw ;; *) echo "bad link $l" >&2; continue ;; esac
  rdma link show "$name/1" >/dev/null 2>&1 && continue
  rdma link add "$name" type "$type" netdev "$dev" || echo "rdma link add $name failed" >&2
done
EOF
chmod 755 "$ROOT/usr/local/sbin/rdmatest-net" "$ROOT/usr/local/sbin/rdmatest-links"
cat > "$ROOT/etc/systemd/system/rdmatest-net.service" <<'EOF'
[Unit]
Description=rdmatest static network + soft RDMA links
DefaultDependencies=no
After=systemd-udev-settle.service systemd-udevd.service
Wants=network.target
Before=network.target ssh.service

[Service]
Type=oneshot
RemainAfterExit=yes
ExecStart=/usr/local/sbin/rdmatest-net

[Install]
WantedBy=multi-user.target
EOF
ln -sf /etc/systemd/system/rdmatest-net.service "$ROOT/etc/systemd/system/multi-user.target.wants/rdmatest-net.service"
# two NICs on one L2 segment: answer ARP only on the owning interface
cat > "$ROOT/etc/sysctl.d/90-rdmatest.conf" <<'EOF'
net.ipv4.conf.all.arp_ignore=1
net.ipv4.conf.all.arp_announce=2
kernel.printk=4 4 1 7
EOF
# no point waiting for things that are not there
cr systemctl mask systemd-networkd-wait-online.service apt-daily.timer apt-daily-upgrade.timer \
    e2scrub_all.timer fstrim.timer man-db.timer >/dev/null 2>&1 || true

# ---------------------------------------------------------------- artefacts
umount_chroot
cp "$ROOT/boot/vmlinuz-$KVER" "$CACHE/vmlinuz"
cp "$ROOT/boot/initrd.img-$KVER" "$CACHE/initrd.img"
rm -f "$CACHE/base.img"
stamp "mkfs.ext4 -d ($IMG_SIZE sparse) ..."
mkfs.ext4 -q -F -L rdmaroot -d "$ROOT" "$CACHE/base.img" "$IMG_SIZE" >>"$LOG" 2>&1
stamp "image done"

{
  echo "built: $(date -u +%FT%TZ) in $(( $(date +%s) - T0 ))s"
  echo "suite: $SUITE  kernel: $KVER ($KPKGVER)"
  for p in rdma-core ibverbs-utils rdmacm-utils perftest infiniband-diags systemd openssh-server; do
      printf '%s %s\n' "$p" "$(chroot "$ROOT" dpkg-query -W -f='${Version}' $p)"
  done
  echo "rootfs du: $(du -sh "$ROOT" | cut -f1)"
  echo "base.img: apparent $(du -h --apparent-size "$CACHE/base.img" | cut -f1), allocated $(du -h "$CACHE/base.img" | cut -f1)"
  echo "vmlinuz: $(du -h "$CACHE/vmlinuz" | cut -f1)  initrd.img: $(du -h "$CACHE/initrd.img" | cut -f1)"
} > "$CACHE/build-info.txt"
cat "$CACHE/build-info.txt"

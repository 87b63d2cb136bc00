#!/bin/bash
# interop/rdmacore-devices.sh - the rdma-core provider (jrdma-rdmacore) on real Linux devices:
# in guest 1 of the interop harness (rxe0 on eth0, siw0 on eth1), `jrdma devices -v` run with this
# build and the host's JDK (shared into the guest over 9p) must list rxe0 and siw0 with the
# attributes `ibv_devinfo -v` prints there: the device limits, port state, MTUs, link layer and GIDs.
#
# usage: interop/rdmacore-devices.sh [--no-build] [--keep]
#   --no-build  use jrdma-tools/target as it is (else: ./mvnw package of jrdma-tools and what it needs)
#   --keep      leave guest 1 running (by default it is stopped again if this script started it)
# Env: JDK (a JDK 25 or newer on this host; default $JAVA_HOME), VM (the harness's vm.sh),
#      SHARE, CACHE, RUN, NS, VCPUS (1 unless set), as for vm.sh; OUT (results folder,
#      default interop/results/rdmacore-devices-<UTC time>).
# Needs root (vm.sh) and python3. Exit status 0 when every compared field agrees.
set -euo pipefail

. "$(dirname "$0")/lib.sh"
rdmacore_args rdmacore-devices.sh "$@"
OUT=${OUT:-$INTEROP/results/rdmacore-devices-$(date -u +%Y%m%dT%H%M%SZ)}
for a in "${ARGS[@]}"; do
    echo "rdmacore-devices.sh: unknown argument '$a' (see --help)" >&2; exit 2
done
rdmacore_checks
command -v python3 >/dev/null || { echo "rdmacore-devices.sh: python3 not found (apt-get install python3)" >&2; exit 1; }
rdmacore_build jrdma-tools
# the build and the JDK, where the guest sees them as /mnt/host/rdmacore-devices
rdmacore_share_tools rdmacore-devices
rdmacore_guests 1 rdmacore-devices

mkdir -p "$OUT"
"$VM" exec 1 'uname -r; rdma link show; dpkg-query -W libibverbs1' > "$OUT/guest.txt"
"$VM" exec 1 'ibv_devinfo -v' > "$OUT/ibv_devinfo-v.txt"
# the kernel's GID tables: the reference for a port whose GIDs ibv_devinfo does not print (siw's)
"$VM" exec 1 'for f in /sys/class/infiniband/*/ports/*/gids/*; do g=$(cat "$f" 2>/dev/null) || continue;
    [ "$g" = 0000:0000:0000:0000:0000:0000:0000:0000 ] || echo "$(echo "$f" | cut -d/ -f5) $(echo "$f" | cut -d/ -f7) $(basename "$f") $g"; done' \
    > "$OUT/sysfs-gids.txt"
rc=0
"$VM" exec 1 'cd /mnt/host/rdmacore-devices/jrdma && /mnt/host/rdmacore-devices/jdk/bin/java \
    --enable-native-access=io.jrdma.engine,io.jrdma.rdmacore --add-opens java.base/sun.nio.ch=io.jrdma.engine \
    -Xshare:off -XX:TieredStopAtLevel=1 -p jrdma-tools.jar:lib -m io.jrdma.tools/io.jrdma.tools.Main devices -v' \
    > "$OUT/jrdma-devices-v.txt" 2> "$OUT/jrdma-devices-v.err" || rc=$?
echo "jrdma devices -v: exit $rc" >> "$OUT/guest.txt"

python3 - "$OUT/ibv_devinfo-v.txt" "$OUT/jrdma-devices-v.txt" "$OUT/sysfs-gids.txt" > "$OUT/compare.txt" <<'EOF' || rc=1
import ipaddress, re, sys

DEVICE = ["transport", "fw_ver", "node_guid", "sys_image_guid", "vendor_id", "vendor_part_id", "hw_ver",
          "phys_port_cnt", "max_mr_size", "page_size_cap", "max_qp", "max_qp_wr", "max_sge", "max_sge_rd",
          "max_cq", "max_cqe", "max_mr", "max_pd", "max_qp_rd_atom", "max_res_rd_atom", "max_qp_init_rd_atom",
          "atomic_cap", "max_mw", "max_ah", "max_srq", "max_srq_wr", "max_srq_sge", "max_pkeys"]
PORT = ["state", "max_mtu", "active_mtu", "port_lid", "link_layer", "max_msg_sz", "port_cap_flags", "gid_tbl_len"]

def parse(path):
    """{device: {"dev": {key: value}, "ports": {n: {key: value, "gids": {gid: type}}}}}"""
    devs, dev, port = {}, None, None
    for line in open(path):
        m = re.match(r"hca_id:\s*(\S+)", line)
        if m:
            dev = devs.setdefault(m.group(1), {"dev": {}, "ports": {}}); port = None; continue
        if dev is None:
            continue
        m = re.match(r"\s*port:\s*(\d+)", line)
        if m:
            port = dev["ports"].setdefault(int(m.group(1)), {"gids": {}}); continue
        m = re.match(r"\s*GID\[\s*(\d+)\]:\s*([0-9a-fA-F:.]+)(?:,\s*([^(]+?))?\s*(?:\(.*\))?\s*$", line)
        if m and port is not None:
            t = (m.group(3) or "").strip().replace("IB/RoCE v1", "RoCE v1")
            port["gids"][str(ipaddress.IPv6Address(m.group(2)))] = t; continue
        m = re.match(r"\s*([a-z_]+):\s*(.*?)\s*$", line)
        if m:
            (port if port is not None else dev["dev"]).setdefault(m.group(1), m.group(2))
    return devs

def norm(v):
    first = v.split()[0] if v.split() else v
    try:
        return int(first, 0)
    except ValueError:
        return v

c, j = parse(sys.argv[1]), parse(sys.argv[2])
sysfs = {}
for line in open(sys.argv[3]):
    d, p, i, g = line.split()
    sysfs.setdefault((d, int(p)), {})[str(ipaddress.IPv6Address(g))] = ""
bad = 0
for name in sorted(c):
    if name not in j:
        print(f"{name}: MISSING from jrdma devices -v"); bad += 1; continue
    for k in DEVICE:
        a, b = c[name]["dev"].get(k), j[name]["dev"].get(k)
        ok = a is not None and b is not None and norm(a) == norm(b)
        bad += not ok
        print(f"{name} {k}: ibv_devinfo {a!r}, jrdma {b!r}: {'ok' if ok else 'DIFFERS'}")
    for p in sorted(c[name]["ports"]):
        cp, jp = c[name]["ports"][p], j[name]["ports"].get(p, {"gids": {}})
        for k in PORT:
            a, b = cp.get(k), jp.get(k)
            ok = a is not None and b is not None and norm(a) == norm(b)
            bad += not ok
            print(f"{name} port {p} {k}: ibv_devinfo {a!r}, jrdma {b!r}: {'ok' if ok else 'DIFFERS'}")
        ref, src = cp["gids"], "ibv_devinfo"
        if not ref and c[name]["dev"].get("transport", "").startswith("iWARP"):
            # ibv_devinfo prints no GID for iWARP ports (rdma-core 44 lists GIDs from the RoCE/IB GID
            # cache); the kernel still has one (sysfs ports/N/gids/0, a MAC-based GID for siw)
            ref, src = sysfs.get((name, p), {}), "sysfs (ibv_devinfo prints none for iWARP)"
        ok = ref == jp["gids"]
        bad += not ok
        print(f"{name} port {p} GIDs: {src} {ref}, jrdma {jp['gids']}: {'ok' if ok else 'DIFFERS'}")
for name in ("rxe0", "siw0"):
    if name not in c:
        print(f"{name}: not in ibv_devinfo -v (the guest has no such device)"); bad += 1
print(f"{'PASS' if bad == 0 else 'FAIL'}: {bad} difference(s) over {len(c)} device(s)")
sys.exit(1 if bad else 0)
EOF
cat "$OUT/compare.txt"
echo "results in $OUT"
exit "$rc"

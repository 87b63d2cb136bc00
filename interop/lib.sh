# Shared by interop/run.sh and interop/run-iwarp.sh (sourced, not run).

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

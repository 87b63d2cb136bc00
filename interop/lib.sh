# Shared by interop/run.sh and interop/run-iwarp.sh (sourced, not run).

# connect_peer NAME DEFAULT_PEER_IP: defines peer() (runs a command line on the peer) and here() (runs a
# command on this side, in the harness's namespace for --vm) from VMDIR or SSH; with --vm, PEER_IP and
# LOCAL_IF default to the harness's guest 1 address and br0; sets VM to the harness script.
connect_peer() {
  local name=$1 default_ip=$2
  if [ -n "$VMDIR" ]; then
    VM=$VMDIR; [ -d "$VM" ] && VM="$VM/vm.sh"
    [ -x "$VM" ] || { echo "no harness script $VM" >&2; exit 2; }
    peer() { "$VM" exec 1 "$*"; }
    here() { "$VM" ns "$@"; }
    PEER_IP=${PEER_IP:-$default_ip}
    LOCAL_IF=${LOCAL_IF:-br0}
  elif [ -n "$SSH" ]; then
    peer() { ssh -o BatchMode=yes -o ConnectTimeout=10 "$SSH" "$*"; }
    here() { "$@"; }
    [ -n "$PEER_IP" ] && [ -n "$LOCAL_IF" ] || { echo "--ssh needs --peer-ip and --local-if" >&2; exit 2; }
  else
    echo "$name: give the peer: --vm DIR or --ssh TARGET (see --help)" >&2; exit 2
  fi
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

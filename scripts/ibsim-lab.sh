#!/bin/bash
# A simulated InfiniBand fabric to try fabric mode by hand (docs/fabric.md):
#   scripts/ibsim-lab.sh [NET_FILE] [NODE]
# starts ibsim on NET_FILE (default: demo/fabric/fabric.net, 2 spines, 3 leaves, 9 hosts) and opensm
# on its first node, waits for the subnet manager to be master, writes wrappers of the fabric tools
# that run them as NODE of the fabric (default: its second host) and a sysfs snapshot of that node,
# prints the exporter's command line, and runs until Ctrl-C (or SIGTERM), then stops what it started
# and removes its temporary directory.
set -u
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
source "$here/ibsim-lab-lib.sh"

net=${1:-$here/../demo/fabric/fabric.net}
[ -r "$net" ] || { echo "ibsim-lab: $net: no such net file" >&2; exit 2; }
for tool in ibsim opensm ibnetdiscover; do
  command -v "$tool" >/dev/null || { echo "ibsim-lab: $tool not found (apt-get install ibsim-utils opensm infiniband-diags)" >&2; exit 2; }
done
[ -r "$UMAD2SIM" ] || { echo "ibsim-lab: $UMAD2SIM not found (ibsim-utils; set UMAD2SIM=…)" >&2; exit 2; }
# Node ids, in the net file's order: `Switch 8 "L1"`, `Hca 1 "H11"`.
nodes=$(sed -n 's/^\(Switch\|Hca\|Ca\)[[:space:]]\+[0-9]\+[[:space:]]\+"\([^"]*\)".*/\1 \2/p' "$net")
sm_node=$(echo "$nodes" | awk 'NR==1{print $2}')
node=${2:-$(echo "$nodes" | awk '$1!="Switch"{n++; if(n==2){print $2; exit}}')}
[ -n "$node" ] || node=$sm_node

lab=$(mktemp -d "${TMPDIR:-/tmp}/ibsim-lab-XXXXXX")
trap 'lab_stop; rm -rf "$lab"; exit 0' INT TERM
trap 'lab_stop; rm -rf "$lab"' EXIT
lab_start "$lab" "$net" || exit 1
lab_sm_start sm "$sm_node" 10
lab_wait_master "$node" 30 || { tail -5 "$lab/sm/opensm.log" >&2; exit 1; }
lab_wrappers "$node" "$lab/bin"
lab_snapshot "$node" "$lab/sys" || { echo "ibsim-lab: no sysfs snapshot of $node" >&2; exit 1; }

cat <<TEXT
ibsim fabric $net is up: opensm on "$sm_node" is master; the tools run as "$node".
Lab directory: $lab (ibsim console: echo 'Unlink "$node"[1]' > $lab/ctl; replies in $lab/ibsim.out)

The exporter in fabric mode on it, as "$node" (from a checkout after npm run build; installed, write
infiniband-exporter for node dist/main.js):
  PATH=$lab/bin:\$PATH node dist/main.js --collector.fabric --no-collector.diag --path.sysfs=$lab/sys
then open http://localhost:10460/fabric. Or one check:
  PATH=$lab/bin:\$PATH node dist/main.js check --collector.fabric --no-collector.diag --path.sysfs=$lab/sys

A tool by hand (what each wrapper in $lab/bin runs):
  (cd $lab && IBSIM_SOCKNAME=$IBSIM_SOCKNAME SIM_HOST=$node LD_PRELOAD=$UMAD2SIM iblinkinfo --line)

Ctrl-C stops opensm and ibsim.
TEXT
while kill -0 "$(cat "$lab/ibsim.pid")" 2>/dev/null; do sleep 1; done
echo "ibsim-lab: ibsim stopped" >&2

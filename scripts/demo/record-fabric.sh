#!/bin/bash
# Records the demo fabric (--demo=fabric) again: demo/fabric/'s commands.tsv, <stem>.stdout/.stderr/
# .exit, topology.cache, cabling-plan, sys/ (the exporter's own host) and recorded.txt, from the real tools on ibsim. What it does
# (demo/fabric/README.md says why):
#   1. the plan: demo/fabric/fabric.net without its degraded link, opensm on H11, saved with
#      `topology save` (the fabric as it was cabled);
#   2. the fabric: fabric.net, opensm on H11 (priority 10) and on H33 (priority 5, standby), then the
#      faults on the live fabric with ibsim's console: a pulled cable, a miswired cable, a congested
#      tier and symbol errors on the degraded link;
#   3. the exporter, with the flags --demo=fabric sets, runs `check` once and serves for a few seconds
#      with the tools behind recording wrappers (run as host H22): every command it runs is recorded
#      with its exact arguments, so the demo replays what the exporter asks, nothing more.
# Run from a checkout after `npm run build` (or `npx tsc -p tsconfig.build.json`); needs ibsim-utils,
# opensm and infiniband-diags. Review the diff of demo/fabric/ like code.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
source "$root/scripts/ibsim-lab-lib.sh"
out=$root/demo/fabric
exporter=(node "$root/dist/cli.js")
[ -f "$root/dist/cli.js" ] || { echo "record-fabric: build first (npm run build)" >&2; exit 2; }
work=$(mktemp -d "${TMPDIR:-/tmp}/record-fabric-XXXXXX")
server=
stop_all() {
  [ -n "$server" ] && { kill -TERM "$server" 2>/dev/null; wait "$server" 2>/dev/null; }
  lab_stop
  rm -rf "$work"
}
trap stop_all EXIT
demo_flags=(--config.file="$out/config.yml" --path.sysfs="$out/sys" --collector.fabric --no-collector.diag --no-collector.module
  --fabric.topology-file="$out/cabling-plan" --fabric.node-name-map="$out/node-name-map")

# 1. The plan.
sed 's/ w=1$//' "$out/fabric.net" >"$work/as-cabled.net"
lab_start "$work/plan" "$work/as-cabled.net"
lab_sm_start sm H11 10
lab_wait_master H22
lab_wrappers H22 "$work/plan/bin"
PATH="$work/plan/bin:$PATH" "${exporter[@]}" topology save "$out/cabling-plan" --fabric.node-name-map="$out/node-name-map"
lab_stop

# 2. The fabric and its faults.
lab_start "$work/lab" "$out/fabric.net"
lab_sm_start sm H11 10
lab_wait_master H22
lab_sm_start sm-standby H33 5
sleep 2
# A pulled cable: node12's, on leaf-1 port 2.
lab_cmd 'Unlink "H12"[1]'
# A miswired cable: node23's, planned on leaf-2 port 3, plugged into leaf-3's spare port 6.
# (opensm runs without periodic sweeps: when the link's trap does not reach it, plug the cable again)
for attempt in 1 2 3; do
  lab_cmd 'Unlink "H23"[1]'
  lab_cmd 'Link "H23"[1] "L3"[6]'
  lab_wait_active H23 10 2>/dev/null && break
done
# Counters, in two rounds, the second as if later.seconds later: the replay moves each counter on
# at the rate between the two (src/sources/recorded-runner.ts).
later_seconds=300
counters() {
  local round=$1 leaf port
  for leaf in 1 2 3; do
    for port in 4 5; do
      # A congested tier: every leaf uplink waits to send (PortXmitWait, in ticks), 500 000 a second.
      lab_cmd "PerformanceSet \"L$leaf\"[$port] PortCounters.PortXmitWait=$((200000000 + leaf * 30000000 + port * 1000000 + round * 150000000))"
    done
    lab_cmd "PerformanceSet \"L$leaf\"[1] PortCounters.PortXmitWait=$((leaf * 41000 + round * 9000))"
  done
  # The degraded inter-switch link (spine-1 port 1 / leaf-1 port 4, 1X in fabric.net) counts symbol errors.
  lab_cmd "PerformanceSet \"L1\"[4] PortCounters.SymbolErrorCounter=$((4821 + round * 90))"
  lab_cmd "PerformanceSet \"S1\"[1] PortCounters.SymbolErrorCounter=$((3907 + round * 75))"
  lab_cmd 'PerformanceSet "L1"[4] PortCounters.LinkDownedCounter=2'
  # Traffic (64-bit data counters, in 4-byte words) on every cable: uplinks about half of 4X QDR,
  # the degraded 1X link less, hosts a third.
  local ends=("S1 1 25" "S1 2 100" "S1 3 100" "S2 1 100" "S2 2 100" "S2 3 100" "L1 4 25" "L1 5 100" "L2 4 100" "L2 5 100"
    "L3 4 100" "L3 5 100" "L1 1 70" "L1 3 70" "L2 1 70" "L2 2 70" "L3 1 70" "L3 2 70" "L3 3 70" "L3 6 70")
  local end node rate
  for end in "${ends[@]}"; do
    read -r node port rate <<<"$end"
    lab_cmd "PerformanceSet \"$node\"[$port] PortCountersExtended.PortXmitData=$((500000000000 + round * rate * 2000000000))"
    lab_cmd "PerformanceSet \"$node\"[$port] PortCountersExtended.PortRcvData=$((480000000000 + round * rate * 1900000000))"
  done
}
counters 0 >/dev/null
lab_wait_active H23

# The host the exporter runs on, node22 (H22), as its kernel would show it: a ConnectX-3 (mlx4_0)
# with the GUIDs, LIDs, rate and counters the fabric gives its port (umad2sim's own fake sysfs has
# neither counters nor a link layer, and calls the device ibsim0).
host_tree() {
  local sys=$out/sys dev=$out/sys/class/infiniband/mlx4_0 portinfo guid
  rm -rf "$sys"
  mkdir -p "$dev/ports/1/counters" "$dev/ports/1/gids" "$dev/ports/1/pkeys" "$sys/devices/pci0000:00/0000:03:00.0" "$sys/class/net/lo"
  touch "$sys/devices/pci0000:00/0000:03:00.0/.gitkeep"
  echo 772 >"$sys/class/net/lo/type"
  ln -s ../../../devices/pci0000:00/0000:03:00.0 "$dev/device"
  portinfo=$(lab_run H22 smpquery -D portinfo 0 1)
  field() { echo "$portinfo" | sed -n "s/^$1:\.*//p"; }
  guid=$(lab_run H22 smpquery -D nodeinfo 0 | sed -n 's/^Guid:\.*0x//p')
  colons() { printf '%016x' "$1" | sed 's/\(....\)/\1:/g; s/:$//'; }
  colons "0x$guid" >"$dev/node_guid"
  colons "0x$guid" >"$dev/sys_image_guid"
  echo '1: CA' >"$dev/node_type"
  echo MT4099 >"$dev/hca_type"
  echo 2.42.5000 >"$dev/fw_ver"
  echo MT_1090120019 >"$dev/board_id"
  echo 1 >"$dev/hw_rev"
  echo 'node22 HCA-1' >"$dev/node_desc"
  [ "$(field LinkState)" = Active ] && echo '4: ACTIVE' >"$dev/ports/1/state"
  [ "$(field PhysLinkState)" = LinkUp ] && echo '5: LinkUp' >"$dev/ports/1/phys_state"
  [ "$(field LinkWidthActive)$(field LinkSpeedActive)" = '4X10.0 Gbps' ] && echo '40 Gb/sec (4X QDR)' >"$dev/ports/1/rate"
  printf '0x%x\n' "$(field Lid)" >"$dev/ports/1/lid"
  printf '0x%x\n' "$(field SMLid)" >"$dev/ports/1/sm_lid"
  echo 0 >"$dev/ports/1/lid_mask_count"
  echo 0 >"$dev/ports/1/sm_sl"
  echo InfiniBand >"$dev/ports/1/link_layer"
  echo 0x02514868 >"$dev/ports/1/cap_mask"
  echo 0xffff >"$dev/ports/1/pkeys/0"
  printf 'fe80:0000:0000:0000:%s\n' "$(colons $((0x$guid + 1)))" >"$dev/ports/1/gids/0"
  lab_run H22 perfquery | awk -F'[:.]+' -v d="$dev/ports/1/counters" 'BEGIN {
    m["SymbolErrorCounter"] = "symbol_error"; m["LinkErrorRecoveryCounter"] = "link_error_recovery"
    m["LinkDownedCounter"] = "link_downed"; m["PortRcvErrors"] = "port_rcv_errors"
    m["PortRcvRemotePhysicalErrors"] = "port_rcv_remote_physical_errors"; m["PortRcvSwitchRelayErrors"] = "port_rcv_switch_relay_errors"
    m["PortXmitDiscards"] = "port_xmit_discards"; m["PortXmitConstraintErrors"] = "port_xmit_constraint_errors"
    m["PortRcvConstraintErrors"] = "port_rcv_constraint_errors"; m["LocalLinkIntegrityErrors"] = "local_link_integrity_errors"
    m["ExcessiveBufferOverrunErrors"] = "excessive_buffer_overrun_errors"; m["VL15Dropped"] = "VL15_dropped"
    m["PortXmitWait"] = "port_xmit_wait"; m["PortXmitData"] = "port_xmit_data"; m["PortRcvData"] = "port_rcv_data"
    m["PortXmitPkts"] = "port_xmit_packets"; m["PortRcvPkts"] = "port_rcv_packets" }
    ($1 in m) { print $2 > (d "/" m[$1]) }'
}
host_tree

# 3. The recording wrappers: run the tool as H22, keep the first output of each command line.
rm -f "$out"/*.stdout "$out"/*.stderr "$out"/*.exit "$out/commands.tsv" "$out/topology.cache" "$out/later.seconds"
: >"$out/commands.tsv"
mkdir -p "$work/bin"
for tool in ibnetdiscover iblinkinfo ibqueryerrors saquery sminfo perfquery; do
  cat >"$work/bin/$tool" <<WRAPPER
#!/bin/bash
out='$out'
line=$tool
previous=
for arg in "\$@"; do
  case "\$previous" in --cache|--load-cache) line+=" <cache>" ;; *) line+=" \$arg" ;; esac
  previous=\$arg
done
tmp=\$(mktemp -d)
(cd '$LAB_DIR' && SIM_HOST=H22 IBSIM_SOCKNAME='$IBSIM_SOCKNAME' LD_PRELOAD='$UMAD2SIM' '$(command -v "$tool")' "\$@") >"\$tmp/stdout" 2>"\$tmp/stderr"
code=\$?
(
  flock 9
  known=\$(awk -F'\t' -v line="\$line" '\$2 == line { print \$1 }' "\$out/commands.tsv")
  if [ -n "\$known" ] && [ -n "\${RECORD_LATER:-}" ] && [ ! -f "\$out/\$known.later.stdout" ]; then
    cp "\$tmp/stdout" "\$out/\$known.later.stdout"
  elif [ -z "\$known" ]; then
    stem=\$(printf '%s' "\$line" | tr -c 'A-Za-z0-9' '-' | sed 's/--*/-/g; s/-\$//; s/-cache-/-/g')
    cp "\$tmp/stdout" "\$out/\$stem.stdout"
    sed -E 's/\[[0-9]+\]/[PID]/g' "\$tmp/stderr" >"\$out/\$stem.stderr"
    echo "\$code" >"\$out/\$stem.exit"
    printf '%s\t%s\n' "\$stem" "\$line" >>"\$out/commands.tsv"
    previous=
    for arg in "\$@"; do
      [ "\$previous" = --cache ] && [ -f "\$arg" ] && cp "\$arg" "\$out/topology.cache"
      previous=\$arg
    done
  fi
) 9>"\$out/.record.lock"
cat "\$tmp/stdout"
cat "\$tmp/stderr" >&2
rm -rf "\$tmp"
exit \$code
WRAPPER
  chmod +x "$work/bin/$tool"
done

set +e
PATH="$work/bin:$PATH" "${exporter[@]}" check "${demo_flags[@]}" >"$work/check.txt"
echo "check: exit $?"
set -e
cat "$work/check.txt"
port=$((20000 + RANDOM % 20000))
PATH="$work/bin:$PATH" "${exporter[@]}" "${demo_flags[@]}" --web.listen-address="127.0.0.1:$port" --fabric.interval=2s --log.level=warn &
server=$!
sleep 8
for page in /fabric /metrics /; do curl -fsS -o /dev/null "http://127.0.0.1:$port$page" || echo "record-fabric: $page failed" >&2; done
kill -TERM "$server"; wait "$server" 2>/dev/null || true
server=
# The later round: the counters as they are later.seconds on, and each command once more.
counters 1 >/dev/null
RECORD_LATER=1 PATH="$work/bin:$PATH" "${exporter[@]}" check "${demo_flags[@]}" >/dev/null || true
echo "$later_seconds" >"$out/later.seconds"
# Only counter values (`[Name == value]`) move in the replay: keep the later outputs that have them.
for later in "$out"/*.later.stdout; do
  grep -q '== [0-9]' "$later" && ! cmp -s "$later" "${later%.later.stdout}.stdout" || rm -f "$later"
done
rm -f "$out/.record.lock"
sort -o "$out/commands.tsv" "$out/commands.tsv"

cat >"$out/recorded.txt" <<TEXT
Recorded by scripts/demo/record-fabric.sh on $(date -u +%Y-%m-%d), as host H22 of fabric.net:
$(dpkg-query -W -f '${Package} ${Version}\n' ibsim-utils opensm infiniband-diags 2>/dev/null)
TEXT
echo "record-fabric: $(wc -l <"$out/commands.tsv") commands recorded in $out"

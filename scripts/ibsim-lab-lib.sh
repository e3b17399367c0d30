# ibsim-lab-lib.sh: functions to run a simulated InfiniBand fabric (ibsim) with a real opensm and the
# real infiniband-diags tools, attached through umad2sim (LD_PRELOAD). Source it from bash; used by
# scripts/ibsim-lab.sh and scripts/demo/record-fabric.sh. Every process is stopped by the PID it was
# started with, never by name: other people's ibsim and opensm may run on the same machine.
# Needs the Debian packages ibsim-utils, opensm and infiniband-diags.
UMAD2SIM=${UMAD2SIM:-/usr/lib/x86_64-linux-gnu/umad2sim/libumad2sim.so}
export PATH="$PATH:/usr/sbin:/sbin"

# lab_start <dir> <net file>: ibsim on a private socket name, its console on a FIFO.
lab_start() {
  local net i
  mkdir -p "$1" && LAB_DIR=$(cd "$1" && pwd) || return 1
  net=$(realpath "$2") || return 1
  export LAB_DIR
  # The socket name isolates this fabric and its clients from any other ibsim on the machine.
  export IBSIM_SOCKNAME="ibx-$$-$RANDOM"
  rm -f "$LAB_DIR/ctl" && mkfifo "$LAB_DIR/ctl"
  # '<>' opens the FIFO read-write: ibsim never reads EOF (on EOF it spins at 100% CPU).
  (cd "$LAB_DIR" && exec ibsim -s "$net" <>"$LAB_DIR/ctl" >>"$LAB_DIR/ibsim.out" 2>>"$LAB_DIR/ibsim.err") &
  echo $! >"$LAB_DIR/ibsim.pid"
  for i in $(seq 100); do
    grep -q "@${IBSIM_SOCKNAME}:ctl@" /proc/net/unix && return 0
    kill -0 "$(cat "$LAB_DIR/ibsim.pid")" 2>/dev/null || break
    sleep 0.05
  done
  echo "ibsim did not start:" >&2
  grep -v 'cannot parse remote lid' "$LAB_DIR/ibsim.err" >&2
  return 1
}

# lab_cmd <console command>: one ibsim console line (under 128 characters); prints the reply.
lab_cmd() {
  local out=$LAB_DIR/ibsim.out before i
  before=$(stat -c %s "$out")
  printf '%s\n' "$*" >"$LAB_DIR/ctl"
  # Replies are not tagged: wait for the prompt that ends this one.
  for i in $(seq 250); do
    [ "$(stat -c %s "$out")" -gt "$before" ] && [ "$(tail -c 5 "$out")" = "sim> " ] && break
    sleep 0.02
  done
  tail -c +$((before + 1)) "$out" | sed 's/sim> $//'
}

# lab_run <node> <tool> [args...]: a tool run as if on that node of the net file (in the lab
# directory: umad2sim writes its fake sysfs into the working directory).
lab_run() {
  local node=$1
  shift
  (cd "$LAB_DIR" && SIM_HOST=$node LD_PRELOAD=$UMAD2SIM timeout 30 "$@")
}

# lab_sm_start <name> <node> <priority>: opensm on that node; its files in $LAB_DIR/<name>/.
lab_sm_start() {
  local dir=$LAB_DIR/$1
  mkdir -p "$dir"
  (cd "$dir" && SIM_HOST=$2 LD_PRELOAD=$UMAD2SIM OSM_TMP_DIR=$dir OSM_CACHE_DIR=$dir \
    exec opensm -f "$dir/opensm.log" -s 0 -p "$3" >"$dir/opensm.out" 2>&1) &
  echo $! >"$LAB_DIR/$1.pid"
}

# lab_wait_master <node> [seconds]: until `sminfo`, run on that node, answers SMINFO_MASTER.
lab_wait_master() {
  local i
  for i in $(seq $((${2:-20} * 10))); do
    lab_run "$1" sminfo 2>/dev/null | grep -q SMINFO_MASTER && return 0
    sleep 0.1
  done
  echo "no master subnet manager after ${2:-20} s" >&2
  return 1
}

# lab_wait_active <node> [seconds]: until that node's port 1 is Active.
lab_wait_active() {
  local i
  for i in $(seq $((${2:-20} * 10))); do
    lab_run "$1" ibstat 2>/dev/null | grep -q 'State: Active' && return 0
    sleep 0.1
  done
  echo "$1: port not Active after ${2:-20} s" >&2
  return 1
}

# lab_stop_pid <pid file> [dir]: TERM, up to 5 s, then KILL; removes umad2sim's sys-<pid> in dir.
lab_stop_pid() {
  local pid i
  pid=$(cat "$1" 2>/dev/null) || return 0
  kill -TERM "$pid" 2>/dev/null
  for i in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  kill -0 "$pid" 2>/dev/null && kill -KILL "$pid" 2>/dev/null
  wait "$pid" 2>/dev/null || true
  [ -n "${2:-}" ] && rm -rf "$2/sys-$pid"
  rm -f "$1"
  return 0
}

# lab_stop: every opensm started with lab_sm_start, then ibsim.
lab_stop() {
  local pidfile name
  [ -n "${LAB_DIR:-}" ] || return 0
  for pidfile in "$LAB_DIR"/*.pid; do
    [ -e "$pidfile" ] || continue
    name=$(basename "$pidfile" .pid)
    [ "$name" = ibsim ] && continue
    lab_stop_pid "$pidfile" "$LAB_DIR/$name"
  done
  lab_stop_pid "$LAB_DIR/ibsim.pid"
  rm -f "$LAB_DIR/ctl"
}

# lab_wrappers <node> <bin dir>: one script per fabric tool that runs the real tool on <node> of this
# lab. Put <bin dir> first in the exporter's PATH: the exporter itself never runs preloaded.
lab_wrappers() {
  local tool real
  mkdir -p "$2"
  for tool in ibnetdiscover iblinkinfo ibqueryerrors saquery sminfo perfquery smpquery ibstat; do
    real=$(command -v "$tool") || continue
    cat >"$2/$tool" <<WRAPPER
#!/bin/sh
cd '$LAB_DIR' || exit 1
SIM_HOST='$1' IBSIM_SOCKNAME='$IBSIM_SOCKNAME' LD_PRELOAD='$UMAD2SIM' exec '$real' "\$@"
WRAPPER
    chmod +x "$2/$tool"
  done
}

# lab_snapshot <node> <dest>: umad2sim's fake sysfs of that node (its port 1) as <dest>/class/...,
# for --path.sysfs. It has no counters and no link layer (the exporter reads the port as InfiniBand).
lab_snapshot() {
  mkdir -p "$2" && local dest && dest=$(cd "$2" && pwd) || return 1
  # The glob makes bash open /sys/class/infiniband, which makes umad2sim write ./sys-<pid>; the
  # trailing `true` keeps bash from exec'ing cp (an exec'd process never gives its client slot back).
  (cd "$LAB_DIR" && SIM_HOST=$1 LD_PRELOAD=$UMAD2SIM bash -c ': /sys/class/infiniband/*; cp -a "sys-$$/sys/." "$1/"; true' _ "$dest" 2>/dev/null)
  [ -d "$dest/class/infiniband" ]
}

#!/usr/bin/env bash
# lvsnic full-system simulation: the Versa ECP5 SoC (lvsnic_core + LiteEth
# management port + glue) in LiteX's Verilator simulation, its data port and
# its management port on two host TAP devices.
#
# Usage:
#   boards/sim/run.sh [start] [DATA_TAP [MGMT_TAP]]
#       install what is missing, build the model (cached), start it in the
#       background and wait until the core answers over Etherbone; prints
#       one line starting "lvsnic-sim: ready" and exits 0 (exit 1 if it
#       does not come up within LVSNIC_SIM_TIMEOUT seconds). Starting an
#       instance that is already running only prints its ready line.
#   boards/sim/run.sh stop   [DATA_TAP [MGMT_TAP]]   stop it, delete the taps it created
#   boards/sim/run.sh status [DATA_TAP [MGMT_TAP]]   exit 0 if running (prints its ready line)
#   boards/sim/run.sh build                          only install and build
#
# Taps (arguments, else environment; defaults lvsd0, lvsm0): created
# (persistent, up, IPv6 off) when missing, and deleted again by `stop`; the
# management tap gets LVSNIC_SIM_HOST_IP/LVSNIC_SIM_PREFIX. Taps that exist
# already are used as they are (only brought up) and left in place.
#
# Environment:
#   LVSNIC_SIM_DATA_TAP, LVSNIC_SIM_MGMT_TAP   tap names (lvsd0, lvsm0)
#   LVSNIC_SIM_IP          management port address of the simulated board (192.168.1.50)
#   LVSNIC_SIM_HOST_IP     host address on the management tap, and the reset
#                          destination of exception datagrams (192.168.1.100)
#   LVSNIC_SIM_PREFIX      prefix length of the management subnet (24)
#   LVSNIC_SIM_MTU         MTU of the taps run.sh creates (9000: exception datagrams
#                          of frames above 1448 bytes and inject datagrams of frames
#                          above 1464 bytes exceed 1500, and LiteEth does not
#                          reassemble fragments; the glue's buffers hold 8192 bytes)
#   LVSNIC_SIM_NETNS       network namespace to create the taps and run the model in (none)
#   LVSNIC_SIM_TIMEOUT     seconds to wait for readiness (180)
#   FLOW_BUCKETS_LOG2, ACTION_LOG2, VIP_COUNT   core table sizes (4, 4, 4)
#   LVSNIC_SIM_SYS_CLK_HZ  nominal sys clock (1000000; timestamps and LiteEth's ARP timers)
#   JOBS                   C++ compile jobs (2)
#   LVSNIC_SIM_OUT         build and run directory (boards/build/sim)
#
# The instance's state (pid, log, sim_config.js, env) is in
# $LVSNIC_SIM_OUT/run/DATA_TAP-MGMT_TAP/; `env` there holds the ready
# line's values as shell assignments.
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT=$PWD

CMD=start
case "${1:-}" in start|stop|status|build) CMD=$1; shift ;; esac
DATA_TAP=${1:-${LVSNIC_SIM_DATA_TAP:-lvsd0}}
MGMT_TAP=${2:-${LVSNIC_SIM_MGMT_TAP:-lvsm0}}
SIM_IP=${LVSNIC_SIM_IP:-192.168.1.50}
HOST_IP=${LVSNIC_SIM_HOST_IP:-192.168.1.100}
PREFIX=${LVSNIC_SIM_PREFIX:-24}
MTU=${LVSNIC_SIM_MTU:-9000}
NETNS=${LVSNIC_SIM_NETNS:-}
TIMEOUT=${LVSNIC_SIM_TIMEOUT:-180}
FB=${FLOW_BUCKETS_LOG2:-4}
AL=${ACTION_LOG2:-4}
VIPS=${VIP_COUNT:-4}
SYS_CLK=${LVSNIC_SIM_SYS_CLK_HZ:-1000000}
JOBS=${JOBS:-2}
OUT=${LVSNIC_SIM_OUT:-$ROOT/boards/build/sim}
STATE="$OUT/run/$DATA_TAP-$MGMT_TAP"
NSX=()
IPN=(ip)
if [ -n "$NETNS" ]; then
    NSX=(ip netns exec "$NETNS")
    IPN=(ip -n "$NETNS")
fi

log() { echo "lvsnic-sim: $*" >&2; }

running_pid() {
    [ -f "$STATE/pid" ] || return 1
    local pid
    pid=$(cat "$STATE/pid")
    [ -d "/proc/$pid" ] && [ "$(cat "/proc/$pid/comm" 2>/dev/null)" = Vsim ] && echo "$pid"
}

ready_line() {
    # shellcheck disable=SC1091
    . "$STATE/env"
    echo "lvsnic-sim: ready pid=$LVSNIC_SIM_PID data_tap=$LVSNIC_SIM_DATA_TAP mgmt_tap=$LVSNIC_SIM_MGMT_TAP" \
         "sim_ip=$LVSNIC_SIM_IP host_ip=$LVSNIC_SIM_HOST_IP etherbone=$LVSNIC_SIM_IP:1234" \
         "lvsnic_udp=19542 csr_csv=$LVSNIC_SIM_CSR_CSV log=$LVSNIC_SIM_LOG${LVSNIC_SIM_NETNS:+ netns=$LVSNIC_SIM_NETNS}"
}

stop() {
    local pid ipn=("${IPN[@]}")
    # the namespace the instance was started in
    if [ -f "$STATE/env" ]; then
        local ns
        ns=$(sed -n 's/^LVSNIC_SIM_NETNS=//p' "$STATE/env")
        if [ -n "$ns" ]; then ipn=(ip -n "$ns"); else ipn=(ip); fi
    fi
    if pid=$(running_pid); then
        kill -TERM "$pid" 2>/dev/null || true
        for _ in $(seq 50); do [ -d "/proc/$pid" ] || break; sleep 0.1; done
        [ -d "/proc/$pid" ] && kill -KILL "$pid" 2>/dev/null || true
        log "stopped pid $pid ($DATA_TAP, $MGMT_TAP)"
    fi
    if [ -f "$STATE/taps-created" ]; then
        while read -r tap; do
            [ -n "$tap" ] && "${ipn[@]}" link del "$tap" 2>/dev/null || true
        done < "$STATE/taps-created"
        rm -f "$STATE/taps-created"
    fi
    rm -f "$STATE/pid"
}

case "$CMD" in
    stop) stop; exit 0 ;;
    status)
        if running_pid >/dev/null; then ready_line; exit 0; fi
        echo "lvsnic-sim: not running ($DATA_TAP, $MGMT_TAP)"; exit 1 ;;
esac

# --- install ---------------------------------------------------------------------------------------
need=()
[ -f /usr/include/event2/event.h ] || need+=(libevent-dev)
[ -f /usr/include/json-c/json.h ] || need+=(libjson-c-dev)
[ -f /usr/include/zlib.h ] || need+=(zlib1g-dev)
command -v make >/dev/null || need+=(make)
command -v g++ >/dev/null || need+=(g++)
command -v ip >/dev/null || need+=(iproute2)
if [ ${#need[@]} -gt 0 ]; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
        log "installing ${need[*]}"
        apt-get install -y -q "${need[@]}" >&2 || { apt-get update -q >&2 && apt-get install -y -q "${need[@]}" >&2; }
    else
        log "missing system packages: sudo apt-get install ${need[*]}"; exit 1
    fi
fi
VBIN=$(./scripts/setup-hw.sh)
STAMP="$ROOT/.venv/.lvsnic-sim-$(cat boards/requirements.txt boards/sim/requirements.txt | sha256sum | cut -c1-12)"
if [ ! -f "$STAMP" ]; then
    log "installing boards/sim/requirements.txt into .venv"
    "$VBIN/pip" install -q -r boards/sim/requirements.txt >&2
    touch "$STAMP"
fi
export PATH="$VBIN:$PATH"
export PYTHONHASHSEED=0

# --- build (cached on sources and parameters) -------------------------------------------------------
KEY=$( {
    echo "fb=$FB al=$AL vips=$VIPS ip=$SIM_IP host=$HOST_IP clk=$SYS_CLK"
    find hw/rtl boards/common/lvsnic_litex.py boards/sim/lvsnic_sim.py boards/sim/modules \
         boards/requirements.txt boards/sim/requirements.txt -type f ! -path '*__pycache__*' \
         | LC_ALL=C sort | xargs sha256sum
} | sha256sum | cut -c1-12)
BUILD="$OUT/$KEY"
mkdir -p "$OUT"
exec 9>"$OUT/.build.lock"
flock 9
if [ ! -f "$BUILD/built" ]; then
    rm -rf "$BUILD"
    log "building the model ($BUILD; FLOW_BUCKETS_LOG2=$FB ACTION_LOG2=$AL VIP_COUNT=$VIPS, sim $SIM_IP, host $HOST_IP, $JOBS jobs)"
    t0=$(date +%s)
    if ! python boards/sim/lvsnic_sim.py build --output-dir "$BUILD" --jobs "$JOBS" \
            --flow-buckets-log2 "$FB" --action-log2 "$AL" --vip-count "$VIPS" \
            --eth-ip "$SIM_IP" --host-ip "$HOST_IP" --sys-clk-freq "$SYS_CLK" > "$OUT/build-$KEY.log" 2>&1; then
        grep -iE "error|fatal" "$OUT/build-$KEY.log" | grep -v Wsign-compare | tail -20 >&2 || true
        log "build failed (log: $OUT/build-$KEY.log)"; exit 1
    fi
    t1=$(date +%s)
    # Object files are not needed to run (a rebuild starts from scratch).
    find "$BUILD/gateware/obj_dir" \( -name '*.o' -o -name '*.gch' -o -name '*.a' \) -delete
    echo "$((t1 - t0))" > "$BUILD/build-seconds"
    touch "$BUILD/built"
    log "built in $((t1 - t0)) s"
else
    log "model up to date ($BUILD)"
fi
ln -sfn "$KEY" "$OUT/latest"
flock -u 9
[ "$CMD" = build ] && exit 0

# --- start -----------------------------------------------------------------------------------------
if running_pid >/dev/null; then
    ready_line; exit 0
fi
mkdir -p "$STATE"
rm -f "$STATE/taps-created" "$STATE/env"
fail() {
    [ -f "$STATE/sim.log" ] && tail -20 "$STATE/sim.log" >&2
    log "$* (log: $STATE/sim.log)"
    stop
    exit 1
}
trap 'fail "start failed"' ERR
for tap in "$DATA_TAP" "$MGMT_TAP"; do
    if ! "${IPN[@]}" link show "$tap" >/dev/null 2>&1; then
        "${IPN[@]}" tuntap add dev "$tap" mode tap
        echo "$tap" >> "$STATE/taps-created"
        "${NSX[@]}" sysctl -qw "net.ipv6.conf.$tap.disable_ipv6=1" || true
        "${IPN[@]}" link set "$tap" mtu "$MTU"
        if [ "$tap" = "$MGMT_TAP" ]; then
            "${IPN[@]}" addr add "$HOST_IP/$PREFIX" dev "$tap"
        fi
    fi
    "${IPN[@]}" link set "$tap" up
done
# The model reads sim_config.js and ./modules/ from its working directory.
python boards/sim/lvsnic_sim.py config --output "$STATE/sim_config.js" --sys-clk-freq "$SYS_CLK" \
    --data-tap "$DATA_TAP" --mgmt-tap "$MGMT_TAP"
ln -sfn "$BUILD/gateware/modules" "$STATE/modules"
for f in "$BUILD"/gateware/*.init; do [ -e "$f" ] && ln -sfn "$f" "$STATE/"; done
t0=$(date +%s%N)
# setsid: a session of its own, so signals to the caller's terminal do not
# reach it; setsid and `ip netns exec` exec, so $! is the model's pid.
(cd "$STATE" && exec setsid "${NSX[@]}" "$BUILD/gateware/obj_dir/Vsim" > "$STATE/sim.log" 2>&1 < /dev/null) &
PID=$!
echo "$PID" > "$STATE/pid"
cat > "$STATE/env" <<EOF
LVSNIC_SIM_PID=$PID
LVSNIC_SIM_DATA_TAP=$DATA_TAP
LVSNIC_SIM_MGMT_TAP=$MGMT_TAP
LVSNIC_SIM_IP=$SIM_IP
LVSNIC_SIM_HOST_IP=$HOST_IP
LVSNIC_SIM_ETHERBONE_PORT=1234
LVSNIC_SIM_LVSNIC_PORT=19542
LVSNIC_SIM_CSR_CSV=$BUILD/csr.csv
LVSNIC_SIM_LOG=$STATE/sim.log
LVSNIC_SIM_NETNS=$NETNS
EOF
"${NSX[@]}" "$VBIN/python" boards/sim/simnet.py probe --ip "$SIM_IP" --bind "$HOST_IP" --timeout "$TIMEOUT" &
probe=$!
trap - ERR
while kill -0 "$probe" 2>/dev/null && [ "$(awk '{print $3}' "/proc/$probe/stat" 2>/dev/null)" != Z ]; do
    if [ ! -d "/proc/$PID" ] || [ "$(awk '{print $3}' "/proc/$PID/stat" 2>/dev/null)" = Z ]; then
        kill "$probe" 2>/dev/null || true
        wait "$probe" 2>/dev/null || true
        fail "the model exited"
    fi
    sleep 0.2
done
wait "$probe" || fail "not ready after $TIMEOUT s"
log "up in $(( ($(date +%s%N) - t0) / 1000000 )) ms"
ready_line

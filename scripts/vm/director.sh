#!/usr/bin/env bash
# Runs INSIDE the conformance VM (scripts/vm/run.sh boots it): configures a
# one-armed Linux IPVS director exactly as DIRECTOR.toml describes, loads the
# rules with the real `ipvsadm -R`, replays a capture into it at the
# capture's pace and records what it transmits.
#
#   director.sh WORKDIR
#
# WORKDIR (writable in the VM) holds the inputs `lvsnic conformance` wrote:
#   director.env  shell variables: DIR_IP DIR_MAC DIR_MTU GW_IP GW_MAC
#                 NEIGHBORS ("ip=mac ...") VIPS ("ip ...") TIMEOUTS
#                 ("tcp tcpfin udp") VS_SYSCTLS ("name=value ...")
#                 ICMP_RATELIMIT ICMP_RATEMASK CONN_TAB_BITS
#                 DIR_IP6 GW_IP6 NEIGHBORS6 VIPS6 (DIR_IP6 empty: IPv6 stays off)
#   rules.txt     given to `ipvsadm -R` unchanged
#   in.pcap       the frames arriving at the director
#   changes.txt   optional: "SECONDS ipvsadm-args" (seconds after the first frame)
# and gets the outputs:
#   kernel-out.pcap   every frame the director transmitted (tester side of the wire)
#   kernel-sent.pcap  every frame the tester replayed (to check nothing was lost)
#   start_ns.txt      when the replay started (ns since the epoch, VM clock)
#   timer_list.txt    /proc/timer_list read three times (jiffies phase for the model)
#   changes.log       per change: SECONDS, ns after the start it took effect, result, command
#                     (changes_runner.py; changes-times.txt: when each ipvsadm started and returned)
#   tcpreplay.txt, ipvsadm-*.txt, log.txt
#   status            "ok", or one line "error: ..." (the caller prints it)
#
# Wiring: veth wire0 (director, root namespace) <-> wire1 (namespace
# "tester"). tcpreplay sends into wire1; tcpdump on wire1 -Q in captures
# what the director sent back.
set -uo pipefail
W=${1:?usage: director.sh WORKDIR}
HERE=$(cd "$(dirname "$0")" && pwd)
cd "$W" || exit 1
exec 3>&1 >>"$W/log.txt" 2>&1
fail() { echo "error: $*" >"$W/status"; echo "director.sh: $*"; exit 1; }
step() { echo "+ $*"; "$@" || fail "'$*' failed (see log.txt)"; }
. "$W/director.env" || fail "director.env unreadable"

# --- the kernel: IPVS and its knobs -------------------------------------
# (few processes: every exec costs seconds under TCG on a loaded host)
step modprobe ip_vs conn_tab_bits="${CONN_TAB_BITS:-12}"
vs=()
for kv in ${VS_SYSCTLS:-}; do vs+=("net.ipv4.vs.$kv"); done
# IPv6: disabled everywhere (no router solicitations, MLD, DAD on the
# wire), unless the group has IPv6 services (DIR_IP6 set): then on, as a
# quiet router. Set on `default` before wire0 exists, so wire0 is born
# with it: no link-local address (addr_gen_mode 1; without one the kernel
# sends no redirects, `ndisc_send_redirect`), no DAD, no router
# solicitations, no autoconfiguration, forwarding on.
if [ -n "${DIR_IP6:-}" ]; then
    v6=()
    for c in all default; do
        v6+=("net.ipv6.conf.$c.accept_dad=0" "net.ipv6.conf.$c.dad_transmits=0" "net.ipv6.conf.$c.router_solicitations=0"
             "net.ipv6.conf.$c.accept_ra=0" "net.ipv6.conf.$c.autoconf=0" "net.ipv6.conf.$c.ndisc_notify=0"
             "net.ipv6.conf.$c.mldv1_unsolicited_report_interval=10" "net.ipv6.conf.$c.mldv2_unsolicited_report_interval=10")
    done
    v6+=(net.ipv6.conf.default.addr_gen_mode=1 net.ipv6.conf.all.disable_ipv6=0 net.ipv6.conf.default.disable_ipv6=0
         net.ipv6.conf.all.forwarding=1)
else
    v6=(net.ipv6.conf.all.disable_ipv6=1 net.ipv6.conf.default.disable_ipv6=1)
fi
step sysctl -q -w net.ipv4.ip_forward=1 \
    net.ipv4.conf.all.send_redirects=0 net.ipv4.conf.default.send_redirects=0 \
    net.ipv4.conf.all.rp_filter=0 net.ipv4.conf.default.rp_filter=0 \
    "${v6[@]}" \
    "net.ipv4.icmp_ratelimit=${ICMP_RATELIMIT:-1000}" "net.ipv4.icmp_ratemask=${ICMP_RATEMASK:-6168}" \
    net.core.netdev_max_backlog=1000000 "${vs[@]}"

# --- the wire, addresses, neighbours, routes ----------------------------
# Offloads go off before wire1 moves to the tester namespace (features
# move with the device).
step ip link add wire0 type veth peer name wire1
step ethtool -K wire0 tx off rx off gro off gso off tso off
step ethtool -K wire1 tx off rx off gro off gso off tso off
{
    echo "link set lo up"
    echo "netns add tester"
    echo "link set wire1 netns tester"
    echo "link set wire0 address $DIR_MAC mtu $DIR_MTU up"
    echo "addr add $DIR_IP/32 dev wire0"
    for v in ${VIPS:-}; do echo "addr add $v/32 dev lo"; done
    for n in ${NEIGHBORS:-} "$GW_IP=$GW_MAC"; do
        echo "route replace ${n%%=*}/32 dev wire0 src $DIR_IP"
        echo "neigh replace ${n%%=*} lladdr ${n#*=} nud permanent dev wire0"
    done
    echo "route replace default via $GW_IP dev wire0 src $DIR_IP"
    # IPv6 (DIR_IP6 set): the same, /128 (nodad: no DAD frames, usable at once).
    if [ -n "${DIR_IP6:-}" ]; then
        echo "addr add $DIR_IP6/128 dev wire0 nodad"
        for v in ${VIPS6:-}; do echo "addr add $v/128 dev lo nodad"; done
        for n in ${NEIGHBORS6:-} "$GW_IP6=$GW_MAC"; do
            echo "route replace ${n%%=*}/128 dev wire0 src $DIR_IP6"
            echo "neigh replace ${n%%=*} lladdr ${n#*=} nud permanent dev wire0"
        done
        echo "route replace ::/0 via $GW_IP6 dev wire0 src $DIR_IP6"
    fi
} >"$W/ip-batch.txt"
step ip -batch "$W/ip-batch.txt"
step sysctl -q -w net.ipv4.conf.wire0.send_redirects=0 net.ipv4.conf.wire0.rp_filter=0
step ip netns exec tester sysctl -q -w net.ipv6.conf.all.disable_ipv6=1 net.ipv6.conf.default.disable_ipv6=1 net.ipv6.conf.wire1.disable_ipv6=1
printf 'link set lo up\nlink set wire1 mtu 65535 up\n' >"$W/ip-batch-tester.txt"
step ip -n tester -batch "$W/ip-batch-tester.txt"
# MLD: wire0 joins ff02::2 and ff05::2 (forwarding) and the solicited-node
# group of DIR_IP6 when it comes up, and reports them (MLDv2, robustness 2)
# at once and within the 10 ms report interval set above; the capture
# starts later, so none of them is recorded (ip6-maddr.txt lists the groups).
ip -6 addr show >"$W/ip6-addr.txt" 2>&1
ip -6 route show >"$W/ip6-route.txt" 2>&1
ip -6 maddr show dev wire0 >"$W/ip6-maddr.txt" 2>&1

# --- the rules: real ipvsadm ------------------------------------------------
# shellcheck disable=SC2086
step ipvsadm --set $TIMEOUTS
if ! ipvsadm -R <"$W/rules.txt" >"$W/ipvsadm-R.txt" 2>&1; then
    fail "ipvsadm -R rejected the rules: $(tr '\n' ' ' <"$W/ipvsadm-R.txt")"
fi
ipvsadm -S -n >"$W/ipvsadm-S-before.txt" 2>&1

# --- capture and replay -------------------------------------------------------
# tcpdump on wire1: -Q in is what the director sent, -Q out what the tester replayed.
# 64 MiB capture buffers (-B): under a loaded host the VM's tcpdump falls
# behind and the default 2 MiB overflowed (1789 frames lost in one matrix run).
ip netns exec tester tcpdump -i wire1 -p -n -s 0 -U -B 65536 -Z root --time-stamp-precision=nano \
    -Q in -w "$W/kernel-out.pcap" >/dev/null 2>"$W/kernel-out.pcap.err" &
OUT_PID=$!
ip netns exec tester tcpdump -i wire1 -p -n -s 0 -U -B 65536 -Z root --time-stamp-precision=nano \
    -Q out -w "$W/kernel-sent.pcap" >/dev/null 2>"$W/kernel-sent.pcap.err" &
SENT_PID=$!
listening() { grep -q "listening on" "$W/kernel-out.pcap.err" && grep -q "listening on" "$W/kernel-sent.pcap.err"; }
for _ in $(seq 1 1200); do listening && break; sleep 0.05; done
listening || { kill "$OUT_PID" "$SENT_PID"; fail "tcpdump on wire1 did not start"; }

# Frames the kernel drops at its input backlog (when TCG falls behind,
# tcpreplay sends the overdue frames in a burst; netdev_max_backlog is
# raised above): the second column of /proc/net/softnet_stat, per CPU.
backlog_drops() {
    local n=0 a b rest
    while read -r a b rest; do n=$((n + 16#$b)); done </proc/net/softnet_stat
    echo "$n"
}
DROPS0=$(backlog_drops)
# The kernel's clock for the model's timer wheel (divergence #5): jiffies,
# the monotonic time and the realtime offset, read three times in one exec
# (lvsnic picks the reading whose jiffies were not bumped by a tick between
# the "now at" line and the "jiffies:" line).
cat /proc/timer_list /proc/timer_list /proc/timer_list >"$W/timer_list.txt" 2>/dev/null
START_NS=$(date +%s%N)
echo "$START_NS" >"$W/start_ns.txt"
CHG_PID=
if [ -s "$W/changes.txt" ]; then
    # Applied when the replay reaches each change's capture time; logs when
    # each took effect (changes_runner.py).
    python3 "$HERE/changes_runner.py" "$W" "$START_NS" 2>"$W/changes-runner.err" &
    CHG_PID=$!
fi
# (`ip netns exec` execs tcpreplay: $! is tcpreplay, which changes_runner.py
# pauses while each ipvsadm change runs.)
ip netns exec tester tcpreplay -q -i wire1 "$W/in.pcap" >"$W/tcpreplay.txt" 2>&1 &
TR_PID=$!
echo "$TR_PID" >"$W/tcpreplay.pid"
wait "$TR_PID"
RC=$?
[ -n "$CHG_PID" ] && wait "$CHG_PID"
sleep 1
kill -INT "$OUT_PID" "$SENT_PID"
wait "$OUT_PID" "$SENT_PID" 2>/dev/null
ipvsadm -L -n --stats >"$W/ipvsadm-L-stats.txt" 2>&1
ipvsadm -L -n >"$W/ipvsadm-L.txt" 2>&1
ipvsadm -L -n -c >"$W/ipvsadm-Lc.txt" 2>&1
[ $RC = 0 ] || fail "tcpreplay failed: $(tr '\n' ' ' <"$W/tcpreplay.txt")"
DROPS=$(( $(backlog_drops) - DROPS0 ))
echo "$DROPS" >"$W/backlog-drops.txt"
[ "$DROPS" = 0 ] || fail "the kernel dropped $DROPS replayed frames at its input backlog (the VM fell far behind the capture's pace)"
echo ok >"$W/status"

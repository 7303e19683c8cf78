#!/usr/bin/env bash
# Runs INSIDE the kernel VM (scripts/vm/sync-interop.sh boots it): the IPVS
# connection sync between the real kernel and lvsnic daemons, both ways, on
# one multicast segment (bridge br0 in the root namespace, the kernel's
# sync daemons on it; lvsnic daemons in namespaces lb and lm on veths).
#
#   sync-inner.sh DIR LVSNIC
#
# 1. kernel master (syncid 7) -> lvsnic backup: a NAT service 10.0.0.200
#    (TCP :80, UDP :53) and an IPv6 one [2001:db8::200]:80 with real
#    clients (netns cl) and a real server (netns rs, real TCP and UDP echo
#    servers): 4 TCP connections held open, 1 closed by the client, 2 UDP
#    flows, 3 IPv6 TCP connections held open. Writes k2l-kernel.txt (the
#    kernel master's `ipvsadm -L -n -c`) and k2l-lvsnic.txt (the lvsnic
#    backup's `-L -n -c`), taken together.
# 2. lvsnic master (syncid 8) -> kernel backup and an lvsnic backup, over
#    the IPv6 multicast group ff02::81 (part 1 uses the IPv4 default
#    224.0.0.81); l2k-*-daemon.txt hold both backups' `-L --daemon`. The
#    master (model backend) replays DIR/l2k/in.pcap (generated traffic over
#    DIR/l2k/rules: NAT, DR with persistence, UDP, TUN, lc persistent,
#    and IPv6 NAT and DR with a /64 persistence, which sync-interop.sh
#    appended to the rules and the capture);
#    both backups have the same rules. Writes l2k-kernel.txt (kernel
#    backup), l2k-lvsnic.txt (lvsnic backup), l2k-master.txt (lvsnic master).
# Also *-daemon.txt (`-L --daemon`), *-status.json, log.txt; "status": ok
# or "error: ...".
set -uo pipefail
D=${1:?usage: sync-inner.sh DIR LVSNIC}
L=${2:?usage: sync-inner.sh DIR LVSNIC}
cd "$D" || exit 1
exec >"$D/log.txt" 2>&1
set -x
fail() { echo "error: $*" >"$D/status"; exit 1; }
step() { "$@" || fail "'$*' failed (see log.txt)"; }
rm -f "$D/status"
# settle REGEX SOCKET: waits (up to 30 s) until the lvsnic backup on SOCKET
# lists as many entries as the kernel has for virtual addresses matching
# the awk REGEX, the same count twice in a row.
settle() {
    local last=-1 k l
    for _ in $(seq 60); do
        k=$(ipvsadm -L -n -c | awk -v p="$1" '$5 ~ p' | wc -l)
        l=$(LVSNIC_SOCKET=$2 "$L" -L -n -c | tail -n +3 | wc -l)
        [ "$k" -gt 0 ] && [ "$k" = "$l" ] && [ "$k" = "$last" ] && return 0
        [ "$k" = "$l" ] && last=$k || last=-1
        sleep 0.5
    done
    echo "settle $1: kernel $k entries, lvsnic $l after 30 s"
}

# --- the sync segment ----------------------------------------------------
step modprobe ip_vs
ip link set lo up
# No DAD (link-local sources usable at once for part 2's IPv6 group), no
# MLD snooping on the bridge (the group reaches every port at once).
step sysctl -qw net.ipv6.conf.default.accept_dad=0
step ip link add br0 type bridge mcast_snooping 0
step ip addr add 10.9.0.1/24 dev br0
step ip link set br0 up
n=2
for ns in lb lm; do
    step ip netns add $ns
    step ip netns exec $ns sysctl -qw net.ipv6.conf.default.accept_dad=0
    step ip link add ${ns}0 type veth peer name eth0 netns $ns
    step ip link set ${ns}0 master br0 up
    step ip -n $ns addr add 10.9.0.$n/24 dev eth0
    step ip -n $ns link set eth0 up
    step ip -n $ns link set lo up
    n=$((n + 1))
done

# --- 1. kernel master -> lvsnic backup ----------------------------------
# routed NS VETH ROUTER/PREFIX HOST/PREFIX: namespace NS behind veth VETH of
# the root namespace (the director, address ROUTER), its default route via it.
routed() {
    step ip netns add "$1"
    step ip link add "$2" type veth peer name eth0 netns "$1"
    step ip addr add "$3" dev "$2"
    step ip link set "$2" up
    step ip -n "$1" addr add "$4" dev eth0
    step ip -n "$1" link set eth0 up
    step ip -n "$1" link set lo up
    step ip -n "$1" route add default via "${3%/*}"
}
routed cl c0 198.51.100.1/24 198.51.100.10/24
routed rs r0 192.168.10.254/24 192.168.10.1/24
step sysctl -qw net.ipv4.ip_forward=1
# The same over IPv6 (nodad: usable at once).
step sysctl -qw net.ipv6.conf.all.forwarding=1
step ip addr add 2001:db8:c::1/64 dev c0 nodad
step ip -n cl addr add 2001:db8:c::10/64 dev eth0 nodad
step ip -n cl route add default via 2001:db8:c::1
step ip addr add 2001:db8:10::fe/64 dev r0 nodad
step ip -n rs addr add 2001:db8:10::1/64 dev eth0 nodad
step ip -n rs route add default via 2001:db8:10::fe
step ip addr add 2001:db8::200/128 dev lo nodad
step ip addr add 10.0.0.200/32 dev lo
step ipvsadm -A -t 10.0.0.200:80 -s rr
step ipvsadm -a -t 10.0.0.200:80 -r 192.168.10.1:80 -m
step ipvsadm -A -u 10.0.0.200:53 -s rr
step ipvsadm -a -u 10.0.0.200:53 -r 192.168.10.1:53 -m
step ipvsadm -A -t '[2001:db8::200]:80' -s rr
step ipvsadm -a -t '[2001:db8::200]:80' -r '[2001:db8:10::1]:80' -m
step ipvsadm --start-daemon master --mcast-interface br0 --syncid 7
ipvsadm -L --daemon >"$D/k2l-kernel-daemon.txt"
printf '%s\n' '-A -t 10.0.0.200:80 -s rr' '-a -t 10.0.0.200:80 -r 192.168.10.1:80 -m -w 1' \
    '-A -u 10.0.0.200:53 -s rr' '-a -u 10.0.0.200:53 -r 192.168.10.1:53 -m -w 1' \
    '-A -t [2001:db8::200]:80 -s rr' '-a -t [2001:db8::200]:80 -r [2001:db8:10::1]:80 -m -w 1' >"$D/k2l-rules.txt"
printf '%s\n' '[director]' 'ip = "10.9.0.2"' 'mac = "02:00:00:00:09:02"' 'mtu = 1500' 'gateway_mac = "02:00:00:00:00:fe"' \
    '[neighbors]' '"192.168.10.1" = "02:00:00:00:10:01"' >"$D/k2l-director.toml"
ip netns exec lb "$L" daemon --backend model --director "$D/k2l-director.toml" --socket /run/b1.sock \
    --rules "$D/k2l-rules.txt" 2>"$D/k2l-lvsnic-daemon.log" &
for _ in $(seq 50); do [ -S /run/b1.sock ] && break; sleep 0.2; done
step env LVSNIC_SOCKET=/run/b1.sock "$L" --start-daemon backup --mcast-interface eth0 --syncid 7
# Real servers: TCP echo on 80 over IPv4 and IPv6 (each connection echoes
# until closed), UDP echo on 53.
ip netns exec rs python3 - <<'PY' &
import socket, threading
t = socket.socket(); t.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1); t.bind(('0.0.0.0', 80)); t.listen(16)
t6 = socket.socket(socket.AF_INET6); t6.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
t6.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1); t6.bind(('::', 80)); t6.listen(16)
u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); u.bind(('0.0.0.0', 53))
def echo(c):
    while True:
        b = c.recv(100)
        if not b:
            c.close(); return
        c.send(b)
def tcp(s):
    while True:
        c, _ = s.accept()
        threading.Thread(target=echo, args=(c,), daemon=True).start()
threading.Thread(target=tcp, args=(t,), daemon=True).start()
threading.Thread(target=tcp, args=(t6,), daemon=True).start()
while True:
    b, a = u.recvfrom(100); u.sendto(b, a)
PY
sleep 2
# Clients: 4 TCP connections held open, 1 closed after its exchanges, 2 UDP
# flows, 3 IPv6 TCP connections held open.
ip netns exec cl python3 - <<'PY' &
import socket, time
held = []
for i in range(5):
    c = socket.create_connection(('10.0.0.200', 80), timeout=10)
    for _ in range(5):
        c.send(b'x'); c.recv(10)
    if i == 4:
        c.close()
    else:
        held.append(c)
for i in range(2):
    u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); u.settimeout(10)
    u.bind(('0.0.0.0', 5300 + i))
    for _ in range(4):
        u.sendto(b'q', ('10.0.0.200', 53)); u.recv(10)
    held.append(u)
for i in range(3):
    c = socket.create_connection(('2001:db8::200', 80), timeout=10)
    for _ in range(5):
        c.send(b'x'); c.recv(10)
    held.append(c)
open('/run/clients.done', 'w').close()
time.sleep(60)
PY
CLIENTS=$!
for _ in $(seq 120); do [ -f /run/clients.done ] && break; sleep 0.5; done
[ -f /run/clients.done ] || fail "the clients did not finish within 60 s"
# The kernel master sends within its 2 s flush time; wait (up to 30 s) until
# the backup holds as many entries as the master, then list both.
settle '^(10[.]0[.]0[.]200:|[[]2001:db8::200[]]:)' /run/b1.sock
ipvsadm -L -n -c >"$D/k2l-kernel.txt"
LVSNIC_SOCKET=/run/b1.sock "$L" -L -n -c >"$D/k2l-lvsnic.txt"
LVSNIC_SOCKET=/run/b1.sock "$L" status --socket /run/b1.sock >"$D/k2l-lvsnic-status.json"
kill $CLIENTS
step ipvsadm --stop-daemon master

# --- 2. lvsnic master -> kernel backup (and an lvsnic backup) -----------
step ipvsadm -R <"$D/l2k/rules"
G6=(--mcast-group ff02::81)
step ipvsadm --start-daemon backup --mcast-interface br0 --syncid 8 "${G6[@]}"
ipvsadm -L --daemon >"$D/l2k-kernel-daemon.txt"
ip netns exec lb "$L" daemon --backend model --director "$D/l2k/director.toml" --socket /run/b2.sock \
    --rules "$D/l2k/rules" 2>"$D/l2k-lvsnic-daemon.log" &
ip netns exec lm "$L" daemon --backend model --director "$D/l2k/director.toml" --socket /run/m.sock \
    --rules "$D/l2k/rules" --wire "pcap:$D/l2k/in.pcap,/run/m-out.pcap" --pace step 2>"$D/l2k-master-daemon.log" &
for _ in $(seq 50); do [ -S /run/b2.sock ] && [ -S /run/m.sock ] && break; sleep 0.2; done
step env LVSNIC_SOCKET=/run/b2.sock "$L" --start-daemon backup --mcast-interface eth0 --syncid 8 "${G6[@]}"
step env LVSNIC_SOCKET=/run/m.sock "$L" --start-daemon master --mcast-interface eth0 --syncid 8 "${G6[@]}"
LVSNIC_SOCKET=/run/b2.sock "$L" -L --daemon >"$D/l2k-lvsnic-daemon.txt"
sleep 1
step "$L" wire --socket /run/m.sock
# The master flushes what it queued within 2 s.
sleep 3
settle '^(10[.]0[.]0[.]10|[[]2001:db8::[12]0[]]:)' /run/b2.sock
ipvsadm -L -n -c >"$D/l2k-kernel.txt"
LVSNIC_SOCKET=/run/b2.sock "$L" -L -n -c >"$D/l2k-lvsnic.txt"
LVSNIC_SOCKET=/run/m.sock "$L" -L -n -c >"$D/l2k-master.txt"
LVSNIC_SOCKET=/run/m.sock "$L" status --socket /run/m.sock >"$D/l2k-master-status.json"
LVSNIC_SOCKET=/run/b2.sock "$L" status --socket /run/b2.sock >"$D/l2k-lvsnic-status.json"
echo ok >"$D/status"

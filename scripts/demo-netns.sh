#!/usr/bin/env bash
# Real kernel TCP through the lvsnic daemon, in network namespaces (needs
# root; no IPVS module needed). Builds one L2 segment:
#
#   netns P-hub: bridge br0 <- TAP lvs0 (the daemon's wire, the director)
#                          <- veth -> netns P-cl  (client 198.51.100.10, MAC = gateway_mac)
#                          <- veth -> netns P-rs1 (192.168.10.1, MAC 02:00:00:00:10:01)
#                          <- veth -> netns P-rs2 (192.168.10.2, MAC 02:00:00:00:10:02)
#
# runs `lvsnic daemon --wire tap:lvs0` in P-hub, a small HTTP server in
# each real server (python3 http.server serving a file naming the server),
# adds a NAT service 10.0.0.100:80 (rr) over both, and fetches
# http://10.0.0.100/ from the client a few times with curl (or python3
# when curl is missing). Prints the answers and `lvsnic -L -n --stats`,
# `lvsnic -L -n -c`, then removes everything it created (also on error or
# Ctrl-C).
#
#   sudo ./scripts/demo-netns.sh [--backend model|sim] [--width 64|512] [-n REQUESTS]
#
# Uses target/release/lvsnic (built when missing; LVSNIC=PATH overrides).
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib.sh

BACKEND=model WIDTH=512 N=6
while [ $# -gt 0 ]; do
    case "$1" in
        --backend) BACKEND=$2; shift 2 ;;
        --width) WIDTH=$2; shift 2 ;;
        -n) N=$2; shift 2 ;;
        -h|--help) sed -n '2,21p' "$0"; exit 0 ;;
        *) die "unknown argument $1 (see --help)" ;;
    esac
done
[ "$(id -u)" = 0 ] || die "needs root (network namespaces, TAP devices)"
command -v ip >/dev/null || die "needs iproute2 (ip)"
command -v python3 >/dev/null || die "needs python3 (the real servers)"

if [ -z "${LVSNIC:-}" ]; then
    LVSNIC=$PWD/target/release/lvsnic
    if [ ! -x "$LVSNIC" ]; then
        ensure_rust
        export PATH="$(./scripts/setup-hw.sh):$PATH"
        cargo build --release -q -p lvsnic
    fi
fi

P=lvsdemo$$
HUB=$P-hub CL=$P-cl RS1=$P-rs1 RS2=$P-rs2
WORK=$(mktemp -d /tmp/lvsnic-demo.XXXXXX)
SOCK=$WORK/lvsnic.sock
DAEMON_PID= SERVER_PIDS=()

cleanup() {
    set +e
    [ -n "$DAEMON_PID" ] && kill "$DAEMON_PID" 2>/dev/null && wait "$DAEMON_PID" 2>/dev/null
    for p in "${SERVER_PIDS[@]}"; do kill "$p" 2>/dev/null; wait "$p" 2>/dev/null; done
    for ns in "$CL" "$RS1" "$RS2" "$HUB"; do ip netns del "$ns" 2>/dev/null; done
    rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# sysctl K=V ... inside namespace NS.
nsctl() { local ns=$1; shift; ip netns exec "$ns" sysctl -qw "$@" >/dev/null; }

for ns in "$HUB" "$CL" "$RS1" "$RS2"; do
    ip netns add "$ns"
    ip -n "$ns" link set lo up
    nsctl "$ns" net.ipv6.conf.all.disable_ipv6=1 net.ipv6.conf.default.disable_ipv6=1 \
        net.ipv4.conf.all.rp_filter=0 net.ipv4.conf.default.rp_filter=0
done
ip -n "$HUB" link add br0 type bridge
ip -n "$HUB" link set br0 up
# The director's wire: a TAP (no checksum offload, so every frame the
# daemon reads is fully checksummed) on the bridge.
ip -n "$HUB" tuntap add mode tap name lvs0
ip -n "$HUB" link set lvs0 master br0 up

# leaf NS VETH MAC ADDR/PREFIX
leaf() {
    ip -n "$HUB" link add "$2" type veth peer name eth0 netns "$1"
    ip -n "$HUB" link set "$2" master br0 up
    ip -n "$1" link set eth0 address "$3" up
    ip -n "$1" addr add "$4" dev eth0
}
# The client's MAC is the director's gateway_mac: replies toward clients go there.
leaf "$CL" vcl 02:00:00:00:00:fe 198.51.100.10/24
ip -n "$CL" route add 10.0.0.100/32 dev eth0          # the VIP is on-link (ARP answered by the director)
for n in 1 2; do
    ns=$P-rs$n
    leaf "$ns" "vrs$n" "02:00:00:00:10:0$n" "192.168.10.$n/24"
    ip -n "$ns" route add 10.0.0.1/32 dev eth0        # NAT: replies go back through the director
    ip -n "$ns" route add default via 10.0.0.1 dev eth0
    mkdir -p "$WORK/www$n"
    echo "rs$n" > "$WORK/www$n/index.html"
    ip netns exec "$ns" python3 -m http.server 80 --bind 0.0.0.0 --directory "$WORK/www$n" \
        >"$WORK/http$n.log" 2>&1 &
    SERVER_PIDS+=($!)
done

cat > "$WORK/director.toml" <<'EOF'
[director]
ip = "10.0.0.1"
mac = "02:00:00:00:00:01"
mtu = 1500
gateway_mac = "02:00:00:00:00:fe"

[neighbors]
"192.168.10.1" = "02:00:00:00:10:01"
"192.168.10.2" = "02:00:00:00:10:02"
EOF
ip netns exec "$HUB" "$LVSNIC" daemon --backend "$BACKEND" --width "$WIDTH" \
    --director "$WORK/director.toml" --socket "$SOCK" --wire tap:lvs0 2>"$WORK/daemon.log" &
DAEMON_PID=$!
for _ in $(seq 100); do
    [ -S "$SOCK" ] && break
    kill -0 "$DAEMON_PID" 2>/dev/null || { cat "$WORK/daemon.log" >&2; die "the daemon exited"; }
    sleep 0.1
done
[ -S "$SOCK" ] || die "the daemon did not start"
export LVSNIC_SOCKET=$SOCK
"$LVSNIC" -A -t 10.0.0.100:80 -s rr
"$LVSNIC" -a -t 10.0.0.100:80 -r 192.168.10.1:80 -m -w 1
"$LVSNIC" -a -t 10.0.0.100:80 -r 192.168.10.2:80 -m -w 1

# Wait for the servers to listen.
for n in 1 2; do
    for _ in $(seq 50); do
        ip netns exec "$P-rs$n" python3 -c 'import socket; socket.create_connection(("127.0.0.1", 80), 1)' \
            2>/dev/null && break
        sleep 0.1
    done
done

fetch() {
    if command -v curl >/dev/null; then
        ip netns exec "$CL" curl -sS --max-time 5 http://10.0.0.100/
    else
        ip netns exec "$CL" python3 -c \
            'import urllib.request; print(urllib.request.urlopen("http://10.0.0.100/", timeout=5).read().decode(), end="")'
    fi
}
for i in $(seq "$N"); do
    printf 'request %d: ' "$i"
    fetch
done
echo
"$LVSNIC" -L -n --stats
echo
"$LVSNIC" -L -n -c

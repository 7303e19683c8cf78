#!/usr/bin/env bash
# Runs INSIDE the conformance VM: several scenarios in one boot.
#
#   scenarios.sh DIR
#
# Every subdirectory of DIR that holds a director.env is one scenario, as
# `lvsnic conformance --stage prepare --keep DIR/NAME` wrote it; each runs
# through director.sh on a fresh IPVS (the modules are unloaded between
# scenarios, so connections, sysctls and timeouts start from the kernel's
# defaults) and a fresh wire.
set -uo pipefail
D=${1:?usage: scenarios.sh DIR}
HERE=$(cd "$(dirname "$0")" && pwd)
for s in "$D"/*/; do
    s=${s%/}
    [ -f "$s/director.env" ] || continue
    rm -f "$s/status"
    T0=$(date +%s%N)
    "$HERE/director.sh" "$s"
    echo "$(( ($(date +%s%N) - T0) / 1000000 )) ms" >"$s/vm-time.txt"
    # Tear down: the wire (its routes and neighbours go with it), the
    # tester namespace, the VIPs, IPVS itself.
    . "$s/director.env"
    ip netns del tester 2>/dev/null
    ip link del wire0 2>/dev/null
    for v in ${VIPS:-}; do ip addr del "$v/32" dev lo 2>/dev/null; done
    for v in ${VIPS6:-}; do ip addr del "$v/128" dev lo 2>/dev/null; done
    VIPS6=
    ipvsadm -C
    for m in $(lsmod | awk '/^ip_vs_/ {print $1}'); do modprobe -r "$m"; done
    modprobe -r ip_vs
done

#!/usr/bin/env bash
# A first conformance matrix: schedulers x NAT/DR/TUN x TCP/UDP on generated
# traffic, every scenario in ONE VM boot, each compared with the golden
# model (`lvsnic conformance --stage prepare|compare`).
#
#   scripts/vm/matrix.sh [OUTDIR] [SCHEDULERS...]
#
# OUTDIR defaults to target/conformance-matrix (not under /tmp: the VM's
# /tmp is its own); schedulers default to "rr wlc lc sh mh". Prints one line
# per scenario and a total; exit status 1 if any scenario has an
# unexplained difference (a scenario the VM did not finish counts as one).
# Traffic: 40 sessions over 5 s per scenario, 1 s idle gaps (the captures
# still span about 90 s for TCP). Measured on 2 shared cores: 160 s of VM
# time for a TCP scenario, 39 s for a UDP one, so the default 30 scenarios
# need about 40 minutes: this is not part of scripts/test.sh.
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT=$PWD
OUT=${1:-$ROOT/target/conformance-matrix}
shift || true
SCHEDS=${*:-rr wlc lc sh mh}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
# LVSNIC_BIN: an lvsnic binary to use instead of building one.
B=${LVSNIC_BIN:-}
if [ -z "$B" ]; then
    cargo build --release -q -p lvsnic
    B=$ROOT/target/release/lvsnic
fi
DIRECTOR=$ROOT/examples/director.toml

scenarios=()
for s in $SCHEDS; do
    for fwd in m g i; do
        for proto in t u; do
            name="$s-$fwd-$proto"
            d=$OUT/$name
            mkdir -p "$d"
            port=80
            [ $proto = u ] && port=53
            flags=""
            [ "$s" = sh ] && flags="-b sh-port"
            [ "$s" = mh ] && flags="-b mh-port"
            {
                echo "-A -$proto 10.0.0.100:$port -s $s $flags"
                for n in 1 2 3; do echo "-a -$proto 10.0.0.100:$port -r 192.168.10.$n:$port -$fwd -w $n"; done
            } >"$d/rules.txt"
            udp=0
            [ $proto = u ] && udp=1
            "$B" traffic --rules "$d/rules.txt" --director "$DIRECTOR" --seed 3 --connections 40 --duration 5 \
                --udp $udp --other 0 --malformed 0 --idle-gap 1 --output "$d/input.pcap" >/dev/null
            "$B" conformance --stage prepare --rules "$d/rules.txt" --director "$DIRECTOR" --input "$d/input.pcap" --keep "$d"
            scenarios+=("$name")
        done
    done
done

T0=$(date +%s)
"$ROOT/scripts/vm/run.sh" "$OUT" "$ROOT/scripts/vm/scenarios.sh" "$OUT" || echo "matrix: the VM run failed; comparing the scenarios it finished" >&2
T1=$(date +%s)

fail=0
for name in "${scenarios[@]}"; do
    d=$OUT/$name
    set +e
    line=$("$B" conformance --stage compare --rules "$d/rules.txt" --director "$DIRECTOR" --input "$d/input.pcap" \
        --keep "$d" --report "$d/report.json" 2>&1 | tee "$d/result.txt" | head -n 1)
    rc=${PIPESTATUS[0]}
    set -e
    [ "$rc" = 0 ] || fail=1
    printf '%-12s %s\n' "$name" "$line"
done
echo "matrix: ${#scenarios[@]} scenarios, VM $((T1 - T0)) s, $([ $fail = 0 ] && echo "no unexplained differences" || echo "UNEXPLAINED DIFFERENCES")"
exit $fail

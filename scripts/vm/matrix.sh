#!/usr/bin/env bash
# The conformance matrix against real Linux 6.1 IPVS: every scheduler x
# NAT/DR/TUN x TCP/UDP, persistence, thresholds, changes under traffic,
# --set timeouts, non-default sysctls, IP options, TTL 1, fragments, ICMP,
# all in ONE VM boot, the scenarios of a group replayed AT ONCE.
#
#   scripts/vm/matrix.sh [OUTDIR] [NAME-PATTERN...]
#
# OUTDIR defaults to target/conformance-matrix (not under /tmp: the VM's
# /tmp is its own); patterns (shell globs, e.g. 'rr-*' 'persist-*') pick
# scenarios, default all. scripts/vm/matrix.py writes one directory per
# group of scenarios that share global state (timeouts, sysctls): one rules
# file with every scenario's service (each its own VIP and real servers),
# the scenarios' generated captures merged by timestamp, their changes
# merged. Each group is prepared (`lvsnic conformance --stage prepare`),
# all groups run in one VM boot (scripts/vm/scenarios.sh: one replay per
# group, IPVS unloaded in between), then each group is compared with
# `--scenarios`, which splits the comparison by the scenarios' addresses:
# one line per scenario. Exit status 1 if any scenario (or the shared
# frames) has an unexplained difference or a group did not run.
# The VM has a timeout ($LVSNIC_MATRIX_TIMEOUT, default 1500 s).
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT=$PWD
. "$ROOT/scripts/lib.sh"
# (the VM runs a copy of the scripts, so a checkout under /tmp works too)
OUT=${1:-$(vm_out_dir conformance-matrix)}
shift || true
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
# LVSNIC_BIN: an lvsnic binary to use instead of building one.
B=$(lvsnic_bin)
command -v python3 >/dev/null || { echo "matrix: python3 is needed (apt-get install python3)" >&2; exit 2; }

rm -rf "$OUT"/g[0-9]*-* "$OUT/gen"
if [ $# -gt 0 ]; then
    python3 "$ROOT/scripts/vm/matrix.py" "$B" "$OUT" --only "$@"
else
    python3 "$ROOT/scripts/vm/matrix.py" "$B" "$OUT"
fi
groups=()
for g in "$OUT"/g[0-9]*-*/; do
    g=${g%/}
    "$B" conformance --stage prepare --rules "$g/rules.txt" --director "$g/director.toml" --input "$g/input.pcap" \
        --changes "$g/changes.in" --keep "$g"
    groups+=("$g")
done

# The VM runs a copy of the in-VM scripts: bash reads a script as it runs,
# so editing scripts/vm during a run must not change the run.
rm -rf "$OUT/vm-scripts"
cp -r "$ROOT/scripts/vm" "$OUT/vm-scripts"
T0=$(date +%s)
vm_ok=1
"$ROOT/scripts/vm/run.sh" --timeout "${LVSNIC_MATRIX_TIMEOUT:-1500}" "$OUT" "$OUT/vm-scripts/scenarios.sh" "$OUT" || vm_ok=0
T1=$(date +%s)
[ $vm_ok = 1 ] || echo "matrix: the VM run failed; comparing the groups it finished" >&2

fail=0
nsc=0
for g in "${groups[@]}"; do
    name=$(basename "$g")
    set +e
    "$B" conformance --stage compare --rules "$g/rules.txt" --director "$g/director.toml" --input "$g/input.pcap" \
        --changes "$g/changes.in" --keep "$g" --report "$g/report.json" --scenarios "$g/scenarios.txt" >"$g/result.txt" 2>&1
    rc=$?
    set -e
    [ "$rc" = 0 ] || fail=1
    vmt=$(cat "$g/vm-time.txt" 2>/dev/null || echo "?")
    echo "== $name ($(head -n 1 "$g/about.txt" | sed 's/^# [^:]*: //'); VM $vmt)"
    if grep -q '^per scenario' "$g/result.txt"; then
        head -n 1 "$g/result.txt"
        sed -n '/^per scenario/,$p' "$g/result.txt" | tail -n +2
    else
        cat "$g/result.txt"
    fi
    nsc=$((nsc + $(grep -c . "$g/scenarios.txt")))
done
python3 "$ROOT/scripts/vm/matrix.py" --report "$OUT" || true
echo "matrix: $nsc scenarios in ${#groups[@]} groups, VM $((T1 - T0)) s, $([ $fail = 0 ] && [ $vm_ok = 1 ] && echo "no unexplained differences" || echo "UNEXPLAINED DIFFERENCES or failures")"
[ $vm_ok = 1 ] || fail=1
exit $fail

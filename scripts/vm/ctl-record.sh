#!/usr/bin/env bash
# Records the kernel side of the control-plane conformance in one VM boot
# and writes it into the fixture directory:
#
#   scripts/vm/ctl-record.sh [WORKDIR]
#
# regenerates tests/fixtures/kernel/ctl/sequence.txt, runs scripts/vm/ctl.sh
# in the VM (real ipvsadm 1.31, keepalived 2.2.7, Debian 6.1) and copies
# transcript.txt and keepalived/*.saved into tests/fixtures/kernel/ctl/.
# host-driver/tests/ctl_conformance.rs replays them through lvsnic.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
FIX=$ROOT/tests/fixtures/kernel/ctl
W=${1:-$ROOT/target/conformance/ctl}
rm -rf "$W" && mkdir -p "$W"
python3 "$HERE/ctl_sequence.py" >"$FIX/sequence.txt"
"$HERE/run.sh" "$W" "$HERE/ctl.sh" "$W" "$FIX"
[ -f "$W/ctl-status" ] || { echo "lvsnic: ctl.sh did not finish (console: $W/vm-console.txt)" >&2; exit 1; }
cp "$W/transcript.txt" "$FIX/transcript.txt"
for s in "$W"/keepalived/*.saved; do cp "$s" "$FIX/keepalived/"; done
echo "recorded into $FIX" >&2

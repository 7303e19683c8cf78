#!/usr/bin/env bash
# The VFIO layer against the kernel's real VFIO: boots the Linux 6.1 VM
# with an emulated Intel IOMMU and two of QEMU's `edu` devices (one on the
# root bus, one alone behind a PCIe root port, which the kernel can reset),
# binds them to vfio-pci and runs host-driver/tests/vfio_edu.rs inside
# (scripts/vm/vfio-inner.sh): group, container, IOMMU mapping, BAR
# mapping, reset, DMA both ways and through an unmapped IOVA, MSI to an
# eventfd, and the error paths. About a minute (a TCG boot is ~30 s).
#
#   scripts/vm/vfio.sh [OUTDIR]
#
# OUTDIR defaults to target/vfio (or /var/tmp/lvsnic-UID/vfio for a
# checkout under /tmp: the VM's /tmp is its own); it gets log.txt,
# test.txt (the tests' output), dmesg.txt and status. Exit status 1 on any
# failure, with one line saying what failed. LVSNIC_VFIO_TEST: a built
# vfio_edu test binary to use instead of building one. Needs root
# (apt-get, the VM's private mount namespace).
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT=$PWD
. "$ROOT/scripts/lib.sh"
OUT=${1:-$(vm_out_dir vfio)}
rm -rf "$OUT"
mkdir -p "$OUT/bin"
OUT=$(cd "$OUT" && pwd)
if [ -n "${LVSNIC_VFIO_TEST:-}" ]; then
    T=$LVSNIC_VFIO_TEST
else
    ensure_rust
    T=$(cargo test --release -q -p lvsnic --test vfio_edu --no-run --message-format=json |
        python3 -c 'import json, sys
for l in sys.stdin:
    m = json.loads(l)
    if m.get("reason") == "compiler-artifact" and m.get("target", {}).get("name") == "vfio_edu" and m.get("executable"):
        print(m["executable"])')
fi
[ -x "$T" ] || die "vfio: no vfio_edu test binary (${T:-cargo printed none})"
# The guest sees the results directory wherever the checkout is.
cp "$T" "$OUT/bin/vfio_edu"
cp "$ROOT/scripts/vm/vfio-inner.sh" "$OUT/bin/"
# edu at 00:10.0 on the root bus (no reset method); a root port at 00:11.0
# with the second edu alone on its bus (bus reset).
QEMU="-device intel-iommu,intremap=off -device edu,addr=0x10"
QEMU="$QEMU -device pcie-root-port,id=lvsnic_rp,chassis=1,slot=1,addr=0x11 -device edu,bus=lvsnic_rp"
set +e
"$ROOT/scripts/vm/run.sh" --timeout "${LVSNIC_VM_TIMEOUT:-300}" --append 'intel_iommu=on iommu=pt' --qemu-opts "$QEMU" \
    "$OUT" "$OUT/bin/vfio-inner.sh" "$OUT"
rc=$?
set -e
status=$(cat "$OUT/status" 2>/dev/null || echo "error: the VM script did not finish (log: $OUT/log.txt, console: $OUT/vm-console.txt)")
if [ "$rc" != 0 ] || [ "$status" != ok ]; then
    echo "vfio: $status" >&2
    [ -f "$OUT/test.txt" ] && grep -E "panicked|^test |FAILED" "$OUT/test.txt" | head -n 20 >&2
    exit 1
fi
grep -E "^test |^vfio_edu:|test result" "$OUT/test.txt"

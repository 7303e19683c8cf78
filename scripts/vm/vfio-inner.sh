#!/usr/bin/env bash
# Runs INSIDE the kernel VM (scripts/vm/vfio.sh boots it, with an emulated
# Intel IOMMU and two edu devices): loads vfio-pci, binds the edu devices
# (1234:11e8) to it, runs the vfio_edu tests with their addresses, and
# checks that the IOMMU reported the faults of the DMA through an unmapped
# IOVA. Writes test.txt, dmesg.txt, log.txt; "status": ok or "error: ...".
#
#   vfio-inner.sh DIR
set -uo pipefail
D=${1:?usage: vfio-inner.sh DIR}
cd "$D" || exit 1
exec >"$D/log.txt" 2>&1
set -x
fail() { echo "error: $*" >"$D/status"; exit 1; }
rm -f "$D/status"
# The emulated IOMMU runs without interrupt remapping (intremap=off: with
# it QEMU needs a split irqchip, which is KVM's), and type1 refuses to
# attach a group on such a platform (VFIO_SET_IOMMU: EPERM, "No interrupt
# remapping support") unless told that unisolated MSIs are acceptable.
modprobe vfio_iommu_type1 allow_unsafe_interrupts=1 || fail "modprobe vfio_iommu_type1 failed"
modprobe vfio-pci || fail "modprobe vfio-pci failed"
echo 1234 11e8 >/sys/bus/pci/drivers/vfio-pci/new_id || fail "binding 1234:11e8 to vfio-pci (new_id) failed"
EDU="" NORESET=""
for _ in $(seq 100); do
    EDU="" NORESET=""
    for d in /sys/bus/pci/devices/*; do
        [ "$(cat "$d/vendor")" = 0x1234 ] && [ "$(cat "$d/device")" = 0x11e8 ] || continue
        [ "$(basename "$(readlink "$d/driver")")" = vfio-pci ] || continue
        case "$(readlink -f "$d")" in
            */0000:00:11.0/*) EDU=$(basename "$d") ;;
            *) NORESET=$(basename "$d") ;;
        esac
    done
    [ -n "$EDU" ] && [ -n "$NORESET" ] && break
    sleep 0.1
done
[ -n "$EDU" ] && [ -n "$NORESET" ] || fail "the two edu devices are not both bound to vfio-pci (behind the root port: '$EDU', root bus: '$NORESET')"
ls -l /dev/vfio
dmesg -C
LVSNIC_EDU=$EDU LVSNIC_EDU_NORESET=$NORESET "$D/bin/vfio_edu" --ignored --test-threads 1 --nocapture >"$D/test.txt" 2>&1 \
    || fail "the vfio_edu tests failed (see test.txt)"
grep -q "test result: ok. 2 passed" "$D/test.txt" || fail "the vfio_edu tests did not both run (see test.txt)"
dmesg >"$D/dmesg.txt"
# The DMA through the unmapped IOVA (tests/vfio_edu.rs) as the guest's
# IOMMU driver saw it: a write fault at 0x1005000, a read fault at 0x1006000.
grep -E "DMAR: \[DMA Write.*fault addr 0x1005000" "$D/dmesg.txt" || fail "no IOMMU write fault at IOVA 0x1005000 in dmesg (see dmesg.txt)"
grep -E "DMAR: \[DMA Read.*fault addr 0x1006000" "$D/dmesg.txt" || fail "no IOMMU read fault at IOVA 0x1006000 in dmesg (see dmesg.txt)"
echo ok >"$D/status"

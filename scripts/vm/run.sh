#!/usr/bin/env bash
# Boots the Debian 6.1 kernel in a VM (virtme-ng, QEMU TCG: nested KVM does
# not boot it here) with the host's root file system shared read-only, runs
# one script inside as root, and returns its exit status.
#
#   scripts/vm/run.sh [--timeout SECONDS] [--append KERNEL-ARGS] [--qemu-opts OPTS] DIR SCRIPT [ARGS...]
#
# The timeout (default $LVSNIC_VM_TIMEOUT or 1200 s) covers boot and script.
# --append adds kernel command-line arguments, --qemu-opts QEMU options
# (scripts/vm/vfio.sh: an emulated IOMMU and QEMU's edu device).
#
# DIR is writable inside the VM (results go there; it must not be under
# /tmp, which the guest mounts as its own tmpfs). SCRIPT runs with ARGS.
# Installs what is missing first (scripts/vm/setup.sh). Prints the VM's
# wall time on stderr as "vm: N s". One-line errors: "lvsnic: no kernel
# image ...", "lvsnic: the VM did not boot ...", "lvsnic: the VM timed out ...".
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
die() { echo "lvsnic: $*" >&2; exit 1; }
TIMEOUT=${LVSNIC_VM_TIMEOUT:-1200}
APPEND=""
QEMU_OPTS=""
while :; do
    case "${1:-}" in
        --timeout) TIMEOUT=$2; shift 2 ;;
        --append) APPEND=$2; shift 2 ;;
        --qemu-opts) QEMU_OPTS=$2; shift 2 ;;
        *) break ;;
    esac
done
[ $# -ge 2 ] || die "usage: scripts/vm/run.sh [--timeout SECONDS] [--append KERNEL-ARGS] [--qemu-opts OPTS] DIR SCRIPT [ARGS...]"
DIR=$(cd "$1" && pwd) || die "$1: no such directory"
shift
case "$DIR" in /tmp|/tmp/*) die "$DIR: the VM's /tmp is its own; use a directory elsewhere (e.g. target/conformance)";; esac
KERNEL=$("$HERE/setup.sh") || exit 1
export PATH="$ROOT/.venv/bin:$PATH"

rm -f "$DIR/.vm-booted" "$DIR/.vm-exit" "$DIR/vm-console.txt"
# The command inside: mark the boot, run the script, keep its status.
Q() { printf '%q ' "$@"; }
INNER="touch $(Q "$DIR/.vm-booted"); $(Q "$@") ; echo \$? > $(Q "$DIR/.vm-exit")"
T0=$(date +%s%N)
set +e
# virtme-ng-init waits for udev to settle when it finds systemd-udevd (more
# than a minute of TCG time for nothing the director needs): QEMU runs in a
# private mount namespace where /usr/lib/systemd is an empty directory, so
# the guest, which sees QEMU's view of the root file system, has no udevd.
export KERNEL DIR INNER APPEND QEMU_OPTS
timeout --kill-after=10 "$TIMEOUT" unshare --mount --propagation private sh -c '
    mount -t tmpfs -o size=1m,mode=0755 none /usr/lib/systemd &&
    set -- --run "$KERNEL" --disable-kvm --disable-microvm --cpus 1 --memory 1G --verbose --rwdir "$DIR" &&
    if [ -n "$APPEND" ]; then set -- "$@" --append "$APPEND"; fi &&
    if [ -n "$QEMU_OPTS" ]; then set -- "$@" --qemu-opts="$QEMU_OPTS"; fi &&
    exec vng "$@" --exec "$INNER"' </dev/null >"$DIR/vm-console.txt" 2>&1
RC=$?
set -e
T1=$(date +%s%N)
echo "vm: $(( (T1 - T0) / 1000000000 )) s" >&2
if [ ! -f "$DIR/.vm-booted" ]; then
    [ $RC = 124 ] && die "the VM did not boot within ${TIMEOUT} s (console: $DIR/vm-console.txt)"
    die "the VM did not boot (vng exit $RC; console: $DIR/vm-console.txt)"
fi
[ -f "$DIR/.vm-exit" ] || die "the VM timed out or crashed after ${TIMEOUT} s before the script finished (console: $DIR/vm-console.txt)"
exit "$(cat "$DIR/.vm-exit")"

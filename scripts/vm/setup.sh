#!/usr/bin/env bash
# Installs what the kernel-conformance VM needs, when it is missing, and
# prints the kernel image to boot.
#
#   Debian packages: qemu-system-x86, linux-image-amd64 (the 6.1 kernel with
#   ip_vs*, ipip), ipvsadm, keepalived, tcpdump, tcpreplay, ethtool, busybox-static;
#   PyPI: virtme-ng (into the project's .venv, made by scripts/setup-hw.sh
#   if it does not exist).
#
# Idempotent and quiet when everything is there. Every failure is one line
# on stderr starting with "lvsnic:" and exit status 1.
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT=$PWD
die() { echo "lvsnic: $*" >&2; exit 1; }

need_deb=()
command -v qemu-system-x86_64 >/dev/null || need_deb+=(qemu-system-x86)
command -v ipvsadm >/dev/null || need_deb+=(ipvsadm)
command -v keepalived >/dev/null || need_deb+=(keepalived)
command -v tcpdump >/dev/null || need_deb+=(tcpdump)
command -v tcpreplay >/dev/null || need_deb+=(tcpreplay)
command -v ethtool >/dev/null || need_deb+=(ethtool)
# virtme-ng builds its initramfs from a static busybox.
dpkg -s busybox-static >/dev/null 2>&1 || need_deb+=(busybox-static)
command -v ip >/dev/null || need_deb+=(iproute2)
kernel() { ls -1 /boot/vmlinuz-*-amd64 2>/dev/null | sort -V | tail -n 1; }
if [ -z "$(kernel)" ] || [ ! -d /lib/modules ]; then need_deb+=(linux-image-amd64); fi

if [ ${#need_deb[@]} -gt 0 ]; then
    if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null; then
        die "missing packages for the kernel VM: apt-get install ${need_deb[*]} (as root)"
    fi
    echo "lvsnic: installing ${need_deb[*]} for the kernel VM (first use; the kernel's initramfs takes about a minute)" >&2
    export DEBIAN_FRONTEND=noninteractive
    # keepalived and tcpdump must not start services in a container-like host.
    apt-get install -y -q --no-install-recommends "${need_deb[@]}" >&2 \
        || { apt-get update -q >&2 && apt-get install -y -q --no-install-recommends "${need_deb[@]}" >&2; } \
        || die "apt-get install ${need_deb[*]} failed"
fi
KERNEL=$(kernel)
[ -n "$KERNEL" ] || die "no kernel image: /boot/vmlinuz-*-amd64 is missing (apt-get install linux-image-amd64)"
KVER=${KERNEL#/boot/vmlinuz-}
[ -d "/lib/modules/$KVER/kernel/net/netfilter/ipvs" ] || die "no IPVS modules for $KVER in /lib/modules/$KVER (reinstall linux-image-$KVER)"

# virtme-ng in the project venv.
if [ ! -x "$ROOT/.venv/bin/vng" ]; then
    if [ ! -x "$ROOT/.venv/bin/pip" ]; then
        "$ROOT/scripts/setup-hw.sh" >/dev/null || die "could not create .venv (scripts/setup-hw.sh)"
    fi
    echo "lvsnic: installing virtme-ng into .venv (first use)" >&2
    "$ROOT/.venv/bin/pip" install -q virtme-ng==1.42 >&2 || die "pip install virtme-ng failed"
fi
echo "$KERNEL"

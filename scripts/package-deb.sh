#!/usr/bin/env bash
# The Debian package of lvsnic, from a built binary:
#
#   scripts/package-deb.sh [BIN [OUTDIR]]
#
# BIN defaults to target/release/lvsnic (built first if missing), OUTDIR to
# target/deb. Prints the path of the .deb. The package installs:
#   /usr/sbin/lvsnic                    the binary, debug info stripped
#   /lib/systemd/system/lvsnic.service  packaging/lvsnic.service
#   /etc/default/lvsnic                 LVSNIC_OPTS (conffile)
#   /etc/lvsnic/director.toml           examples/director.toml (conffile)
#   /usr/share/man/man8/lvsnic*.8.gz    `lvsnic manpages` (clap_mangen)
#   /usr/share/doc/lvsnic/              user guide, copyright, examples
# Depends: from dpkg-shlibdeps over the binary. Built with dpkg-deb (no
# debhelper or cargo-deb needed: both are in Debian and the test command
# runs it as is).
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${1:-target/release/lvsnic}
OUT=${2:-target/deb}
if [ ! -x "$BIN" ]; then
    [ "$BIN" = target/release/lvsnic ] || { echo "package-deb: $BIN: no such binary" >&2; exit 2; }
    cargo build --release -p lvsnic >&2
fi
for t in dpkg-deb dpkg-shlibdeps strip gzip; do
    command -v "$t" >/dev/null || { echo "package-deb: $t is needed (apt-get install dpkg-dev binutils)" >&2; exit 2; }
done
VERSION=$(sed -n 's/^version = "\(.*\)"$/\1/p' Cargo.toml | head -1)
ARCH=$(dpkg --print-architecture)
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
R=$WORK/root
install -d "$R/DEBIAN" "$R/usr/sbin" "$R/lib/systemd/system" "$R/etc/default" "$R/etc/lvsnic" \
    "$R/usr/share/man/man8" "$R/usr/share/doc/lvsnic/examples"
install -m 0755 "$BIN" "$R/usr/sbin/lvsnic"
strip --strip-debug --remove-section=.comment --remove-section=.note "$R/usr/sbin/lvsnic"
install -m 0644 packaging/lvsnic.service "$R/lib/systemd/system/lvsnic.service"
install -m 0644 packaging/default "$R/etc/default/lvsnic"
install -m 0644 examples/director.toml "$R/etc/lvsnic/director.toml"
"$R/usr/sbin/lvsnic" manpages "$WORK/man" >/dev/null
for p in "$WORK"/man/*.8; do
    gzip -9n < "$p" > "$R/usr/share/man/man8/$(basename "$p").gz"
done
install -m 0644 docs/user-guide.md "$R/usr/share/doc/lvsnic/user-guide.md"
install -m 0644 examples/director.toml examples/rules.txt "$R/usr/share/doc/lvsnic/examples/"
cat > "$R/usr/share/doc/lvsnic/copyright" <<COPY
Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/
Upstream-Name: lvsnic

Files: *
Copyright: the lvsnic developers
License: MIT or Apache-2.0
COPY
install -m 0755 packaging/postinst packaging/prerm packaging/postrm "$R/DEBIAN/"
printf '/etc/default/lvsnic\n/etc/lvsnic/director.toml\n' > "$R/DEBIAN/conffiles"
# dpkg-shlibdeps reads debian/control from where it runs.
mkdir -p "$WORK/src/debian"
printf 'Source: lvsnic\n\nPackage: lvsnic\nArchitecture: any\n' > "$WORK/src/debian/control"
DEPS=$(cd "$WORK/src" && dpkg-shlibdeps -O -e "$R/usr/sbin/lvsnic" 2>/dev/null | sed -n 's/^shlibs:Depends=//p')
SIZE=$(du -sk --exclude=DEBIAN "$R" | cut -f1)
cat > "$R/DEBIAN/control" <<CTRL
Package: lvsnic
Version: $VERSION
Architecture: $ARCH
Maintainer: lvsnic developers <lvsnic@localhost>
Installed-Size: $SIZE
Depends: $DEPS
Recommends: keepalived
Section: net
Priority: optional
Homepage: https://github.com/lvsnic/lvsnic
Description: LVS/IPVS director on an FPGA SmartNIC
 lvsnic forwards Linux Virtual Server traffic (NAT, DR and IPIP tunnels,
 every IPVS scheduler) on an FPGA card at line rate, with the connections'
 first packets handled in software by a golden model of Linux IPVS. It
 takes ipvsadm command lines and keepalived.conf unchanged, syncs
 connections with kernel directors and runs as a systemd service.
CTRL
mkdir -p "$OUT"
DEB=$OUT/lvsnic_${VERSION}_${ARCH}.deb
dpkg-deb --root-owner-group -Zxz --build "$R" "$DEB" >/dev/null
echo "$DEB"

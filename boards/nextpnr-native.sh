#!/usr/bin/env bash
# Provides a native nextpnr-ecp5 (prints the command to run it) for the
# ECP5 builds; exits 1 with a reason on stderr when it cannot, and
# boards/versa_ecp5/build.sh then uses YoWASP's WebAssembly build instead.
#
# Why: place and route of the full Versa design takes 25-40 minutes of one
# core in the WebAssembly nextpnr (boards/requirements.txt) and about 12 in
# a native one, which is what lets CI build the bitstream within its time.
# Debian 12 (the CI machine) has no nextpnr package; Debian 13 has
# nextpnr-ecp5 0.7 (+ nextpnr-ecp5-chipdb). This script, in order:
#   1. uses a nextpnr-ecp5 on PATH if it knows the LFE5UM5G-45F (--um5g-45k);
#   2. as root on a Debian-like machine with apt-get: downloads Debian 13's
#      nextpnr-ecp5 and the libraries it needs (no host package changes:
#      a private apt state under .venv/nextpnr-trixie, the packages signed by
#      the Debian archive keyring, checked by apt), unpacks them there, runs
#      the binary through that tree's own dynamic loader, and puts the chip
#      database where the binary looks for it (compiled in:
#      /usr/share/nextpnr/ecp5/chipdb-45k.bin; the only file written outside
#      the checkout). About 19 MB downloaded, once (stamp file).
# Usage: boards/nextpnr-native.sh   (prints the command, e.g. for "$(...)")
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
fail() { echo "lvsnic nextpnr-native: $*" >&2; exit 1; }

# knows_45k CMD: CMD runs and offers the LFE5UM5G-45F (nextpnr lists a
# device option only when its chip database is there)
knows_45k() { "$1" --help 2>&1 | grep -c -- '--um5g-45k' >/dev/null; }
if command -v nextpnr-ecp5 >/dev/null && knows_45k nextpnr-ecp5; then
    command -v nextpnr-ecp5
    exit 0
fi
need_root() { [ "$(id -u)" = 0 ] || fail "no nextpnr-ecp5 with the ECP5-45 chip database on PATH, and $1 needs root"; }
command -v apt-get >/dev/null && command -v dpkg-deb >/dev/null || fail "no apt-get/dpkg-deb to fetch Debian 13's nextpnr-ecp5"
KEYRING=/usr/share/keyrings/debian-archive-keyring.gpg
[ -f "$KEYRING" ] || fail "no Debian archive keyring ($KEYRING)"

D=$ROOT/.venv/nextpnr-trixie
R=$D/root
WRAP=$D/nextpnr-ecp5
STAMP=$D/.done
CHIPDB=/usr/share/nextpnr/ecp5/chipdb-45k.bin
if [ ! -f "$STAMP" ]; then
    need_root "fetching Debian 13's nextpnr-ecp5 (it installs the chip database under /usr/share/nextpnr)"
    rm -rf "$D"
    mkdir -p "$D/empty" "$D/state/lists/partial" "$D/cache/archives/partial" "$D/debs" "$R"
    echo "deb [signed-by=$KEYRING] http://deb.debian.org/debian trixie main" > "$D/sources.list"
    O=(-o "Dir::Etc::SourceList=$D/sources.list" -o "Dir::Etc::SourceParts=$D/empty"
       -o "Dir::State=$D/state" -o Dir::State::status=/dev/null -o "Dir::Cache=$D/cache"
       -o Debug::NoLocking=1 -o APT::Architecture=amd64 -o APT::Architectures=amd64
       -o Dir::Etc::Preferences=/dev/null -o "Dir::Etc::PreferencesParts=$D/empty"
       -o APT::Sandbox::User=root)
    echo "lvsnic nextpnr-native: fetching Debian 13's nextpnr-ecp5 into $D" >&2
    apt-get "${O[@]}" -qq update >&2 || fail "apt-get update (Debian 13 index) failed"
    # The package and everything it depends on, recursively (Debian 13's
    # libc and loader included: the binary does not use the host's).
    mapfile -t PKGS < <(apt-cache "${O[@]}" depends --recurse --no-recommends --no-suggests \
        --no-conflicts --no-breaks --no-replaces --no-enhances nextpnr-ecp5 nextpnr-ecp5-chipdb \
        | grep -v '^[ <]' | sort -u)
    [ "${#PKGS[@]}" -gt 2 ] || fail "could not resolve nextpnr-ecp5's dependencies in Debian 13"
    (cd "$D/debs" && apt-get "${O[@]}" -qq download "${PKGS[@]}") >&2 || fail "downloading ${PKGS[*]} failed"
    for deb in "$D"/debs/*.deb; do dpkg-deb -x "$deb" "$R"; done
    [ -x "$R/usr/bin/nextpnr-ecp5" ] && [ -f "$R$CHIPDB" ] || fail "Debian 13's packages did not contain nextpnr-ecp5 and $CHIPDB"
    LIBS="$R/usr/lib/x86_64-linux-gnu:$R/lib/x86_64-linux-gnu"
    cat > "$WRAP" <<EOF
#!/bin/sh
# Debian 13's nextpnr-ecp5 run through its own loader and libraries
# (made by boards/nextpnr-native.sh).
exec "$R/usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2" --library-path "$LIBS" "$R/usr/bin/nextpnr-ecp5" "\$@"
EOF
    chmod +x "$WRAP"
    dpkg-deb -f "$D"/debs/nextpnr-ecp5_*.deb Version > "$D/version"
    touch "$STAMP"
fi
# The chip database where the binary looks for it (Debian's build has the
# path compiled in); replaced if a different one is there.
if ! cmp -s "$R$CHIPDB" "$CHIPDB"; then
    need_root "installing its chip database at $CHIPDB"
    mkdir -p "$(dirname "$CHIPDB")"
    cp "$R$CHIPDB" "$CHIPDB.lvsnic-tmp" && mv "$CHIPDB.lvsnic-tmp" "$CHIPDB"
fi
knows_45k "$WRAP" || fail "Debian 13's nextpnr-ecp5 ($WRAP) does not run or does not see $CHIPDB"
echo "$WRAP"

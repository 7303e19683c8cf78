# Shared set-up for lvsnic scripts: finds or explains the tools they need.
# Sourced, not run.

die() { echo "lvsnic: $*" >&2; exit 1; }

# Rust (cargo) from rustup: required for everything.
ensure_rust() {
    if ! command -v cargo >/dev/null 2>&1; then
        if [ -x "$HOME/.cargo/bin/cargo" ]; then
            export PATH="$HOME/.cargo/bin:$PATH"
        elif command -v curl >/dev/null 2>&1; then
            echo "lvsnic: installing Rust (stable, minimal profile) with rustup" >&2
            curl --proto '=https' --tlsv1.2 -sSf https://sh.rustup.rs | sh -s -- -y -q --profile minimal >&2 ||
                die "rustup failed: install Rust with rustup (https://rustup.rs) and re-run"
            export PATH="$HOME/.cargo/bin:$PATH"
        else
            die "cargo not found and no curl to fetch rustup: install Rust with rustup (https://rustup.rs) and re-run"
        fi
    fi
}

# keepalived (Debian package) for the HA end-to-end test, when running as
# root and it is missing: the test runs the real keepalived's VRRP.
ensure_keepalived() {
    command -v keepalived >/dev/null 2>&1 && return 0
    [ "$(id -u)" = 0 ] || return 0
    echo "lvsnic: installing keepalived (apt-get) for the HA end-to-end test" >&2
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends keepalived >/dev/null 2>&1 ||
        { apt-get update -q >/dev/null 2>&1 && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends keepalived >/dev/null 2>&1; } ||
        die "could not install keepalived with apt-get (needed by the HA end-to-end test, host-driver/tests/e2e_ha.rs)"
    # The package starts the service where systemd runs; the test runs its own.
    if command -v systemctl >/dev/null 2>&1; then systemctl stop keepalived >/dev/null 2>&1 || true; fi
}

# The tools the Debian package's test needs (dpkg-shlibdeps, strip, man,
# groff), when running as root and one is missing.
ensure_packaging_tools() {
    local missing=""
    command -v dpkg-shlibdeps >/dev/null 2>&1 || missing="$missing dpkg-dev"
    command -v strip >/dev/null 2>&1 || missing="$missing binutils"
    command -v man >/dev/null 2>&1 || missing="$missing man-db"
    command -v groff >/dev/null 2>&1 || missing="$missing groff-base"
    [ -n "$missing" ] || return 0
    [ "$(id -u)" = 0 ] || return 0
    echo "lvsnic: installing$missing (apt-get) for the Debian package's test" >&2
    # shellcheck disable=SC2086
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends $missing >/dev/null 2>&1 ||
        { apt-get update -q >/dev/null 2>&1 && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends $missing >/dev/null 2>&1; } ||
        die "could not install$missing with apt-get (needed by host-driver/tests/package_deb.rs)"
}

# prometheus (Debian package) for the metrics test, when running as root
# and it is missing: the test runs /usr/bin/prometheus itself, scraping a
# daemon (host-driver/tests/daemon_metrics.rs), never the service.
ensure_prometheus() {
    [ -x /usr/bin/prometheus ] && return 0
    [ "$(id -u)" = 0 ] || return 0
    echo "lvsnic: installing prometheus (apt-get) for the metrics test" >&2
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends prometheus >/dev/null 2>&1 ||
        { apt-get update -q >/dev/null 2>&1 && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends prometheus >/dev/null 2>&1; } ||
        die "could not install prometheus with apt-get (needed by the metrics test, host-driver/tests/daemon_metrics.rs)"
    # The package starts the service where systemd runs; the test runs its own.
    if command -v systemctl >/dev/null 2>&1; then systemctl stop prometheus >/dev/null 2>&1 || true; fi
}

# Where a kernel-VM run (scripts/vm/*) keeps its results: target/NAME of
# the checkout (the current directory), or /var/tmp/lvsnic-UID/NAME for a
# checkout under /tmp, which the guest does not see (its /tmp is its own).
vm_out_dir() {
    case "$PWD" in
        /tmp/*) echo "/var/tmp/lvsnic-$(id -u)/$1" ;;
        *) echo "$PWD/target/$1" ;;
    esac
}

# The lvsnic binary the VM scripts use: $LVSNIC_BIN, else a release build
# of this checkout.
lvsnic_bin() {
    if [ -n "${LVSNIC_BIN:-}" ]; then
        echo "$LVSNIC_BIN"
    else
        ensure_rust
        cargo build --release -q -p lvsnic >&2
        echo "$PWD/target/release/lvsnic"
    fi
}

# Shared set-up for lvsnic scripts: finds or explains the tools they need.
# Sourced, not run.

die() { echo "lvsnic: $*" >&2; exit 1; }

# Rust (cargo) from rustup: required for everything.
ensure_rust() {
    if ! command -v cargo >/dev/null 2>&1; then
        if [ -x "$HOME/.cargo/bin/cargo" ]; then
            export PATH="$HOME/.cargo/bin:$PATH"
        else
            die "cargo not found: install Rust with rustup (https://rustup.rs) and re-run"
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

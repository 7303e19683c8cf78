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

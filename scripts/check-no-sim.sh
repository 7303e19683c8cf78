#!/usr/bin/env bash
# The director's production binary builds without Verilator: `lvsnic` with
# `--no-default-features` (no `sim` feature) must not depend on lvsnic-sim,
# and must type-check with no Verilator on PATH. (lvsnic-sim's build script
# would also look in .venv/; not depending on it at all is what the
# `cargo tree` check proves.)
set -euo pipefail
cd "$(dirname "$0")/.."
tree=$(cargo tree -p lvsnic --no-default-features -e normal,build --prefix none)
if grep -q '^lvsnic-sim ' <<<"$tree"; then
    echo "check-no-sim: lvsnic without default features still depends on lvsnic-sim" >&2
    exit 1
fi
# A PATH with cargo/rustc but no Verilator (.venv/bin left out).
path=$(echo "$PATH" | tr ':' '\n' | grep -v '\.venv' | paste -sd: -)
# Quiet when it passes; the compiler's output when it does not.
PATH=$path cargo check -q --release --no-default-features -p lvsnic --bins --lib 2>/dev/null ||
    PATH=$path cargo check --release --no-default-features -p lvsnic --bins --lib

#!/usr/bin/env bash
# Installs cargo-afl (crates.io; it builds its own AFL++ runtime for this
# toolchain at install) into ${SCHEDLAB_FUZZ_ROOT:-$HOME/.cache/schedlab-fuzz}.
# Idempotent: nothing happens when that cargo-afl runs. scripts/fuzz.sh calls it.
# About 2 minutes the first time (measured 1 min 48 s on the 2-vCPU CI host).
set -euo pipefail

root="${SCHEDLAB_FUZZ_ROOT:-$HOME/.cache/schedlab-fuzz}"
if [ -x "$root/bin/cargo-afl" ] && "$root/bin/cargo-afl" afl --version >/dev/null 2>&1; then
    exit 0
fi
echo "install-fuzz-deps: cargo install cargo-afl --root $root" >&2
cargo install --locked cargo-afl --version 0.18.2 --root "$root"

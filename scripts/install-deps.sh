#!/usr/bin/env bash
# Installs what schedlab needs on a fresh Debian machine. Idempotent: run it
# before building; README and .ci/run both call it.
#
# The build needs a Rust toolchain (cargo >= 1.85); `schedlab vm` needs QEMU
# (scripts/install-vm-deps.sh); the tests also need a Python venv with Perfetto's own trace schema (target/pyenv), which checks
# that our Perfetto traces decode as Perfetto decodes them.
set -euo pipefail

need_apt=()
command -v cc >/dev/null 2>&1 || need_apt+=(gcc)
if ((${#need_apt[@]})); then
    if [ "$(id -u)" = 0 ]; then
        apt-get update -qq
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need_apt[@]}"
    else
        echo "install-deps: missing ${need_apt[*]}; run this script as root or install them" >&2
        exit 1
    fi
fi

if ! command -v cargo >/dev/null 2>&1; then
    echo "install-deps: cargo not found; install Rust (rustup) >= 1.85 first" >&2
    exit 1
fi
cargo --version

# QEMU for `schedlab vm` and its boot test.
"$(dirname "$0")/install-vm-deps.sh"

# trace-cmd and perf: trace.dat and perf.data input, and the recording tests.
"$(dirname "$0")/install-trace-deps.sh"

# Debian's rt-app: its examples (target/rt-app) and, as root, its binary.
"$(dirname "$0")/install-rtapp-deps.sh"

# Slurm and munge for the `sweep --slurm` end-to-end test.
"$(dirname "$0")/install-slurm-deps.sh"

# Perfetto's schema for the trace writer's test (a venv under target/pyenv).
"$(dirname "$0")/install-python-test-deps.sh" >/dev/null

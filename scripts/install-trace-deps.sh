#!/usr/bin/env bash
# Installs Debian's trace-cmd and linux-perf: `schedlab analyze` reads
# trace.dat through `trace-cmd report` and perf.data through `perf script`,
# and the tests record real traces with `trace-cmd extract` and `perf record`.
# Idempotent; scripts/install-deps.sh calls it. Without root or apt, it says
# so (those inputs are then refused with a message naming the tool, and the
# recording tests skip).
set -euo pipefail

need=()
command -v trace-cmd >/dev/null 2>&1 || need+=(trace-cmd)
command -v perf >/dev/null 2>&1 || need+=(linux-perf)
((${#need[@]})) || exit 0
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    if ! DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null; then
        apt-get update -qq || true
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null ||
            echo "install-trace-deps: could not install ${need[*]}; trace.dat/perf.data tests will skip" >&2
    fi
else
    echo "install-trace-deps: missing ${need[*]}; run as root on Debian to install them" >&2
fi

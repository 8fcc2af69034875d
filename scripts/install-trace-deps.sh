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
"$(dirname "$0")/apt-install.sh" "install-trace-deps (trace.dat/perf.data input and its tests need them)" ${need[@]+"${need[@]}"}

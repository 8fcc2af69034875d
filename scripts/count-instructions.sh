#!/usr/bin/env bash
# count-instructions.sh [BIN...]: the instructions each schedlab binary
# executes on fixed runs, counted by valgrind (cachegrind, no cache model).
# Unlike `schedlab bench`'s times, the count does not move with the load of
# a shared machine: two builds of one scenario can be compared to a tenth of
# a percent, where their CPU times move by tens of percent (docs/performance.md).
# The runs are the simulation and its report on one thread, as `schedlab run
# --one-thread` does them: asym_min (30 s simulated) and schbench-spr (100 ms,
# 224 CPUs). Default BIN: target/release/schedlab. Installs valgrind if it is
# missing (Debian, root). Each run takes ~50x its native time.
set -euo pipefail
cd "$(dirname "$0")/.."
command -v valgrind >/dev/null 2>&1 || ./scripts/apt-install.sh "count-instructions" valgrind
if ! command -v valgrind >/dev/null 2>&1; then
    echo "count-instructions: valgrind is missing; install it (Debian: apt-get install valgrind)" >&2
    exit 1
fi
bins=("$@")
((${#bins[@]})) || bins=(target/release/schedlab)
cases=(
    "asym_min|scenarios/asym_min.toml"
    "schbench-spr 100ms|scenarios/schbench-spr.toml --duration 100ms"
)
printf '%-28s %-20s %16s %10s %12s\n' binary run instructions events instr/event
for bin in "${bins[@]}"; do
    [ -x "$bin" ] || { echo "count-instructions: $bin is not an executable" >&2; exit 1; }
    for c in "${cases[@]}"; do
        name=${c%%|*}
        read -r -a args <<<"${c#*|}"
        out=$(mktemp)
        err=$(mktemp)
        valgrind --tool=cachegrind --cache-sim=no --cachegrind-out-file=/dev/null \
            "$bin" run "${args[@]}" --one-thread >"$out" 2>"$err" || {
            echo "count-instructions: $bin run ${args[*]} failed:" >&2
            tail -5 "$err" >&2
            exit 1
        }
        ir=$(sed -n 's/.*I *refs: *\([0-9,]*\).*/\1/p' "$err" | tr -d ,)
        events=$(sed -n 's/.* \([0-9][0-9]*\) events in .*/\1/p' "$out" | head -1)
        rm -f "$out" "$err"
        if [ -z "$ir" ] || [ -z "$events" ]; then
            echo "count-instructions: could not read the count or the events of $bin run ${args[*]}" >&2
            exit 1
        fi
        printf '%-28s %-20s %16s %10s %12s\n' "$bin" "$name" "$ir" "$events" "$((ir / events))"
    done
done

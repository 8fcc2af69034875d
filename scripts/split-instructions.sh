#!/usr/bin/env bash
# split-instructions.sh: where a schedlab command's instructions go, by the
# part of the simulator whose function executes them, and what that costs
# in CPU time on this machine.
#
#   scripts/split-instructions.sh [--reps N] -- SCHEDLAB_BINARY ARGS...
#
# Runs the command once under callgrind (exact instruction counts; inlined
# code counts to the function it was inlined into; the engine's steps are
# the calls into Engine::step), then N times natively
# (default 5) for its CPU time (perf's task-clock, or user + system from
# GNU time where perf cannot count). Prints each
# part's instructions and, at the fastest native run's instructions per ns
# (the rate most favourable to a speed target), its CPU milliseconds:
#
#   kernel     the kernel model (schedlab_kernel: the scheduler's decisions)
#   trace      the kernel model's tracepoints (Kernel::emit and the trace crate)
#   engine     the event loop and its queue (schedlab_sim engine and queue)
#   hardware   cpuidle, the menu governor, noise, the PRNG (schedlab_sim::hw)
#   workload   the rest of schedlab_sim: workload ops, futexes, timers
#   analysis   the collectors and reports (analysis, report, sides, sweep)
#   topology   CPU-set iteration (schedlab_topology)
#   other      std, allocator, startup, parsing
#
# Needs valgrind and GNU time; installs them if missing (Debian, root), as
# count-instructions.sh does. 30 s of asym_min takes ~1 min under
# callgrind here. Paths in ARGS are taken from the current directory.
set -euo pipefail
if [ "${1:-}" = -h ] || [ "${1:-}" = --help ]; then
    sed -n '2,/^set -euo/p' "$0" | sed -e '$d' -e 's/^# \{0,1\}//'
    exit 0
fi
reps=5
if [ "${1:-}" = --reps ]; then
    reps=${2:-}
    shift 2 || shift
    case $reps in
        '' | *[!0-9]* | 0) echo "split-instructions: --reps takes a positive number, not '$reps'" >&2; exit 2 ;;
    esac
fi
if [ "${1:-}" != -- ] || [ $# -lt 2 ]; then
    echo "split-instructions: usage: $0 [--reps N] -- SCHEDLAB_BINARY ARGS... (see --help)" >&2
    exit 2
fi
shift
here=$(cd "$(dirname "$0")" && pwd)
command -v valgrind >/dev/null 2>&1 || "$here/apt-install.sh" split-instructions valgrind
[ -x /usr/bin/time ] || "$here/apt-install.sh" split-instructions time
for tool in valgrind callgrind_annotate /usr/bin/time; do
    command -v "$tool" >/dev/null || { echo "split-instructions: needs $tool (Debian: apt-get install valgrind time)" >&2; exit 1; }
done

out=$(mktemp /tmp/split-instructions.XXXXXX)
times=$(mktemp /tmp/split-instructions.XXXXXX)
trap 'rm -f "$out" "$times"' EXIT
# A nonzero exit is the command's verdict (a sweep's failed A/B gate), not
# a failed measurement: say it and go on.
status=0
valgrind --tool=callgrind --callgrind-out-file="$out" "$@" >/dev/null 2>&1 || status=$?
[ "$status" = 0 ] || echo "note: the command exited $status"

# CPU time per native run: perf's task-clock (ns) where perf can count it,
# else GNU time's user + system (10 ms ticks).
cpu_seconds() {
    if [ -n "$use_perf" ]; then
        perf stat -x, -o "$times" -e task-clock "$@" >/dev/null 2>&1 || true
        awk -F, '/task-clock/ {printf "%.4f", $1 / 1000}' "$times"
    else
        /usr/bin/time -o "$times" -f "%U %S" "$@" >/dev/null 2>&1 || true
        tail -1 "$times" | awk '{printf "%.3f", $1 + $2}'
    fi
}
use_perf=""
if command -v perf >/dev/null 2>&1 && perf stat -x, -e task-clock true >/dev/null 2>&1; then
    use_perf=1
fi
best=""
for _ in $(seq "$reps"); do
    t=$(cpu_seconds "$@")
    [ -n "$t" ] || continue
    if [ -z "$best" ] || awk -v a="$t" -v b="$best" 'BEGIN {exit !(a < b)}'; then
        best=$t
    fi
done
[ -n "$best" ] || best=0

echo "command: $*"
# Engine steps: the calls into Engine::step, one line per calling edge.
steps=$(callgrind_annotate "$out" --tree=calling --threshold=100 2>/dev/null | awk '
    />   .*schedlab_sim::engine::Engine::step \(/ {
        n = $0; sub(/.*Engine::step \(/, "", n); sub(/x\).*/, "", n); gsub(",", "", n); steps += n
    }
    END { print steps + 0 }')
callgrind_annotate "$out" --auto=no --threshold=100 2>/dev/null | awk -v cpu_s="$best" -v steps="$steps" '
/^ *[0-9,]+ \(/ {
    v = $1; gsub(",", "", v)
    if ($0 ~ /PROGRAM TOTALS/) { total = v; next }
    f = $0; sub(/^[^:]*:/, "", f)
    if (f ~ /Kernel::emit|schedlab_trace/) c = "trace"
    else if (f ~ /^schedlab_kernel|impl schedlab_kernel/) c = "kernel"
    else if (f ~ /schedlab_sim::(queue|engine::Engine::(step|drain|replan|update_tick)|simulate)/) c = "engine"
    else if (f ~ /schedlab_sim::(hw|rng)/) c = "hardware"
    else if (f ~ /schedlab_sim/) c = "workload"
    else if (f ~ /schedlab_(analysis|report|sides|sweep)/) c = "analysis"
    else if (f ~ /schedlab_topology/) c = "topology"
    else c = "other"
    part[c] += v
}
END {
    # GNU time counts in 10 ms: below 50 ms the rate is not measured.
    timed = cpu_s >= 0.05
    rate = timed ? total / (cpu_s * 1e9) : 0
    if (timed) printf "%.1f M instructions, fastest of the native runs %.3f s CPU: %.2f instructions per ns\n", total / 1e6, cpu_s, rate
    else printf "%.1f M instructions; the native runs took %.3f s CPU, too short to time: no CPU times\n", total / 1e6, cpu_s
    if (steps > 0) {
        if (timed) printf "%d engine steps: %.0f instructions, %.1f ns each\n", steps, total / steps, cpu_s * 1e9 / steps
        else printf "%d engine steps: %.0f instructions each\n", steps, total / steps
    }
    printf "%-10s %12s %7s %10s\n", "part", "M instr", "share", "CPU ms"
    n = split("kernel trace engine hardware workload analysis topology other", order, " ")
    for (i = 1; i <= n; i++) {
        c = order[i]
        if (timed) printf "%-10s %12.1f %6.1f%% %10.1f\n", c, part[c] / 1e6, 100 * part[c] / total, part[c] / rate / 1e6
        else printf "%-10s %12.1f %6.1f%% %10s\n", c, part[c] / 1e6, 100 * part[c] / total, "-"
    }
}'

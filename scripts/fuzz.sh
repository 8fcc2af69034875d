#!/usr/bin/env bash
# Coverage-guided fuzzing of every input parser and of the simulator, with
# AFL++ through cargo-afl (stable Rust; no nightly needed).
#
#   scripts/fuzz.sh [SECONDS] [TARGET...]
#
# Runs each target (default: all of crates/fuzz: scenario, topology, sweep,
# ftrace, perfetto, perf-script) for SECONDS (default 60) from fuzz/corpus/<target>, one
# after the other. Findings go to $SCHEDLAB_FUZZ_OUT (default
# /tmp/schedlab-fuzz/<target>); each crash or hang is copied to
# fuzz/crashes/<target>/ for triage (once fixed, keep it there: the corpus
# test replays it). Exit status 1 when any target saved a crash or a hang.
# A long campaign: scripts/fuzz.sh 600 (10 minutes per target, 1 hour).
set -euo pipefail

repo="$(cd "$(dirname "$0")/.." && pwd)"
seconds="${1:-60}"
shift || true
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(scenario topology sweep ftrace perfetto perf-script)
root="${SCHEDLAB_FUZZ_ROOT:-$HOME/.cache/schedlab-fuzz}"
out="${SCHEDLAB_FUZZ_OUT:-/tmp/schedlab-fuzz}"
"$repo/scripts/install-fuzz-deps.sh"
export PATH="$root/bin:$PATH"
# Outside target/: the instrumented build is kept between clean clones (CI
# rebuilds only what changed).
export CARGO_TARGET_DIR="${SCHEDLAB_FUZZ_TARGET:-$root/target}"
(cd "$repo/fuzz" && cargo afl build --release --locked 2>&1 | tail -n 2)

# No UI in logs; this host's CPU frequency and core_pattern are not ours to change.
export AFL_NO_UI=1 AFL_SKIP_CPUFREQ=1 AFL_I_DONT_CARE_ABOUT_MISSING_CRASHES=1 AFL_FORKSRV_INIT_TMOUT=20000
found=0
mkdir -p "$out"
for t in "${targets[@]}"; do
    dir="$out/$t"
    rm -rf "$dir"
    # -t: an execution over 2 s is a hang (the scenario harness simulates
    # 2 ms of the largest preset with the invariants on in well under that).
    (cd "$repo/fuzz" && cargo afl fuzz -i "corpus/$t" -o "$dir" -V "$seconds" -t 2000 \
        "$CARGO_TARGET_DIR/release/$t" >"$dir.log" 2>&1) || { echo "fuzz $t: afl-fuzz failed, see $dir.log" >&2; found=1; continue; }
    stats="$dir/default/fuzzer_stats"
    get() { awk -v k="$1" '$1 == k { print $3 }' "$stats"; }
    crashes=$(get saved_crashes)
    hangs=$(get saved_hangs)
    echo "fuzz $t: $(get execs_done) executions in ${seconds} s ($(get execs_per_sec)/s), corpus $(get corpus_count), coverage $(get bitmap_cvg), $crashes crashes, $hangs hangs"
    if [ "$crashes" != 0 ] || [ "$hangs" != 0 ]; then
        found=1
        mkdir -p "$repo/fuzz/crashes/$t"
        for f in "$dir"/default/crashes/id:* "$dir"/default/hangs/id:*; do
            [ -e "$f" ] && cp "$f" "$repo/fuzz/crashes/$t/$(basename "$f" | tr ':,' '__')"
        done
        echo "fuzz $t: copied to fuzz/crashes/$t/" >&2
    fi
done
exit $found

#!/usr/bin/env bash
# build-pgo.sh: a profile-guided build of schedlab for long sweeps and runs,
# target/pgo/dist/schedlab. The `dist` profile (fat LTO, one codegen unit)
# compiled twice: once instrumented, run on a fixed training set (the
# bundled scenarios the benchmarks time: asym_min, schbench-spr, rt-pi-push
# and a seed-000 sweep round, all simulated), then again with the counts it
# gathered. The simulation is the same code: a PGO build's outputs are byte
# for byte those of `release` (scripts/check-refactor.sh can compare them).
#
# Needs an llvm-profdata that reads the raw profiles of rustc's LLVM: rustc
# 1.95 writes raw format 10, which Debian 12's llvm-14 cannot read and
# llvm-19 can; installs llvm-19 if none is found (Debian, root). Two builds
# of the whole tree and the training runs: 7 min here from an empty
# target/pgo (6 min with the instrumented tree kept), 0.8 GB under it.
set -euo pipefail
if [ "${1:-}" = -h ] || [ "${1:-}" = --help ]; then
    sed -n '2,/^set -euo/p' "$0" | sed -e '$d' -e 's/^# \{0,1\}//'
    exit 0
fi
if [ $# -gt 0 ]; then
    echo "build-pgo: takes no arguments (see --help)" >&2
    exit 2
fi
cd "$(dirname "$0")/.."

profdata=""
for p in "${LLVM_PROFDATA:-}" /usr/lib/llvm-19/bin/llvm-profdata /usr/lib/llvm-20/bin/llvm-profdata llvm-profdata-19; do
    if [ -n "$p" ] && command -v "$p" >/dev/null 2>&1; then
        profdata=$p
        break
    fi
done
if [ -z "$profdata" ]; then
    ./scripts/apt-install.sh "build-pgo" llvm-19
    profdata=/usr/lib/llvm-19/bin/llvm-profdata
fi
if ! command -v "$profdata" >/dev/null 2>&1; then
    echo "build-pgo: no llvm-profdata for rustc's LLVM; install llvm-19 (Debian) or set LLVM_PROFDATA" >&2
    exit 1
fi

target=target/pgo
# Fixed paths: the flags name them, and flags that change rebuild the tree.
raw=$PWD/$target/profiles
rm -rf "$raw"
mkdir -p "$raw"

echo "build-pgo: 1/3 instrumented build ($target/gen)" >&2
RUSTFLAGS="-Cprofile-generate=$raw" cargo build --profile dist --bin schedlab --target-dir "$target/gen" --quiet

echo "build-pgo: 2/3 training runs" >&2
gen=$target/gen/dist/schedlab
train() {
    "$gen" "$@" >/dev/null || {
        echo "build-pgo: training run failed: schedlab $*" >&2
        exit 1
    }
}
train run scenarios/asym_min.toml --duration 5s
train run scenarios/asym_min.toml --duration 5s --one-thread
train run scenarios/schbench-spr.toml --duration 20ms
train run scenarios/rt-pi-push.toml
# The sweep's exit status is 1 when its A/B gate fails, as it does on 5 s
# rounds: a verdict, not an error.
status=0
"$gen" sweep scenarios/sweeps/itmt-delay-dequeue.toml --rounds 1 --duration 5s --jobs 1 --no-timing \
    >/dev/null 2>"$raw/sweep.err" || status=$?
if [ "$status" -gt 1 ]; then
    cat "$raw/sweep.err" >&2
    echo "build-pgo: training run failed: schedlab sweep scenarios/sweeps/itmt-delay-dequeue.toml" >&2
    exit 1
fi
"$profdata" merge -o "$raw/merged.profdata" "$raw"/*.profraw
# Named by its content, so that a new profile rebuilds everything with it
# and the same one leaves the build as it is.
sum=$(sha256sum "$raw/merged.profdata" | cut -c1-16)
rm -f "$target"/merged-*.profdata
use=$PWD/$target/merged-$sum.profdata
cp "$raw/merged.profdata" "$use"

echo "build-pgo: 3/3 optimized build ($target/dist/schedlab)" >&2
RUSTFLAGS="-Cprofile-use=$use" cargo build --profile dist --bin schedlab --target-dir "$target" --quiet
echo "$target/dist/schedlab"

#!/usr/bin/env bash
# Checks that a refactor changed no output: runs two schedlab binaries on every
# bundled scenario and sweep (tables, --json, ftrace text, Perfetto, SVG plots,
# CSV, shards, diff, analyze, error messages) and compares the outputs byte for
# byte. Only two things are normalised, both said here: wall-clock figures
# ("in 0.158 s wall (190x real time)", sweep timing lines) are masked, and JSON
# is compared with sorted keys and without the top-level "format" version field
# that issue 13 added (everything else in it must be equal; analyze --json's
# old "format", the trace layout, is compared as the "trace_format" it became).
#
# usage: scripts/check-refactor.sh [--base BIN | --base-rev REV] [NEW_BIN]
#   NEW_BIN   the binary under test (default: target/release/schedlab, built if absent)
#   --base    a pre-refactor binary
#   --base-rev build the baseline from git revision REV (default fdde0e8, the
#             tree before issue 13) in a temporary worktree
# Exit status 0 when every output matches; 1 with the differing cases listed.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD

base=""
base_rev="fdde0e8"
new=""
while (($#)); do
    case "$1" in
        --base) base=$2; shift 2 ;;
        --base-rev) base_rev=$2; shift 2 ;;
        -h|--help) sed -n '2,17p' "$0"; exit 0 ;;
        *) new=$1; shift ;;
    esac
done

if [ -z "$new" ]; then
    new=${CARGO_TARGET_DIR:-$root/target}/release/schedlab
    [ -x "$new" ] || cargo build --release -q -p schedlab
fi
if [ -z "$base" ]; then
    base_dir=${CARGO_TARGET_DIR:-$root/target}/check-refactor-$base_rev
    base=$base_dir/release/schedlab
    if [ ! -x "$base" ]; then
        wt=$(mktemp -d)
        git worktree add -q --detach "$wt" "$base_rev"
        (cd "$wt" && CARGO_TARGET_DIR=$base_dir cargo build --release -q -p schedlab)
        git worktree remove --force "$wt"
    fi
fi
# Cases run in scratch directories: the binaries' paths must not be relative.
base=$(realpath "$base")
new=$(realpath "$new")
echo "baseline: $base"
echo "new:      $new"

out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
mkdir -p "$out/a" "$out/b"
failures=()
cases=0

mask_timing() {
    sed -E -e 's/in [0-9.]+ (m?s|us) wall \([0-9.]+x real time\)/in WALL/g' \
        -e 's/[0-9.]+ (m?s|us) wall/WALL/g' -e 's/in [0-9.]+ ?(m?s) \(/in WALL (/g' \
        -e 's/simulations in [0-9.]+ s wall/simulations in WALL/g'
}

norm_json() {
    python3 -c '
import json, sys
def strip(v, top):
    if isinstance(v, dict):
        if top and isinstance(v.get("format"), str):
            # Before issue 13, analyze --json held the trace layout here.
            v = dict(v, trace_format=v["format"])
        return {k: strip(x, False) for k, x in v.items() if not (top and k == "format")}
    if isinstance(v, list):
        return [strip(x, top) for x in v]
    return v
text = sys.stdin.read()
try:
    v = json.loads(text)
except ValueError:
    sys.stdout.write(text)
    sys.exit(0)
# A top-level list of reports (vm, sweeps) has the version on each element.
json.dump(strip(v, True), sys.stdout, sort_keys=True, indent=1)
'
}

# run_case NAME KIND ARGS... : run both binaries with ARGS (in a scratch dir
# per side, so file outputs land side by side) and compare stdout, stderr,
# the exit status and every file written.
run_case() {
    local name=$1 kind=$2
    shift 2
    cases=$((cases + 1))
    for side in a b; do
        local bin=$base
        [ $side = b ] && bin=$new
        local dir=$out/$side/$name
        mkdir -p "$dir"
        local rc=0
        if [ "$kind" = shell ]; then
            (cd "$dir" && BIN=$bin sh -c "$1" >stdout 2>stderr) || rc=$?
        else
            (cd "$dir" && "$bin" "$@" >stdout 2>stderr) || rc=$?
        fi
        echo "$rc" >"$dir/status"
        sed -i "s#$bin#BIN#g" "$dir/stderr"
        mask_timing <"$dir/stderr" >"$dir/stderr.n" && mv "$dir/stderr.n" "$dir/stderr"
        # Files the command wrote as JSON (sweep shards) carry the version field too.
        find "$dir" -name '*.json' -type f | while read -r j; do
            norm_json <"$j" >"$j.n" && mv "$j.n" "$j"
        done
        case $kind in
            json) norm_json <"$dir/stdout" >"$dir/stdout.n" && mv "$dir/stdout.n" "$dir/stdout" ;;
            *) mask_timing <"$dir/stdout" >"$dir/stdout.n" && mv "$dir/stdout.n" "$dir/stdout" ;;
        esac
    done
    if ! diff -r "$out/a/$name" "$out/b/$name" >"$out/$name.diff" 2>&1; then
        failures+=("$name")
        echo "DIFF  $name: ${*}"
        head -20 "$out/$name.diff" | sed 's/^/      /'
    else
        echo "same  $name"
    fi
}

S=$root/scenarios
# Scenario runs: each bundled scenario, its tables, JSON, trace, Perfetto and plots.
for f in "$S"/*.toml; do
    n=$(basename "$f" .toml)
    # schbench scenarios run 60 s of hundreds of threads by default: minutes
    # and gigabytes per case (schbench-skl with --plot held ~18 GiB).
    dur=()
    case $n in schbench-*) dur=(--duration 30ms) ;; esac
    run_case "run-$n" text run "$f" "${dur[@]}" --trace trace.txt --perfetto trace.pftrace --plot plots
    run_case "run-$n-json" json run "$f" "${dur[@]}" --json
done
run_case run-asym-nodd text run "$S/asym_min.toml" --features NO_DELAY_DEQUEUE --seed 7 --stalls 2
run_case run-asym-7950x-mainline text run "$S/asym_min.toml" --kernel mainline --duration 5s
run_case run-rt-push text run "$S/rt-pi-push.toml" --features RT_PUSH_IPI --trace t.txt
run_case run-rt-topo text run "$S/rt-pi-push.toml" --topology smt-2x2 --threshold 1ms
run_case run-invariants text run "$S/asym_min-2cpu.toml" --duration 2s --check-invariants

# Sweeps: tables, JSON, CSV, A/B, shards and their merge.
for f in "$S"/sweeps/*.toml; do
    n=$(basename "$f" .toml)
    extra=()
    case $n in schbench-*) extra=(--duration 20ms --rounds 2) ;; esac
    run_case "sweep-$n" text sweep "$f" "${extra[@]}" --no-timing --csv out.csv
    run_case "sweep-$n-json" json sweep "$f" "${extra[@]}" --json
done
run_case sweep-shard shell "\$BIN sweep $S/sweeps/itmt-delay-dequeue.toml --duration 2s --shard 0/2 --out sh && \$BIN sweep $S/sweeps/itmt-delay-dequeue.toml --duration 2s --shard 1/2 --out sh && \$BIN sweep-merge sh"

# diff, analyze, features, topologies.
run_case diff-dd text diff "$S/asym_min.toml" --b NO_DELAY_DEQUEUE --duration 2s
run_case diff-itmt-json json diff "$S/asym_min.toml" --a itmt=0 --b NO_DELAY_DEQUEUE,itmt=0 --duration 1s --json
"$base" run "$S/asym_min-2cpu.toml" --duration 3s --trace "$out/asym2.txt" >/dev/null
"$base" run "$S/rt-pi-push.toml" --trace "$out/rt.txt" >/dev/null
run_case analyze-asym text analyze "$out/asym2.txt" --scenario "$S/asym_min-2cpu.toml"
run_case analyze-asym-json json analyze "$out/asym2.txt" --scenario "$S/asym_min-2cpu.toml" --json
run_case analyze-rt text analyze "$out/rt.txt" --scenario "$S/rt-pi-push.toml"
run_case analyze-plain text analyze "$out/rt.txt"
run_case features text features
run_case features-mainline text features --kernel mainline
run_case topologies text topologies
run_case topology-7950x text topologies ryzen-7950x

# Errors: each names its file and line as before.
bad=$out/bad
mkdir -p "$bad"
printf 'duration = "10s"\ntopology = "smt-2x2"\n[[thread]]\nname = "a"\nprogram = [{ run = "1ms", typo = 1 }]\n' >"$bad/op.toml"
printf 'duration = "ten"\n' >"$bad/dur.toml"
printf 'name = "x"\n[[cpu]]\nid = 0\ncapacity = "big"\n' >"$bad/topo.toml"
run_case err-op text run "$bad/op.toml"
run_case err-duration text run "$bad/dur.toml"
run_case err-topology text run "$S/two-hogs.toml" --topology "$bad/topo.toml"
run_case err-feature text run "$S/two-hogs.toml" --features NO_SUCH_FEATURE
run_case err-kernel text run "$S/two-hogs.toml" --kernel 2.6
run_case err-missing text run "$bad/missing.toml"
run_case err-analyze text analyze "$bad/dur.toml"
run_case err-sweep text sweep "$bad/dur.toml"
run_case err-diff text diff "$S/two-hogs.toml" --a NO_SUCH

echo
echo "$cases cases, ${#failures[@]} differ"
((${#failures[@]} == 0))

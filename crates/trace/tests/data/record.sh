#!/bin/sh
# Record the real-trace samples under this directory (run as root on Linux
# with tracefs; needs python3 >= 3.10 and trace-cmd for the report sample).
#
#   crates/trace/tests/data/record.sh [OUTDIR]
#
# Everything happens in private tracefs instances
# (/sys/kernel/tracing/instances/schedlab-rec-*), so no global tracing
# setting (tracing_on, set_event, buffer_size_kb, trace_clock) is touched,
# and removing the instances at the end leaves the machine as it was.
#
# Writes:
#   pingpong.trace      the instance's `trace` file after 100 ping-pong rounds
#   pingpong.report     `trace-cmd report` of the same buffer (extracted after;
#                       trace-cmd prefixes each line with the instance name)
#   pingpong-lost.trace `trace_pipe` read slowly through an 8 KB per-CPU
#                       buffer while 150 rounds of 2 ms spins run: real
#                       `CPU:N [LOST M EVENTS]` lines between kept events
set -eu
here=$(cd "$(dirname "$0")" && pwd)
out=${1:-$here}
T=/sys/kernel/tracing
# The interpreter itself, not a pyenv shim (whose shell scripts fill the trace).
py=$(python3 -c 'import sys; print(sys.executable)')
I1=$T/instances/schedlab-rec-$$
I2=$T/instances/schedlab-rec-lost-$$
cleanup() {
    for i in "$I1" "$I2"; do
        [ -d "$i" ] && { echo 0 > "$i/tracing_on"; rmdir "$i"; }
    done
    return 0
}
trap cleanup EXIT INT TERM

# Modelled events, plus fork/exec/exit/free: real kernel events the reader
# does not model, to be skipped with a count.
setup() {
    mkdir "$1"
    echo 0 > "$1/tracing_on"
    echo "$2" > "$1/buffer_size_kb"
    for e in sched_switch sched_waking sched_wakeup sched_wakeup_new sched_migrate_task \
             sched_process_fork sched_process_exec sched_process_exit sched_process_free; do
        echo 1 > "$1/events/sched/$e/enable"
    done
}

# 1. tracefs `trace` + trace-cmd report of the same buffer.
setup "$I1" 2048
echo 1 > "$I1/tracing_on"
"$py" "$here/pingpong.py" "$I1/trace_marker" 100
echo 0 > "$I1/tracing_on"
cat "$I1/trace" > "$out/pingpong.trace"
if command -v trace-cmd >/dev/null; then
    dat=$(mktemp /tmp/pingpong.XXXXXX.dat)
    # extract reads (consumes) the buffer and removes the instance.
    trace-cmd extract -B "schedlab-rec-$$" -o "$dat" >/dev/null 2>&1
    trace-cmd report -i "$dat" > "$out/pingpong.report" 2>/dev/null
    rm -f "$dat"
fi

# 2. A lossy capture: tiny buffer, a reader that sleeps between reads.
setup "$I2" 8
echo 1 > "$I2/tracing_on"
"$py" - "$I2/trace_pipe" "$out/pingpong-lost.trace" <<'PY' &
import os, sys, time
fd = os.open(sys.argv[1], os.O_RDONLY | os.O_NONBLOCK)
out = open(sys.argv[2], "wb")
deadline = time.time() + 0.8
while time.time() < deadline:
    try:
        out.write(os.read(fd, 4096))
    except BlockingIOError:
        pass
    time.sleep(0.02)
PY
reader=$!
"$py" "$here/pingpong.py" "$I2/trace_marker" 150 2000
wait $reader

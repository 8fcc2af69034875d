#!/usr/bin/env bash
# A single-node Slurm cluster in a scratch directory, for trying
# `schedlab sweep --slurm` and for its end-to-end test:
#
#   scripts/slurm-cluster.sh start DIR   # prints the SLURM_CONF to export
#   SLURM_CONF=DIR/slurm.conf schedlab sweep S.toml --slurm
#   scripts/slurm-cluster.sh stop DIR
#
# Needs root and Debian's slurmctld, slurmd and munge (scripts/install-slurm-deps.sh).
# Everything lives in DIR (its own munge key and socket, state, spool, logs),
# nothing system-wide is changed or started, and `stop` kills the three
# daemons it started.
set -euo pipefail

cmd=${1:-}; dir=${2:-}
if [ -z "$cmd" ] || [ -z "$dir" ]; then
    echo "usage: $0 start|stop DIR" >&2
    exit 2
fi

stop() {
    for d in slurmd slurmctld munged; do
        if [ -f "$dir/$d.pid" ]; then
            kill "$(cat "$dir/$d.pid")" 2>/dev/null || true
        fi
    done
    # Wait (at most 10 s) for them to go, so DIR can be removed.
    for _ in $(seq 50); do
        alive=0
        for d in slurmd slurmctld munged; do
            if [ -f "$dir/$d.pid" ] && kill -0 "$(cat "$dir/$d.pid")" 2>/dev/null; then alive=1; fi
        done
        [ $alive = 0 ] && break
        sleep 0.2
    done
    rm -f "$dir"/*.pid
}

case "$cmd" in
stop)
    stop
    exit 0
    ;;
start) ;;
*)
    echo "$0: unknown command $cmd (start or stop)" >&2
    exit 2
    ;;
esac

for b in slurmctld slurmd munged sbatch; do
    command -v "$b" >/dev/null || { echo "$0: $b not found (scripts/install-slurm-deps.sh)" >&2; exit 3; }
done
[ "$(id -u)" = 0 ] || { echo "$0: needs root (slurmd runs jobs as their user)" >&2; exit 3; }

dir=$(mkdir -p "$dir" && cd "$dir" && pwd)
mkdir -p "$dir/state" "$dir/spool" "$dir/munge"
chmod 700 "$dir/munge"
host=$(hostname -s)
cpus=$(nproc)
mem=$(awk '/MemTotal/ { print int($2 / 1024 * 0.8) }' /proc/meminfo)

# munge: a key of our own, a socket in DIR.
dd if=/dev/urandom of="$dir/munge/munge.key" bs=1024 count=1 status=none
chmod 400 "$dir/munge/munge.key"
munged --key-file="$dir/munge/munge.key" --socket="$dir/munge/munge.socket" \
    --pid-file="$dir/munged.pid" --log-file="$dir/munged.log" --seed-file="$dir/munge/seed" --force

cat > "$dir/slurm.conf" <<CONF
ClusterName=schedlab-test
SlurmctldHost=$host(127.0.0.1)
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=$dir/munge/munge.socket
CredType=cred/munge
SlurmctldPort=$((6817 + RANDOM % 1000))
SlurmdPort=$((7817 + RANDOM % 1000))
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.pid
SlurmctldLogFile=$dir/slurmctld.log
SlurmdLogFile=$dir/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SchedulerType=sched/backfill
MpiDefault=none
ReturnToService=2
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SlurmctldTimeout=30
SlurmdTimeout=30
NodeName=$host NodeAddr=127.0.0.1 CPUs=$cpus RealMemory=$mem State=UNKNOWN
PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP
CONF
# Debian's slurmd looks for cgroup.conf only with cgroup plugins; none here.

export SLURM_CONF="$dir/slurm.conf"
slurmctld -f "$SLURM_CONF"
slurmd -f "$SLURM_CONF"
# Ready when the node is idle (at most 30 s).
for _ in $(seq 150); do
    if sinfo -h -o %t 2>/dev/null | grep -qx idle; then
        echo "SLURM_CONF=$SLURM_CONF"
        exit 0
    fi
    sleep 0.2
done
echo "$0: the cluster did not come up; logs in $dir" >&2
tail -5 "$dir"/slurmctld.log "$dir"/slurmd.log >&2 || true
stop
exit 1

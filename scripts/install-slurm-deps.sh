#!/usr/bin/env bash
# Installs Debian's Slurm (slurmctld, slurmd, the client commands) and munge
# for the end-to-end test of `schedlab sweep --slurm`, which starts its own
# single-node cluster (scripts/slurm-cluster.sh). The packages' services are
# not started here: on a machine without systemd (CI containers, where
# policy-rc.d denies it) they could not be, and the test needs none of them.
# Idempotent; scripts/install-deps.sh calls it. Without root or apt, it says
# so and the test skips.
set -euo pipefail

need=()
command -v slurmctld >/dev/null 2>&1 || need+=(slurmctld)
command -v slurmd >/dev/null 2>&1 || need+=(slurmd)
command -v sbatch >/dev/null 2>&1 || need+=(slurm-client)
command -v munged >/dev/null 2>&1 || need+=(munge)
"$(dirname "$0")/apt-install.sh" "install-slurm-deps (the Slurm test skips without them)" ${need[@]+"${need[@]}"}

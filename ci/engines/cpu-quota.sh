#!/usr/bin/env bash
# Holds a process to a CPU quota through a cgroup v1 cpu controller (root), or frees it:
#   ci/engines/cpu-quota.sh PID QUOTA_US     # QUOTA_US of CPU time per 100 ms period (90000 = 0.9 CPU)
#   ci/engines/cpu-quota.sh PID off
# For the gate's real-slowdown checks: `bench compare --interleave --switch
# 'ci/engines/cpu-quota.sh PID $(arm-dependent quota)'` slows the candidate's server only.
set -euo pipefail
pid=${1:?PID}; quota=${2:?QUOTA_US or off}
cg=/sys/fs/cgroup/cpu/bench-quota-$pid
mkdir -p "$cg"
echo 100000 > "$cg/cpu.cfs_period_us"
if [ "$quota" = off ]; then echo -1 > "$cg/cpu.cfs_quota_us"; else echo "$quota" > "$cg/cpu.cfs_quota_us"; fi
for t in /proc/"$pid"/task/*; do echo "${t##*/}" > "$cg/tasks"; done

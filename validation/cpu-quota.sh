#!/usr/bin/env bash
# Holds a process to a CPU quota through a cgroup v1 cpu controller (root), or frees it:
#   validation/cpu-quota.sh PID QUOTA_US     # QUOTA_US of CPU time per 100 ms period (90000 = 0.9 CPU)
#   validation/cpu-quota.sh PID off
# CPU_PERIOD_US (default 100000) sets the CFS period, the quota scaled to it (the share stays
# QUOTA_US/100000): a shorter period throttles in finer slices, so the slowdown is steadier
# from one short run to the next.
# For the gate's real-slowdown checks: `bench compare --interleave --switch
# 'validation/cpu-quota.sh PID $(arm-dependent quota)'` slows the candidate's server only.
set -euo pipefail
pid=${1:?PID}; quota=${2:?QUOTA_US or off}
cg=/sys/fs/cgroup/cpu/bench-quota-$pid
mkdir -p "$cg"
period=${CPU_PERIOD_US:-100000}
echo -1 > "$cg/cpu.cfs_quota_us"  # a period below the current quota is refused while it is set
echo "$period" > "$cg/cpu.cfs_period_us"
[ "$quota" = off ] || echo $((quota * period / 100000)) > "$cg/cpu.cfs_quota_us"
for t in /proc/"$pid"/task/*; do echo "${t##*/}" > "$cg/tasks"; done

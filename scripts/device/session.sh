#!/usr/bin/env bash
# On a 2-GPU machine, detached (setsid) so that it outlives the call that starts it: the tensor-parallel
# campaign over both GPUs, then one single-GPU campaign per GPU. Results (packed after every point) stay
# under /tmp/res until scripts/device/collect.sh copies them into a call's $OUT.
# usage: setsid bash scripts/device/session.sh TP_SPEC TP_BUDGET_S SPEC_GPU0 SPEC_GPU1 TOTAL_BUDGET_S &
# (TP_SPEC or SPEC_GPU1 may be none; on a one-GPU machine both are)
# NVLink multicast stays off: the machine's NCCL_NVLS_ENABLE=0 / TORCH_SYMM_MEM_DISABLE_MULTICAST=1 are kept,
# and vLLM's symmetric-memory all-reduce is turned off.
set -uo pipefail
. "$(dirname "$0")/env.sh"
RES=/tmp/res
mkdir -p "$RES"
t0=$(date +%s)
nvidia-smi --query-gpu=index,name,memory.total,driver_version --format=csv > "$RES/gpus.csv"
nvidia-smi topo -m > "$RES/topo.txt" 2>&1
{ lscpu; nproc; uptime; } > "$RES/cpu.txt" 2>&1
if [ "$1" != none ]; then
  python3 scripts/device/campaign.py "$1" "$RES" --budget-s "$2" --port 8000 --work /tmp/tp/campaign --name tp \
    > "$RES/tp.log" 2>&1
fi
left=$(( $5 - ($(date +%s) - t0) ))
echo "single-GPU phase starts at $(( $(date +%s) - t0 )) s with $left s left" >> "$RES/session.log"
CUDA_VISIBLE_DEVICES=0 python3 scripts/device/campaign.py "$3" "$RES" --budget-s "$left" --port 8000 \
  --work /tmp/g0/campaign --name gpu0 > "$RES/gpu0.log" 2>&1 &
if [ "$4" != none ]; then  # none: a one-GPU machine
  CUDA_VISIBLE_DEVICES=1 python3 scripts/device/campaign.py "$4" "$RES" --budget-s "$left" --port 8001 \
    --work /tmp/g1/campaign --name gpu1 > "$RES/gpu1.log" 2>&1 &
fi
wait
echo "done at $(( $(date +%s) - t0 )) s" >> "$RES/session.log"
touch "$RES/done"

#!/usr/bin/env bash
# On a 2-GPU machine: run two campaign specs at once, one per GPU (independent single-GPU servers).
# usage: scripts/device/run-pair.sh SPEC_GPU0 SPEC_GPU1 BUDGET_S
set -uo pipefail
. "$(dirname "$0")/env.sh"
nvidia-smi --query-gpu=index,name,memory.total,driver_version --format=csv > "$OUT/gpus.csv"
CUDA_VISIBLE_DEVICES=0 python3 scripts/device/campaign.py "$1" "$OUT" --budget-s "$3" --port 8000 \
  --work /tmp/g0/campaign --name gpu0 > "$OUT/gpu0.log" 2>&1 &
p0=$!
if [ -n "${2:-}" ] && [ "$2" != none ]; then
  CUDA_VISIBLE_DEVICES=1 python3 scripts/device/campaign.py "$2" "$OUT" --budget-s "$3" --port 8001 \
    --work /tmp/g1/campaign --name gpu1 > "$OUT/gpu1.log" 2>&1 &
  p1=$!
  wait $p1
fi
wait $p0
tail -n 3 "$OUT"/gpu*.log

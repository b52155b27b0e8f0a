#!/usr/bin/env bash
# On a multi-GPU machine: one campaign whose servers span the GPUs (tensor/expert parallel).
# NVLink multicast stays off (the machine sets NCCL_NVLS_ENABLE=0 and TORCH_SYMM_MEM_DISABLE_MULTICAST=1;
# we keep them and stop vLLM's symmetric-memory all-reduce too). usage: run-tp.sh SPEC BUDGET_S
set -uo pipefail
. "$(dirname "$0")/env.sh"
nvidia-smi --query-gpu=index,name,memory.total,driver_version --format=csv > "$OUT/gpus.csv"
nvidia-smi topo -m > "$OUT/topo.txt" 2>&1
python3 scripts/device/campaign.py "$1" "$OUT" --budget-s "$2" --port 8000 --work /tmp/tp/campaign --name tp > "$OUT/tp.log" 2>&1
tail -n 5 "$OUT/tp.log"

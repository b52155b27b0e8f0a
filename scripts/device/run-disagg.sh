#!/usr/bin/env bash
# Issue 22 on a 2xH200 machine (kind nvidia-h200-x2): 1 prefill + 1 decode vLLM 0.26.0 instance (one per GPU, KV moved
# by NixlConnector when the nixl package is installed, else P2pNcclConnector) behind scripts/device/disagg_proxy.py, and
# the same models as two aggregated replicas behind the same proxy in round-robin mode; every point of the spec.
# NVLink multicast stays off: env.sh keeps NCCL_NVLS_ENABLE=0 and TORCH_SYMM_MEM_DISABLE_MULTICAST=1 and sets
# VLLM_ALLREDUCE_USE_SYMM_MEM=0 (each server is TP 1, so no all-reduce runs; the KV connectors use NCCL P2P or UCX).
# usage: scripts/device/run-disagg.sh [SPEC] [BUDGET_S]   (DISAGG_ONLY=name1,name2 runs only those configs)
set -uo pipefail
. "$(dirname "$0")/env.sh"
SPEC=${1:-scripts/device/specs/h200x2-disagg.json}
BUDGET=${2:-540}
nvidia-smi --query-gpu=index,name,memory.total,driver_version --format=csv > "$OUT/gpus.csv"
nvidia-smi topo -m > "$OUT/topo.txt" 2>&1
python3 -c "import nixl" 2>/dev/null && echo "nixl importable: NixlConnector" > "$OUT/connector.txt" \
  || echo "no nixl package: P2pNcclConnector (add nixl-cu13 to the wheel set for NIXL)" > "$OUT/connector.txt"
python3 scripts/device/disagg_campaign.py "$SPEC" "$OUT" --budget-s "$BUDGET" --work /tmp/disagg/campaign \
  --name disagg > "$OUT/disagg.log" 2>&1
tail -n 8 "$OUT/disagg.log"

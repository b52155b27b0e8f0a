# Sourced by the device scripts: where vLLM was installed (scripts/device/install-vllm.sh), offline hub, and
# NVLink multicast kept off (the machine sets NCCL_NVLS_ENABLE=0 / TORCH_SYMM_MEM_DISABLE_MULTICAST=1; vLLM's
# symmetric-memory all-reduce and NVSHMEM's NVLS are turned off too).
export PYTHONPATH=/tmp/site:$PWD HF_HUB_OFFLINE=1 VLLM_NO_USAGE_STATS=1 VLLM_USE_FLASHINFER_SAMPLER=0 \
       VLLM_ALLREDUCE_USE_SYMM_MEM=0 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 \
       NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1

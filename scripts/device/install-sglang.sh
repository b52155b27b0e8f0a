#!/usr/bin/env bash
# On the GPU machine: reassemble the SGLang 0.5.17 parts gathered in /tmp/ws (made here by
# scripts/device/fetch-sglang.sh; one carried folder .device-sglang/sK per call) and install them
# into /tmp/site-sglang, leaving the machine's packages and vLLM's /tmp/site untouched. Idempotent.
# Use afterwards: export PYTHONPATH=/tmp/site-sglang:/tmp/site   (/tmp/site may be absent)
# /tmp/site-sglang brings its own transformers 5.12.1 + tokenizers 0.22.2 (sglang 0.5.17 fails to
# import with the machine's transformers 5.17.0); they shadow the machine's only under that PYTHONPATH.
set -euo pipefail
ws=${SGLANG_WS:-/tmp/ws}
site=${SGLANG_SITE:-/tmp/site-sglang}
py=${PYTHON:-python3}
if [ ! -f "$site/.done" ]; then
  [ -f "$ws/parts.sha256" ] || { echo "no $ws/parts.sha256: carry .device-sglang/s1 too" >&2; exit 1; }
  (cd "$ws" && sha256sum -c --quiet parts.sha256) || { echo "parts missing or damaged in $ws" >&2; exit 1; }
  rm -rf /tmp/wsg && mkdir -p /tmp/wsg
  # xz through Python's lzma: no xz binary needed on the machine.
  cat "$ws"/part.* | "$py" -c "import sys, tarfile; tarfile.open(fileobj=sys.stdin.buffer, mode='r|xz').extractall('/tmp/wsg', filter='data')"
  "$py" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target "$site" /tmp/wsg/*.whl
  rm -rf /tmp/wsg
  touch "$site/.done"
fi
PYTHONPATH=$site:/tmp/site "$py" -c "import sglang, sgl_kernel; print(sglang.__version__)"
PYTHONPATH=$site:/tmp/site "$py" -c "import importlib.metadata as m, torch; print('torch', torch.__version__, '|', ', '.join(p + ' ' + m.version(p) for p in ('sglang-kernel', 'flashinfer-python', 'transformers', 'tokenizers', 'xgrammar')))"

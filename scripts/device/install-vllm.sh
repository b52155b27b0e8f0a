#!/usr/bin/env bash
# On the GPU machine: reassemble the vLLM 0.26.0 wheel parts gathered in /tmp/w (see docs/measurement-log.md)
# and install them into /tmp/site without touching the machine's own torch. Idempotent.
set -euo pipefail
[ -f /tmp/site/.done ] && exit 0
mkdir -p /tmp/wh && cat /tmp/w/part.* | tar -x -C /tmp/wh
cd /tmp/wh
keep=()
for whl in *.whl; do
  mod=$(echo "$whl" | cut -d- -f1 | tr 'A-Z' 'a-z')
  case "$mod" in  # the machine already has these: keep its versions
    pydantic|pydantic_core|annotated_types|typing_inspection|mpmath|mdurl|shellingham)
      python3 -c "import $mod" 2>/dev/null && continue ;;
  esac
  keep+=("$whl")
done
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site "${keep[@]}"
touch /tmp/site/.done
PYTHONPATH=/tmp/site python3 -c "import vllm; print('vllm', vllm.__version__)"

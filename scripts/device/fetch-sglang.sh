#!/usr/bin/env bash
# Here (CPU machine with PyPI): gather the wheels that SGLang 0.5.17 needs on the H200 machine beyond
# what that machine already has, and pack them into 50 MiB parts, one folder each, for carrying.
# usage: scripts/device/fetch-sglang.sh DEST      (DEST ignored by git, e.g. .device-sglang/)
# Result: DEST/s1 ... DEST/sN, each holding one part.NN; carry one folder per device call, then run
# scripts/device/install-sglang.sh there.
#
# Left out, because the machine has them (python 3.12.3 image): torch 2.11.0+cu130 and its nvidia-*
# CUDA 13 wheels, triton 3.6.0, torchvision/torchaudio, numpy, huggingface_hub, safetensors, aiohttp,
# requests, httpx, pillow, psutil, scipy, sentencepiece, tiktoken, einops, ninja, numba, uvloop,
# nvidia-ml-py, cuda-bindings, jinja2, pyyaml, regex, tqdm, prometheus-client, timm, ...
# Left out, not needed by `python -m sglang.launch_server` for a dense model (import-traced on
# CPU with the machine's package set): flash-attn-4, nvidia-cutlass-dsl, quack-kernels, tilelang,
# helion, humming-kernels, sgl-deep-gemm, tokenspeed-mla, torchao, torch-memory-saver, torchcodec,
# datasets, modelscope, anthropic, blobfile, outlines, llguidance, mistral-common, kernels, py-spy,
# smg-grpc-servicer, cuda-python (cuda-bindings is there), nvidia-mathdx.
# transformers: sglang 0.5.17 pins 5.12.1 and must get it. With the machine's 5.17.0 `import
# sglang.launch_server` fails (sglang/srt/configs/qwen3_asr.py registers "qwen3_asr", which 5.17
# already defines: ValueError). transformers 5.12.1 requires tokenizers<=0.23.0 (machine: 0.23.2,
# checked at import), hence tokenizers 0.22.2 too. Both go to /tmp/site-sglang, ahead of the
# machine's on PYTHONPATH; the machine's own copies stay untouched.
set -euo pipefail
dest=${1:?usage: fetch-sglang.sh DEST}
here=$(cd "$(dirname "$0")" && pwd)
vllm_wheels=${VLLM_WHEELS:-$here/../../.device/wheels}   # reused, never modified

# New wheels, exact pins (sglang 0.5.17's own pins where it has one).
DOWNLOAD="
sglang==0.5.17
sglang-kernel==0.4.5
flashinfer-python==0.6.15.post1
apache-tvm-ffi==0.1.11
transformers==5.12.1
tokenizers==0.22.2
openai==2.6.1
orjson==3.13.0
ipython==9.18.1
traitlets==5.16.1
distro==1.9.0
gguf==0.19.0
jsonschema==4.26.0
jsonschema-specifications==2025.9.1
referencing==0.37.0
rpds-py==2026.9.1
soundfile==0.13.1
cffi==2.1.1
pycparser==3.12
"
# Copied from the vLLM wheel set (downloaded only if that folder lacks them). The machine lacks these
# too, so they travel with SGLang: the session then needs no vLLM transfer at all (~2 MiB of parts).
# xgrammar: sglang pins 0.2.1 (45 MB wheel); 0.2.7 passes sglang's grammar backend (json/regex
# compile + bitmask fill) and sglang checks no version.
REUSE="
pydantic==2.14.4
pydantic-core==2.50.5
typing-inspection==0.4.5
annotated-types==0.8.0
fastapi==0.136.3
starlette==1.10.0
uvicorn==0.54.0
python-multipart==0.0.34
pyzmq==27.3.0
msgspec==0.23.0
pybase64==1.5.1
setproctitle==1.3.8
sniffio==1.3.1
dill==0.4.1
loguru==0.7.3
partial-json-parser==0.2.1.1.post7
compressed-tensors==0.17.0
xgrammar==0.2.7
jiter==0.19.0
"
plat=(--platform manylinux2014_x86_64 --platform manylinux1_x86_64 --platform linux_x86_64 --platform any)
for n in $(seq 5 39); do plat+=(--platform "manylinux_2_${n}_x86_64"); done  # sglang's own wheel is manylinux_2_34
pipdl() {
  python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
    --abi cp312 --abi abi3 --abi none "${plat[@]}" -d "$dest/wheels" "$@" 2>&1 | grep -v '^WARNING: Location' || true
}
norm() { echo "$1" | tr 'A-Z-' 'a-z_'; }

mkdir -p "$dest/wheels"
rm -f "$dest/wheels"/*.whl
want=0
for spec in $DOWNLOAD; do want=$((want+1)); done
pipdl $DOWNLOAD
for spec in $REUSE; do
  want=$((want+1))
  name=$(norm "${spec%%==*}"); ver=${spec##*==}
  src=$(find "$vllm_wheels" -maxdepth 1 -iname "${name}-${ver}-*.whl" 2>/dev/null | head -1 || true)  # no such folder: download
  if [ -n "$src" ]; then cp "$src" "$dest/wheels/"; else pipdl "$spec"; fi
done
got=$(ls "$dest/wheels"/*.whl | wc -l)
[ "$got" -eq "$want" ] || { echo "expected $want wheels, got $got" >&2; ls "$dest/wheels" >&2; exit 1; }
# sglang-kernel must be the CUDA 13 build for torch 2.11.0 (links libcudart.so.13; its README says torch == 2.11.0).
python3 - "$dest/wheels" <<'EOF'
import sys, zipfile, glob
w = glob.glob(sys.argv[1] + "/sglang_kernel-0.4.5-*.whl")[0]
z = zipfile.ZipFile(w)
meta = z.read(next(n for n in z.namelist() if n.endswith(".dist-info/METADATA"))).decode()
assert "Requires torch == 2.11.0" in meta, "sglang-kernel not built for torch 2.11.0"  # its README (no Requires-Dist)
so = z.read("sgl_kernel/sm90/common_ops.abi3.so")
assert b"libcudart.so.13" in so and b"libcudart.so.12" not in so, "sglang-kernel is not the CUDA 13 build"
EOF
du -ch "$dest/wheels"/*.whl | tail -1 | sed 's/total/wheels (as downloaded)/'

# Wheels are deflated zips; xz finds far more redundancy in the raw files (the FA3 kernels in
# sglang-kernel shrink ~3x more than with deflate), so re-store them uncompressed first.
# pip installs stored wheels as usual (RECORD hashes cover file contents, not the zip encoding).
# sgl_kernel/sm100/ (common_ops for every GPU but SM 9.0, 13 MB packed) is dropped: on an H200
# sgl_kernel loads sgl_kernel/sm90/common_ops (load_utils._load_architecture_specific_ops).
rm -rf "$dest/stored" && mkdir -p "$dest/stored"
python3 - "$dest/wheels" "$dest/stored" <<'EOF'
import sys, zipfile, pathlib
src, out = map(pathlib.Path, sys.argv[1:3])
DROP = {"sglang_kernel": "sgl_kernel/sm100/"}
for w in sorted(src.glob("*.whl")):
    drop = DROP.get(w.name.split("-")[0])
    with zipfile.ZipFile(w) as zi, zipfile.ZipFile(out / w.name, "w", zipfile.ZIP_STORED) as zo:
        for info in zi.infolist():
            if drop and info.filename.startswith(drop):
                continue
            data = zi.read(info)
            if drop and info.filename.endswith(".dist-info/RECORD"):
                data = b"".join(l for l in data.splitlines(True) if not l.startswith(drop.encode()))
            info.compress_type = zipfile.ZIP_STORED
            zo.writestr(info, data)
EOF
rm -rf "$dest"/s[0-9]* "$dest/sglang.tar.xz"
tar -cf - -C "$dest/stored" . | xz -6 -T0 > "$dest/sglang.tar.xz"
rm -rf "$dest/stored"
split -b 50M -d -a 2 "$dest/sglang.tar.xz" "$dest/part."
(cd "$dest" && sha256sum part.*) > "$dest/parts.sha256"   # travels in s1; install-sglang.sh checks it
k=1; for p in "$dest"/part.*; do mkdir -p "$dest/s$k"; mv "$p" "$dest/s$k/"; k=$((k+1)); done
mv "$dest/parts.sha256" "$dest/s1/"
total=$(stat -c %s "$dest/sglang.tar.xz")
rm -f "$dest/sglang.tar.xz"
echo "wheels: $got"
echo "packed (tar.xz): $total bytes = $(( (total + 1048575) / 1048576 )) MiB"
echo "parts: $((k-1)) (folders $dest/s1 ... $dest/s$((k-1)))"

"""scripts/device/trace_summary.py on a small trace in Kineto's chrome-trace format. The GPU machine writes the real
ones; this machine has no GPU, so the kernel events are written here by hand (times in microseconds)."""

import gzip
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts" / "device"))

from trace_summary import summarize, union_s  # noqa: E402


def ev(cat, name, ts, dur, **args):
    return {"ph": "X", "cat": cat, "name": name, "ts": ts, "dur": dur, "args": args}


def test_union_counts_overlap_once():
    assert union_s([(0, 10), (5, 15), (20, 25)]) == 20


def test_a_launch_bound_step_and_a_blocking_copy(tmp_path):
    events = [ev("user_annotation", "execute_context_1(1024)_generation_0(0)", 0, 900),
              ev("user_annotation", "gpu_model_runner: forward", 10, 800),
              ev("cuda_runtime", "cudaLaunchKernel", 20, 5, correlation=1),
              ev("cuda_driver", "cuLaunchKernelEx", 400, 5, correlation=2),
              ev("cuda_runtime", "cudaMemcpyAsync", 850, 40, correlation=3),
              ev("kernel", "gemm", 30, 100, correlation=1),
              ev("kernel", "fused_moe", 410, 50, correlation=2),
              ev("gpu_memcpy", "Memcpy DtoH", 860, 2, correlation=3),
              ev("cpu_op", "vllm::moe_forward", 300, 200),
              ev("user_annotation", "execute_context_0(0)_generation_1(1)", 1000, 100)]
    out = summarize(events)
    first = out["steps"][0]
    assert (first["context_tokens"], first["launches"], first["gpu_ops"]) == (1024, 3, 3)
    assert first["gpu_busy_us"] == 152 and first["gpu_span_us"] == 832  # GPU idle most of the span: launch bound
    assert first["blocking_us"] == {"cudaMemcpyAsync": 40}
    assert first["phase_us"] == {"forward": 800}
    assert out["prefill_steps"] == 1 and out["prefill_cpu_ops_top"][0]["name"] == "vllm::moe_forward"
    assert out["steps"][1]["gpu_ops"] == 0
    path = tmp_path / "w.pt.trace.json.gz"
    with gzip.open(path, "wt") as f:
        json.dump({"traceEvents": events}, f)
    (tmp_path / "torn.json").write_text('{"traceEvents": [')
    subprocess.run([sys.executable, str(ROOT / "scripts/device/trace_summary.py"), str(path), str(tmp_path / "torn.json"),
                    "--out", str(tmp_path / "s.json")], check=True)
    written = json.loads((tmp_path / "s.json").read_text())
    assert written["w.pt.trace.json.gz"]["steps"][0]["gpu_busy_us"] == 152
    assert "error" in written["torn.json"]

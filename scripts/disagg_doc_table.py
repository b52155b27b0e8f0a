"""Write docs/disagg.md's example tables from the code (between their markers); --check fails when they drifted.
Usage: python scripts/disagg_doc_table.py [--check]"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from capacity.disagg import (exposed_transfer_s, kv_transfer_bytes, kv_transfer_bytes_per_gpu, kv_transfer_time_s,  # noqa: E402
                             link_catalog, prefill_alone_s, search)
from capacity.estimate import Scenario, calibration_for, plan_for  # noqa: E402

DOC = Path(__file__).resolve().parents[1] / "docs" / "disagg.md"
EXAMPLE = dict(target_rps=50.0, ttft_slo_s=0.3, itl_slo_s=0.008)


def example_table() -> str:
    s = Scenario(model="meta-llama/Llama-3.1-8B", gpu="h200-sxm", isl=1024, osl=128)
    a = search(s, EXAMPLE["target_rps"], EXAMPLE["ttft_slo_s"], EXAMPLE["itl_slo_s"], [1, 2, 4, 8])
    lines = [f"`capacity size --disagg --model {s.model} --gpu {s.gpu} --isl {s.isl} --osl {s.osl} "
             f"--target-rps {EXAMPLE['target_rps']:g} --ttft-slo-s {EXAMPLE['ttft_slo_s']:g} "
             f"--itl-slo-s {EXAMPLE['itl_slo_s']:g}` ({a.layouts_within_slo:,} of {a.layouts_evaluated:,} layouts "
             "within the objectives):", "",
             "| layout | GPUs | $/hour | output tok/s per GPU | tok/s per user | TTFT ms | ITL ms |",
             "|---|---|---|---|---|---|---|"]
    for p in a.pareto_front:
        mark = " (chosen)" if a.chosen and p == a.chosen else ""
        lines.append(f"| {p.name}{mark} | {p.num_gpus} | {p.usd_per_hour:,.2f} | {p.output_tokens_per_s_per_gpu:,.0f} | "
                     f"{p.tokens_per_s_per_user:,.0f} | {p.ttft_s * 1e3:,.0f} | {p.itl_s * 1e3:,.1f} |")
    b = a.best_aggregated
    lines += ["", f"Best aggregated layout: {b.name}, {b.num_gpus} GPUs ({b.usd_per_hour:,.2f} $/hour)." if b else
              "", ""]
    return "\n".join(lines).rstrip() + "\n"


def transfer_table() -> str:
    lines = ["| model, prompt | KV bytes | link | transfer ms (after the prefill) | added to TTFT when streamed, ms |",
             "|---|---|---|---|---|"]
    cat = link_catalog()
    for model, isl in (("meta-llama/Llama-3.1-8B", 1024), ("meta-llama/Llama-3.1-8B", 4096), ("Qwen/Qwen3-30B-A3B", 4096)):
        s = Scenario(model=model, isl=isl, osl=1)
        plan = plan_for(s)
        cal = calibration_for(s, plan)
        shard = kv_transfer_bytes_per_gpu(plan, isl)
        t_p = prefill_alone_s(plan, cal, s)
        for lid in ("nvlink4", "ib-ndr", "pcie-gen5"):
            lk = cat[lid]
            tx = kv_transfer_time_s(shard, shard, lk.bytes_per_s, lk.efficiency)
            after = float(exposed_transfer_s(tx, t_p, plan.model.num_layers, False, lk.latency_s))
            over = float(exposed_transfer_s(tx, t_p, plan.model.num_layers, True, lk.latency_s))
            lines.append(f"| {model.split('/')[1]}, {isl:,} | {float(kv_transfer_bytes(plan, isl)) / 1e6:,.0f} MB | {lid} | "
                         f"{after * 1e3:,.2f} | {over * 1e3:,.3f} |")
    return "\n".join(lines) + "\n"


SECTIONS = {"disagg-example": example_table, "disagg-transfer": transfer_table}


def render(text: str) -> str:
    for name, fn in SECTIONS.items():
        start, end = f"<!-- {name}: written by scripts/disagg_doc_table.py -->\n", f"<!-- /{name} -->"
        i, j = text.index(start) + len(start), text.index(end)
        text = text[:i] + fn() + text[j:]
    return text


def main() -> int:
    text = DOC.read_text()
    new = render(text)
    if "--check" in sys.argv:
        if new != text:
            print("docs/disagg.md's tables differ from what the code gives: run python scripts/disagg_doc_table.py")
            return 1
        return 0
    DOC.write_text(new)
    print(f"wrote {DOC}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

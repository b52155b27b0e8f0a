"""How long each interaction takes on the server (the issue's budget: ≤ 200 ms per recompute). Prints a table
(run with `-s` to see it, or read /tmp/llm-capacity-app-timings.txt); asserts nothing about time, because
shared CI machines are noisy — only that every step ran without error."""

from __future__ import annotations

from pathlib import Path

import pytest
from app_driver import select_tab
from streamlit.testing.v1 import AppTest

ROOT = Path(__file__).resolve().parent.parent
REPORT = Path("/tmp/llm-capacity-app-timings.txt")


_tab = select_tab  # tests/app_driver.py


STEPS = [
    ("rerun, nothing changed", lambda at: None),
    ("GPU → B200", lambda at: at.selectbox(key="gpu").set_value("b200")),
    ("weights → FP8", lambda at: at.selectbox(key="precision").set_value("fp8")),
    ("KV cache → FP8", lambda at: at.selectbox(key="kv_precision").set_value("fp8")),
    ("shape → reasoning-like", lambda at: at.selectbox(key="shape").set_value("reasoning-like · 128 in → 1,024 out")),
    ("TTFT objective → 300 ms", lambda at: at.segmented_control(key="ttft_preset").set_value("300 ms")),
    ("ITL objective → 30 ms", lambda at: at.number_input(key="itl_ms").set_value(30.0)),
    ("target → 200 req/s", lambda at: at.number_input(key="target_rps").set_value(200.0)),
    ("GPUs → 8", lambda at: at.number_input(key="num_gpus").set_value(8)),
    ("model → Llama-3.3-70B", lambda at: at.selectbox(key="model").set_value("meta-llama/Llama-3.3-70B-Instruct")),
    ("TP → 8", lambda at: at.selectbox(key="tp").set_value(8)),
    ("engine → ideal", lambda at: at.radio(key="engine").set_value("Ideal roofline")),
    ("GPU → H200 (seen before)", lambda at: at.selectbox(key="gpu").set_value("h200-sxm")),
    ("open Compare (15 configs)", lambda at: _tab(at, "Compare GPUs")),
    ("Compare: shape → 2,048/256", lambda at: at.selectbox(key="shape").set_value("long prompt · 2,048 → 256")),
    ("Compare: GPU → B300 (same grid)", lambda at: at.selectbox(key="gpu").set_value("b300")),
    ("open Measured", lambda at: _tab(at, "Measured vs predicted")),
    ("open Explorer", lambda at: _tab(at, "Explorer")),
    ("open Formulas", lambda at: _tab(at, "Formulas")),
    ("open Launch", lambda at: _tab(at, "Launch")),
    ("back to Charts", lambda at: _tab(at, "Charts")),
]


@pytest.fixture
def corpus(monkeypatch):
    monkeypatch.setenv("LLMCAP_MEASUREMENTS_DIR", str(ROOT / "tests" / "fixtures" / "measurements"))


def test_interaction_timings(corpus, capsys):
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=60)
    at.run()  # first load: imports, sympy lambdify, chart templates (seconds, once per server)
    at.run()
    rows = []
    for name, act in STEPS:
        act(at)
        at.run()
        assert not at.exception, (name, at.exception)
        laps = dict(at.session_state["_timings"])
        total = sum(laps.values())
        parts = ", ".join(f"{k} {v:.0f}" for k, v in laps.items() if v >= 1)
        rows.append((name, total, parts, "error: " + at.error[0].value[:60] if at.error else ""))
    width = max(len(r[0]) for r in rows)
    lines = [f"{'interaction':{width}}  server ms  (parts)"]
    lines += [f"{n:{width}}  {t:9.0f}  ({p}) {e}" for n, t, p, e in rows]
    worst = max(r[1] for r in rows)
    lines.append(f"worst: {worst:.0f} ms; budget 200 ms per interaction")
    REPORT.write_text("\n".join(lines) + "\n")
    with capsys.disabled():
        print("\n" + "\n".join(lines))

"""Fuzz the `capacity` CLI and the parsers behind it: bad input ends in one line on stderr and exit 2, never a
traceback, a hang or a non-finite or negative number.

Seeded generators (no hypothesis: the same inputs every run, so a failure reproduces; set LLMCAP_FUZZ_SEED to
explore others). About 7,750 inputs: CLI flags of estimate/size/sweep/gpus/models (in-process through
`capacity.cli.main`, plus a few real subprocesses), mutated copies of the shipped config.json files (through
the CLI and straight through `parse_config`), of the shipped GPU TOML files and of the shipped calibrations. Every input must finish within
2 s; a watchdog stops one that hangs. Failures are collected and reported with their reproducer.
"""

from __future__ import annotations

import collections
import contextlib
import io
import json
import math
import os
import random
import re
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from capacity.model.architecture import catalog_ids, load_config_dict, parse_config
from capacity.cli import main
from capacity.errors import ConfigError
from capacity.model.kv import kv_bytes_per_token
from capacity.model.params import active_params_per_token, count_params

SEED = int(os.environ.get("LLMCAP_FUZZ_SEED", "14"))
INPUT_LIMIT_S = 2.0  # per input, in-process
WATCHDOG_S = 20  # a hung input is stopped here so the suite fails instead of hanging
REPO = Path(__file__).resolve().parents[1]
GPU_FILES = sorted((REPO / "hardware_specs").glob("*.toml"))
MODELS = catalog_ids()
GPUS = [p.stem for p in GPU_FILES]
ERROR_LINE = re.compile(r"^[A-Z][A-Za-z]*Error: \S")
NON_FINITE_TEXT = re.compile(r"(?<![\w.])-?(nan|inf|infinity)(?![\w])", re.IGNORECASE)


class Hung(Exception):
    pass


@contextlib.contextmanager
def watchdog(seconds: int) -> Iterator[None]:
    def stop(signum, frame):
        raise Hung(f"no answer after {seconds} s")

    old = signal.signal(signal.SIGALRM, stop)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


def run_cli(argv: list[str]) -> tuple[int, str, str, float]:
    out, err = io.StringIO(), io.StringIO()
    start = time.perf_counter()
    with watchdog(WATCHDOG_S), contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            rc = main(argv)
        except SystemExit as exc:  # --help
            rc = exc.code if isinstance(exc.code, int) else 0
        except Hung:
            raise
        except Exception as exc:  # noqa: BLE001  escaped main(): a traceback for the user
            rc = -1
            print(f"Traceback (escaped main): {type(exc).__name__}: {exc}", file=sys.stderr)
    return rc, out.getvalue(), err.getvalue(), time.perf_counter() - start


def bad_number(value: Any, path: str = "") -> str | None:
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return None
    if isinstance(value, (int, float)):
        return None if math.isfinite(value) and value >= 0 else f"{path} = {value!r}"
    items = value.items() if isinstance(value, dict) else enumerate(value)
    for k, v in items:
        found = bad_number(v, f"{path}.{k}")
        if found:
            return found
    return None


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"non-strict JSON constant {name}")


def problem(argv: list[str], rc: int, out: str, err: str, elapsed_s: float) -> str | None:
    """What is wrong with one CLI answer, or None."""
    if elapsed_s > INPUT_LIMIT_S:
        return f"took {elapsed_s:.2f} s"
    if "Traceback" in err or "Traceback" in out:
        return "traceback"
    if rc == 2:
        lines = err.strip("\n").split("\n")
        if len(lines) != 1 or not ERROR_LINE.match(lines[0]):
            return f"exit 2 but stderr is not one error line: {err[:300]!r}"
        return None
    if rc != 0:
        return f"exit {rc}: {err.strip()[:300]}"
    if err and "--help" not in argv:
        return f"exit 0 but stderr is not empty: {err[:300]!r}"
    if "--help" in argv or "-h" in argv:
        return None
    if "--json" in argv:
        try:
            data = json.loads(out, parse_constant=_refuse_constant)
        except ValueError as exc:
            return f"--json output is not strict JSON: {exc}"
        bad = bad_number(data)
        if bad:
            return f"non-finite or negative number in --json output: {bad}"
    elif argv and argv[0] != "sweep" and NON_FINITE_TEXT.search(out):
        return f"non-finite number in the table: {NON_FINITE_TEXT.search(out).group(0)!r}"
    return None


def check_sweep_file(path: Path) -> str | None:
    if not path.exists():
        return "sweep said it wrote a file that is not there"
    try:
        df = pd.read_parquet(path) if path.suffix == ".parquet" else pd.read_csv(path)
    except (ValueError, OSError) as exc:  # pandas' EmptyDataError is a ValueError
        return f"sweep wrote an unreadable file: {exc}"
    fitting = df[df["fits"].astype(bool)] if "fits" in df else df
    for col in ("ttft_s", "itl_s", "e2e_latency_s", "requests_per_s", "output_tokens_per_s", "total_tokens_per_s"):
        if col in fitting and len(fitting):
            values = fitting[col].astype(float)
            if not (values.map(math.isfinite).all() and (values >= 0).all()):
                return f"sweep wrote a non-finite or negative {col} on a fitting row"
    return None


class Failures:
    """Collects failing inputs; the test fails once, listing the first few with their reproducer."""

    def __init__(self, area: str) -> None:
        self.area, self.items, self.count = area, [], 0
        self.outcomes: collections.Counter[str] = collections.Counter()

    def add(self, what: str, reproducer: Any) -> None:
        self.items.append(f"{what}\n    reproducer: {str(reproducer)[:400]}")

    def check(self, argv: list[str], extra: Callable[[], str | None] | None = None, detail: str = "") -> int:
        """Run one argv; `detail` (what a temporary file held) goes into the reproducer."""
        self.count += 1
        reproducer = f"{argv} {detail}" if detail else argv
        try:
            rc, out, err, elapsed = run_cli(argv)
        except Hung as exc:
            self.add(f"hang: {exc}", reproducer)
            return -1
        self.outcomes["exit 0" if rc == 0 else err.split(":")[0] if rc == 2 else f"exit {rc}"] += 1
        why = problem(argv, rc, out, err, elapsed)
        if why is None and rc == 0 and extra is not None:
            why = extra()
        if why:
            self.add(f"{why} | stderr: {err.strip()[-200:]!r}", reproducer)
        return rc

    def assert_none(self, at_least: int, min_share: float = 0.05) -> None:
        print(f"{self.area}: {self.count} inputs, {dict(self.outcomes.most_common())}")
        assert not self.items, (f"{len(self.items)} of {self.count} {self.area} inputs failed (seed {SEED}):\n"
                                + "\n".join(self.items[:12]))
        assert self.count >= at_least, f"only {self.count} {self.area} inputs ran"
        cli_runs = sum(self.outcomes.values())
        if cli_runs:  # the generators must reach both the model and the error paths, not one of them only
            ok = self.outcomes["exit 0"] / cli_runs
            assert min_share <= ok <= 1 - min_share, f"{self.area}: {ok:.0%} of the CLI runs succeeded"


# --- value pools --------------------------------------------------------------------------------------------

JUNK = ["", " ", "abc", "0x10", "1e3", "1.5", "-1", "-0", "+5", "1_000", "nan", "NaN", "inf", "-inf", "Infinity",
        "9" * 400, "9" * 5000, "1e309", "5e-324", "٣", "1,2", "\t7\n", "None", "true", "[]", "--json"]


def ints(r: random.Random, lo: int, hi: int) -> str:
    pick = r.random()
    if pick < 0.3:
        return r.choice(JUNK)
    if pick < 0.55:
        return str(r.choice([lo - 1, lo, lo + 1, hi - 1, hi, hi + 1, 0, -1, 2**31, 2**63, 10**400 if r.random() < 0.2 else 7]))
    return str(r.randint(lo, min(hi, lo + int(10 ** r.uniform(0, 4)))))


def floats(r: random.Random, lo: float, hi: float) -> str:
    pick = r.random()
    if pick < 0.3:
        return r.choice(JUNK)
    if pick < 0.55:
        return repr(r.choice([lo, hi, -lo, -hi, 0.0, -1e-300, 1e-300, 5e-324, 1e308, hi * (1 + 1e-9), lo - 1e-9,
                              math.nan, math.inf, -math.inf]))
    return repr(r.uniform(lo, hi) if r.random() < 0.5 else lo + (hi - lo) * 10 ** r.uniform(-6, 0))


def loads(r: random.Random) -> str:
    if r.random() < 0.35:
        return r.choice(["sync", "synchronous", " SYNC ", "concurrency:0", "concurrency:1.5", "concurrency:", "burst",
                         "burst:1e7", "burst:10000001", "burst:1e8", "rate:5e-324", "rate:1e-4", "rate:0.001",
                         "rate:nan", "rate:inf", "rate:-1", "rate:1e7", "rate:1e8", "foo:3", "rate:5:5", ":",
                         "concurrency:" + "9" * 400, "rate:" + "1" * 5000, "CONCURRENCY:8", "x" * 300, ""])
    kind = r.choice(["concurrency", "burst", "rate"])
    value = r.choice([r.randint(1, 4096), r.randint(1, 10**7)]) if kind != "rate" else round(10 ** r.uniform(-3, 7), 3)
    return f"{kind}:{value}"


SCENARIO_FLAGS: dict[str, Callable[[random.Random], str]] = {
    "--num-gpus": lambda r: ints(r, 1, 4096),
    "--tp": lambda r: ints(r, 1, 1024),
    "--isl": lambda r: ints(r, 1, 10_000_000),
    "--osl": lambda r: ints(r, 1, 10_000_000),
    "--price-usd-per-gpu-hour": lambda r: floats(r, 1e-6, 1e4),
    "--gpu-memory-utilization": lambda r: floats(r, 0.0, 1.0),
    "--max-num-seqs": lambda r: ints(r, 1, 1_000_000),
    "--max-num-batched-tokens": lambda r: ints(r, 1, 100_000_000),
    "--max-model-len": lambda r: ints(r, 1, 100_000_000),
    "--max-cudagraph-tokens": lambda r: ints(r, 0, 10_000_000),
    "--prefix-hit-rate": lambda r: floats(r, 0.0, 1.0),
    "--spec-acceptance": lambda r: floats(r, 0.0, 1.0),
    "--spec-draft-tokens": lambda r: ints(r, 0, 64),
    "--spec-draft-cost": lambda r: floats(r, 0.0, 10.0),
    "--model": lambda r: r.choice(MODELS) if r.random() < 0.85 else r.choice(
        ["nope/model", "", "/", "/dev/null", "x" * 5000, "meta-llama/llama-3.1-8b", "tests/assets/tiny-llama"]),
    "--gpu": lambda r: r.choice(GPUS) if r.random() < 0.85 else r.choice(
        ["h200", "", "x.toml", "/dev/null", "y" * 5000, "H200-SXM", "hardware_specs"]),
    "--precision": lambda r: r.choice(["bf16", "fp8", "fp4", "int4", "native", "mxfp4", "nvfp4", "fp16", ""]),
    "--kv-precision": lambda r: r.choice(["bf16", "fp8", "fp4"]),
    "--engine": lambda r: r.choice(["vllm", "sglang", "ideal", "VLLM", "tgi"]),
    "--load": loads,
}
SWITCHES = ["--ideal", "--expert-parallel"]


def estimate_argv(r: random.Random) -> list[str]:
    argv = ["estimate"]
    for flag in r.sample(list(SCENARIO_FLAGS), r.choice([1, 1, 2, 2, 3, 4])):
        argv += [flag, SCENARIO_FLAGS[flag](r)]
    argv += [s for s in SWITCHES if r.random() < 0.15]
    if r.random() < 0.8:
        argv.append("--json")
    if r.random() < 0.03:
        argv.append(r.choice(["--bogus", "-h", "--isl"]))  # an unknown flag, help, a flag without its value
    return argv


def size_argv(r: random.Random) -> list[str]:
    argv = ["size", "--target-rps", floats(r, 0.0, 1e7) if r.random() < 0.6 else str(r.choice([1, 5, 20]))]
    for flag, gen in (("--ttft-slo-s", lambda: floats(r, 0.0, 86_400.0)), ("--itl-slo-s", lambda: floats(r, 0.0, 3_600.0)),
                      ("--tps", lambda: r.choice(["1", "2", "1,2", "0", "-2", "", ",", "1,x", "1025", "9" * 400, "8"]))):
        if r.random() < 0.4:
            argv += [flag, gen()]
    if "--tps" not in argv:
        argv += ["--tps", "1"]  # one TP size keeps a valid input fast
    for flag in r.sample(["--model", "--gpu", "--isl", "--osl", "--precision", "--max-num-seqs"], r.choice([0, 1, 2])):
        argv += [flag, SCENARIO_FLAGS[flag](r)]
    return argv + (["--json"] if r.random() < 0.7 else [])


def sweep_argv(r: random.Random, out: Path) -> list[str]:
    def listed(gen: Callable[[], str]) -> str:
        return ",".join(gen() for _ in range(r.choice([1, 1, 2])))

    argv = ["sweep", "--out", str(out), "--isl", "128", "--osl", "128", "--load-values", "1,8"]
    options = {
        "--model": lambda: listed(lambda: SCENARIO_FLAGS["--model"](r)),
        "--gpu": lambda: listed(lambda: SCENARIO_FLAGS["--gpu"](r)),
        "--precision": lambda: listed(lambda: SCENARIO_FLAGS["--precision"](r)),
        "--tp": lambda: listed(lambda: ints(r, 1, 1024)),
        "--isl": lambda: listed(lambda: ints(r, 1, 10_000_000)),
        "--osl": lambda: listed(lambda: ints(r, 1, 10_000_000)),
        "--load-kind": lambda: r.choice(["sync", "concurrency", "burst", "rate", "poisson"]),
        "--load-values": lambda: listed(lambda: floats(r, 0.0, 1e7)),
        "--price-usd-per-gpu-hour": lambda: floats(r, 1e-6, 1e4),
    }
    for flag in r.sample(list(options), r.choice([1, 2, 3])):
        argv += [flag, options[flag]()]
    return argv


def test_fuzz_cli_flags(tmp_path):
    r = random.Random(SEED)
    failures = Failures("CLI flag")
    for i in range(3_400):
        pick = r.random()
        if pick < 0.875:
            failures.check(estimate_argv(r))
        elif pick < 0.945:
            failures.check(size_argv(r))
        elif pick < 0.96:  # a sweep writes a file: the slowest input, so fewer of them
            out = tmp_path / f"grid{i}{r.choice(['.csv', '.csv', '.parquet'])}"
            argv = sweep_argv(r, out)
            failures.check(argv, lambda: check_sweep_file(out))
        elif pick < 0.98:
            failures.check([r.choice(["gpus", "models"])] + (["--json"] if r.random() < 0.7 else []))
        else:
            failures.check([r.choice(["", "estimat", "--json", "-x", "simulate-nothing", "size"])])
    failures.assert_none(3_400)


# --- config.json mutations ----------------------------------------------------------------------------------

SCHEMA_KEYS = ["num_hidden_layers", "hidden_size", "num_attention_heads", "vocab_size", "num_key_value_heads",
               "head_dim", "intermediate_size", "max_position_embeddings", "hidden_act", "tie_word_embeddings",
               "torch_dtype", "model_type", "num_experts", "n_routed_experts", "num_local_experts",
               "num_experts_per_tok", "experts_per_token", "moe_intermediate_size", "n_shared_experts",
               "shared_expert_intermediate_size", "first_k_dense_replace", "kv_lora_rank", "q_lora_rank",
               "qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim", "sliding_window", "use_sliding_window",
               "sliding_window_pattern", "max_window_layers", "layer_types", "architectures", "text_config",
               "vision_config", "quantization_config"]
VISION_KEYS = ["hidden_size", "intermediate_size", "num_hidden_layers", "patch_size", "num_channels", "image_size"]


def deep(levels: int) -> Any:
    v: Any = 1
    for _ in range(levels):
        v = [v]
    return v


def odd_value(r: random.Random, current: Any) -> Any:
    pick = r.random()
    if pick < 0.3 and isinstance(current, int) and not isinstance(current, bool) and 0 < current < 10**9:
        return r.choice([current * 2, max(1, current // 2), current + 1, r.randint(1, 4 * current)])  # plausible
    pick = r.random()
    if pick < 0.35 and isinstance(current, (int, float)) and not isinstance(current, bool) and abs(current) < 1e300:
        factor = r.choice([0, -1, 2, 10, 1000, 10**6, 10**12, 0.5, 1.5, 1e-9])
        return current * factor if r.random() < 0.8 else current + r.choice([-1, 1])
    if pick < 0.45 and isinstance(current, list):
        return r.choice([current[: len(current) // 2], current * 2, current[::-1], [], [None] * len(current),
                         ["sliding_attention"] * len(current), ["x"] * 100_000])
    return r.choice([None, True, False, 0, -1, 1, 2, 3, 7, 64, 2**31, 2**63, 10**400, 1e8, 1e308, math.nan, math.inf,
                     -math.inf, 0.5, 3.0, "", "12", "abc", "silu", [], [1], [[1]], {}, {"a": 1}, {"hidden_size": 4},
                     r.randint(0, 300_000), r.randint(-10, 10), deep(r.choice([5, 50]))])


def mutate_config(r: random.Random, cfg: dict[str, Any]) -> dict[str, Any]:
    cfg = json.loads(json.dumps(cfg))
    for _ in range(r.choice([1, 1, 2, 3])):
        holder = cfg
        if isinstance(cfg.get("text_config"), dict) and r.random() < 0.5:
            holder = cfg["text_config"]
        elif isinstance(cfg.get("vision_config"), dict) and r.random() < 0.2:
            holder = cfg["vision_config"]
            key = r.choice(VISION_KEYS)
            holder[key] = odd_value(r, holder.get(key))
            continue
        key = r.choice(list(holder) + SCHEMA_KEYS) if r.random() < 0.3 else r.choice(SCHEMA_KEYS)
        if key in holder and r.random() < 0.2:
            del holder[key]
        else:
            holder[key] = odd_value(r, holder.get(key))
    return cfg


def config_text(r: random.Random, cfg: dict[str, Any]) -> bytes:
    """A mutated config as file bytes; now and then the file itself is broken."""
    text = json.dumps(cfg)  # NaN/Infinity written as JSON's extensions, as transformers' writer does
    pick = r.random()
    if pick < 0.9:
        return text.encode()
    return r.choice([text[: r.randint(0, len(text))].encode(), b"", b"null", b"[]", b"1", b'"config"', b"\xff\xfe\x00",
                     bytes(r.randrange(256) for _ in range(200)), b"[" * 100_000, b'{"a":' * 50_000,
                     b"\xef\xbb\xbf" + text.encode(), text.replace('"', "'").encode()])


def physical_model_facts(cfg: dict[str, Any]) -> str | None:
    """parse_config either refuses with ConfigError or gives counts that are finite and non-negative."""
    try:
        m = parse_config(cfg, "fuzz", "fuzz/config.json")
    except ConfigError as exc:
        return None if "\n" not in str(exc) else f"multi-line ConfigError: {str(exc)[:200]!r}"
    except Exception as exc:  # noqa: BLE001  the point of the test
        return f"{type(exc).__name__}: {str(exc)[:200]}"
    numbers = [count_params(m).total, active_params_per_token(m), kv_bytes_per_token(m, 2.0)]
    if not all(math.isfinite(x) and x >= 0 for x in numbers):
        return f"non-physical counts {numbers}"
    return None


def test_fuzz_config_json(tmp_path):
    r = random.Random(SEED + 1)
    shipped = {mid: load_config_dict(mid) for mid in MODELS}
    failures = Failures("config.json")
    for i in range(1_700):
        cfg = mutate_config(r, shipped[r.choice(MODELS)])
        folder = tmp_path / f"m{i}"
        folder.mkdir()
        data = config_text(r, cfg)
        (folder / "config.json").write_bytes(data)
        target = str(folder) if r.random() < 0.5 else str(folder / "config.json")
        argv = ["estimate", "--model", target, "--json"]
        if r.random() < 0.3:
            argv += ["--load", r.choice(["burst:1000", "concurrency:64", "rate:5"])]
        if r.random() < 0.2:
            argv += ["--gpu", r.choice(["b200", "h100-sxm", "mi355x"]), "--precision", r.choice(["fp8", "fp4", "native"])]
        failures.check(argv, detail=f"config.json: {data[:300]!r}")
    for _ in range(1_200):  # straight through the parser: cheaper, so more of them
        cfg = mutate_config(r, shipped[r.choice(MODELS)])
        start = time.perf_counter()
        try:
            with watchdog(WATCHDOG_S):
                why = physical_model_facts(cfg)
        except Hung as exc:
            why = f"hang: {exc}"
        if why is None and time.perf_counter() - start > INPUT_LIMIT_S:
            why = f"took {time.perf_counter() - start:.2f} s"
        failures.count += 1
        if why:
            failures.add(why, json.dumps(cfg)[:400])
    failures.assert_none(2_900)


# --- GPU spec TOML mutations --------------------------------------------------------------------------------

TOML_VALUES = ["inf", "+inf", "-inf", "nan", "0", "-1", "0.0", "1e-320", "5e-324", "1e400", "1e308", "9" * 400, "true",
               '"text"', '""', "[]", "[1, 2]", "{ a = 1 }", "1979-05-27", "0x10", "1_000", "3.59", "700", "2",
               "[" * 5_000 + "]" * 5_000, '"' + "x" * 10_000 + '"', "[[1], [2]]", "1e15", "1e18", "1e19"]


def mutate_toml(r: random.Random, text: str) -> str:
    lines = text.split("\n")
    for _ in range(r.choice([1, 1, 2, 3])):
        assigned = [i for i, line in enumerate(lines) if re.match(r"^[a-z0-9_]+ = ", line)]
        i = r.choice(assigned)
        key = lines[i].split(" = ")[0]
        pick = r.random()
        number = re.search(r"= ([0-9.e_]+)$", lines[i])
        if pick < 0.35 and number:  # plausible: another GPU's number
            lines[i] = f"{key} = {float(number.group(1).replace('_', '')) * r.choice([0.5, 0.9, 1.1, 2, 3]):g}"
        elif pick < 0.75:
            lines[i] = f"{key} = {r.choice(TOML_VALUES)}"
        elif pick < 0.82:
            del lines[i]
        elif pick < 0.9:
            lines.insert(i, lines[i])  # a duplicated key
        else:
            if number:
                lines[i] = f"{key} = {float(number.group(1).replace('_', '')) * r.choice([0, -1, 1e6, 1e-9, 1e12]):g}"
    out = "\n".join(lines)
    if r.random() < 0.05:
        out = r.choice([out[: r.randint(0, len(out))], "", "x = " + "[" * 100_000, "\x00\xff", "[dense_flops_per_s]\n" * 3,
                        out.replace("[dense_flops_per_s]", "dense_flops_per_s = 1"), out + "\nextra_field = 1\n"])
    return out


def test_fuzz_gpu_toml(tmp_path):
    r = random.Random(SEED + 2)
    shipped = {p.stem: p.read_text() for p in GPU_FILES}
    shipped_lines = {line for text in shipped.values() for line in text.split("\n")}
    failures = Failures("GPU TOML")
    for i in range(1_000):
        path = tmp_path / f"gpu{i}.toml"
        text = mutate_toml(r, shipped[r.choice(GPUS)])
        path.write_text(text, encoding="utf-8", errors="surrogateescape")
        changed = "; ".join(line for line in text.split("\n") if line not in shipped_lines)[:300]
        argv = ["estimate", "--gpu", str(path), "--json"]
        if r.random() < 0.3:
            argv += ["--precision", r.choice(["fp8", "fp4", "int4"]), "--load", r.choice(["burst:1000", "rate:10"])]
        failures.check(argv, detail=f"changed lines: {changed!r}")
        if r.random() < 0.05:
            failures.check(["size", "--gpu", str(path), "--target-rps", "10", "--tps", "1", "--json"],
                           detail=f"changed lines: {changed!r}")
    failures.assert_none(1_000)


# --- calibration files (--calibration) -----------------------------------------------------------------------


def test_fuzz_calibration_file(tmp_path):
    r = random.Random(SEED + 3)
    shipped = [json.loads(p.read_text()) for p in sorted((REPO / "capacity" / "calibrations").glob("*.json"))]
    failures = Failures("calibration")
    for i in range(400):
        cal = json.loads(json.dumps(r.choice(shipped)))
        for _ in range(r.choice([1, 2])):
            holder = cal.get("efficiency") if isinstance(cal.get("efficiency"), dict) and r.random() < 0.8 else cal
            key = r.choice(list(holder) or ["efficiency"])
            holder[key] = odd_value(r, holder.get(key))
        data = config_text(r, cal)
        path = tmp_path / f"cal{i}.json"
        path.write_bytes(data)
        failures.check(["estimate", "--calibration", str(path), "--json"] +
                       (["--load", r.choice(["burst:1000", "rate:5", "concurrency:64"])] if r.random() < 0.5 else []),
                       detail=f"calibration: {data[:300]!r}")
    failures.assert_none(400)


# --- real processes -----------------------------------------------------------------------------------------


@pytest.mark.parametrize("argv", [
    ["estimate", "--isl", "9" * 400, "--json"],
    ["size", "--tps", "", "--target-rps", "5"],
    ["sweep", "--isl", "-100", "--load-values", "-3"],
    ["estimate", "--model", str(REPO / "tests" / "assets" / "tiny-llama"), "--json"],
], ids=["huge-isl", "empty-tps", "negative-sweep", "tiny-llama-ok"])
def test_fuzz_real_process(argv, tmp_path):
    """The installed entry point as a process: exit 0, or exit 2 with exactly one line on stderr."""
    script = Path(sys.executable).parent / "capacity"  # the console script pip installed, else the module
    command = [str(script)] if script.exists() else [sys.executable, "-m", "capacity.cli"]
    proc = subprocess.run([*command, *argv], capture_output=True, text=True, cwd=tmp_path, timeout=120,
                          env={**os.environ, "PYTHONPATH": str(REPO)})
    why = problem(argv, proc.returncode, proc.stdout, proc.stderr, 0.0)
    assert why is None, f"{why}: {proc.stderr[:500]}"
    assert proc.returncode == (0 if "tiny-llama" in argv[-2] else 2)
    assert not list(tmp_path.iterdir())  # a refused sweep wrote nothing

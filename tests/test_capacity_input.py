"""Bad input to the capacity model is refused where it enters, on one line naming the file or flag and the field
(issue 14's reproducers, one test per class); good input still parses as before."""

from __future__ import annotations

import contextlib
import io
import json
import math
import subprocess
import time
from pathlib import Path

import pytest

from capacity.model.architecture import catalog_ids, load_config_dict, load_model, parse_config
from capacity.cli import _print_json, main
from capacity.model.config_schema import LAYERS_MAX
from capacity.errors import ConfigError, ResultError, flatten_validation_error
from capacity.estimate import Scenario
from capacity.hardware import load_gpu, parse_gpu_file

REPO = Path(__file__).resolve().parents[1]
LLAMA = load_config_dict("meta-llama/Llama-3.1-8B")
GEMMA = load_config_dict("google/gemma-3-27b-it")
DEEPSEEK = load_config_dict("deepseek-ai/DeepSeek-V3")
MIXTRAL = load_config_dict("mistralai/Mixtral-8x7B-v0.1")
H200_TOML = (REPO / "hardware_specs" / "h200-sxm.toml").read_text()


def cli(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = main(list(argv))
    return rc, out.getvalue(), err.getvalue()


def one_error_line(err: str) -> str:
    lines = err.strip("\n").split("\n")
    assert len(lines) == 1, err
    assert "Traceback" not in err and "usage:" not in err
    return lines[0]


def write_config(tmp_path: Path, cfg, name: str = "config.json") -> str:
    path = tmp_path / name
    path.write_text(cfg if isinstance(cfg, str) else json.dumps(cfg))
    return str(path)


# --- config.json -------------------------------------------------------------------------------------------


def test_the_error_names_file_field_expectation_and_value(tmp_path):
    path = write_config(tmp_path, {**LLAMA, "num_attention_heads": 0})
    rc, _, err = cli("estimate", "--model", path)
    assert rc == 2
    assert one_error_line(err) == (f"ConfigError: {path}: num_attention_heads: expected a positive integer up to "
                                   "65,536, got 0")


@pytest.mark.parametrize("value, shown", [([32], "a list of 1 item"), ({"n": 32}, "an object"), (True, "true"),
                                          (math.inf, "Infinity"), (math.nan, "NaN"), (10**400, "a 401-digit number"),
                                          ("32", "'32'"), (32.5, "32.5"), (-32, "-32")])
def test_an_integer_field_refuses_other_types(value, shown):
    with pytest.raises(ConfigError, match=f"num_hidden_layers: expected a positive integer up to 1,000, got {shown}$"):
        parse_config({**LLAMA, "num_hidden_layers": value}, "x", "cfg.json")


def test_null_is_absent_so_a_required_null_is_missing():
    with pytest.raises(ConfigError, match="hidden_size: config.json lacks required field 'hidden_size'"):
        parse_config({**LLAMA, "hidden_size": None})


def test_vision_and_text_config_must_be_objects():
    with pytest.raises(ConfigError, match="vision_config: expected an object, got 1"):
        parse_config({**GEMMA, "vision_config": 1})
    with pytest.raises(ConfigError, match="text_config: expected an object, got 'x'"):
        parse_config({**GEMMA, "text_config": "x"})
    with pytest.raises(ConfigError, match=r"vision_config\.patch_size: expected a positive integer"):
        parse_config({**GEMMA, "vision_config": {**GEMMA["vision_config"], "patch_size": 0}})


def test_a_field_read_from_text_config_is_named_so():
    cfg = {**GEMMA, "text_config": {**GEMMA["text_config"], "num_hidden_layers": 2**63}}
    start = time.perf_counter()
    with pytest.raises(ConfigError, match=r"text_config\.num_hidden_layers: expected a positive integer up to 1,000"):
        parse_config(cfg)
    assert time.perf_counter() - start < 0.5  # refused, not computed (it used to never return)


def test_sizes_past_any_real_model_are_refused():
    for field, value in (("num_hidden_layers", LAYERS_MAX + 1), ("num_hidden_layers", 10**8), ("vocab_size", 10**7 + 1),
                         ("hidden_size", 10**6 + 1), ("max_position_embeddings", 10**8 + 1)):
        with pytest.raises(ConfigError, match=field):
            parse_config({**LLAMA, field: value})
    with pytest.raises(ConfigError, match="num_local_experts: expected an integer from 0 to 100,000"):
        parse_config({**MIXTRAL, "num_local_experts": 100_001})
    assert parse_config({**LLAMA, "num_hidden_layers": LAYERS_MAX}).num_layers == LAYERS_MAX


def test_mla_config_without_its_head_dims_is_refused():
    cfg = {k: v for k, v in DEEPSEEK.items() if k != "qk_nope_head_dim"}
    with pytest.raises(ConfigError, match="qk_nope_head_dim: an MLA config .* lacks required field 'qk_nope_head_dim'"):
        parse_config(cfg)


def test_impossible_values_are_refused_not_computed():
    with pytest.raises(ConfigError, match="intermediate_size: expected an integer from 0"):
        parse_config({**LLAMA, "intermediate_size": -14336})
    for window in (-4096, 0, math.nan):
        with pytest.raises(ConfigError, match="sliding_window: expected a positive integer"):
            parse_config({**LLAMA, "sliding_window": window})
    with pytest.raises(ConfigError, match=r"num_experts_per_tok: expected at most the number of experts \(8\), got 9"):
        parse_config({**MIXTRAL, "num_experts_per_tok": 9})
    with pytest.raises(ConfigError, match="num_key_value_heads: expected at most num_attention_heads"):
        parse_config({**LLAMA, "num_key_value_heads": 64})
    with pytest.raises(ConfigError, match="first_k_dense_replace: expected at most num_hidden_layers"):
        parse_config({**DEEPSEEK, "first_k_dense_replace": 62})
    with pytest.raises(ConfigError, match="head_dim: absent"):
        parse_config({**LLAMA, "hidden_size": 16})
    with pytest.raises(ConfigError, match="sliding_window: layer_types names sliding-window layers"):
        parse_config({**LLAMA, "layer_types": ["sliding_attention"] * 32})


def test_a_dense_model_without_its_mlp_width_is_refused_not_a_tiny_model(tmp_path):
    """A config.json without intermediate_size used to price a model with no MLP (a third of Llama-8B's weights)."""
    path = write_config(tmp_path, {k: v for k, v in LLAMA.items() if k != "intermediate_size"})
    rc, _, err = cli("estimate", "--model", path)
    assert rc == 2 and one_error_line(err).startswith(f"ConfigError: {path}: intermediate_size: a dense model needs")
    with pytest.raises(ConfigError, match="intermediate_size: 3 dense layers"):
        parse_config({k: v for k, v in DEEPSEEK.items() if k != "intermediate_size"})
    assert parse_config({k: v for k, v in MIXTRAL.items()}).moe is not None  # MoE everywhere: expert width suffices


def test_a_zero_context_length_is_refused(tmp_path):
    path = write_config(tmp_path, {**LLAMA, "max_position_embeddings": 0})
    rc, _, err = cli("estimate", "--model", path)
    assert rc == 2 and "max_position_embeddings: expected a positive integer" in one_error_line(err)


def test_strict_booleans_and_strings():
    with pytest.raises(ConfigError, match="tie_word_embeddings: expected true or false, got 'false'"):
        parse_config({**LLAMA, "tie_word_embeddings": "false"})  # bool("false") was True
    with pytest.raises(ConfigError, match="architectures: expected a list of at most 1,000 strings"):
        parse_config({**LLAMA, "architectures": "LlamaForCausalLM"})
    with pytest.raises(ConfigError, match="quantization_config: expected an object"):
        parse_config({**LLAMA, "quantization_config": 3})


def test_json_nested_absurdly_deep_is_a_config_error(tmp_path):
    path = write_config(tmp_path, "[" * 100_000 + "]" * 100_000)
    rc, _, err = cli("estimate", "--model", path)
    assert rc == 2 and one_error_line(err) == f"ConfigError: {path}: not a config.json: JSON nested too deeply"
    path = write_config(tmp_path, json.dumps({**LLAMA, "rope_scaling": None})[:-1] + ', "x": ' + "[" * 100_000 + "}",
                        "c2.json")
    rc, _, err = cli("estimate", "--model", path)
    assert rc == 2 and "ConfigError" in one_error_line(err)


def test_unreadable_files_are_one_line(tmp_path):
    for data in (b"\xff\xfe\x00\x01", b"", b"[]", b"null", b'{"hidden_size": 8', b"1" * 5000):
        path = tmp_path / "config.json"
        path.write_bytes(data)
        load_model.cache_clear()
        load_config_dict.cache_clear()
        rc, _, err = cli("estimate", "--model", str(path))
        assert rc == 2 and one_error_line(err).startswith(f"ConfigError: {path}"), (data, err)


def test_well_formed_variants_still_parse():
    base = parse_config(LLAMA, "llama")
    assert parse_config({**LLAMA, "hidden_size": 4096.0}, "llama") == base  # an integral float is a whole number
    assert parse_config({**LLAMA, "sliding_window": None, "head_dim": None}, "llama") == base  # null = absent
    assert load_model("mistralai/Mistral-7B-v0.1").sliding_window == 4096
    for mid in catalog_ids():  # the shipped catalog: every file passes the schema
        assert load_model(mid).num_layers > 0


def test_a_byte_order_mark_is_skipped(tmp_path):
    path = tmp_path / "bom" / "config.json"
    path.parent.mkdir()
    path.write_bytes(b"\xef\xbb\xbf" + json.dumps(LLAMA).encode())
    assert load_model(str(path.parent)).hidden_size == 4096


# --- GPU spec TOML -----------------------------------------------------------------------------------------


@pytest.mark.parametrize("old, new, expected", [
    ("price_usd_per_gpu_hour = 3.59", "price_usd_per_gpu_hour = inf", "price_usd_per_gpu_hour: expected a finite number"),
    ("price_usd_per_gpu_hour = 3.59", "price_usd_per_gpu_hour = nan", "price_usd_per_gpu_hour: expected a finite number"),
    ("price_usd_per_gpu_hour = 3.59", "price_usd_per_gpu_hour = -1", "price_usd_per_gpu_hour: expected greater than"),
    ("memory_bandwidth_bytes_per_s = 4.8e12", "memory_bandwidth_bytes_per_s = 5e-324",
     "memory_bandwidth_bytes_per_s: expected greater than or equal to"),
    ("bf16 = 989e12", "bf16 = 1e300", r"dense_flops_per_s\.bf16: expected less than or equal to"),
    ("scale_up_domain_size = 8", "scale_up_domain_size = true", "scale_up_domain_size: expected a valid integer"),
    ('notes = "Same compute as H100 SXM, 1.43x the bandwidth."', "notes = " + "[" * 50_000 + "]" * 50_000,
     "TOML nested too deeply"),
])
def test_gpu_spec_values_are_checked(tmp_path, old, new, expected):
    assert old in H200_TOML
    path = tmp_path / "gpu.toml"
    path.write_text(H200_TOML.replace(old, new))
    with pytest.raises(ConfigError, match=f"GPU spec {path}.*{expected}"):
        parse_gpu_file(path)
    rc, _, err = cli("estimate", "--gpu", str(path), "--json")
    assert rc == 2 and one_error_line(err).startswith("ConfigError: GPU spec")


def test_shipped_gpu_files_load_unchanged():
    assert load_gpu("h200-sxm").price_usd_per_gpu_hour == 3.59
    assert load_gpu("h200-sxm").usable_memory_bytes == 150_110_000_000


# --- CLI flags ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("argv, flag", [
    (["size", "--target-rps", "5", "--tps", "0"], "--tps"),
    (["sweep", "--tp", "0"], "--tp"),
    (["size", "--target-rps", "inf"], "--target-rps"),
    (["estimate", "--isl", "9" * 400], "--isl"),
    (["estimate", "--max-num-seqs", "9" * 400], "--max-num-seqs"),
    (["estimate", "--max-cudagraph-tokens", "9" * 400], "--max-cudagraph-tokens"),
    (["size", "--target-rps", "5", "--tps", ""], "--tps"),
    (["sweep", "--isl", "-100", "--load-values", "-3"], "--isl"),
    (["sweep", "--load-values", "-3"], "--load-values"),
    (["sweep", "--load-values", "nan"], "--load-values"),
    (["sweep", "--load-values", "1,inf"], "--load-values"),
    (["sweep", "--load-kind", "burst", "--load-values", "2.5"], "--load-values"),
    (["size", "--target-rps", "5", "--tps", "-2"], "--tps"),
    (["estimate", "--load", "rate:5e-324", "--json"], "--load"),
    (["estimate", "--price-usd-per-gpu-hour", "inf", "--json"], "--price-usd-per-gpu-hour"),
    (["estimate", "--gpu-memory-utilization", "nan"], "--gpu-memory-utilization"),
    (["estimate", "--isl", "x"], "--isl"),
    (["estimate", "--isl"], "--isl"),
    (["estimate", "--precision", "fp12"], "--precision"),
    (["sweep", "--precision", "bf16,fp12"], "--precision"),
])
def test_bad_flags_are_one_line_naming_the_flag(argv, flag, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # a sweep that wrongly ran would write here, not in the repository
    rc, out, err = cli(*argv)
    assert rc == 2 and out == ""
    line = one_error_line(err)
    assert line.startswith("InputError: ") and f"argument {flag}" in line, line
    assert not list(tmp_path.iterdir())


def test_results_are_printed_only_when_finite():
    with pytest.raises(ResultError, match="x.y = Infinity"):
        _print_json({"x": {"y": math.inf}})
    with pytest.raises(ResultError, match="rows.0 = -1"):
        _print_json({"rows": [-1]})
    rc, out, _ = cli("estimate", "--load", "rate:0.001", "--json")  # the slowest rate allowed: costs stay finite
    assert rc == 0 and json.loads(out, parse_constant=lambda c: pytest.fail(c))["usd_per_million_output_tokens"] > 0


def test_validation_errors_are_flattened_to_one_line():
    with pytest.raises(Exception) as exc:
        Scenario(num_gpus=0, tp=0)
    assert flatten_validation_error(exc.value, {"num_gpus": "--num-gpus"}) == (
        "--num-gpus: expected greater than or equal to 1, got 0 (and 1 more)")


def test_help_and_good_runs_still_work():
    rc, out, err = cli("estimate", "--json")
    assert rc == 0 and json.loads(out)["model"] == "meta-llama/Llama-3.1-8B" and err == ""
    rc, out, _ = cli("size", "--target-rps", "5", "--tps", "1", "--json")
    assert rc == 0 and json.loads(out)[0]["tp"] == 1


# --- make app ----------------------------------------------------------------------------------------------


def test_make_app_binds_localhost_unless_asked():
    def command(*extra: str) -> str:
        out = subprocess.run(["make", "-n", "app", *extra], capture_output=True, text=True, cwd=REPO, check=True,
                             env={"PATH": "/usr/bin:/bin", "HOST": "some-host-name"}).stdout
        return [line for line in out.splitlines() if "streamlit run" in line][-1]

    assert "--server.address 127.0.0.1 " in command() + " "
    assert "--server.address 0.0.0.0 " in command("HOST=0.0.0.0") + " "

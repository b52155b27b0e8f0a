"""The GPU specification files in ``hardware_specs/`` load, agree with hand arithmetic and carry sources."""

from __future__ import annotations

import re

import pytest

from capacity.errors import ConfigError, UnknownGpuError
from capacity.hardware import SOURCED_FIELDS, gpu_catalog, load_gpu, parse_gpu_file

REQUIRED_IDS = {
    "h100-sxm",
    "h100-pcie",
    "h100-nvl",
    "h200-sxm",
    "h200-nvl",
    "b200",
    "b300",
    "gb200",
    "gb300",
    "rtx-pro-6000",
    "l40s",
    "l4",
    "a100-80gb-sxm",
    "a10g",
    "mi300x",
    "mi325x",
    "mi355x",
}

MIB = 2**20
CATALOG = gpu_catalog()
ALL_IDS = sorted(CATALOG)


def rel_close(a: float, b: float, tol: float = 0.01) -> bool:
    return abs(a - b) <= tol * abs(b)


# --- catalog ---------------------------------------------------------------------------------


def test_every_required_gpu_is_in_the_catalog():
    missing = REQUIRED_IDS - set(CATALOG)
    assert not missing, f"missing GPU spec files: {sorted(missing)}"
    assert len(REQUIRED_IDS) == 17


@pytest.mark.parametrize("gpu_id", ALL_IDS)
def test_file_name_matches_id(gpu_id):
    # gpu_catalog() parsed every *.toml; the file name must be the id so load_gpu(id) is predictable.
    import importlib.resources

    names = {e.name for e in importlib.resources.files("hardware_specs").iterdir()}
    assert f"{gpu_id}.toml" in names


@pytest.mark.parametrize("gpu_id", ALL_IDS)
def test_every_file_starts_with_a_header_comment(gpu_id):
    import importlib.resources

    text = (importlib.resources.files("hardware_specs") / f"{gpu_id}.toml").read_text()
    assert text.startswith("# "), f"{gpu_id}.toml needs a header comment line"


# --- invariants over all GPUs ----------------------------------------------------------------


@pytest.mark.parametrize("gpu_id", ALL_IDS)
def test_precision_ordering(gpu_id):
    f = CATALOG[gpu_id].dense_flops_per_s
    if f.fp8 is not None:
        assert f.fp8 >= f.bf16, "fp8 peak below bf16"
    if f.fp4 is not None:
        assert f.fp8 is not None, "fp4 without fp8"
        assert f.fp4 >= f.fp8, "fp4 peak below fp8"


@pytest.mark.parametrize("gpu_id", ALL_IDS)
def test_usable_memory_is_close_to_the_label(gpu_id):
    g = CATALOG[gpu_id]
    assert g.usable_memory_bytes <= g.memory_bytes * 1.1
    # and not absurdly low either (a unit slip such as GB vs MiB would show here)
    assert g.usable_memory_bytes >= g.memory_bytes * 0.9


@pytest.mark.parametrize("gpu_id", ALL_IDS)
def test_every_numeric_field_has_a_source(gpu_id):
    g = CATALOG[gpu_id]
    for field in SOURCED_FIELDS:
        if getattr(g, field) is not None:
            assert g.sources.get(field, "").strip(), f"{gpu_id}: no source for {field}"
    # vendor pages are cited as real URLs, not as the reference's [KEY] shorthand
    for field, text in g.sources.items():
        assert not re.search(r"\[[A-Z][A-Z0-9-]+\]", text), f"{gpu_id}.{field} cites a [KEY], not a URL"
    assert "http" in g.sources["memory_bytes"]
    assert "http" in g.sources["dense_flops_per_s"]


@pytest.mark.parametrize("gpu_id", ALL_IDS)
def test_price_fields_come_together(gpu_id):
    g = CATALOG[gpu_id]
    if g.price_usd_per_gpu_hour is None:
        assert g.price_date is None and g.price_provider is None
        assert "price" in g.notes.lower(), "an omitted price must be explained in notes"
    else:
        assert re.fullmatch(r"20\d\d-(0[1-9]|1[0-2])", g.price_date or ""), "price_date must be YYYY-MM"
        assert g.price_provider


@pytest.mark.parametrize("gpu_id", ALL_IDS)
def test_fp4_formats_match_fp4_support(gpu_id):
    g = CATALOG[gpu_id]
    assert (g.dense_flops_per_s.fp4 is not None) == bool(g.fp4_formats)
    assert set(g.fp4_formats) <= {"nvfp4", "mxfp4"}


@pytest.mark.parametrize("gpu_id", ALL_IDS)
def test_gpus_without_nvlink_have_a_domain_of_one(gpu_id):
    g = CATALOG[gpu_id]
    if "no NVLink" in g.interconnect_name:
        assert g.scale_up_domain_size == 1
        assert "PCIe" in g.interconnect_name


# --- hand checks, arithmetic written out -----------------------------------------------------


def test_h100_sxm_bf16_is_half_the_sparse_datasheet_figure():
    # datasheet: 1,979 TFLOPS BF16 "with sparsity" -> dense = 1979e12 / 2 = 989.5e12
    assert rel_close(load_gpu("h100-sxm").dense_flops_per_s.bf16, 1979e12 / 2)


def test_h200_ridge_point():
    # 989e12 FLOP/s / 4.8e12 B/s = 206.04 FLOP/byte
    assert load_gpu("h200-sxm").ridge_point_flops_per_byte == pytest.approx(989e12 / 4.8e12)
    assert load_gpu("h200-sxm").ridge_point_flops_per_byte == pytest.approx(206, abs=0.5)


def test_h100_and_h200_share_compute():
    # same GH100 die: H200 only changes memory (80 -> 141 GB, 3.35 -> 4.8 TB/s = 1.43x)
    h100, h200 = load_gpu("h100-sxm"), load_gpu("h200-sxm")
    assert h100.dense_flops_per_s == h200.dense_flops_per_s
    assert h200.memory_bandwidth_bytes_per_s / h100.memory_bandwidth_bytes_per_s == pytest.approx(4.8 / 3.35)


def test_nvidia_smi_capacities_in_mib():
    # nvidia-smi totals in MiB * 2**20
    # H200: what CUDA reports (139.8 GiB, the total vLLM budgets from), measured on the lent H200;
    # nvidia-smi shows 143,771 MiB
    assert load_gpu("h200-sxm").usable_memory_bytes == pytest.approx(139.8 * 2**30, rel=1e-4)
    assert load_gpu("h200-nvl").usable_memory_bytes == 143_771 * MIB  # assumption: same as SXM
    # H100 SXM: what CUDA reports (79.18 GiB), measured on the lent H100 (sitting 29); nvidia-smi shows 81,559 MiB
    assert load_gpu("h100-sxm").usable_memory_bytes == pytest.approx(79.18 * 2**30, rel=1e-4)
    assert load_gpu("a100-80gb-sxm").usable_memory_bytes == 81_920 * MIB  # 85,899,345,920
    assert load_gpu("b300").usable_memory_bytes == 275_040 * MIB
    assert load_gpu("gb200").usable_memory_bytes == 189_471 * MIB
    assert load_gpu("gb300").usable_memory_bytes == 284_208 * MIB
    assert load_gpu("a10g").usable_memory_bytes == 23_028 * MIB  # 24,146,608,128 ~ 24 GB label
    assert load_gpu("rtx-pro-6000").usable_memory_bytes == 97_887 * MIB


def test_b200_plans_on_180_gb():
    b200 = load_gpu("b200")
    # HGX/DGX B200: 1,440 GB / 8 GPUs = 180 GB (192 GB physical is not the planning figure)
    assert b200.memory_bytes == 1440e9 / 8
    # nvidia-smi shows ~178-180 GiB
    assert 178 * 2**30 <= b200.usable_memory_bytes <= 180 * 2**30


def test_blackwell_dense_peaks():
    # HGX B200: 4.5 PF FP8 sparse-headline pairs -> dense 2.25 / 4.5 / 9 PF
    b200 = load_gpu("b200").dense_flops_per_s
    assert (b200.bf16, b200.fp8, b200.fp4) == (2250e12, 4500e12, 9000e12)
    # GB200 NVL72: NVFP4 720 PF dense per rack / 72 GPUs = 10 PF per GPU
    assert load_gpu("gb200").dense_flops_per_s.fp4 == pytest.approx(720e15 / 72)
    # B300: Ultra datasheet 14 PF; HGX page 108 PF / 8 = 13.5 PF -> the two agree within 4 %
    assert rel_close(load_gpu("b300").dense_flops_per_s.fp4, 108e15 / 8, tol=0.04)
    # Blackwell Ultra cut INT8: ~307 TOPS sparse / 2 ~ 150 TOPS, far below FP8
    assert load_gpu("b300").dense_flops_per_s.int8 < 0.05 * load_gpu("b300").dense_flops_per_s.fp8


def test_interconnect_is_half_the_bidirectional_headline():
    # NVLink 4: 900 GB/s bidirectional -> 450 per direction; NVLink 5: 1.8 TB/s -> 900
    assert load_gpu("h100-sxm").interconnect_bytes_per_s_per_direction == 900e9 / 2
    assert load_gpu("b200").interconnect_bytes_per_s_per_direction == 1800e9 / 2
    # MI300X: 7 links x 128 GB/s = 896 GB/s aggregate bidirectional -> 448 per direction
    assert load_gpu("mi300x").interconnect_bytes_per_s_per_direction == 7 * 128e9 / 2
    # MI355X: 7 x 153.6 = 1,075.2 GB/s -> ~537.6 per direction
    assert rel_close(load_gpu("mi355x").interconnect_bytes_per_s_per_direction, 7 * 153.6e9 / 2)
    # PCIe Gen4 x16: 64 GB/s bidirectional -> 32 per direction
    assert load_gpu("l40s").interconnect_bytes_per_s_per_direction == 64e9 / 2


def test_amd_notes_mention_the_per_peer_limit():
    assert "64 GB/s" in load_gpu("mi300x").notes
    assert "64 GB/s" in load_gpu("mi325x").notes
    assert "76.5 GB/s" in load_gpu("mi355x").notes


def test_unsupported_precisions_are_absent():
    a100 = load_gpu("a100-80gb-sxm").dense_flops_per_s
    assert a100.fp8 is None and a100.fp4 is None
    for hopper in ("h100-sxm", "h100-pcie", "h100-nvl", "h200-sxm", "h200-nvl"):
        assert load_gpu(hopper).dense_flops_per_s.fp4 is None
    # peak_flops_per_s falls back to the next wider format: A100 fp8 -> bf16
    assert load_gpu("a100-80gb-sxm").peak_flops_per_s("fp8") == 312e12


def test_fp4_formats_by_vendor():
    for gid in ("b200", "b300", "gb200", "gb300", "rtx-pro-6000"):
        assert load_gpu(gid).fp4_formats == ("nvfp4", "mxfp4")
    assert load_gpu("mi355x").fp4_formats == ("mxfp4",)
    assert load_gpu("h200-sxm").fp4_formats == ()


def test_omitted_prices():
    for gid in ("h200-nvl", "gb300", "mi355x"):
        assert load_gpu(gid).price_usd_per_gpu_hour is None
    assert load_gpu("h100-sxm").price_usd_per_gpu_hour == 2.99
    assert load_gpu("mi300x").price_usd_per_gpu_hour == 1.50


# --- loading and errors ----------------------------------------------------------------------


def test_unknown_gpu_suggests_the_closest_id():
    with pytest.raises(UnknownGpuError) as exc:
        load_gpu("h200")
    message = str(exc.value)
    assert "did you mean" in message
    assert "h200-sxm" in message


def test_ids_are_case_insensitive():
    assert load_gpu("H200-SXM").id == "h200-sxm"


def _user_toml(gpu_id: str = "my-gpu") -> str:
    return f"""# a user's own GPU
id = "{gpu_id}"
name = "My GPU"
vendor = "Acme"
release_year = 2026
memory_label = "64 GB HBM"
memory_bytes = 64e9
usable_memory_bytes = 63e9
memory_bandwidth_bytes_per_s = 2e12
interconnect_name = "PCIe Gen5 x16 (no NVLink)"
interconnect_bytes_per_s_per_direction = 64e9
scale_up_domain_size = 1
tdp_watts = 400

[dense_flops_per_s]
bf16 = 400e12
fp8 = 800e12

[sources]
memory_bytes = "my datasheet"
usable_memory_bytes = "my nvidia-smi"
memory_bandwidth_bytes_per_s = "my datasheet"
dense_flops_per_s = "my datasheet"
interconnect_bytes_per_s_per_direction = "my datasheet"
tdp_watts = "my datasheet"
"""


def test_loading_a_user_toml_file(tmp_path):
    path = tmp_path / "my-gpu.toml"
    path.write_text(_user_toml())
    gpu = load_gpu(str(path))
    assert gpu.id == "my-gpu"
    assert gpu.ridge_point_flops_per_byte == pytest.approx(400e12 / 2e12)  # 200 FLOP/byte
    assert gpu.price_usd_per_gpu_hour is None
    assert gpu.peak_flops_per_s("fp4") == 800e12  # no fp4 -> falls back to fp8


def test_malformed_toml_raises_config_error(tmp_path):
    path = tmp_path / "broken.toml"
    path.write_text('id = "broken"\nname = [unterminated\n')
    with pytest.raises(ConfigError, match="not valid TOML"):
        load_gpu(str(path))


def test_missing_source_raises_config_error(tmp_path):
    path = tmp_path / "nosource.toml"
    path.write_text(_user_toml().replace('tdp_watts = "my datasheet"\n', ""))
    with pytest.raises(ConfigError, match="tdp_watts"):
        parse_gpu_file(path)


def test_usable_above_label_plus_ten_percent_raises_config_error(tmp_path):
    path = tmp_path / "toobig.toml"
    path.write_text(_user_toml().replace("usable_memory_bytes = 63e9", "usable_memory_bytes = 71e9"))
    with pytest.raises(ConfigError):
        parse_gpu_file(path)


def test_unreadable_file_raises_config_error(tmp_path):
    with pytest.raises(ConfigError):
        parse_gpu_file(tmp_path / "does-not-exist.toml")


def test_achievable_matmul_is_below_the_peak_and_sourced():
    """The measured maximum-achievable matmul (stas00's MAMF table, AMD's max-achievable FLOPs) is a share of the
    dense peak: H100/H200 ~80 % at bf16, MI300X ~54 % (its clocks drop under GEMM load)."""
    shares = {g.id: g.achievable_matmul_share("bf16") for g in gpu_catalog().values()}
    known = {k: v for k, v in shares.items() if v is not None}
    assert {"h200-sxm", "b200", "mi300x"} <= set(known)
    assert all(0.3 < v <= 1.0 for v in known.values())
    assert known["h200-sxm"] == pytest.approx(0.803, abs=0.005) and known["mi300x"] == pytest.approx(0.542, abs=0.005)
    for gid in known:
        assert "achievable_matmul_flops_per_s" in load_gpu(gid).sources


def test_achievable_above_the_peak_is_a_one_line_error(tmp_path):
    import importlib.resources

    spec = importlib.resources.files("hardware_specs") / "h200-sxm.toml"
    text = (spec.read_text(encoding="utf-8").replace("[achievable_matmul_flops_per_s]\nbf16 = 794.5e12",
                                                          "[achievable_matmul_flops_per_s]\nbf16 = 994.5e12"))
    bad = tmp_path / "h200-sxm.toml"
    bad.write_text(text)
    with pytest.raises(ConfigError, match=r"h200-sxm.toml.*achievable_matmul_flops_per_s exceeds the dense peak"):
        parse_gpu_file(bad)


def test_an_extrapolated_calibration_carries_the_gpus_achievable_gemm_shares():
    """A calibration fitted on the H200 and applied to an MI325X (no calibration of its own; the MI300X has a public
    one now) scales its GEMM shares by the two GPUs' measured maximum-achievable matmul (fp8: 58.1 % against 73.4 %)
    and says so; on its own GPU it is untouched, and where a GPU has no published figure (L4) nothing is scaled."""
    from capacity.calibration import find_calibration, shipped_calibrations

    base = shipped_calibrations()[("vllm", "h200-sxm", "fp8")].efficiency
    mi = find_calibration("vllm", "mi325x", "fp8")
    r = load_gpu("mi325x").achievable_matmul_share("fp8") / load_gpu("h200-sxm").achievable_matmul_share("fp8")
    assert mi.efficiency.matmul == pytest.approx(base.matmul * r) and r == pytest.approx(0.791, abs=0.005)
    assert mi.efficiency.weight_bandwidth == base.weight_bandwidth
    assert "maximum-achievable" in mi.extrapolated
    assert find_calibration("vllm", "h200-sxm", "fp8").efficiency.matmul == base.matmul
    l4 = find_calibration("vllm", "l4", "fp8")
    assert l4.efficiency.matmul == base.matmul and "maximum-achievable" not in l4.extrapolated

"""Streamlit-cached wrappers of appkit.compute / appkit.measured. Scenarios travel as JSON strings (hashable,
exact); results are cached per input, so moving a widget back and forth never recomputes."""

from __future__ import annotations

import os
from pathlib import Path

import pandas as pd
import streamlit as st

from appkit import compute, measured
from capacity import Scenario
from capacity.model.architecture import load_model
from capacity.errors import CapacityError

ROOT = Path(__file__).resolve().parent.parent


def measurements_dir() -> Path:
    """The project's measurements (data/measurements); LLMCAP_MEASUREMENTS_DIR points elsewhere (tests)."""
    return Path(os.environ.get("LLMCAP_MEASUREMENTS_DIR") or ROOT / "data" / "measurements")


def _s(scenario_json: str) -> Scenario:
    return Scenario.model_validate_json(scenario_json)


@st.cache_data(show_spinner=False, max_entries=64)
def is_moe(model: str) -> bool:
    try:
        return load_model(model).moe is not None
    except CapacityError:
        return False


@st.cache_data(show_spinner=False, max_entries=512)
def headline(scenario_json: str, ttft_slo_s: float, itl_slo_s: float, target_rps: float) -> compute.Headline:
    return compute.headline(_s(scenario_json), ttft_slo_s, itl_slo_s, target_rps)


@st.cache_data(show_spinner=False, max_entries=128)
def fit_options(scenario_json: str) -> pd.DataFrame:
    return compute.fit_options(_s(scenario_json))


@st.cache_data(show_spinner=False, max_entries=512)
def memory_breakdown(scenario_json: str) -> pd.DataFrame:
    return compute.memory_breakdown(_s(scenario_json))


@st.cache_data(show_spinner=False, max_entries=512)
def load_curve(scenario_json: str) -> pd.DataFrame:
    return compute.load_curve(_s(scenario_json))


@st.cache_data(show_spinner=False, max_entries=512)
def simulated_curve(scenario_json: str) -> pd.DataFrame:
    return compute.simulated_curve(_s(scenario_json))


@st.cache_data(show_spinner=False, max_entries=512)
def roofline(scenario_json: str, running: float | None):
    return compute.roofline(_s(scenario_json), running)


def compare(scenario_json: str, gpus: tuple[str, ...], precisions: tuple[str, ...], ttft_slo_s: float,
            itl_slo_s: float, target_rps: float) -> pd.DataFrame:
    """Each GPU × precision goes through the cached headline, so a sidebar change that leaves the compared
    configurations alone (the sidebar's GPU, say) recomputes nothing."""
    return compute.compare(_s(scenario_json), list(gpus), list(precisions), ttft_slo_s, itl_slo_s, target_rps,
                           headline_fn=lambda sc, *args: headline(sc.model_dump_json(), *args))


@st.cache_data(show_spinner=False, max_entries=128)
def formula_values(scenario_json: str) -> dict[str, str]:
    return compute.formula_values(_s(scenario_json))


def _corpus_stamp(root: Path) -> tuple:
    """Changes when a measurement is added or rewritten (cheap: file names, sizes and mtimes)."""
    if not root.is_dir():
        return ()
    return tuple((str(p), p.stat().st_size, p.stat().st_mtime_ns) for p in sorted(root.rglob("*.json*")))


@st.cache_data(show_spinner=False, max_entries=8)
def _corpus(root: str, stamp: tuple) -> tuple[list[measured.Run], pd.DataFrame, list[str]]:
    runs, errors = measured.load_corpus(Path(root))
    return runs, measured.runs_table(runs), errors


def corpus() -> tuple[list[measured.Run], pd.DataFrame, list[str]]:
    """The project's runs, their points (one row each) and the folders that could not be read."""
    root = measurements_dir()
    return _corpus(str(root), _corpus_stamp(root))


@st.cache_data(show_spinner=False, max_entries=32)
def uploads(files: tuple[tuple[str, bytes], ...], defaults: tuple[tuple[str, object], ...]
            ) -> tuple[list[measured.Run], pd.DataFrame, list[str]]:
    """Uploaded results; what a file does not say (a `vllm bench` file names no GPU) is `defaults`."""
    runs, errors = measured.runs_from_uploads(list(files), dict(defaults))
    return runs, measured.runs_table(runs), errors


@st.cache_data(show_spinner=False, max_entries=64)
def predicted(points: pd.DataFrame, scenario_json: str, runs_key: tuple[str, ...],
              _runs: tuple[measured.Run, ...]) -> pd.DataFrame:
    """validate compare's rows for the points; `runs_key` names the runs (`_runs` itself is not hashed)."""
    return measured.predict_points(list(_runs), points, _s(scenario_json))

"""Driving app.py through Streamlit's AppTest (in-process), shared by the app's test files: start the page, rerun it,
open a tab, set a custom shape, read its metrics. Every step asserts the page raised nothing."""

from __future__ import annotations

from pathlib import Path

from streamlit.testing.v1 import AppTest

ROOT = Path(__file__).resolve().parent.parent
APP = str(ROOT / "app.py")
FIXTURES = ROOT / "tests" / "fixtures"


def run_app(timeout_s: float = 60) -> AppTest:
    """The page after its first run (the measured corpus is whatever LLMCAP_MEASUREMENTS_DIR names)."""
    at = AppTest.from_file(APP, default_timeout=timeout_s)
    at.run()
    assert not at.exception, at.exception
    return at


def rerun(at: AppTest) -> AppTest:
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def select_tab(at: AppTest, name: str) -> None:
    """Make the tab whose label ends with `name` the open one at the next run."""
    at.session_state["tab"] = next(t.label for t in at.tabs if t.label.endswith(name))


def open_tab(at: AppTest, name: str) -> AppTest:
    select_tab(at, name)
    return rerun(at)


def custom_shape(at: AppTest, isl: int, osl: int) -> AppTest:
    at.selectbox(key="shape").set_value("custom").run()
    at.number_input(key="isl").set_value(isl)
    at.number_input(key="osl").set_value(osl)
    return rerun(at)


def metrics(at: AppTest) -> dict[str, str]:
    return {m.label: m.value for m in at.metric}


def choose(page, label: str, option: str) -> None:
    """In a real browser (playwright's `page`): pick `option` in the sidebar selectbox labelled `label`."""
    box = page.locator('[data-testid="stSidebar"] [data-testid="stSelectbox"]').filter(
        has=page.get_by_text(label, exact=True))
    box.evaluate("e => e.scrollIntoView({block: 'center'})")  # a box at the sidebar's foot opens no list below it
    box.click()
    page.get_by_role("option", name=option).click()

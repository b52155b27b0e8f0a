"""The calculator in a real headless Chromium (Debian's /usr/bin/chromium driven by Playwright) against
`streamlit run app.py`: change inputs, read the rendered numbers, check the charts drew."""

from __future__ import annotations

import importlib.util
import json
import re
import time
from pathlib import Path

import pytest

from app_driver import choose  # tests/app_driver.py
from capacity import Scenario, estimate

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "fixtures"
CHROMIUM = Path("/usr/bin/chromium")

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(not CHROMIUM.exists(), reason="needs Debian's Chromium at /usr/bin/chromium (`make browser`)"),
]

_spec = importlib.util.spec_from_file_location("screenshot_app", ROOT / "scripts" / "screenshot_app.py")
shots = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(shots)


@pytest.fixture(scope="module")
def app_url():
    with shots.streamlit_server({"LLMCAP_MEASUREMENTS_DIR": str(FIXTURES / "measurements")}) as url:
        yield url


@pytest.fixture(scope="module")
def browser_page():
    with shots.chromium_page() as page:
        yield page


@pytest.fixture
def page(app_url, browser_page):
    browser_page.goto(app_url)
    shots.wait_idle(browser_page, 60_000)
    return browser_page


def metric(page, label: str) -> str:
    box = page.locator('[data-testid="stMetric"]').filter(has=page.get_by_text(label, exact=True))
    return box.locator('[data-testid="stMetricValue"]').inner_text().strip()


def wait_change(page, label: str, old: str, timeout_s: float = 20) -> tuple[str, float]:
    """Wait until the metric differs from `old`; returns (new value, seconds it took in the browser)."""
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < timeout_s:
        value = metric(page, label)
        if value != old:
            shots.wait_idle(page)
            return metric(page, label), time.perf_counter() - t0
        page.wait_for_timeout(25)
    raise AssertionError(f"{label} stayed {old!r}")


DRAWN_JS = """[...document.querySelectorAll('[data-testid="stVegaLiteChart"]')].filter(c => {
        const g = c.querySelector('canvas, svg.marks');
        return g && g.getBoundingClientRect().width > 50 && g.getBoundingClientRect().height > 30;
    }).length"""


def drawn_charts(page) -> int:
    """Vega charts that drew something (a canvas or svg with a size)."""
    return page.evaluate(f"() => {DRAWN_JS}")


def wait_drawn(page, count: int = 1, timeout_ms: float = 60_000) -> int:
    """Wait until `count` charts have drawn with a size (a chart in a tab just opened lays out after its svg
    exists), then return how many have."""
    page.wait_for_function(f"() => {DRAWN_JS} >= {count}", timeout=timeout_ms)
    return drawn_charts(page)


def test_default_page_numbers_and_charts(page):
    e = estimate(Scenario())
    assert metric(page, "Max concurrent users") == f"{e.max_concurrent_requests:,}"
    assert page.get_by_text("Fits.", exact=False).first.is_visible()
    assert wait_drawn(page, 5) >= 5  # memory, TTFT, ITL, roofline, cost
    assert "Traceback" not in page.content()


def test_changing_gpu_and_precision_updates_the_numbers(page, capsys):
    """Waits for states, not for time: the selectbox shows the new choice (chosen again if a rerun swallowed
    the click), then each number changes, with timeouts long enough for a busy machine's reruns."""
    def pick(label: str, option, shown: str) -> None:
        box = page.locator('[data-testid="stSidebar"] [data-testid="stSelectbox"]').filter(
            has=page.get_by_text(label, exact=True))
        for _ in range(3):
            choose(page, label, option)
            deadline = time.perf_counter() + 30
            while time.perf_counter() < deadline:
                if shown in box.locator("input").input_value():
                    return
                page.wait_for_timeout(100)
        raise AssertionError(f"{label} does not show {shown!r}: {box.locator('input').input_value()!r}")

    for label in ("Max concurrent users", "Output tokens/s at that rate"):  # the first render, however slow
        page.locator('[data-testid="stMetric"]').filter(has=page.get_by_text(label, exact=True)).wait_for(
            timeout=180_000)
    before_users, before = metric(page, "Max concurrent users"), metric(page, "Output tokens/s at that rate")
    pick("GPU", re.compile(r"^NVIDIA B200"), "B200")
    users, took_gpu = wait_change(page, "Max concurrent users", before_users, timeout_s=180)
    assert users == f"{estimate(Scenario(gpu='b200')).max_concurrent_requests:,}"
    after_gpu, _ = wait_change(page, "Output tokens/s at that rate", before, timeout_s=180)
    pick("Weights", "FP8", "FP8")
    fp8, took_precision = wait_change(page, "Output tokens/s at that rate", after_gpu, timeout_s=180)
    assert float(fp8.replace(",", "")) > float(after_gpu.replace(",", ""))
    assert wait_drawn(page, 5) >= 5
    with capsys.disabled():
        print(f"\nbrowser round trip: GPU change {took_gpu * 1e3:.0f} ms, precision change {took_precision * 1e3:.0f} ms")


def test_custom_lengths_and_zero_is_an_error(page):
    choose(page, "Request shape", "custom")
    sidebar = page.locator('[data-testid="stSidebar"]')
    sidebar.get_by_label("Output tokens", exact=True).wait_for()
    old = metric(page, "Max concurrent users")
    field = sidebar.get_by_label("Input tokens", exact=True)
    field.fill("8192")
    field.press("Enter")
    new, _ = wait_change(page, "Max concurrent users", old)
    assert new == f"{estimate(Scenario(isl=8192, osl=128)).max_concurrent_requests:,}"
    field = sidebar.get_by_label("Output tokens", exact=True)
    field.fill("0")
    field.press("Enter")
    err = page.locator('[data-testid="stAlertContentError"]')
    err.wait_for(timeout=20_000)
    assert "osl must be at least 1 token" in err.inner_text()
    assert "Traceback" not in page.content()


def test_malformed_config_upload_shows_an_error(page, tmp_path):
    page.locator('[data-testid="stSidebar"]').get_by_text("Upload config.json", exact=True).click()
    shots.wait_idle(page)
    bad = tmp_path / "config.json"
    bad.write_text('{"hidden_size": 4096, "num_hidden_layers": ')
    page.locator('[data-testid="stSidebar"] [data-testid="stFileUploaderDropzoneInput"]').first.set_input_files(str(bad))
    err = page.locator('[data-testid="stAlertContentError"]')
    err.wait_for(timeout=20_000)
    assert "not valid JSON" in err.inner_text()
    assert "Traceback" not in page.content()
    good = tmp_path / "tiny" / "config.json"
    good.parent.mkdir()
    good.write_text((ROOT / "tests/assets/tiny-llama/config.json").read_text())
    page.locator('[data-testid="stSidebar"] [data-testid="stFileUploaderDropzoneInput"]').first.set_input_files(str(good))
    page.get_by_text("LlamaForCausalLM", exact=False).first.wait_for(timeout=20_000)
    assert metric(page, "Max concurrent users") == "1,024"


def one_table(page) -> None:
    """The open tab shows one table. Wait for that state: under load the tab just left may still be in the page
    for a moment (seen once in a full run: 2 tables right after switching to Compare GPUs)."""
    page.wait_for_function("() => document.querySelectorAll('[data-testid=\"stDataFrame\"]').length === 1",
                           timeout=20_000)


def test_tabs_compare_measured_explorer(page, tmp_path):
    shots.open_tab(page, "Compare GPUs")
    assert wait_drawn(page) >= 1
    one_table(page)
    shots.open_tab(page, "Measured vs predicted")
    page.wait_for_function("() => document.querySelectorAll('[data-testid=\"stVegaLiteChart\"] svg.marks').length >= 1")
    one_table(page)
    bench = tmp_path / "bench.json"
    bench.write_text(json.dumps(json.loads((FIXTURES / "vllm-bench-serve-llama8b-c16.json").read_text())))
    page.locator('[data-testid="stSidebar"] [data-testid="stFileUploaderDropzoneInput"]').last.set_input_files(str(bench))
    page.get_by_text("bench.json", exact=True).first.wait_for(timeout=20_000)
    shots.wait_idle(page)
    shots.open_tab(page, "Explorer")
    one_table(page)
    assert wait_drawn(page) >= 1
    shots.open_tab(page, "Formulas")
    page.wait_for_function("() => document.querySelectorAll('.katex').length >= 10", timeout=20_000)  # KaTeX renders late
    shots.open_tab(page, "Launch")
    assert "vllm serve meta-llama/Llama-3.1-8B" in page.locator('[data-testid="stCode"]').first.inner_text()
    assert "Traceback" not in page.content()

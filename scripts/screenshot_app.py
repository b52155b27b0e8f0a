"""Screenshots of the calculator in a real headless Chromium (Debian's /usr/bin/chromium, driven by Playwright;
no browser download). Starts `streamlit run app.py` on a free port, visits every tab, writes PNGs.

    .venv/bin/python scripts/screenshot_app.py [--out /tmp/app-shots] [--measurements tests/fixtures/measurements]
"""

from __future__ import annotations

import argparse
import contextlib
import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]
TABS = ["Charts", "Compare GPUs", "Measured vs predicted", "Explorer", "Formulas", "Launch"]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def streamlit_server(env_extra: dict[str, str] | None = None, timeout_s: float = 60):
    """`streamlit run app.py` on a free local port; yields its URL; stops it (and only it) afterwards."""
    port = free_port()
    env = {**os.environ, "STREAMLIT_BROWSER_GATHER_USAGE_STATS": "false", **(env_extra or {})}
    cmd = [sys.executable, "-m", "streamlit", "run", str(ROOT / "app.py"), "--server.headless", "true",
           "--server.port", str(port), "--server.address", "127.0.0.1", "--server.fileWatcherType", "none",
           "--browser.gatherUsageStats", "false"]
    log = tempfile.NamedTemporaryFile(prefix="streamlit-", suffix=".log", delete=False)
    proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + timeout_s
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"streamlit exited with {proc.returncode}: {Path(log.name).read_text()[-2000:]}")
            try:
                with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2) as r:
                    if r.status == 200:
                        break
            except OSError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(f"streamlit did not answer within {timeout_s:.0f} s")
            time.sleep(0.3)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


@contextlib.contextmanager
def chromium_page(width: int = 1500, height: int = 1000):
    from playwright.sync_api import sync_playwright

    with tempfile.TemporaryDirectory(prefix="chromium-profile-") as profile, sync_playwright() as pw:
        ctx = pw.chromium.launch_persistent_context(profile, executable_path=CHROMIUM, args=CHROMIUM_ARGS,
                                                    headless=True, viewport={"width": width, "height": height})
        try:
            yield ctx.pages[0] if ctx.pages else ctx.new_page()
        finally:
            ctx.close()


def wait_idle(page, timeout_ms: int = 30_000) -> None:
    """Until Streamlit has finished the rerun (no 'running' status widget) and charts have drawn."""
    page.wait_for_selector('[data-testid="stMetric"], [data-testid="stAlert"]', timeout=timeout_ms)
    page.wait_for_function(
        "() => !document.querySelector('[data-testid=\"stStatusWidget\"]')", timeout=timeout_ms)
    page.wait_for_timeout(600)


def shoot(page, path: Path) -> None:
    """The whole page: Streamlit scrolls inside its main container, so grow the viewport to the content."""
    height = page.evaluate("() => Math.max(...[...document.querySelectorAll('section, [data-testid=stMain], "
                           "[data-testid=stMainBlockContainer]')].map(e => e.scrollHeight), 800)")
    size = page.viewport_size
    page.set_viewport_size({"width": size["width"], "height": min(int(height) + 40, 8000)})
    page.wait_for_timeout(700)
    page.screenshot(path=str(path))
    page.set_viewport_size(size)


def open_tab(page, name: str) -> None:
    page.get_by_role("tab", name=name).click()
    wait_idle(page)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default="/tmp/app-shots")
    ap.add_argument("--measurements", help="measurements folder to show (default: the project's data/measurements)")
    ap.add_argument("--upload", nargs="*", default=[], help="results files to upload in the Measured tab")
    a = ap.parse_args()
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    env = {"LLMCAP_MEASUREMENTS_DIR": str(Path(a.measurements).resolve())} if a.measurements else {}
    with streamlit_server(env) as url, chromium_page() as page:
        page.goto(url)
        wait_idle(page)
        if a.upload:
            page.locator('[data-testid="stSidebar"] [data-testid="stFileUploaderDropzoneInput"]').set_input_files(a.upload)
            page.wait_for_timeout(800)
            wait_idle(page)
        shoot(page, out / "01-charts.png")
        for i, name in enumerate(TABS[1:], 2):
            open_tab(page, name)
            shoot(page, out / f"{i:02d}-{name.lower().replace(' ', '-')}.png")
    for p in sorted(out.glob("*.png")):
        print(p)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

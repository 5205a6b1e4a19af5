"""The dashboard in a real browser: Debian's Chromium, headless, loads the page numfuzz wrote
for a reports folder from file:// with the network closed, and this script fails on any console
message at error level, or a request the page made; then it takes a screenshot.

    python bench/dashboard_browser.py --reports REPORTS --screenshot bench/results/37-dashboard.png

Chromium writes the page's console to stderr (``--enable-logging=stderr``) as
``CONSOLE:<line>]`` lines and every load it fails as a net error; both are read here. A control
page with a deliberate ``console.error`` is loaded first, so a browser that stopped reporting
its console would fail this check instead of passing it.
"""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from fuzzer.report import dashboard  # noqa: E402 (the checkout, not an installed numfuzz)

FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--enable-logging=stderr", "--v=0", "--window-size=1400,2400",
         "--virtual-time-budget=5000"]
PROBLEM = re.compile(r"CONSOLE(?::\d+|\(\d+\))\].*|:ERROR:.*(net::ERR_\w+|Failed to load).*")


def load(browser: str, page: Path, screenshot: Path | None) -> list[str]:
    """Load ``page`` once; the console errors and failed loads Chromium logged."""
    with tempfile.TemporaryDirectory() as profile:
        shot = [f"--screenshot={screenshot}"] if screenshot else ["--dump-dom"]
        done = subprocess.run([browser, *FLAGS, f"--user-data-dir={profile}", *shot,
                               page.resolve().as_uri()], capture_output=True, text=True,
                              timeout=120)
    return [m.group(0) for m in PROBLEM.finditer(done.stderr)]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reports", type=Path, required=True)
    parser.add_argument("--screenshot", type=Path, required=True)
    args = parser.parse_args()
    browser = shutil.which("chromium")
    if browser is None:
        print("dashboard_browser: no chromium (apt-get install chromium)", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory() as folder:
        control = Path(folder) / "control.html"
        control.write_text("<!DOCTYPE html><html><body><script>console.error('planted')"
                           "</script></body></html>")
        if not load(browser, control, None):
            print("dashboard_browser: the control page's console.error was not seen: this "
                  "browser's console is not being read", file=sys.stderr)
            return 1
    page = dashboard.write(args.reports, Path(tempfile.mkdtemp()) / dashboard.PAGE)
    problems = load(browser, page, args.screenshot)
    for line in problems:
        print(f"dashboard_browser: {line}", file=sys.stderr)
    shown = args.screenshot.exists() and args.screenshot.stat().st_size > 0
    print(f"dashboard_browser: {page} loaded in {browser}: {len(problems)} console errors or "
          f"failed loads; screenshot {args.screenshot if shown else 'NOT written'}")
    return 0 if not problems and shown else 1


if __name__ == "__main__":
    sys.exit(main())

"""Start-up time of ``numfuzz --help`` (and each command's ``--help``): the target is 0.5 s.

    python bench/startup.py                  # 20 runs each, median and max, JSON to stdout
    python bench/startup.py --runs 50

Each run is a fresh interpreter (``python -m fuzzer ... --help``) from this checkout, timed from
fork to exit, as a user typing the command sees it; ``--help`` must load no torch (the command
modules import what they use when they run). The first run of each command warms the OS file
cache and is not counted. A breakdown by module comes from ``python -X importtime -m fuzzer
--help``; the lines slower than 5 ms are printed too.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
COMMANDS = ([], ["run"], ["replay"], ["minimize"], ["nightly"], ["triage"])
TARGET = 0.5


def timed(args: list[str]) -> float:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    began = time.perf_counter()
    subprocess.run([sys.executable, "-m", "fuzzer", *args, "--help"], cwd=ROOT, env=env,
                   check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - began


def slowest_imports(limit_us: int = 5000) -> list[str]:
    """``-X importtime`` lines of ``--help`` whose cumulative time passes ``limit_us``."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-X", "importtime", "-m", "fuzzer", "--help"],
                          cwd=ROOT, env=env, capture_output=True, text=True, check=True)
    rows = []
    for line in done.stderr.splitlines():
        parts = line.removeprefix("import time:").split("|")
        if len(parts) == 3 and parts[1].strip().isdigit() and int(parts[1]) >= limit_us:
            rows.append(f"{int(parts[1]) / 1000:7.1f} ms  {parts[2].rstrip()}")
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=20)
    runs = parser.parse_args().runs
    results = {}
    for command in COMMANDS:
        timed(command)  # warm the file cache
        times = [timed(command) for _ in range(runs)]
        results[" ".join(["numfuzz", *command, "--help"])] = {
            "median_s": round(statistics.median(times), 3), "max_s": round(max(times), 3),
            "runs": runs, "met": max(times) < TARGET}
    print(json.dumps({"target_s": TARGET, "python": sys.version.split()[0],
                      "commands": results, "imports_over_5ms": slowest_imports()}, indent=1))


if __name__ == "__main__":
    main()

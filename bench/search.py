"""Random against guided search, side by side in one run (issue 15's discovery benchmark).

    .venv/bin/python bench/search.py --minutes 20 --seed 11 > bench/raw/search.md

Both campaigns start together, one worker each (one core each on a two-core machine), the same
seed, budget and default strategies, each with its own empty Inductor cache. Then every finding of
each corpus is judged as ``bench/discovery.py`` judges one (expected round trip or real, the
known entry it matches, root causes merged by ``same_cause``), and the public classes'
detectors (``discovery.PUBLIC_CLASSES``) give each class's first case and approximate minute.
Printed: per search, cases, findings, real findings, real root causes and root causes per
CPU-hour; then the first discovery of each class under each search.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from discovery import PUBLIC_CLASSES, causes, rows_of  # noqa: E402

from fuzzer.execute.workers import LocalRunner  # noqa: E402

SEARCHES = ("random", "guided")


def campaigns(minutes: float, seed: int, work: Path) -> dict[str, dict]:
    """Run both searches at once; each one's ``numfuzz run --json`` summary."""
    procs = {}
    for search in SEARCHES:
        env = {**os.environ, "TORCHINDUCTOR_CACHE_DIR": str(work / f"cache-{search}"),
               "PYTHONPATH": str(ROOT)}
        procs[search] = subprocess.Popen(
            [sys.executable, "-m", "fuzzer", "run", "--device", "cpu", "--workers", "1",
             "--time", f"{minutes}m", "--seed", str(seed), "--search", search, "--json",
             "--out", str(work / search)], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
            env=env, text=True)
    return {search: json.loads(proc.communicate()[0]) for search, proc in procs.items()}


def firsts(rows: list[dict]) -> dict[str, int]:
    found: dict[str, int] = {}
    for row in sorted(rows, key=lambda r: r["index"]):
        for name, detect in PUBLIC_CLASSES.items():
            if detect(row):
                found.setdefault(name, row["index"])
    return found


def table(summaries: dict[str, dict], rows: dict[str, list[dict]]) -> str:
    lines = ["| search | cases | findings | real | real root causes | root causes per "
             "CPU-hour | guided cases (findings) |", "|---|---|---|---|---|---|---|"]
    for search in SEARCHES:
        s, mine = summaries[search], rows[search]
        real = [r for r in mine if not r["expected"]]
        hours = s["elapsed_s"] / 3600  # one worker: one CPU
        mutants = s["strategies"].get("guided", {})
        lines.append(f"| {search} | {s['cases']} | {len(mine)} | {len(real)} | "
                     f"{len(causes(real))} | {len(causes(real)) / hours:.1f} | "
                     f"{mutants.get('cases', 0)} ({mutants.get('findings', 0)}) |")
    first = {search: firsts(rows[search]) for search in SEARCHES}
    lines += ["", "| public class | " + " | ".join(f"{s}: first case (~min)" for s in SEARCHES)
              + " |", "|---|" + "---|" * len(SEARCHES)]
    for name in PUBLIC_CLASSES:
        cells = []
        for search in SEARCHES:
            index, per_min = first[search].get(name), summaries[search]["cases_per_min"]
            cells.append("not found" if index is None else
                         f"{index} (~{index / per_min:.1f})" if per_min else str(index))
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--minutes", type=float, default=20)
    parser.add_argument("--seed", type=int, default=11)
    parser.add_argument("--keep", type=Path, help="keep the corpora and summaries here")
    args = parser.parse_args()
    work = args.keep or Path(tempfile.mkdtemp(prefix="numfuzz-search-"))
    work.mkdir(parents=True, exist_ok=True)
    summaries = campaigns(args.minutes, args.seed, work)
    (work / "summaries.json").write_text(json.dumps(summaries, indent=1))
    runner = LocalRunner("cpu", threads=2, timeout=300, warmup=True)
    try:
        rows = {search: rows_of(work / search, runner) for search in SEARCHES}
    finally:
        runner.close()
    (work / "rows.json").write_text(json.dumps({"summaries": summaries, "rows": rows}, indent=1))
    print(f"{args.minutes:g} minutes each, seed {args.seed}, both at once (one worker each)\n")
    print(table(summaries, rows), end="")


if __name__ == "__main__":
    main()

"""The pipeline on a fixed backlog: raw case files settled per CPU-hour, before and after.

Each side is one ``numfuzz nightly`` over a fresh reports folder whose corpus is a copy of the
backlog, with a campaign of one eager case (so the night's time goes to the backlog) and no
drafts (``--max-drafts 0``: drafting is not the pipeline), its default workers, the same
``--time``. ``before`` runs the code of a git revision (a temporary worktree, on PYTHONPATH);
``after`` this checkout. Both run here, one after the other, in one invocation: compare their
ratios, not their numbers with another machine's.

    python bench/pipeline.py --backlog bench/raw/backlog-20261206 --minutes 10 --base 6482810

Prints a JSON object per side and a Markdown table: raw cases, settled, causes (new signatures
and known entries hit), CPU seconds of the night and its workers, settled per CPU-hour and per
wall hour.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DATE = "2030-06-01"


def children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def side(name: str, code: Path, backlog: Path, minutes: float, workers: int | None) -> dict:
    """One night over a copy of ``backlog`` with the numfuzz at ``code``."""
    reports = Path(tempfile.mkdtemp(prefix=f"numfuzz-pipeline-{name}-"))
    corpus = reports / "corpus"
    corpus.mkdir(parents=True)
    raw = sorted(backlog.glob("*.pt"))
    for index, path in enumerate(raw):  # the same order of arrival on both sides
        copied = shutil.copy2(path, corpus / path.name)
        os.utime(copied, (1_000_000 + index, 1_000_000 + index))
    command = [sys.executable, "-m", "fuzzer", "nightly", "--device", "cpu", "--cases", "1",
               "--backend", "eager", "--time", f"{minutes}m", "--reports", str(reports),
               "--seed", "1", "--max-drafts", "0", "--no-bisect"]
    if workers is not None:
        command += ["--workers", str(workers)]
    env = {**os.environ, "PYTHONPATH": str(code)}
    cpu, began = children_cpu(), time.monotonic()
    done = subprocess.run(command, cwd=code, env=env, capture_output=True, text=True)
    wall, cpu = time.monotonic() - began, children_cpu() - cpu
    (reports / "nightly.log").write_text(done.stdout + done.stderr)
    names = {p.name for p in raw}
    db = sqlite3.connect(reports / "findings.sqlite")
    rows = [(k, o, s) for k, o, s in db.execute("SELECT key, outcome, signature FROM processed")
            if k in names]
    causes = {s for _, _, s in rows if s} | \
        {o.split(": ", 1)[1] for _, o, _ in rows if o.startswith("known: ")}
    outcomes: dict[str, int] = {}
    for _, outcome, _ in rows:
        word = outcome.split(":")[0].split(" on ")[0]
        outcomes[word] = outcomes.get(word, 0) + 1
    return {"side": name, "code": str(code), "exit": done.returncode, "raw": len(raw),
            "settled": len(rows), "causes": len(causes), "outcomes": outcomes,
            "wall_s": round(wall, 1), "cpu_s": round(cpu, 1),
            "settled_per_cpu_hour": round(3600 * len(rows) / cpu, 1) if cpu else None,
            "settled_per_wall_hour": round(3600 * len(rows) / wall, 1),
            "reports": str(reports)}


def worktree(revision: str) -> Path:
    path = Path(tempfile.mkdtemp(prefix="numfuzz-base-")) / "tree"
    subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", str(path),
                    revision], check=True, capture_output=True)
    return path


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backlog", type=Path, required=True, help="folder of raw case files")
    parser.add_argument("--minutes", type=float, default=10.0, help="each side's --time")
    parser.add_argument("--base", help="git revision for 'before' (default: after only)")
    parser.add_argument("--workers", type=int, help="--workers for both sides (default: each "
                                                    "side's own default)")
    args = parser.parse_args()
    results = []
    if args.base:
        base = worktree(args.base)
        try:
            results.append(side("before", base, args.backlog.resolve(), args.minutes,
                                args.workers))
        finally:
            subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force",
                            str(base)], capture_output=True)
    results.append(side("after", ROOT, args.backlog.resolve(), args.minutes, args.workers))
    for result in results:
        print(json.dumps(result))
    print("\n| side | raw | settled | causes | wall s | CPU s | settled / CPU-hour | "
          "settled / wall hour |\n|---|---|---|---|---|---|---|---|")
    for r in results:
        print(f"| {r['side']} | {r['raw']} | {r['settled']} | {r['causes']} | {r['wall_s']} | "
              f"{r['cpu_s']} | {r['settled_per_cpu_hour']} | {r['settled_per_wall_hour']} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Soak: one real nightly for an hour or more, sampled every few minutes (issue 24).

    .venv/bin/python bench/soak.py --time 60m --workers 2 --every 180 \
        --reports /tmp/soak/reports --json bench/raw/soak.json

Starts ``numfuzz nightly --device cpu --time T --workers W`` with default settings otherwise, and
every ``--every`` seconds records: the night's stage, cases and cases/min since the last sample
(from its ``night.json``), harness errors, the resident memory and open files of the driver and
of each process below it (workers and their compile subprocesses), the disk used by the corpus,
the reports and the worker caches (``numfuzz-worker-*`` in the night's temp folder, and Inductor's
default cache folder there), and the load average (other work on the machine shows there). The
night gets a temp folder of its own (``TMPDIR``, beside the reports), so other numfuzz runs on the
machine do not blur the disk figures. At the end: the wall time against the budget, the exit
status, and what is left in the temp folder. Linux only (it reads /proc).
"""

from __future__ import annotations

import argparse
import getpass
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from fuzzer.cli.common import parse_duration  # noqa: E402
from fuzzer.execute.workers import TEMP_PREFIX  # noqa: E402


def descendants(pid: int) -> list[int]:
    found, todo = [], [pid]
    while todo:
        for task in Path(f"/proc/{todo.pop()}/task").glob("*"):
            try:
                kids = [int(k) for k in (task / "children").read_text().split()]
            except OSError:
                continue
            found += kids
            todo += kids
    return found


def process(pid: int) -> dict | None:
    """Resident memory (MiB), open files and the command's last words, or None if gone."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
        rss_kib = int(next(ln.split()[1] for ln in status.splitlines()
                           if ln.startswith("VmRSS:")))
        files = len(os.listdir(f"/proc/{pid}/fd"))
        cmd = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except (OSError, StopIteration, ValueError):
        return None
    words = [w.decode(errors="replace") for w in cmd if w]
    role = "worker" if "fuzzer.execute.workers" in words else \
        "compile" if any("compile_worker" in w or "subproc" in w for w in words) else \
        Path(words[0]).name if words else "?"
    return {"pid": pid, "role": role, "rss_mib": round(rss_kib / 1024, 1), "files": files}


def disk_mib(path: Path) -> float:
    total = 0
    for root, _, names in os.walk(path):
        for name in names:
            try:
                total += os.lstat(os.path.join(root, name)).st_size
            except OSError:
                pass
    return round(total / 2**20, 1)


def caches_mib(tmp: Path) -> dict:
    private = sum(disk_mib(p) for p in tmp.glob(f"{TEMP_PREFIX}*") if p.is_dir())
    return {"worker_caches_mib": round(private, 1),
            "worker_cache_folders": sum(1 for p in tmp.glob(f"{TEMP_PREFIX}*") if p.is_dir()),
            "worker_logs": sum(1 for p in tmp.glob(f"{TEMP_PREFIX}*.log")),
            "default_inductor_cache_mib": disk_mib(tmp / f"torchinductor_{getpass.getuser()}")}


def night_state(reports: Path) -> dict:
    nights = sorted(reports.glob("*/night.json"))
    if not nights:
        return {}
    night = json.loads(nights[-1].read_text())
    return {k: night.get(k) for k in ("stage", "cases", "fuzz_seconds", "harness_errors",
                                      "raw_findings", "status")}


def sample(driver: int, reports: Path, tmp: Path, began: float, last: dict) -> dict:
    procs = [p for p in (process(pid) for pid in [driver, *descendants(driver)]) if p]
    night = night_state(reports)
    cases, minutes = night.get("cases") or 0, (time.monotonic() - began) / 60
    since = minutes - last.get("minute", 0.0)
    rate = (cases - last.get("cases", 0)) / since if since > 0 else 0.0
    return {"minute": round(minutes, 2), "cases": cases, "cases_per_min": round(rate, 1),
            "night": night, "load": os.getloadavg()[0],
            "driver_rss_mib": procs[0]["rss_mib"] if procs else None,
            "workers_rss_mib": [p["rss_mib"] for p in procs if p["role"] == "worker"],
            "all_rss_mib": round(sum(p["rss_mib"] for p in procs), 1),
            "open_files": sum(p["files"] for p in procs), "processes": len(procs),
            "corpus_mib": disk_mib(reports / "corpus"),
            "reports_mib": round(disk_mib(reports) - disk_mib(reports / "corpus"), 1),
            **caches_mib(tmp)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--time", default="60m")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--every", type=float, default=180.0, help="seconds between samples")
    parser.add_argument("--reports", type=Path, default=Path("/tmp/numfuzz-soak/reports"))
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    budget = parse_duration(args.time)
    command = [sys.executable, "-m", "fuzzer", "nightly", "--device", "cpu", "--time", args.time,
               "--workers", str(args.workers), "--reports", str(args.reports)]
    log_path = args.reports.parent / "nightly.log"
    tmp = args.reports.parent / "tmp"
    tmp.mkdir(parents=True, exist_ok=True)
    began = time.monotonic()
    with open(log_path, "w") as log:
        night = subprocess.Popen(command, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT,
                                 env={**os.environ, "PYTHONPATH": str(ROOT), "TMPDIR": str(tmp)})
    samples: list[dict] = []
    last: dict = {}
    while night.poll() is None:
        time.sleep(min(args.every, 5.0) if not samples else args.every)
        if night.poll() is None:
            last = sample(night.pid, args.reports, tmp, began, last)
            samples.append(last)
            print(json.dumps(last), flush=True)
    wall = time.monotonic() - began
    result = {"command": " ".join(command[1:]), "budget_s": budget, "wall_s": round(wall, 1),
              "over_budget_s": round(wall - budget, 1), "exit_status": night.returncode,
              "final": night_state(args.reports), "after": caches_mib(tmp), "samples": samples,
              "log_tail": log_path.read_text().splitlines()[-15:]}
    text = json.dumps(result, indent=1)
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(text + "\n")
    print(json.dumps({k: v for k, v in result.items() if k != "samples"}, indent=1))


if __name__ == "__main__":
    main()

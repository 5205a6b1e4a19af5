"""How often ``numfuzz locate`` names the line a model file's divergence starts on, and how long
it takes (issue 52).

    .venv/bin/python bench/locate_bench.py bench/locate_models --json bench/raw/locate_t215.json
    .venv/bin/python bench/locate_bench.py tests/models/public --public --json ...

With a folder holding ``manifest.json`` (each file's expected ``line`` and ``module``: the one op
planted to diverge, ``bench/locate_models``), each file is located and the named line compared
with the expected one. With ``--public``, every model file of the folder (the project's
public-issue transcriptions) is replayed first, and those numfuzz flags are located. Each
``numfuzz locate`` runs as a user runs it, in a fresh process, one at a time; its wall time is
recorded.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def numfuzz(*args: str, timeout: float = 1800) -> tuple[int, dict, float]:
    began = time.monotonic()
    proc = subprocess.run([sys.executable, "-m", "fuzzer", *args, "--json"], cwd=ROOT,
                          capture_output=True, text=True, timeout=timeout)
    seconds = time.monotonic() - began
    try:
        report = json.loads(proc.stdout)
    except ValueError:
        report = {"error": (proc.stderr.strip().splitlines() or [""])[-1][:300]}
    return proc.returncode, report, round(seconds, 1)


def located(report: dict) -> dict:
    """What locate named: its op, line, module, whether confirmed, the note, the probes."""
    location = report.get("location") or {}
    found = next((p for p in location.get("probes", []) if p["node"] == location.get("node")),
                 None)
    source = (found or {}).get("source", {})
    return {"op": location.get("label"), "line": source.get("line"),
            "module": source.get("module"), "confirmed": location.get("confirmed"),
            "note": location.get("note"), "probes": len(location.get("probes", [])),
            "path": len(location.get("path", [])), "kind": location.get("kind"),
            "vanishes_with": report.get("vanishes_with")}


def planted(folder: Path) -> list[dict]:
    rows = []
    for entry in json.loads((folder / "manifest.json").read_text()):
        path = folder / entry["file"]
        code, report, seconds = numfuzz("locate", str(path))
        got = located(report) if code == 1 else {}
        row = {**entry, "exit": code, "seconds": seconds, "located": got,
               "error": report.get("error")}
        row["on_the_line"] = got.get("line") == entry["line"]
        row["in_the_module"] = got.get("module") == entry.get("module")
        rows.append(row)
        print(f"{entry['file']}: exit {code}, line {got.get('line')} (want {entry['line']}), "
              f"{got.get('op')} {'confirmed' if got.get('confirmed') else got.get('note')}, "
              f"{seconds:.0f}s", flush=True)
    return rows


def public(folder: Path) -> list[dict]:
    rows = []
    for path in sorted(folder.glob("*.py")):
        code, report, seconds = numfuzz("replay", str(path))
        row = {"file": path.name, "replay_exit": code,
               "verdict": (report.get("verdict") or {}).get("kind"), "replay_seconds": seconds}
        if code == 1:
            code, report, seconds = numfuzz("locate", str(path))
            row.update(exit=code, seconds=seconds, located=located(report) if code == 1 else {},
                       error=report.get("error"))
        rows.append(row)
        print(f"{path.name}: replay {row['replay_exit']} {row['verdict']}"
              + (f"; locate {row.get('located', {}).get('op')} line "
                 f"{row.get('located', {}).get('line')} in {row.get('seconds')}s"
                 if code == 1 else ""), flush=True)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder", type=Path)
    parser.add_argument("--public", action="store_true")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    import torch

    rows = public(args.folder) if args.public else planted(args.folder)
    result = {"torch": torch.__version__, "folder": str(args.folder), "rows": rows}
    if not args.public:
        result["on_the_line"] = sum(r["on_the_line"] for r in rows)
        result["in_the_module"] = sum(r["in_the_module"] for r in rows)
        result["files"] = len(rows)
    text = json.dumps(result, indent=1)
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(text + "\n")
    print(text[-2000:])


if __name__ == "__main__":
    main()

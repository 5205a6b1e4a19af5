"""How numfuzz fares on a folder of KernelBench-style model files: does each one load, is it
judged, and what is the verdict.

    python bench/model_files.py --python /work/venvs/t215/bin/python --json-out out.json

For every ``*.py`` in the folder (default bench/models) this runs
``PYTHON -m fuzzer replay FILE --device cpu --json`` in its own process (cwd and PYTHONPATH the
repository root), one file at a time, and records per file:

- ``rc``: numfuzz's exit code (0 no finding, 1 finding or a traceback, 2 refused), None on a
  timeout;
- ``loaded``: numfuzz produced a verdict, i.e. it did not refuse the file (exit 2 with a one-line
  "cannot represent" / "cannot capture" / convention message), crash or time out;
- ``judged``: loaded, and the verdict is not a skip (harness errors are skips), so eager,
  compiled and float64 all ran;
- ``kind``: the verdict kind of the file's own Model (``captured``: its capture's, when it differs);
- ``reason``: the one line numfuzz gave when the file was not loaded or not judged (for a
  finding: the verdict's message, if any);
- ``seconds``: the wall time of the subprocess.

It prints a markdown table and a summary, and writes the records as JSON with ``--json-out``.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
ERROR_PREFIX = "numfuzz: error: "


def last_line(text: str) -> str:
    lines = [line for line in text.splitlines() if line.strip()]
    return lines[-1].strip() if lines else ""


def replay(python: str, path: Path, device: str, timeout: float) -> dict:
    """One file through ``numfuzz replay --json``: the record described in the module docstring."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    shown = path.relative_to(ROOT) if path.is_relative_to(ROOT) else path
    cmd = [python, "-m", "fuzzer", "replay", str(shown), "--device", device, "--json"]
    record = {"file": path.name, "rc": None, "loaded": False, "judged": False, "kind": None,
              "captured": None, "reason": "", "seconds": 0.0}
    start = time.perf_counter()
    # Its own session, so a timeout ends numfuzz's worker processes too.
    proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        stdout, stderr = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        record.update(seconds=round(time.perf_counter() - start, 1),
                      reason=f"no result: timed out after {timeout:g} s")
        return record
    record.update(rc=proc.returncode, seconds=round(time.perf_counter() - start, 1))
    try:
        result = json.loads(stdout)
    except json.JSONDecodeError:
        reason = last_line(stderr) or last_line(stdout) or f"exit {proc.returncode}"
        record["reason"] = reason.removeprefix(ERROR_PREFIX)
        return record
    verdict = result["verdict"]
    record.update(loaded=True, kind=verdict["kind"], judged=verdict["kind"] != "skip")
    if not result.get("same", True):
        record["captured"] = result["captured_verdict"]["kind"]
    message = " ".join(verdict.get("message", "").split())
    if not record["judged"] or proc.returncode == 1:  # a finding's message is kept too
        record["reason"] = message
    return record


def short(reason: str) -> str:
    """The reason without the file's path numfuzz starts it with (the table names the file)."""
    head, sep, rest = reason.partition(".py: ")
    return rest if sep and " " not in head else reason


def table(records: list[dict]) -> str:
    rows = ["| file | rc | loaded | judged | verdict | capture | s | reason |",
            "|---|---|---|---|---|---|---|---|"]
    for r in records:
        reason = short(r["reason"]).replace("|", "\\|")
        rows.append(f"| `{r['file']}` | {r['rc']} | {'yes' if r['loaded'] else 'no'} "
                    f"| {'yes' if r['judged'] else 'no'} | {r['kind'] or ''} "
                    f"| {r['captured'] or ''} | {r['seconds']:.1f} | {reason} |")
    return "\n".join(rows)


def summary(records: list[dict]) -> str:
    seconds = [r["seconds"] for r in records]
    findings = sum(r["loaded"] and r["rc"] == 1 for r in records)
    return (f"{len(records)} files, {sum(r['loaded'] for r in records)} loaded, "
            f"{sum(r['judged'] for r in records)} judged, {findings} findings; "
            f"{sum(seconds):.0f} s in all, median {statistics.median(seconds):.1f} s per file")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("folder", nargs="?", type=Path, default=Path("bench/models"))
    parser.add_argument("--python", default=sys.executable,
                        help="the interpreter whose torch numfuzz runs on")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--timeout", type=float, default=300.0, help="seconds per file")
    parser.add_argument("--json-out", type=Path, help="write the records here as JSON")
    args = parser.parse_args()

    folder = args.folder.resolve()  # numfuzz runs from the repository root
    files = sorted(folder.glob("*.py"))
    if not files:
        parser.error(f"{args.folder}: no .py files")
    torch = subprocess.run([args.python, "-c", "import torch; print(torch.__version__)"],
                           capture_output=True, text=True).stdout.strip()
    print(f"{args.python} (torch {torch or '?'}), {len(files)} files in {args.folder}",
          file=sys.stderr, flush=True)
    records = []
    for i, path in enumerate(files, 1):
        records.append(replay(args.python, path, args.device, args.timeout))
        r = records[-1]
        print(f"[{i}/{len(files)}] {path.name}: rc={r['rc']} {r['kind'] or short(r['reason'])} "
              f"({r['seconds']:.1f} s)", file=sys.stderr, flush=True)
    print(table(records))
    print()
    print(f"torch {torch}: {summary(records)}")
    if args.json_out:
        args.json_out.write_text(json.dumps(records, indent=2) + "\n")


if __name__ == "__main__":
    main()

"""numfuzz minimize versus PyTorch's accuracy minifier, side by side on the same cases.

For each case file: (1) `numfuzz minimize` in-process (oracle calls, wall time, ops left);
(2) the same model run under TORCHDYNAMO_REPRO_AFTER=aot TORCHDYNAMO_REPRO_LEVEL=4, then the
launcher's `minify` (queries from its "Made N queries" line, wall time, ATen ops left in the
minified graph it dumps). Prints one JSON line per case and a markdown table.

    python bench/minifier_compare.py corpus/int-flip-*.pt [--limit-s 1500]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from fuzzer.corpus.case import Case  # noqa: E402
from fuzzer.execute.workers import LocalRunner  # noqa: E402
from fuzzer.reduce.minimize import minimize  # noqa: E402
from fuzzer.reduce.repro import write_repro  # noqa: E402


def ours(case: Case) -> dict:
    runner = LocalRunner(case.device, timeout=300)
    runner.start()
    runner.worker.wait_ready()  # start-up is not the minimizer's work; PyTorch's pays it too
    start = time.monotonic()
    try:
        result = minimize(case, runner)
    finally:
        runner.close()
    return {"calls": result.calls, "calls_to_final_ops": result.calls_to_final_ops,
            "seconds": round(time.monotonic() - start, 1),
            "ops_before": result.original_ops, "ops_after": result.final_ops,
            "reliability": f"{result.reliability[0]}/{result.reliability[1]}"}


def theirs(case: Case, limit: float) -> dict:
    """After aot first (what the issue names); after dynamo when aot does not flag the graph."""
    for after in ("aot", "dynamo"):
        work = Path(tempfile.mkdtemp(prefix=f"minifier-{after}-"))
        write_repro(case, work)
        env = {**os.environ, "TORCHDYNAMO_REPRO_AFTER": after, "TORCHDYNAMO_REPRO_LEVEL": "4",
               "TORCH_COMPILE_DEBUG_DIR": str(work)}
        subprocess.run([sys.executable, "repro.py"], cwd=work, env=env, capture_output=True,
                       timeout=limit)
        launchers = sorted(work.rglob("minifier_launcher.py"))
        if launchers:
            return {"after": after, **run_launcher(launchers[-1], work, limit)}
    return {"detected": False, "note": "neither after-aot nor after-dynamo flagged the graph"}


def run_launcher(launcher: Path, work: Path, limit: float) -> dict:
    start = time.monotonic()
    try:
        done = subprocess.run([sys.executable, str(launcher), "minify"], cwd=launcher.parent,
                              capture_output=True, text=True, timeout=limit)
        output = done.stdout + done.stderr
        status = "ok" if done.returncode == 0 else f"exit {done.returncode}"
    except subprocess.TimeoutExpired as err:
        output = (err.stdout or b"").decode() + (err.stderr or b"").decode()
        status = f"timed out after {limit:.0f}s"
    seconds = time.monotonic() - start
    queries = re.findall(r"Made (\d+) queries", output)
    minified = [p for p in work.rglob("*.py") if p.stat().st_mtime > time.time() - seconds - 5
                and "class Repro" in p.read_text(errors="replace") and p != launcher]
    ops_after = None
    if minified:
        text = max(minified, key=lambda p: p.stat().st_mtime).read_text(errors="replace")
        ops_after = len(re.findall(r"torch\.ops\.(?:aten|prims)\.", text.split("def forward")[-1]))
    return {"detected": True, "status": status, "queries": int(queries[-1]) if queries else None,
            "seconds": round(seconds, 1), "ops_after": ops_after,
            "tail": output.strip().splitlines()[-1][:200] if output.strip() else ""}


FX_DRIVER = r"""
import sys, time, torch, io, contextlib
sys.path.insert(0, REPO)
from fuzzer.corpus.case import Case
from fuzzer.execute.runner import Programs
from fuzzer.judge import oracle, rules
from torch._functorch.fx_minifier import minifier

case = Case.load(CASE)
programs = Programs.build(case.graph)
captured = {}

def grab(gm, example_inputs):
    captured["gm"] = gm
    return gm

args = case.ordered_inputs()
torch.compile(programs.model, backend=grab, fullgraph=True)(*args)
gm = captured["gm"]
inps = [a for a in args]
queries = 0

def fails(mod, inputs):
    # The same test numfuzz's oracle applies, on whatever outputs the candidate graph has.
    global queries
    queries += 1
    torch._dynamo.reset()
    with torch._inductor.config.patch(fallback_random=True, force_disable_caches=False):
        try:
            out = torch.compile(mod, backend="inductor")(*inputs)
        except Exception:
            return False
    eager = mod(*inputs)
    ref = rules.float64_run(mod, inputs)
    eager, out, ref = [list(x) if isinstance(x, (tuple, list)) else [x] for x in (eager, out, ref)]
    eager = [t for t in eager if isinstance(t, torch.Tensor)]
    out = [t for t in out if isinstance(t, torch.Tensor)]
    ref = [t for t in ref if isinstance(t, torch.Tensor)]
    v = oracle.judge(eager, out, ref, [None] * len(eager), list(range(len(eager))))
    return v.kind == KIND

start = time.monotonic()
with contextlib.redirect_stdout(io.StringIO()):
    result, _ = minifier(gm, inps, fails, dump_state=lambda *a: None)
ops = sum(1 for n in result.graph.nodes if n.op in ("call_function", "call_method", "call_module"))
print("RESULT", queries, round(time.monotonic() - start, 1), ops)
"""


def fx_minifier(path: Path, kind: str, limit: float) -> dict:
    """PyTorch's delta debugger (torch._functorch.fx_minifier) on Dynamo's torch-level graph,
    asking the same question numfuzz's oracle asks, in one process (no isolation cost)."""
    script = FX_DRIVER.replace("REPO", repr(str(Path(__file__).resolve().parents[1])))
    script = script.replace("CASE", repr(str(path))).replace("KIND", repr(kind))
    try:
        done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                              timeout=limit)
    except subprocess.TimeoutExpired:
        return {"status": f"timed out after {limit:.0f}s"}
    found = re.findall(r"RESULT (\d+) ([\d.]+) (\d+)", done.stdout)
    if not found:
        tail = (done.stderr.strip().splitlines() or [""])[-1][:200]
        return {"status": f"failed: {tail}"}
    queries, seconds, ops = found[-1]
    return {"status": "ok", "queries": int(queries), "seconds": float(seconds),
            "ops_after": int(ops)}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("cases", nargs="+", type=Path)
    parser.add_argument("--limit-s", type=float, default=1500)
    args = parser.parse_args()
    rows = []
    for path in args.cases:
        case = Case.load(path)
        row = {"case": path.name, "kind": case.verdict.kind, "dtype": case.dtype,
               "numfuzz": ours(case), "pytorch": theirs(case, args.limit_s),
               "fx_minifier": fx_minifier(path, case.verdict.kind, args.limit_s)}
        print(json.dumps(row), flush=True)
        rows.append(row)
    print("\n| case | kind | ops | numfuzz calls / time / ops after | repro-after launcher "
          "| fx_minifier queries / time / ops after |\n|---|---|---|---|---|---|")
    for r in rows:
        n, p, f = r["numfuzz"], r["pytorch"], r["fx_minifier"]
        launcher = (f"{p.get('queries')} queries, {p.get('seconds')}s, {p.get('ops_after')} ops"
                    if p.get("detected", True) else p["note"])
        fx = (f"{f['queries']} / {f['seconds']}s / {f['ops_after']}" if f["status"] == "ok"
              else f["status"])
        print(f"| {r['case']} | {r['kind']} ({r['dtype']}) | {n['ops_before']} | "
              f"{n['calls']} / {n['seconds']}s / {n['ops_after']} | {launcher} | {fx} |")


if __name__ == "__main__":
    main()

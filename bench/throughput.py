"""CPU throughput and harness overhead of `numfuzz run`, plus a corpus breakdown.

    python bench/throughput.py                       # both measurements, JSON to stdout
    python bench/throughput.py throughput --cases 24 # cases/min with 1 and 2 workers
    python bench/throughput.py overhead --cases 20   # harness vs bare torch.compile, side by side
    python bench/throughput.py corpus /tmp/bench300  # kinds, dtypes and heads of a corpus

throughput: one campaign per worker count (same seed, so the same programs), each against its own
empty Inductor cache directory, i.e. a cold start as on a fresh machine. Reports cases/min end to
end (worker start and first compile included) and in steady state (first to last finished case).

overhead: for each generated program, in rotating order, (a) the harness: make_case, a warm
isolated worker running eager x2 + compiled + float64 + oracle, the case file on a finding, the
state file; (b) bare torch.compile in this process: reset, compile the same rendered program with
Inductor (fullgraph, fallback_random) and run it on the same input draws; (c) the worker's code
(runner.run_task) called in this process, to split isolation/IPC cost from the differential work
(eager x2, float64, oracle). Caches are disabled for all three
(TORCHINDUCTOR_FORCE_DISABLE_CACHES=1), so no path reuses another's compile.
"""

from __future__ import annotations

import os
import sys

if __name__ == "__main__" and len(sys.argv) > 1 and sys.argv[1] == "overhead":
    os.environ["TORCHINDUCTOR_FORCE_DISABLE_CACHES"] = "1"  # read when torch is imported

import argparse
import json
import platform
import statistics
import subprocess
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import torch  # noqa: E402

from fuzzer.campaign.local import Ran, run_campaign, settle  # noqa: E402
from fuzzer.campaign.settings import Settings, make_case  # noqa: E402
from fuzzer.corpus.ledger import Ledger  # noqa: E402
from fuzzer.execute.recipe import Recipe  # noqa: E402
from fuzzer.execute.runner import inductor_config, run_task  # noqa: E402
from fuzzer.execute.task import Task  # noqa: E402
from fuzzer.execute.workers import LocalRunner  # noqa: E402
from fuzzer.ir import render  # noqa: E402
from fuzzer.ir.graph import Graph  # noqa: E402


def machine() -> dict[str, Any]:
    model = ""
    try:
        model = next(ln.split(":", 1)[1].strip() for ln in open("/proc/cpuinfo")
                     if ln.startswith("model name"))
    except (OSError, StopIteration):
        pass
    return {"cpu": model or platform.processor(), "cores": os.cpu_count(),
            "torch": torch.__version__, "cpu_capability": torch.backends.cpu.get_cpu_capability(),
            "python": platform.python_version(), "date": time.strftime("%Y-%m-%d %H:%M %Z"),
            "load_avg_at_start": os.getloadavg()}


# ---------------------------------------------------------------- throughput


def throughput(cases: int, seed: int, workers: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="numfuzz-bench-") as tmp:
        os.environ["TORCHINDUCTOR_CACHE_DIR"] = str(Path(tmp) / "inductor-cache")
        settings = Settings(out=Path(tmp) / "corpus", device="cpu", cases=cases, seed=seed,
                            workers=workers)
        stamps: list[float] = []
        start = time.monotonic()
        summary = run_campaign(settings, on_outcome=lambda o: stamps.append(time.monotonic()))
        wall = time.monotonic() - start
        del os.environ["TORCHINDUCTOR_CACHE_DIR"]
    steady = (len(stamps) - 1) / (stamps[-1] - stamps[0]) * 60 if len(stamps) > 1 else 0.0
    return {"workers": workers, "cases": summary.cases, "wall_s": round(wall, 1),
            "cases_per_min": round(60 * summary.cases / wall, 2),
            "steady_cases_per_min": round(steady, 2),
            "first_case_s": round(stamps[0] - start, 1) if stamps else None,
            "findings": dict(summary.findings), "skipped": summary.skipped}


# ---------------------------------------------------------------- overhead


def bare(graph: Graph, draws: list[dict[str, torch.Tensor]]) -> float:
    """Plain torch.compile of the rendered program on the same draws; returns seconds."""
    start = time.perf_counter()
    model = render.load(render.render_model(graph), "model")
    torch._dynamo.reset()
    compiled = Recipe().compile(model)
    with inductor_config({}):
        for draw in draws:
            compiled(*[draw[str(n)] for n in graph.input_ids()])
    return time.perf_counter() - start


def harness(settings: Settings, state: Ledger, runner: LocalRunner,
            index: int) -> tuple[float, Any]:
    """One case the way a campaign handles it; returns seconds and (case, task, outcome)."""
    t0 = time.perf_counter()
    began = time.monotonic()
    case, task = make_case(settings, index)
    result = runner.run(task)
    outcome = settle(settings, Ran(index, case, task, result, time.monotonic() - began))
    state.mark(index)
    return time.perf_counter() - t0, (case, task, outcome)


def in_process(task: Task) -> float:
    """The worker's own code (eager x2, compiled, float64, oracle) called here: no isolation."""
    start = time.perf_counter()
    run_task(task)
    return time.perf_counter() - start


def overhead(cases: int, seed: int) -> dict[str, Any]:
    assert os.environ.get("TORCHINDUCTOR_FORCE_DISABLE_CACHES") == "1"
    threads = os.cpu_count() or 1  # what a one-worker campaign gives its worker
    torch.set_num_threads(threads)
    with tempfile.TemporaryDirectory(prefix="numfuzz-bench-") as tmp:
        settings = Settings(out=Path(tmp) / "corpus", device="cpu", cases=cases, seed=seed)
        settings.out.mkdir()
        state = Ledger(settings.out, settings.ledger_key(), resume=False)
        runner = LocalRunner("cpu", threads=threads, timeout=600, warmup=True)
        runner.start()
        runner.worker.wait_ready()
        Recipe().compile(lambda x: torch.sin(x) + 1)(torch.ones(4))  # warm this side too
        rows = []
        try:
            for i in range(cases):
                case, task = make_case(settings, i)
                times: dict[str, float] = {}
                # Rotate the order so that neither path always runs first (or last).
                for path in [("harness", "bare", "in_process")[(i + k) % 3] for k in range(3)]:
                    if path == "harness":
                        times[path], (case, task, outcome) = harness(settings, state, runner, i)
                    elif path == "bare":
                        times[path] = bare(case.graph, task.draws)
                    else:
                        times[path] = in_process(task)
                rows.append({"index": i, "ops": len(case.graph), "dtype": case.dtype,
                             **{f"{k}_s": round(v, 3) for k, v in times.items()},
                             "verdict": outcome.verdict.kind})
                print(f"  case {i}: " + " ".join(f"{k} {v:.2f}s" for k, v in times.items())
                      + f" ({outcome.verdict.kind})", file=sys.stderr)
        finally:
            runner.close()
    total = {k: sum(r[f"{k}_s"] for r in rows) for k in ("harness", "bare", "in_process")}
    return {
        "cases": len(rows), **{f"{k}_total_s": round(v, 2) for k, v in total.items()},
        "ratio_vs_bare_compile": round(total["harness"] / total["bare"], 3),
        "ratio_vs_in_process": round(total["harness"] / total["in_process"], 3),
        "median_case_ratio_vs_bare_compile": round(
            statistics.median(r["harness_s"] / r["bare_s"] for r in rows), 3),
        "rows": rows,
    }


# ---------------------------------------------------------------- corpus breakdown


def corpus(directory: Path) -> dict[str, Any]:
    """What a campaign's corpus holds: kinds, dtypes, heads, and how strong each flip is."""
    from fuzzer.corpus.case import Case

    kinds: Counter = Counter()
    by_dtype: Counter = Counter()
    heads: Counter = Counter()
    rows = []
    for path in sorted(directory.glob("*.pt")):
        case = Case.load(path)
        v = case.verdict
        kinds[v.kind] += 1
        by_dtype[f"{v.kind}/{case.dtype}"] += 1
        row: dict[str, Any] = {"file": path.name, "index": case.origin.get("index"),
                               "kind": v.kind, "dtype": case.dtype, "ops": len(case.graph),
                               "magnitude": case.origin.get("magnitude")}
        if v.output is not None:
            out = v.outputs[v.output]
            head = case.graph.node(out.node).op
            heads[f"{v.kind}/{head}"] += 1
            d = out.details
            row.update(head=head, out_dtype=out.dtype, count=d.count, total=d.total,
                       min_ulps=d.min_ulps, max_ulps=d.max_ulps,
                       fp64_agrees=d.fp64_agrees.to_dict() if d.fp64_agrees else None)
        else:
            row["message"] = v.message
        rows.append(row)
    return {"files": len(rows), "kinds": dict(kinds), "kind_by_case_dtype": dict(by_dtype),
            "kind_by_head": dict(heads), "rows": rows}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("what", nargs="?", default="all",
                        choices=["all", "throughput", "overhead", "corpus"])
    parser.add_argument("directory", nargs="?", type=Path, help="corpus directory (corpus)")
    parser.add_argument("--cases", type=int, default=None)
    parser.add_argument("--seed", type=int, default=20251122)
    args = parser.parse_args()
    result: dict[str, Any] = {"machine": machine(), "command": " ".join(sys.argv)}
    if args.what == "corpus":
        if args.directory is None:
            parser.error("corpus needs a directory")
        result["corpus"] = corpus(args.directory)
    if args.what in ("all", "throughput"):
        n = args.cases or 24
        result["throughput"] = [throughput(n, args.seed, w) for w in (1, 2)]
    if args.what == "all":  # overhead needs caches off from torch's import: a fresh process
        cmd = [sys.executable, __file__, "overhead", "--cases", str(args.cases or 20),
               "--seed", str(args.seed + 1)]
        result["overhead"] = json.loads(subprocess.run(cmd, check=True, stdout=subprocess.PIPE,
                                                       text=True).stdout)["overhead"]
    if args.what == "overhead":
        result["overhead"] = overhead(args.cases or 20, args.seed)
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()

"""CPU seconds per case, by strategy: a campaign's cases run one after the other in this process.

    python bench/case_cpu.py --cases 60 --seed 36              # the default mix
    python bench/case_cpu.py --cases 16 --seed 40 --strategy models --no-layouts

Each case is made as a campaign makes it (``make_case``) and run by the worker's own code
(``runner.run_task``: eager twice, compiled, float64, the oracle) with Inductor's caches off and
one thread. CPU time (this process and its compiler subprocesses) is what a case costs; it moves
far less than wall time when other jobs share the machine, so two trees measured one after the
other compare better by it. ``--no-layouts``: the same programs with no input laid out
(``domains.assign_layouts`` skipped), so the layouts' own cost is the difference.
"""

from __future__ import annotations

import os

os.environ["TORCHINDUCTOR_FORCE_DISABLE_CACHES"] = "1"  # read when torch is imported

import argparse  # noqa: E402
import json  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from collections import defaultdict  # noqa: E402
from pathlib import Path  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import torch  # noqa: E402

from fuzzer.campaign.settings import Settings, make_case  # noqa: E402
from fuzzer.execute.runner import run_task  # noqa: E402


def cpu() -> float:
    """User and system seconds of this process and its finished children (the C++ compiler)."""
    return sum(os.times()[:4])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--cases", type=int, default=60)
    parser.add_argument("--seed", type=int, default=36)
    parser.add_argument("--strategy", default=None, help="only this strategy (default: the mix)")
    parser.add_argument("--no-layouts", action="store_true")
    args = parser.parse_args()
    if args.no_layouts:
        from fuzzer.gen import domains

        domains.assign_layouts = lambda *a, **k: None
    torch.set_num_threads(1)
    settings = Settings(out=Path("unused"), device="cpu", cases=args.cases, seed=args.seed,
                        strategies={args.strategy: 1.0} if args.strategy else None)
    by: dict[str, list[float]] = defaultdict(list)
    for index in range(args.cases):
        case, task = make_case(settings, index)
        start, began = cpu(), time.perf_counter()
        kind = run_task(task).verdict.kind
        spent = cpu() - start
        by[case.origin["strategy"]].append(spent)
        print(f"{index:4d} {case.origin['strategy']:18s} cpu {spent:6.2f} s "
              f"wall {time.perf_counter() - began:6.2f} s ops {len(case.graph):3d} {kind}",
              file=sys.stderr, flush=True)
    total = sum(sum(v) for v in by.values())
    print(json.dumps({"torch": torch.__version__, "cases": args.cases, "seed": args.seed,
                      "cpu_s": round(total, 1), "cpu_s_per_case": round(total / args.cases, 3),
                      "by_strategy": {k: {"cases": len(v), "cpu_s_per_case":
                                          round(sum(v) / len(v), 2)}
                                      for k, v in sorted(by.items())}}, indent=2))


if __name__ == "__main__":
    main()

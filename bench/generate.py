"""Generate a million cases (no compile) and count every exception: generation must be total.

    .venv/bin/python bench/generate.py --cases 1000000 --processes 2 \
        --json bench/raw/generate_1m.json

Campaign seeds 0, 1, 2 … of ``--per-campaign`` cases each, default strategy weights and dtypes,
the compile surface rotating over default, ``--training`` and ``--dynamic`` by campaign, and every
tenth campaign on the vision and attention grammars alone. Each case's program must render to
Python that compiles; ``--check full`` also reads it back through the loader as the property test
does (``tests/test_generation_total.check_valid``, about twice the time). Any exception is counted
by type and message with its first (seed, index). Results in bench/RESULTS.md.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import sys
import time
import traceback
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from fuzzer.campaign.settings import Settings, make_case  # noqa: E402
from fuzzer.execute.recipe import Recipe  # noqa: E402
from fuzzer.execute.surface import Surface  # noqa: E402
from fuzzer.ir.render import render_model  # noqa: E402
from tests.test_generation_total import check_valid  # noqa: E402

SURFACES = ({}, {"training": True}, {"dynamic": True})
GRAMMARS = ("mixed",) * 8 + ("vision", "attention")


def one_campaign(args: tuple[int, int, bool]) -> dict:
    seed, per, full = args
    settings = Settings(out=Path("unused"), seed=seed, grammar=GRAMMARS[seed % len(GRAMMARS)],
                        recipe=Recipe(surface=Surface(**SURFACES[seed % len(SURFACES)])))
    errors: Counter = Counter()
    first: dict[str, str] = {}
    strategies: Counter = Counter()
    for index in range(per):
        try:
            case, task = make_case(settings, index)
            if full:
                check_valid(case, task.draws)
            else:
                compile(render_model(case.graph), "<case>", "exec")
            strategies[case.origin.get("strategy", "")] += 1
        except Exception as err:  # counted, never raised: that is what is measured
            key = f"{type(err).__name__}: {str(err)[:100]}"
            errors[key] += 1
            first.setdefault(key, f"seed {seed} index {index}\n{traceback.format_exc()[-800:]}")
    return {"errors": errors, "first": first, "strategies": strategies}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=1_000_000)
    parser.add_argument("--per-campaign", type=int, default=1000)
    parser.add_argument("--processes", type=int, default=1)
    parser.add_argument("--check", choices=("light", "full"), default="light")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    jobs = [(seed, args.per_campaign, args.check == "full")
            for seed in range(args.cases // args.per_campaign)]
    errors: Counter = Counter()
    strategies: Counter = Counter()
    first: dict[str, str] = {}
    began = time.monotonic()
    with multiprocessing.Pool(args.processes) as pool:
        for done, part in enumerate(pool.imap_unordered(one_campaign, jobs), 1):
            errors.update(part["errors"])
            strategies.update(part["strategies"])
            for key, where in part["first"].items():
                if key not in first:
                    print(f"new error: {key} at {where}", flush=True)
                first.setdefault(key, where)
            if done % 50 == 0:
                print(f"{done * args.per_campaign} cases, {sum(errors.values())} errors, "
                      f"{time.monotonic() - began:.0f} s", flush=True)
    result = {"cases": len(jobs) * args.per_campaign, "errors": sum(errors.values()),
              "by_error": dict(errors), "first": first, "strategies": dict(strategies),
              "seconds": round(time.monotonic() - began, 1), "processes": args.processes,
              "check": args.check}
    text = json.dumps(result, indent=1)
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(text + "\n")
    print(text)


if __name__ == "__main__":
    main()

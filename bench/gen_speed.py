"""Generation speed of two checkouts side by side: the same cases (campaign seed, strategy,
dtype) made in each, in fresh processes taking turns, so load on the machine falls on both.

    .venv/bin/python bench/gen_speed.py --tree OLD_CHECKOUT --tree . --rounds 2 \
        --json bench/raw/gen_speed.json

Each process makes ``--cases`` cases per strategy (``make_case``: program, inputs, no compile)
and prints seconds per strategy; the report is the median per tree and the ratio to the first.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path

STRATEGIES = ("state", "vision-ops", "shapes", "special-functions", "models")  # in both trees

# Run inside the checkout under test (its own fuzzer package on sys.path).
WORKER = """
import json, sys, time
from pathlib import Path
sys.path.insert(0, ".")
from fuzzer.campaign.settings import Settings, make_case
cases, names = int(sys.argv[1]), sys.argv[2].split(",")
times = {}
for name in names:
    settings = Settings(out=Path("unused"), seed=11, strategies={name: 1.0})
    start = time.perf_counter()
    for index in range(cases):
        make_case(settings, index)
    times[name] = time.perf_counter() - start
print(json.dumps(times))
"""


def one_run(tree: Path, cases: int) -> dict[str, float]:
    done = subprocess.run([sys.executable, "-c", WORKER, str(cases), ",".join(STRATEGIES)],
                          cwd=tree, capture_output=True, text=True, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tree", action="append", type=Path, required=True)
    parser.add_argument("--cases", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    runs: dict[str, list[dict[str, float]]] = {str(t): [] for t in args.tree}
    for _ in range(args.rounds):
        for tree in args.tree:
            runs[str(tree)].append(one_run(tree, args.cases))
    medians = {tree: {s: statistics.median(r[s] for r in rs) for s in STRATEGIES}
               for tree, rs in runs.items()}
    print(f"{args.cases} cases per strategy, median of {args.rounds} rounds, seconds")
    print("strategy".ljust(20) + "".join(Path(t).name.ljust(16) for t in medians) + "ratio")
    for name in STRATEGIES:
        row = [medians[t][name] for t in medians]
        print(name.ljust(20) + "".join(f"{v:<16.2f}" for v in row)
              + f"{row[0] / row[-1]:.2f}x")
    if args.json:
        args.json.write_text(json.dumps({"cases": args.cases, "runs": runs,
                                         "medians": medians}, indent=1))


if __name__ == "__main__":
    main()

"""Per strategy and per construct: how many cases of a finished campaign held it, and how many of
its saved findings did. A campaign's case ``i`` is a pure function of its settings
(``campaign.settings.make_case``), so the cases are regenerated here (no compile) and the corpus's
case files are matched to them by their recorded index.

    .venv/bin/python bench/constructs.py --seed 2026112701 --cases 1162 \
        --corpus reports/corpus [--json out.json]

Only the default settings of ``numfuzz run`` / ``nightly`` are rebuilt (all strategies, the three
float dtypes); the seed and case count are the night's (``REPORTS/<date>/night.json``).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections import Counter, defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from fuzzer.campaign.settings import Settings, make_case  # noqa: E402
from fuzzer.corpus.case import Case, CaseError  # noqa: E402
from fuzzer.ir import ops  # noqa: E402
from fuzzer.ir.graph import Graph  # noqa: E402

TAIL_DIMS = {7, 9, 15, 17, 31, 33, 63, 65, 127, 129}  # w - 1 and w + 1 for w = 8 … 128
INTEGERS = ("int8", "uint8", "int16", "int32", "int64", "bool")


def constructs(graph: Graph) -> set[str]:
    """The constructs a program holds, by what its nodes are (not by how it was made)."""
    held: set[str] = set()
    nodes = [graph.node(n) for n in graph.node_ids()]
    for node in nodes:
        if node.op == "input":
            if node.attrs.get("layout", "contiguous") != "contiguous":
                held.add("input laid out")
            if node.attrs.get("state"):
                held.add(f"module {node.attrs['state']}")
            continue
        spec = ops.spec(node.op)
        if spec.mutates:
            held.add("in-place write")
        elif spec.alias is not None:
            held.add("view")
        for tag in ("relayout", "select", "scan", "rearrange", "resample", "pool"):
            if tag in spec.tags:
                held.add(f"op tagged {tag}")
        if node.op in ("full_like", "own_dtype"):
            held.add("rewrite constant or cast")
        if spec.bits:
            held.add("bit reinterpretation")
        if node.dtype in INTEGERS and math.prod(node.shape) >= 16:
            held.add("integer value at width (>= 16 elements)")
    for node in nodes:
        if len(node.shape) >= 5:
            held.add("rank 5")
        if 0 in node.shape:
            held.add("empty dim")
        if TAIL_DIMS & set(node.shape):
            held.add("a dim at a vector tail (w +- 1)")
    return held


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seed", type=int, required=True)
    parser.add_argument("--cases", type=int, required=True)
    parser.add_argument("--corpus", type=Path, required=True)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    settings = Settings(out=Path("unused"), seed=args.seed)
    found: dict[int, list[str]] = defaultdict(list)
    for path in sorted(args.corpus.glob("*.pt")):
        try:
            case = Case.load(path)
        except CaseError:
            continue
        if case.origin.get("campaign_seed") == args.seed and case.verdict is not None:
            found[case.origin["index"]].append(case.verdict.kind)
    by_strategy: dict[str, Counter] = defaultdict(Counter)
    by_construct: dict[str, Counter] = defaultdict(Counter)
    for index in range(args.cases):
        case, _ = make_case(settings, index)
        kinds = found.get(index, [])
        row = by_strategy[case.origin["strategy"]]
        row["cases"] += 1
        row["findings"] += len(kinds)
        for name in constructs(case.graph):
            by_construct[name]["cases"] += 1
            by_construct[name]["findings"] += len(kinds)
            for kind in kinds:
                by_construct[name][kind] += 1
    report = {"seed": args.seed, "cases": args.cases,
              "strategies": {k: dict(v) for k, v in sorted(by_strategy.items())},
              "constructs": {k: dict(v) for k, v in sorted(by_construct.items())}}
    print("| strategy | cases | raw findings |\n|---|---|---|")
    for name, row in report["strategies"].items():
        print(f"| {name} | {row['cases']} | {row.get('findings', 0)} |")
    print("\n| construct | cases holding it | raw findings among them | kinds |\n|---|---|---|---|")
    for name, row in report["constructs"].items():
        kinds = ", ".join(f"{k} {v}" for k, v in row.items() if k not in ("cases", "findings"))
        print(f"| {name} | {row['cases']} | {row.get('findings', 0)} | {kinds} |")
    if args.json:
        args.json.write_text(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()

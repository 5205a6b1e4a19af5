"""Discovery: what a campaign's findings are worth, by strategy and by root cause.

    numfuzz run --device cpu --time 30m --workers 2 --seed 11 --out /tmp/hour --json > hour.json
    .venv/bin/python bench/discovery.py /tmp/hour --summary hour.json > bench/raw/discovery.md

For every finding in the corpus directory: its strategy and case index (``origin``), its kind,
its cause fields (``triage.signature``, without the bisector), whether it vanishes with
``emulate_precision_casts`` (one fresh compile: the fp16/bf16 round trip Inductor keeps in float32
by default, which maintainers treat as expected), and the
``known.toml`` entry it matches. *Real* means a finding that is not expected-by-default (a known
open bug is real: it is a sighting). Root causes merge with ``triage.signature.same_cause``.
The public classes are those of tests/models/public that the maintainers' rule calls regressions
(``PUBLIC_CLASSES``, a detector each, mostly the ``known.toml`` entry transcribed from them), with
the first case index that hit each and, given the campaign's JSON summary, the approximate time
(index / cases per minute).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter, defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from fuzzer.corpus.case import Case  # noqa: E402
from fuzzer.errors import CaseError  # noqa: E402
from fuzzer.execute.workers import LocalRunner  # noqa: E402
from fuzzer.triage import known  # noqa: E402
from fuzzer.triage.attribute import outcome_of, run_fresh  # noqa: E402
from fuzzer.triage.signature import same_cause, signature_fields  # noqa: E402

EXPECTED_KNOB = {"emulate_precision_casts": True}
REDUCTIONS = {"var", "std", "var_mean", "std_mean", "mean", "sum", "amax", "amin", "logsumexp",
              "prod", "norm"}


def core_ops(row: dict) -> set[str]:
    return {known.bare(label) for label in row["fields"]["core"]}


# The public classes of tests/models/public/*.py ("Class:" in each docstring) that the
# maintainers' rule calls a regression, each with a detector over a finding's row. The benign and
# expected-by-default classes there (scalar-rounding, libm-ulp, opmath-precision, fp16-overflow)
# are not findings by the rule, so a campaign that works never reports them.
PUBLIC_CLASSES = {
    "cast-roundtrip (expected)": lambda r: r["expected"],
    "floor-division": lambda r: r["known"] == "float-floor-division",
    "remainder-vectorized": lambda r: r["known"] == "vectorized-remainder",
    "sleef-range": lambda r: r["known"] == "sleef-sinh-cosh-range" or (
        r["fields"]["family"] in ("nonfinite", "accuracy") and "asinh" in core_ops(r)),
    "empty-reduction-nan": lambda r: r["known"] == "var-mean-empty-identity" or (
        r["empty"] and bool(core_ops(r) & REDUCTIONS)),
    "sign-zero": lambda r: r["known"] in ("minimum-signed-zero", "ceil-add-negative-zero") or (
        r["fields"]["family"] == "accuracy" and "frac" in core_ops(r)),
    "any-uint8-dtype": lambda r: r["known"] == "any-uint8-dtype",
    "arange-int32-wrap": lambda r: r["known"] == "arange-int32-product",
    "int-promotion": lambda r: r["known"] == "uint8-abs-promotion",
}


def judge_finding(case: Case, runner: LocalRunner) -> dict:
    fields = signature_fields(case, None)
    verdict = run_fresh(runner, case, EXPECTED_KNOB)
    expected = outcome_of(case.verdict, verdict) == "vanishes"
    if expected:
        fields["vanishes_with"] = ["emulate_precision_casts"]
    entry = known.match(fields)
    return {"fields": fields, "expected": expected, "known": entry.id if entry else None,
            "kind": case.verdict.kind, "strategy": case.origin.get("strategy", "?"),
            "index": int(case.origin.get("index", -1)), "dtype": case.dtype,
            "empty": any(t.numel() == 0 for t in case.inputs.values())}


def rows_of(corpus: Path, runner: LocalRunner) -> list[dict]:
    """A row per finding in ``corpus`` (``judge_finding``); unreadable files are skipped."""
    rows = []
    for path in sorted(corpus.glob("*.pt")):
        try:
            case = Case.load(path)
        except CaseError as err:
            print(f"skipped {err}", file=sys.stderr)
            continue
        if case.verdict is not None and case.verdict.is_finding:
            rows.append({**judge_finding(case, runner), "file": path.name})
    return rows


def causes(rows: list[dict]) -> list[dict]:
    """Real findings merged into root causes (same_cause), first seen first."""
    merged: list[dict] = []
    for row in sorted(rows, key=lambda r: r["index"]):
        for cause in merged:
            if same_cause(cause["fields"], row["fields"]):
                cause["count"] += 1
                if len(row["fields"]["core"]) < len(cause["fields"]["core"]):
                    cause["fields"] = row["fields"]
                break
        else:
            merged.append({**row, "count": 1})
    return merged


def report(rows: list[dict], summary: dict | None) -> str:
    per_min = (summary or {}).get("cases_per_min") or 0
    strategies = (summary or {}).get("strategies", {})
    lines = ["| strategy | cases | findings | expected (round trip) | real | real causes "
             "| known classes hit |", "|---|---|---|---|---|---|---|"]
    by_strategy: dict[str, list[dict]] = defaultdict(list)
    for row in rows:
        by_strategy[row["strategy"]].append(row)
    for name in sorted(set(by_strategy) | set(strategies)):
        mine = by_strategy.get(name, [])
        real = [r for r in mine if not r["expected"]]
        hit = sorted({r["known"] for r in real if r["known"]})
        cases = strategies.get(name, {}).get("cases", "?")
        lines.append(f"| {name} | {cases} | {len(mine)} | {len(mine) - len(real)} | "
                     f"{len(real)} | {len(causes(real))} | {', '.join(hit) or '-'} |")
    real = [r for r in rows if not r["expected"]]
    merged = causes(real)
    lines += ["", f"{len(rows)} findings, {len(real)} real, {len(merged)} real root causes "
              f"({sum(1 for c in merged if not c['known'])} match no known entry)", "",
              "| root cause (family: float core) | known entry | findings | first case "
              "| strategy |", "|---|---|---|---|---|"]
    for cause in merged:
        core = " → ".join(cause["fields"]["core"][-6:]) or "(the head's own kernel)"
        lines.append(f"| {cause['fields']['family']}: {core} | {cause['known'] or 'new'} | "
                     f"{cause['count']} | {cause['index']} | {cause['strategy']} |")
    first: dict[str, int] = {}
    hits: Counter = Counter()
    for row in sorted(rows, key=lambda r: r["index"]):
        for name, detect in PUBLIC_CLASSES.items():
            if detect(row):
                first.setdefault(name, row["index"])
                hits[name] += 1
    lines += ["", "| public class (tests/models/public) | first case | ~minutes | findings |",
              "|---|---|---|---|"]
    for name in PUBLIC_CLASSES:
        if name in first:
            minutes = f"{first[name] / per_min:.1f}" if per_min else "?"
            lines.append(f"| {name} | {first[name]} | {minutes} | {hits[name]} |")
        else:
            lines.append(f"| {name} | not found | - | 0 |")
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("corpus", type=Path)
    parser.add_argument("--summary", type=Path, help="the campaign's `numfuzz run --json` output")
    parser.add_argument("--json", type=Path, help="also write every finding's row here")
    args = parser.parse_args()
    summary = json.loads(args.summary.read_text()) if args.summary else None
    runner = LocalRunner("cpu", threads=2, timeout=300, warmup=True)
    try:
        rows = rows_of(args.corpus, runner)
    finally:
        runner.close()
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))
    print(report(rows, summary), end="")


if __name__ == "__main__":
    main()

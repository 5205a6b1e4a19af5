"""A night's causes taken again by this numfuzz's matching, without running anything: every
finding of a store, in the order it was first seen, matched against the known list and the
ledger (``known.match``, ``ledger.match`` on ``signature.match_fields``) and against the
causes before it by mechanism (``signature.same_mechanism``), from its kept case, its stored
signature fields and its attribution. What a night on this code would have counted, where the
night ran older matching code (bench/results/41).

    python bench/reclassify.py --reports /tmp/night2h [--json]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from fuzzer.corpus.case import Case
from fuzzer.report.store import Store
from fuzzer.triage import known, ledger
from fuzzer.triage.attribute import Attribution
from fuzzer.triage.signature import match_fields, mechanism_of, same_cause, same_mechanism


def reclassify(reports: Path) -> list[dict]:
    rows: list[dict] = []
    kept: list[tuple[str, dict, dict]] = []  # new causes so far: signature, fields, root
    with Store.in_reports(reports) as store:
        for finding in sorted(store.findings(), key=lambda f: (f.first_seen, f.signature)):
            fields = store.cause(finding.signature) or {}
            attribution = Attribution.from_dict(finding.attribution)
            root = mechanism_of(attribution)
            case = Case.load(finding.case_path) if finding.case_path else None
            matched = match_fields(case, attribution, fields) if case else fields
            entry = known.match(matched)
            refound = ledger.match(matched) if entry is None else None
            same = next((sig for sig, f, r in kept if same_cause(f, fields)
                         or same_mechanism(f, r, fields, root)), None)
            if entry is not None and not entry.reappeared():
                now = f"{entry.counted_as}: {entry.id}"
            elif refound is not None:
                now = f"{refound.counted_as}: {refound.id}"
            elif same is not None:
                now = f"variant of {same}"
            else:
                now = "new"
                kept.append((finding.signature, fields, root))
            rows.append({"signature": finding.signature, "title": finding.title,
                         "night": "refind: " + finding.ledger if finding.ledger else "new",
                         "now": now, "value_class": finding.value_class,
                         "hits": finding.hits})
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reports", type=Path, required=True)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    rows = reclassify(args.reports)
    if args.json:
        print(json.dumps(rows, indent=1))
        return 0
    print("| signature | class | hits | the night said | this code says | title |")
    print("|---|---|---|---|---|---|")
    for r in rows:
        print(f"| `{r['signature']}` | {r['value_class']} | {r['hits']} | {r['night']} | "
              f"{r['now']} | {r['title'][:110]} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Render the causes ledger, fuzzer/causes.toml, as FINDINGS.md at the repository's root.

    python bench/findings_ledger.py            # write FINDINGS.md
    python bench/findings_ledger.py --check    # exit 1 if FINDINGS.md is not what it would write

fuzzer/causes.toml holds one ``[[cause]]`` table per root cause numfuzz has found (its id, the
mechanism, a value class 1-5 as ``fuzzer/triage/value.py`` defines them, the surface it was found
on, the § of bench/results/ that found it first, a kept repro, the upstream search and what it
matched, the verdict, and where bench/results/ records it), ``[[group]]`` tables that say which
ids go in which table (by the id's first letter: N new or new candidate, K known upstream, X and
Z not Inductor's, not a bug, or noise), and the ledger's ``notes``. FINDINGS.md is a title, a
short intro saying it is generated, a count line, one table per group and the notes. Nobody edits
FINDINGS.md by hand: edit the TOML and run this. ``--check`` lets CI or a test catch a ledger
whose FINDINGS.md was not regenerated. Standard library only (``tomllib``: Python 3.11).
"""

from __future__ import annotations

import argparse
import re
import sys
import tomllib
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CAUSES = ROOT / "fuzzer" / "causes.toml"
FINDINGS = ROOT / "FINDINGS.md"

REQUIRED = ("id", "mechanism", "category", "value_class", "surface", "first_found", "repro",
            "upstream_match", "upstream_search", "status", "where")
COLUMNS = ("id", "mechanism", "value class", "surface", "first found", "repro",
           "upstream search and match", "status", "a night knows it by")
CLASSES = {  # the words of fuzzer/triage/value.py's CLASSES, short (no torch import here)
    1: "silent wrong value or memory-unsafe write, ordinary inputs",
    2: "wrong aliasing or mutation semantics",
    3: "compile error or crash",
    4: "needs edge inputs",
    5: "signed zero or a NaN's sign",
}


class LedgerError(ValueError):
    """fuzzer/causes.toml does not hold what the ledger needs."""


def load(path: Path = CAUSES) -> dict:
    """The ledger, checked: every cause has every field, a value class 1-5, a unique id and a
    group; every group has a title and id prefixes."""
    try:
        data = tomllib.loads(path.read_text())
    except tomllib.TOMLDecodeError as e:
        raise LedgerError(f"{path}: {e}") from e
    groups, causes = data.get("group", []), data.get("cause", [])
    if not groups or not causes:
        raise LedgerError(f"{path}: needs [[group]] and [[cause]] tables")
    for g in groups:
        if not g.get("title") or not g.get("id_prefixes") or not g.get("key"):
            raise LedgerError(f"{path}: a [[group]] needs key, title and id_prefixes: {g}")
    seen = set()
    for c in causes:
        missing = [f for f in REQUIRED if f not in c]
        if missing:
            raise LedgerError(f"{path}: cause {c.get('id', '?')} lacks {', '.join(missing)}")
        if c["id"] in seen:
            raise LedgerError(f"{path}: cause {c['id']} appears twice")
        seen.add(c["id"])
        if c["value_class"] not in CLASSES:
            raise LedgerError(f"{path}: cause {c['id']}: value_class must be 1 to 5, "
                              f"not {c['value_class']!r}")
        if group_of(c, groups) is None:
            raise LedgerError(f"{path}: cause {c['id']} matches no [[group]]'s id_prefixes")
    return data


def group_of(cause: dict, groups: list[dict]) -> str | None:
    for g in groups:
        if any(cause["id"].startswith(p) for p in g["id_prefixes"]):
            return g["key"]
    return None


def is_noise(cause: dict) -> bool:
    """A noise row (numfuzz's own, not a cause): its category says so."""
    return cause["category"].startswith("noise")


def cell(text: str) -> str:
    """Text for one table cell: no line breaks, every pipe escaped (GFM splits cells at a pipe
    even inside a code span, and renders ``\\|`` as ``|`` in both)."""
    return " ".join(text.split("\n")).replace("|", "\\|")


def upstream(cause: dict) -> str:
    parts = [p for p in (cause["upstream_match"], cause["upstream_search"]) if p]
    return " — ".join(parts) or "—"


def known_by(cause: dict) -> str:
    """How a night recognises the cause (``fuzzer/triage/ledger.py``): its recorded signatures,
    and each ``[[cause.match]]`` form's conditions, any of which matches."""
    forms = cause.get("match", [])
    forms = [forms] if isinstance(forms, dict) else forms
    said = [" and ".join(f"{key} {_shown(value)}" for key, value in form.items())
            for form in forms]
    signatures = len(re.findall(r"`[0-9a-f]{16}`", cause["where"]))
    if signatures:
        said.append(f"its {signatures} recorded signature{'s' * (signatures > 1)}")
    return "; or ".join(said) or "—"


def _shown(value: object) -> str:
    if isinstance(value, list):
        return "/".join(str(v) for v in value)
    return str(value).lower() if isinstance(value, bool) else str(value)


def row(cause: dict) -> str:
    klass = str(cause["value_class"])
    if cause.get("class_note"):
        klass += f" ({cause['class_note']})"
    first = f"**{cause['first_found']}**"
    if cause.get("first_found_note"):
        first += f" ({cause['first_found_note']})"
    first += f"; all: {cause['where']}"
    repro = "; ".join(f"`{p.strip()}`" for p in cause["repro"].split(";") if p.strip()) or "—"
    cells = (cause["id"], f"{cause['mechanism']} *({cause['category']})*", klass,
             cause["surface"], first, repro, upstream(cause), cause["status"], known_by(cause))
    return "| " + " | ".join(cell(c) for c in cells) + " |"


def counts(data: dict) -> list[str]:
    causes = data["cause"]
    by_group = Counter(group_of(c, data["group"]) for c in causes if not is_noise(c))
    noise = sum(is_noise(c) for c in causes)
    real = len(causes) - noise
    line = (f"**{real} causes**: {by_group['new']} new or new candidates, "
            f"{by_group['known']} known upstream")
    others = real - by_group["new"] - by_group["known"]
    if others:
        line += f", {others} not Inductor's or not a bug"
    line += f"; and {noise} noise rows (numfuzz's own), counted apart." if noise else "."
    new_classes = Counter(c["value_class"] for c in causes
                          if group_of(c, data["group"]) == "new" and not is_noise(c))
    by_class = ", ".join(f"class {k}: {new_classes[k]}" for k in sorted(new_classes))
    return [line, "", f"New and new candidates by value class: {by_class}."]


def render(data: dict) -> str:
    out = [
        "# numfuzz findings: every root cause found so far",
        "",
        "One row per root cause numfuzz has found: its mechanism, its value class (1-5, "
        "`fuzzer/triage/value.py`),",
        "where it was found, the upstream search and what it matched, and the verdict that "
        "bench/results/ gives it.",
        "Generated from fuzzer/causes.toml; do not edit by hand: edit fuzzer/causes.toml and run "
        "`python bench/findings_ledger.py`.",
        "A night matches every cause it takes against this ledger by mechanism (the last "
        "column: `fuzzer/triage/ledger.py`): a match is a re-find of the cause, counted under "
        "its id and never drafted as new; `numfuzz findings --ledger` lists each cause's "
        "state.",
        "",
        *counts(data),
        "",
        "Value classes: " + "; ".join(f"{k} {v}" for k, v in CLASSES.items()) + ".",
    ]
    for g in data["group"]:
        rows = [c for c in data["cause"] if group_of(c, data["group"]) == g["key"]]
        if not rows:
            continue
        out += ["", f"## {g['title']}", "", "| " + " | ".join(COLUMNS) + " |",
                "|" + "---|" * len(COLUMNS)]
        out += [row(c) for c in rows]
    notes = data.get("notes", "").strip("\n")
    if notes:
        out += ["", "## Notes", "", notes]
    return "\n".join(out) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true",
                        help="write nothing; exit 1 if FINDINGS.md differs from what it would be")
    parser.add_argument("--causes", type=Path, default=CAUSES, help="the ledger (TOML)")
    parser.add_argument("--out", type=Path, default=FINDINGS, help="the markdown to write")
    args = parser.parse_args(argv)
    try:
        data = load(args.causes)
    except LedgerError as e:
        print(f"findings_ledger: {e}", file=sys.stderr)
        return 2
    text = render(data)
    if args.check:
        if not args.out.exists() or args.out.read_text() != text:
            state = "stale" if args.out.exists() else "missing"
            print(f"findings_ledger: {args.out} is {state}: run python bench/findings_ledger.py",
                  file=sys.stderr)
            return 1
        return 0
    args.out.write_text(text)
    print(f"wrote {args.out} ({len(data['cause'])} rows)")
    return 0


if __name__ == "__main__":
    sys.exit(main())

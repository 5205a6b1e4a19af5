"""numfuzz's own ledger: every root cause it has found (``fuzzer/causes.toml``, rendered as
FINDINGS.md), so that a night knows a cause it found before.

A ledger cause carries, beside what FINDINGS.md shows (its id, mechanism, value class, status,
upstream search), the conditions that recognise it by mechanism (``[[cause.match]]``: the same
``known.Conditions`` the known list matches with, several tables for several forms, any of
which matches), where it stands upstream (``filed``: the issue's address; ``fixed_in``: the
first torch its repro no longer reproduces on, measured) and its plain repro (a path in the
repository: ``bench/repros/…``). A night's cause that matches one is a **re-find** of it,
counted under its id (``N19``) and never drafted as new; ``numfuzz findings --ledger`` lists
the causes with their state, and a user who asks for a re-find's draft gets one that says it is
numfuzz's own cause (``draft_note``).

Matching order, as a night takes a cause: the known list first (upstream knows it, or it is
documented behaviour), then this ledger, then the store's own causes by mechanism.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from fuzzer.errors import InputError
from fuzzer.triage.confirm import (
    ABSENT,
    CONFIRM_TIMEOUT,
    REPRODUCES,
    Interpreter,
    Run,
    run_under,
)
from fuzzer.triage.known import (
    BY_DESIGN,
    KNOWN,
    Conditions,
    last_and_fix,
    table_values,
    version_of,
)

LEDGER_FILE = Path(__file__).resolve().parent.parent / "causes.toml"
REPO = LEDGER_FILE.parent.parent  # where a cause's repro path is read from (a checkout)
# The ledger groups (FINDINGS.md's tables), by an id's first letter.
GROUPS = {"N": "new", "K": "known upstream", "X": "not Inductor's or not a bug", "Z": "noise"}
ISSUE = re.compile(r"/(?:issues|pull)/(\d+)")
SIGNATURE = re.compile(r"`([0-9a-f]{16})`")  # a cause signature as RESULTS quotes one
REFIND = "refind"  # a night's cause that is one of numfuzz's own, found before


@dataclass(frozen=True)
class LedgerCause:
    """One row of the ledger, with what recognises it and where it stands."""

    id: str
    mechanism: str
    value_class: int
    status: str  # RESULTS' verdict, in words
    forms: tuple[Conditions, ...] = ()  # what recognises it by mechanism
    signatures: tuple[str, ...] = ()  # the signatures RESULTS recorded for it (``where``)
    repro: str = ""  # paths of kept repros, relative to the repository, "; " between several
    filed: str = ""  # the upstream issue it was filed as
    fixed_in: str = ""  # the first torch release its repro no longer reproduces on (measured)

    @property
    def group(self) -> str:
        return GROUPS.get(self.id[:1], "other")

    @property
    def counted_as(self) -> str:
        """What a night counts a match as: a re-find of numfuzz's own cause (N), a known
        upstream one (K), or behaviour that is not a bug (X, Z)."""
        return {"N": REFIND, "K": KNOWN}.get(self.id[:1], BY_DESIGN)

    def specificity(self, fields: dict, version: str | None = None) -> int:
        """How much of the cause its best matching form pins down (the conditions it sets;
        0: none matches). A recorded signature is the most specific of all."""
        if fields.get("signature") in self.signatures:
            return 1000
        return max((form.specificity() for form in self.forms
                    if form.matches(fields, version)), default=0)

    def state(self) -> str:
        """Where it stands: fixed in X, filed as #N, or found and not filed."""
        if self.fixed_in:
            return f"fixed in {self.fixed_in}"
        if self.filed:
            found = ISSUE.search(self.filed)
            return f"filed as #{found.group(1)}" if found else f"filed as {self.filed}"
        return "found, not filed"

    def repro_paths(self) -> list[Path]:
        """Its kept repros that are scripts in this checkout (none in an installed copy)."""
        paths = [REPO / p.strip() for p in self.repro.split(";") if p.strip()]
        return [p for p in paths if p.suffix == ".py" and p.is_file()]

    def draft_note(self) -> str:
        """What a draft of a re-find says first: which of numfuzz's causes it is."""
        return (f"This is numfuzz's own cause **{self.id}** (FINDINGS.md, {self.state()}): "
                f"{_first_sentence(self.mechanism)}")


def _first_sentence(text: str) -> str:
    head = text.split(". ", 1)[0].rstrip(".")
    return head[:300] + ("…" if len(head) > 300 else ".")


@cache
def causes(path: Path = LEDGER_FILE) -> tuple[LedgerCause, ...]:
    """The ledger's causes; InputError (one line) on a malformed file."""
    import tomllib

    try:
        data = tomllib.loads(path.read_text())
        found = []
        for raw in data.get("cause", []):
            tables = raw.get("match", [])
            forms = tuple(Conditions(**table_values(t))
                          for t in ([tables] if isinstance(tables, dict) else tables))
            for form in forms:
                form.check_torch(raw["id"])
            found.append(LedgerCause(
                id=raw["id"], mechanism=raw["mechanism"], value_class=int(raw["value_class"]),
                status=raw["status"], forms=forms,
                signatures=tuple(SIGNATURE.findall(raw.get("where", ""))),
                repro=raw.get("repro", ""), filed=raw.get("filed", ""),
                fixed_in=raw.get("fixed_in", "")))
        return tuple(found)
    except (OSError, ValueError, TypeError, KeyError, AttributeError) as err:
        raise InputError(f"{path}: not a valid causes ledger: {err}") from None


def match(fields: dict, ledger: tuple[LedgerCause, ...] | None = None,
          version: str | None = None) -> LedgerCause | None:
    """The ledger cause that matches the cause most specifically (a recorded signature, else
    the form that sets the most conditions: N7's aliased arguments at a storage offset before
    N6's aliased arguments; the first in the file among equals), else None."""
    scored = [(c.specificity(fields, version), -i, c)
              for i, c in enumerate(causes() if ledger is None else ledger)]
    best = max(scored, key=lambda t: t[:2], default=(0, 0, None))
    return best[2] if best[0] else None


def named(cause_id: str, ledger: tuple[LedgerCause, ...] | None = None) -> LedgerCause | None:
    return next((c for c in (causes() if ledger is None else ledger) if c.id == cause_id), None)


def measure(cause: LedgerCause, pythons: Sequence[Interpreter],
            timeout: float = CONFIRM_TIMEOUT) -> list[Run]:
    """Its first kept repro script run under each interpreter (fresh processes, the repro
    contract: exit 1 reproduces, 0 not, 2 cannot run here); none where it keeps no script in
    this checkout."""
    paths = cause.repro_paths()
    return [run_under(paths[0], python, timeout) for python in pythons] if paths else []


def measured_fix(runs: list[Run]) -> str | None:
    """What the runs say a cause's ``fixed_in`` is: the release of the first torch after the
    last that showed it ('' where the newest torch run still shows it), None where nothing
    told (no run ran, or none showed it)."""
    ran = sorted((r for r in runs if r.outcome in (REPRODUCES, ABSENT)),
                 key=lambda r: version_of(r.torch))
    last, fixed_in = last_and_fix(ran)
    return None if last is None else fixed_in or ""


def measured_state(cause: LedgerCause, runs: list[Run]) -> str:
    """What the runs say, oldest torch first (``known.last_and_fix``): still there on the
    newest torch that ran it, fixed in the first release after the last that showed it, or
    shown by none."""
    ran = sorted((r for r in runs if r.outcome in (REPRODUCES, ABSENT)),
                 key=lambda r: version_of(r.torch))
    if not ran:
        return "no repro here" if not runs else "could not run here"
    last, fixed_in = last_and_fix(ran)
    if last is None:
        return f"does not reproduce on {ran[-1].torch} (nor on any torch run here)"
    if fixed_in is None:
        return f"reproduces on {last.torch}"
    return f"fixed in {fixed_in} (reproduces on {last.torch})"


def write_fixed_in(path: Path, measured: dict[str, str | None]) -> list[str]:
    """Each cause's measured ``fixed_in`` (None: still reproduces, the line removed) written
    into the ledger at ``path``: a targeted edit of the cause's own keys, before its match
    forms, every other line kept; checked by reading it back. The ids changed."""
    import tomllib

    from fuzzer.corpus.files import atomic_write
    from fuzzer.triage.known import _block, _key

    lines = path.read_text().splitlines(keepends=True)
    changed = []
    for cause_id, fixed_in in measured.items():
        block = _block(lines, cause_id, "[[cause]]")
        own = block[:next((k for k, i in enumerate(block)
                           if lines[i].startswith("[[")), len(block))]  # before its forms
        at = next((i for i in own if _key(lines[i]) == "fixed_in"), None)
        line = f'fixed_in = "{fixed_in}"\n' if fixed_in else None
        if at is not None and lines[at] != line:
            lines[at:at + 1] = [line] if line else []
        elif at is None and line:
            lines.insert(next(i for i in own if _key(lines[i]) == "id") + 1, line)
        else:
            continue
        changed.append(cause_id)
    text = "".join(lines)
    read = {c["id"]: c.get("fixed_in") for c in tomllib.loads(text)["cause"]}
    if any(read[i] != measured[i] for i in changed):
        raise InputError(f"{path}: writing fixed_in did not read back as measured")
    if changed:
        atomic_write(path, text)
        causes.cache_clear()
    return changed

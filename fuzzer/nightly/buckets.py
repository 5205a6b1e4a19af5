"""Buckets: raw findings grouped by a cheap fingerprint before anything expensive runs.

A night's raw findings are mostly the same few bugs met again (4 of the first 5 raw findings of
one night were one export crash), and a cause costs minutes to minimize and triage. So, as
syzbot and ClusterFuzz bucket crashes by signature before reproducing them, a raw case is first
given a ``Fingerprint`` read off its case file alone (no run): its divergence kind, surface,
device, raw value class, backend and Inductor options, and where it shows (for a crash, the
exception type, the innermost torch frames and the message with its numbers taken out; for a
value divergence, the diverging output's op, the op feeding it and the output's dtype; for a
memory-unsafe run, the ops of the program). One representative per bucket goes through the
full pipeline; each other member is then settled by ``check_member``: a check that costs a run
or two, not a minimization.

The check never merges two causes silently: a member is a hit on its bucket's cause only when
it still shows its own divergence in one run and, where the representative's triage found a
knob that tells the cause (the first knob that made it vanish, else whether it survives without
Inductor at all), that knob does to the member what it did to the representative. A member that
fails the check leaves the bucket for a sub-bucket of those that failed alike
(``Backlog.split``), where its first is processed in full. SUMMARY.md lists
every bucket with its members and how each was settled (``nightly.summary``).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path

from fuzzer.corpus.case import Case
from fuzzer.device import Device
from fuzzer.execute.pool import Runners, run_within
from fuzzer.judge.key import DivergenceKey, same_divergence
from fuzzer.judge.kinds import RAISED, Kind, facts
from fuzzer.triage import known, ledger, value
from fuzzer.triage.attribute import AOT_EAGER, KNOBS, SURFACE, flip, knob_named
from fuzzer.triage.known import Conditions
from fuzzer.triage.signature import aliased_arguments, float_core, said

# Where no knob made the representative vanish: whether it survives without Inductor tells a
# cause inside Inductor from one before it.
WITHOUT_INDUCTOR = AOT_EAGER
_NUMBERS = re.compile(r"0x[0-9a-f]+|\d+(\.\d+)?", re.IGNORECASE)
_QUOTED = re.compile(r"'[^']*'|\"[^\"]*\"")


@dataclass(frozen=True)
class Fingerprint:
    """What a raw case shows, read off its file: equal for raw cases of one bucket."""

    kind: str
    surface: str
    device: str
    value: int  # the raw case's value class (``triage.value``): edge inputs never join ordinary
    recipe: str  # the backend and Inductor options it compiled with: another backend, another bug
    where: str  # the diverging op and what feeds it, or the crash's type and frames
    detail: str = ""  # the output's dtype, or the crash message's stem
    # A raw crash its file alone tells as a known entry's or a ledger cause's (``tells``): the
    # id, and what a hit on it counts as. Such a bucket holds that cause's raw crashes from
    # every surface and recipe, and is settled by one confirming run, not minimized.
    known: str = ""
    counted_as: str = ""

    @property
    def id(self) -> str:
        """12 hex digits: the bucket's name in night.json and SUMMARY.md."""
        text = "|".join(str(v) for v in asdict(self).values())
        return hashlib.sha256(text.encode()).hexdigest()[:12]

    def describe(self) -> str:
        if self.known:
            return f"{self.kind} ({self.where}) told by its file as {self.counted_as} " \
                   f"{self.known}, on every surface, {self.device}"
        detail = f" ({self.detail})" if self.detail else ""
        return f"{self.kind} at {self.where}{detail} on {self.surface}, {self.device}, " \
               f"class {self.value}"


# A cause a raw crash's file alone tells (``Conditions.fingerprinted``): its id, what a hit on
# it counts as, and the conditions.
Told = tuple[str, str, Conditions]


def tells(known_file: Path = known.KNOWN_FILE, version: str | None = None) -> list[Told]:
    """The known entries (not fixed in this torch: a match there is a regression, triaged in
    full) and ledger causes whose conditions a raw crash's file alone can decide."""
    found: list[Told] = [(e.id, e.counted_as, e) for e in known.entries(known_file)
                         if e.fingerprinted and not e.reappeared(version)]
    return found + [(c.id, c.counted_as, form) for c in ledger.causes()
                    for form in c.forms if form.fingerprinted]


def raw_fields(case: Case) -> dict:
    """What a raw crash's file says that ``Conditions`` read: family, device, exception type
    and frames, message, arguments that alias, the program's ops, its value class."""
    assert case.verdict is not None  # a raw finding
    key = DivergenceKey.of(case.verdict)
    return {"family": facts(key.kind).family, "device": Device(case.device).type,
            "error": [key.error, *key.frames], "message": said(case.verdict),
            "aliased_arguments": aliased_arguments(case.graph), "core": float_core(case),
            "value_class": value.classify(case).number}


def fingerprint(case: Case, told: Sequence[Told] = ()) -> Fingerprint | None:
    """The raw case's fingerprint; None for a case that records no finding. A crash that one of
    ``told``'s causes matches is fingerprinted as that cause, whatever its surface."""
    verdict = case.verdict
    if verdict is None or not verdict.is_finding:
        return None
    key = DivergenceKey.of(verdict)
    recipe = " ".join([case.recipe.backend, *(f"{k}={v}" for k, v in
                                              sorted(case.recipe.config.items()))])
    base = Fingerprint(str(key.kind), case.recipe.surface.name or "pinned",
                       Device(case.device).type, value.classify(case).number, recipe, where="?")
    if key.kind == Kind.MEMORY:  # no frames to tell them apart: the program's ops do
        return replace(base, where=" ".join(sorted(set(case.graph.op_names()))))
    if key.kind in RAISED:
        # Only a crash's file tells its cause: a timeout or a killed worker has no message
        fields = raw_fields(case) if told and key.kind == Kind.CRASH else {}
        found = next(((i, counted) for i, counted, c in told if fields and c.matches(fields)),
                     None)
        if found is not None:  # the same known crash on every surface: one bucket
            return replace(base, surface="any", recipe="any", where=key.error,
                           known=found[0], counted_as=found[1])
        return replace(base, where=" < ".join([key.error, *key.frames]),
                       detail=message_stem(verdict.message))
    node = key.node if key.node is not None and key.node in case.graph else None
    if node is None:
        return base
    head = case.graph.node(node)
    feeding = [case.graph.node(p).op for p in case.graph.producers(node)
               if not case.graph.node(p).is_input]
    return replace(base, where=" < ".join([head.op, *feeding[:1]]), detail=head.dtype)


def message_stem(message: str) -> str:
    """A crash message without what varies between programs of one bug: numbers, quoted names,
    the source location numfuzz appends."""
    first = message.split(" (at ", 1)[0]
    return _NUMBERS.sub("N", _QUOTED.sub("'…'", first))[:120]


@dataclass(frozen=True)
class Settled:
    """How a bucket's representative was settled: the cause (a signature) or known entry it is,
    and the knob that tells that cause, with what it did to the representative."""

    label: str  # a cause signature, or a known entry's (or a ledger row's) id
    knob: str = ""  # the telling knob ('' where triage named none that ran)
    outcome: str = ""  # what it did to the representative: vanishes or persists
    counted_as: str = ""  # a known entry's hit: "known" or "by-design" ('': a root cause)

    @property
    def known(self) -> bool:
        """Settled as a known entry (or a known or not-a-bug ledger row), not a root cause."""
        return bool(self.counted_as)

    @classmethod
    def of(cls, label: str, attribution: dict | None, counted_as: str = "") -> Settled:
        """From the representative's attribution (``Attribution.to_dict``): its first vanishing
        knob of the full set, else what taking Inductor out did."""
        outcomes = {k["knob"]: k["outcome"] for k in (attribution or {}).get("knobs", [])}
        names = [k.name for k in KNOBS]
        vanishing = [n for n in names if outcomes.get(n) == "vanishes"]
        if vanishing:
            return cls(label, vanishing[0], "vanishes", counted_as)
        if outcomes.get(WITHOUT_INDUCTOR) in ("vanishes", "persists"):
            return cls(label, WITHOUT_INDUCTOR, outcomes[WITHOUT_INDUCTOR], counted_as)
        return cls(label, counted_as=counted_as)


@dataclass(frozen=True)
class Check:
    """What ``check_member`` found: a hit on the bucket's cause, or why the member left it."""

    hit: bool
    how: str
    runs: int
    sub: str = ""  # where a member that failed goes: with those that failed alike


def check_member(member: Case, settled: Settled, pool: Runners,
                 timeout: float | None = None) -> Check:
    """Is raw case ``member`` a hit on its bucket's cause? One run of it as recorded (it must show
    its own divergence again), then, where the cause has a telling knob, one run with that knob
    (it must do what it did to the representative). A timeout is not run again (every run would
    wait the full timeout): its fingerprint is its hit, and the outcome says so."""
    target = member.verdict
    assert target is not None  # a bucket holds findings only
    if target.kind == Kind.TIMEOUT:
        return Check(True, "a timeout: its type and frames match, not run again", 0)
    verdict = run_within(pool.get(member.device), member.task(), timeout).verdict
    if not same_divergence(target, verdict):
        return Check(False, f"did not show its divergence again in one run ({verdict.kind})", 1,
                     "not-again")
    if not settled.knob or target.kind in RAISED:
        return Check(True, "showed its divergence again in one run", 1)
    if settled.knob.startswith(SURFACE):  # a surface's own option: not in the full set
        return Check(True, "showed its divergence again in one run", 1)
    result = flip(member, knob_named(settled.knob), pool, k=1, timeout=timeout)
    if result.outcome != settled.outcome:
        return Check(False, f"{settled.knob}: {result.outcome}, where the representative "
                            f"{settled.outcome}", 2, f"{settled.knob}={result.outcome}")
    return Check(True, f"showed its divergence again, and {settled.knob} {result.outcome} as "
                       "for the representative", 2)

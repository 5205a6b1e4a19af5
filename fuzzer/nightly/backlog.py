"""The backlog: raw findings waiting for the pipeline, in buckets, served in one order.

Every case file in the corpus that no night has settled is an ``Item`` of one ``Bucket`` (its
``buckets.Fingerprint``). ``take`` hands a lane its next ``Work``: the full pipeline for a
bucket's representative, or the cheap check of a member against the cause its representative
settled as (``buckets.check_member``). What is served first: value class (``triage.value``, as
the raw case shows it), then the least-attempted (the store's ``attempts``: how often a night
started the full pipeline on it), then checks before representatives (a check settles a case in
a run), then severity and age. At most ``max_representatives`` full pipelines start a night
(None: no cap; the night's deadline bounds them).

How work ends: ``settle`` (a cause, a known entry, a bucket hit, not a finding),
``not_reproduced`` (the bucket's next member becomes its representative), ``split`` (a member
that failed its check becomes a bucket of its own), ``fail`` (the attempt ended unsettled: an
error, a minimizer short of its fixpoint, a hang; twice and the case is parked with its reason,
settled as parked) and ``leave`` (the night's time ran out: no attempt counted, the next night
carries on). A case that failed or was cut tonight is not tried again tonight: its bucket's
next member stands in.

Thread-safe: the lanes (``nightly.lanes``) share one backlog; each passes its own store.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from fuzzer.corpus.case import Case, CaseError
from fuzzer.judge.verdict import severity_key
from fuzzer.nightly.buckets import Fingerprint, Settled, Told, fingerprint
from fuzzer.report.store import Store
from fuzzer.triage import value

PARK_AFTER = 2  # failed attempts after which a case is parked, with its last reason
URGENT = (1, 2)  # value classes that take every lane from fuzzing while they wait


@dataclass
class Item:
    """One raw case file waiting."""

    path: Path
    value: int  # value class as the raw case shows it (``value.UNKNOWN`` when unreadable)
    severity: tuple
    fingerprint: Fingerprint | None
    tries: int = 0  # full-pipeline attempts by earlier nights and tonight
    age: tuple = ()  # (mtime, name): oldest first among equals

    @property
    def key(self) -> str:
        return self.path.name

    def rank(self, check: bool) -> tuple:
        return (self.value, self.tries, 0 if check else 1, self.severity, self.age)


@dataclass
class Bucket:
    """Raw cases with one fingerprint: a representative, and members settled against it."""

    id: str
    fingerprint: Fingerprint | None
    keys: list[str] = field(default_factory=list)  # in arrival order
    representative: str = ""  # the key in flight or settled as representative
    settled: Settled | None = None
    outcomes: dict[str, str] = field(default_factory=dict)  # key -> how it was settled / left
    seconds: float = 0.0  # spent on its representatives (minimize + triage)
    departed: dict[str, str] = field(default_factory=dict)  # key -> why it failed its check

    def to_dict(self) -> dict:
        return {"id": self.id, "what": self.fingerprint.describe() if self.fingerprint
                else "unreadable or no finding", "representative": self.representative,
                "cause": self.settled.label if self.settled else "",
                "known": bool(self.settled and self.settled.known),
                "counted_as": self.settled.counted_as if self.settled else "",
                "knob": f"{self.settled.knob} {self.settled.outcome}".strip()
                if self.settled else "",
                "seconds": round(self.seconds, 1), "members": dict(self.outcomes),
                "departed": dict(self.departed),
                "waiting": [k for k in self.keys if k not in self.outcomes]}


@dataclass
class Work:
    """What a lane does next: the full pipeline on ``item`` (its bucket's representative), or,
    with ``check``, the member check against its bucket's settled cause."""

    item: Item
    bucket: Bucket
    check: bool = False


class Backlog:
    """The night's raw findings by bucket (see the module's docstring)."""

    def __init__(self, corpus: Path, night: str, max_representatives: int | None,
                 told: Sequence[Told] = ()) -> None:
        self.corpus, self.night = corpus, night
        self.max_representatives = max_representatives
        self.told = told  # the causes a raw crash's file alone tells (``buckets.tells``)
        self.items: dict[str, Item] = {}
        self.buckets: dict[str, Bucket] = {}
        self.seen: set[str] = set()  # file names looked at
        self.earlier: set[str] = set()  # settled by an earlier night
        self.met_again: set[str] = set()  # of those, found again tonight (handed out once)
        self.in_flight: set[str] = set()
        self.not_tonight: set[str] = set()  # failed or cut by the deadline: the next night's
        self.represented = 0  # full pipelines started tonight
        self.lock = threading.RLock()

    # ---------------------------------------------------------------- filling

    def news(self, found: set[str]) -> bool:
        """Is there anything ``refresh`` would read or hand out (a case file not looked at, or an
        earlier night's case found again tonight)? No store needed: a lane between two cases asks
        this first."""
        with self.lock:
            if (self.earlier & found) - self.met_again:
                return True
            return any(path.name not in self.seen for path in self.corpus.glob("*.pt"))

    def refresh(self, store: Store, found: set[str]) -> list[str]:
        """Read the case files that appeared since the last call. Returns those an earlier
        night settled that tonight's campaign found again (each once: a hit on what they were)."""
        with self.lock:
            for path in sorted(self.corpus.glob("*.pt"), key=lambda p: (_mtime(p), p.name)):
                key = path.name
                if key in self.seen:
                    continue
                self.seen.add(key)
                if store.processed(self.night, key) is not None:
                    continue
                if store.earlier(key) is not None:
                    self.earlier.add(key)
                    continue
                self._add(path, store.attempts(key)[0])
            again = sorted((self.earlier & found) - self.met_again)
            self.met_again.update(again)
        return again

    def _add(self, path: Path, tries: int) -> None:
        try:
            case: Case | None = Case.load(path)
        except CaseError:
            case = None
        verdict = case.verdict if case is not None else None
        found = fingerprint(case, self.told) if case is not None else None
        rank = value.classify(case).number if case is not None and verdict is not None \
            else value.UNKNOWN
        item = Item(path, rank,
                    severity_key(verdict) if verdict is not None else (99, 0), found, tries,
                    (_mtime(path), path.name))
        self.items[item.key] = item
        self._join(item, found.id if found else f"unreadable-{item.key}", found)

    def _join(self, item: Item, bucket_id: str, found: Fingerprint | None) -> None:
        bucket = self.buckets.setdefault(bucket_id, Bucket(bucket_id, found))
        bucket.keys.append(item.key)

    # ---------------------------------------------------------------- serving

    def take(self) -> Work | None:
        """The next work in the backlog's order, marked in flight; None when none is ready."""
        with self.lock:
            ready = self._ready()
            if not ready:
                return None
            work = min(ready, key=lambda w: w.item.rank(w.check))
            self.in_flight.add(work.item.key)
            if not work.check:
                work.bucket.representative = work.item.key
                self.represented += 1
            return work

    def _ready(self) -> list[Work]:
        ready = []
        for bucket in self.buckets.values():
            free = [self.items[k] for k in bucket.keys if k not in bucket.outcomes
                    and k not in self.in_flight and k not in self.not_tonight]
            if bucket.settled is not None:
                ready += [Work(item, bucket, check=True) for item in free]
            elif bucket.representative not in self.in_flight and free \
                    and (self.max_representatives is None
                         or self.represented < self.max_representatives):
                ready.append(Work(min(free, key=lambda i: i.rank(False)), bucket))
        return ready

    def waiting(self) -> tuple[int, int]:
        """Cases with work ready now, and how many of them are of an urgent value class."""
        with self.lock:
            ready = self._ready()
            return len(ready), sum(w.item.value in URGENT for w in ready)

    def left(self) -> int:
        """Cases not settled tonight (in flight, waiting, failed or beyond the night's cap)."""
        with self.lock:
            return sum(1 for b in self.buckets.values() for k in b.keys if k not in b.outcomes)

    # ---------------------------------------------------------------- ending work

    def settle(self, work: Work, how: str, settled: Settled | None = None,
               seconds: float = 0.0) -> None:
        """``work`` is done: its case settled as ``how``; a representative's cause ``settled``
        (None: the representative was no finding, or unreadable) serves its members' checks."""
        with self.lock:
            self._done(work, how, seconds)
            if not work.check and settled is not None:
                work.bucket.settled = settled

    def not_reproduced(self, work: Work, how: str, seconds: float = 0.0) -> None:
        """The representative did not reproduce: settled so; the next member stands in."""
        with self.lock:
            self._done(work, how, seconds)
            work.bucket.representative = ""

    def split(self, work: Work, why: str, sub: str = "") -> None:
        """A member failed its check: it leaves the bucket (which says why) for the sub-bucket
        ``sub`` names (members that failed the check alike, e.g. ``emulate_precision_casts=
        persists``; none: a bucket of its own), where its first member is processed in full."""
        with self.lock:
            key = work.item.key
            self.in_flight.discard(key)
            work.bucket.keys.remove(key)
            work.bucket.departed[key] = why
            fingerprint = work.bucket.fingerprint
            if fingerprint is not None and fingerprint.known:  # not that cause: in full
                self.represented -= not work.check  # its full pipeline is still to come
                fingerprint = _plain_fingerprint(work.item.path) or \
                    replace(fingerprint, known="", counted_as="")
            self._join(work.item, f"{work.bucket.id}/{sub or key.removesuffix('.pt')}",
                       fingerprint)

    def fail(self, work: Work, store: Store, reason: str, seconds: float = 0.0) -> bool:
        """The attempt ended unsettled; True when the case is now parked (``PARK_AFTER``)."""
        failures = store.failed(work.item.key, reason)
        with self.lock:
            work.bucket.seconds += seconds
            self.in_flight.discard(work.item.key)
            if not work.check:
                work.bucket.representative = ""
            if failures >= PARK_AFTER:
                work.bucket.outcomes[work.item.key] = f"parked: {reason}"
                return True
            self.not_tonight.add(work.item.key)
            return False

    def leave(self, work: Work) -> None:
        """The night's time ran out on it: waiting for the next night (not taken again
        tonight: a stop that came early would otherwise hand it out again and again)."""
        with self.lock:
            self.in_flight.discard(work.item.key)
            self.not_tonight.add(work.item.key)
            if not work.check:
                work.bucket.representative = ""
            self.represented -= not work.check

    def _done(self, work: Work, how: str, seconds: float) -> None:
        self.in_flight.discard(work.item.key)
        work.bucket.outcomes[work.item.key] = how
        work.bucket.seconds += seconds

    # ---------------------------------------------------------------- reading

    def rows(self) -> list[dict]:
        """Every bucket with a case tonight, largest first (night.json, SUMMARY.md)."""
        with self.lock:
            buckets = [b for b in self.buckets.values() if b.keys]
            return [b.to_dict() for b in sorted(buckets, key=lambda b: (-len(b.keys), b.id))]



def served(corpus: Path, store: Store) -> list[Path]:
    """The order a backlog over ``corpus`` serves its case files in when each representative
    settles at once as a cause of its own (what the order rules give, with no run)."""
    backlog = Backlog(corpus, "order", max_representatives=len(list(corpus.glob("*.pt"))))
    backlog.refresh(store, set())
    order = []
    while (work := backlog.take()) is not None:
        order.append(work.item.path)
        backlog.settle(work, "served", Settled(work.item.key))
    return order


def _plain_fingerprint(path: Path) -> Fingerprint | None:
    """A raw case's own fingerprint (its surface, recipe and frames), told by no known cause."""
    try:
        return fingerprint(Case.load(path))
    except CaseError:
        return None


def _mtime(path: Path) -> float:
    try:
        return path.stat().st_mtime
    except OSError:
        return 0.0

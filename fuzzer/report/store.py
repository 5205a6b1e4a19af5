"""The findings store: one SQLite file in ``reports/``, one row per bug signature.

Several campaigns, nightlies and ``findings --recheck`` may write at once: the database runs in WAL
mode with a busy timeout, and every change is one short ``BEGIN IMMEDIATE`` transaction (writers
queue, readers never block). ``synchronous=FULL`` and SQLite's journal mean a process killed with
SIGKILL loses at most the transaction it was in the middle of, never a committed row.

Tables: ``findings`` (one root cause: signature, kind, first/last seen, hits, reliability,
status, fixed_in, paths, attribution), ``causes`` (its signature fields, for merging near
matches), ``sightings`` (the heads and graphs it was found through), ``versions_seen`` (which
torch/triton builds saw it), ``known_hits`` (causes matched to ``fuzzer/known.toml``, not
drafted) and ``processed`` (which case files each night has dealt with, for resuming a killed
night), ``upstream_search`` (the likely duplicates GitHub's issue search gave for a cause),
``confirmations`` (the last run of a cause's repro under each other torch named with
``--confirm-with``, ``triage.confirm``), ``arm_nights`` (per night and arm of the campaign, a
surface crossed with a strategy: cases, CPU-seconds, raw findings, and the new causes credited to
it with their value, ``campaign.arms``: what the next night's plan reads), ``attempts`` (per raw
case file, how often a night started its full pipeline and how often that ended unsettled, with
the last reason: the queue serves the least-attempted first and parks a case that failed twice,
``nightly.queue``).

A root cause's life upstream is apart from its recheck status: ``upstream_state`` is ``filed``
or ``wontfix`` (closed upstream as expected behaviour), with ``upstream_url`` the issue.
``fixed_upstream`` is the torch version of a newer environment (``nightly --confirm-with``) on
which the cause no longer reproduces: fixed upstream there, so it is not drafted.

Schema versions: a store is readable by the numfuzz whose ``SCHEMA_VERSION`` it carries. Tables
added since version 1 are created on open (an older numfuzz ignores a table it does not know);
version 2 added columns to ``findings`` (an older numfuzz cannot read those rows, hence the new
version), version 3 the column ``fixed_upstream`` and the table ``confirmations`` (a version-2
numfuzz would draft a cause fixed upstream), and version 4 the columns ``value_class`` and
``arm`` and the table ``arm_nights``, version 5 the column ``ledger`` (the cause of numfuzz's
own ledger a finding re-finds, ``triage.ledger``: never drafted as new), the column
``counted_as`` of ``known_hits`` (a known bug, or documented behaviour: by-design) and the table
``variants`` (the other forms one mechanism was found in: ``signature.same_mechanism``): an
older store gains them on open, in one transaction, and says version 5 from then on. A store of
a version this numfuzz does not know is refused, untouched.
"""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from fuzzer.errors import StoreError

if TYPE_CHECKING:  # the store itself needs no torch: a confirmation's type is imported to read one
    from fuzzer.triage.confirm import Run

DB_NAME = "findings.sqlite"
STATUSES = ("open", "fixed", "flaky")
UPSTREAM_STATES = ("filed", "wontfix")  # what a person recorded of the cause upstream
SCHEMA_VERSION = 5
READABLE = ("1", "2", "3", "4", "5")  # versions it opens (older ones are migrated on open)
# Columns added since version 1, per table: ALTERed into older stores, created in new ones.
ADDED_COLUMNS = {"findings": {
    "upstream_state": "TEXT CHECK (upstream_state IN ('filed', 'wontfix'))",
    "upstream_url": "TEXT",
    "fixed_upstream": "TEXT",  # version 3: no longer on this newer torch
    "value_class": "INTEGER",  # version 4: triage.value (NULL: before classes)
    "arm": "TEXT",  # version 4: the arm (surface/strategy) it was first found on
    "ledger": "TEXT"},  # version 5: the ledger cause it re-finds (triage.ledger)
    "known_hits": {"counted_as": "TEXT NOT NULL DEFAULT 'known'"}}  # version 5: or by-design

META = "CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)"
SCHEMA = """
CREATE TABLE IF NOT EXISTS findings (
    signature    TEXT PRIMARY KEY,
    kind         TEXT NOT NULL,
    device       TEXT NOT NULL,
    dtype        TEXT NOT NULL,
    op_chain     TEXT NOT NULL,
    output       TEXT NOT NULL DEFAULT '',
    title        TEXT NOT NULL DEFAULT '',
    summary      TEXT NOT NULL DEFAULT '',
    distance_ulps REAL,
    first_seen   TEXT NOT NULL,
    last_seen    TEXT NOT NULL,
    hits         INTEGER NOT NULL DEFAULT 1,
    reliability_ok INTEGER,
    reliability_k  INTEGER,
    status       TEXT NOT NULL DEFAULT 'open' CHECK (status IN ('open', 'fixed', 'flaky')),
    fixed_in     TEXT,
    checked_at   TEXT,
    case_path    TEXT,
    repro_path   TEXT,
    draft_path   TEXT,
    attribution  TEXT NOT NULL DEFAULT '{}'
);
CREATE TABLE IF NOT EXISTS versions_seen (
    signature TEXT NOT NULL REFERENCES findings(signature),
    torch     TEXT NOT NULL,
    triton    TEXT NOT NULL,
    first_seen TEXT NOT NULL,
    PRIMARY KEY (signature, torch, triton)
);
CREATE TABLE IF NOT EXISTS processed (
    night     TEXT NOT NULL,
    key       TEXT NOT NULL,
    signature TEXT,
    outcome   TEXT NOT NULL,
    at        TEXT NOT NULL,
    PRIMARY KEY (night, key)
);
CREATE INDEX IF NOT EXISTS processed_key ON processed (key);
CREATE TABLE IF NOT EXISTS causes (
    signature TEXT PRIMARY KEY REFERENCES findings(signature),
    fields    TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS sightings (
    signature TEXT NOT NULL,
    head      TEXT NOT NULL,
    graph     TEXT NOT NULL,
    first_seen TEXT NOT NULL,
    PRIMARY KEY (signature, head, graph)
);
CREATE TABLE IF NOT EXISTS known_hits (
    entry TEXT NOT NULL,
    night TEXT NOT NULL,
    key   TEXT NOT NULL,
    at    TEXT NOT NULL,
    PRIMARY KEY (entry, night, key)
);
CREATE TABLE IF NOT EXISTS upstream_search (
    signature TEXT PRIMARY KEY,
    query     TEXT NOT NULL,
    at        TEXT NOT NULL,
    results   TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS arm_nights (
    night    TEXT NOT NULL,
    arm      TEXT NOT NULL,
    cases    INTEGER NOT NULL DEFAULT 0,
    seconds  REAL NOT NULL DEFAULT 0,
    findings INTEGER NOT NULL DEFAULT 0,
    causes   INTEGER NOT NULL DEFAULT 0,
    value    REAL NOT NULL DEFAULT 0,
    PRIMARY KEY (night, arm)
);
CREATE TABLE IF NOT EXISTS attempts (
    key      TEXT PRIMARY KEY,
    tries    INTEGER NOT NULL DEFAULT 0,
    failures INTEGER NOT NULL DEFAULT 0,
    reason   TEXT NOT NULL DEFAULT '',
    at       TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS variants (
    signature  TEXT NOT NULL,
    variant    TEXT NOT NULL,
    title      TEXT NOT NULL,
    night      TEXT NOT NULL,
    first_seen TEXT NOT NULL,
    PRIMARY KEY (signature, variant)
);
CREATE TABLE IF NOT EXISTS confirmations (
    signature TEXT NOT NULL,
    python    TEXT NOT NULL,
    torch     TEXT NOT NULL,
    outcome   TEXT NOT NULL,
    code      INTEGER,
    output    TEXT NOT NULL,
    seconds   REAL NOT NULL,
    at        TEXT NOT NULL,
    PRIMARY KEY (signature, python)
);
"""


def now() -> str:
    """UTC timestamp, second resolution, sortable as text."""
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


@dataclass
class Finding:
    """What ``record`` needs to know about one sighting, and what a row reads back as."""

    signature: str
    kind: str
    device: str
    dtype: str
    op_chain: str
    output: str = ""
    title: str = ""
    summary: str = ""
    distance_ulps: float | None = None
    reliability: tuple[int, int] | None = None
    torch: str = ""
    triton: str = ""
    attribution: dict = field(default_factory=dict)
    case_path: str | None = None
    repro_path: str | None = None
    draft_path: str | None = None
    # filled when read back
    first_seen: str = ""
    last_seen: str = ""
    hits: int = 0
    status: str = "open"
    fixed_in: str | None = None
    checked_at: str | None = None
    upstream_state: str | None = None  # filed / wontfix, recorded by `findings --filed/--wontfix`
    upstream_url: str | None = None
    fixed_upstream: str | None = None  # a newer torch it no longer reproduces on (--confirm-with)
    value_class: int | None = None  # triage.value: 1 (best) to 5; None before classes
    arm: str | None = None  # the campaign arm (surface/strategy) it was first found on
    ledger: str | None = None  # the cause of numfuzz's own ledger it re-finds (``N19``)
    versions: list[tuple[str, str]] = field(default_factory=list)

    @property
    def awaits_draft(self) -> bool:
        """Open, without a written draft, not one of numfuzz's own ledger causes found again
        (drafted only when asked for), and nothing upstream says it needs none (filed,
        wontfix, or fixed on a newer torch): what the nightly drafts."""
        return self.status == "open" and (self.draft_path is None or not
                                          Path(self.draft_path).exists()) \
            and self.upstream_state is None and self.fixed_upstream is None \
            and self.ledger is None

    def to_dict(self) -> dict:
        data = dict(self.__dict__)
        data["versions"] = [list(v) for v in self.versions]
        data["reliability"] = list(self.reliability) if self.reliability else None
        return data


class Store:
    """A connection to ``reports/findings.sqlite``; cheap to open, safe to share across processes
    (not across threads: open one per thread)."""

    def __init__(self, path: str | Path, timeout: float = 60.0) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.db = sqlite3.connect(self.path, timeout=timeout, isolation_level=None)
        self.db.row_factory = sqlite3.Row
        try:
            self.db.execute(f"PRAGMA busy_timeout = {int(timeout * 1000)}")
            self.db.execute("PRAGMA journal_mode = WAL")
            self.db.execute("PRAGMA synchronous = FULL")
            with self.transaction():
                found = self._create()
        except sqlite3.DatabaseError as err:
            self.db.close()
            raise StoreError(f"{self.path}: not a numfuzz findings store ({err})") from None
        if found != str(SCHEMA_VERSION):
            self.db.close()
            raise StoreError(f"{self.path}: findings store schema version {found}, this numfuzz "
                             f"reads {SCHEMA_VERSION}: open it with the numfuzz that wrote it, or "
                             "move it aside to start a new store")

    @classmethod
    def in_reports(cls, reports: str | Path) -> Store:
        return cls(Path(reports) / DB_NAME)

    def _create(self) -> str:
        """Create what is missing (a new store, or one of an older version this numfuzz reads)
        and return the store's schema version; a version it does not know is left untouched."""
        self.db.execute(META)
        row = self.db.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
        if row is not None and row[0] not in READABLE:
            return row[0]
        for statement in SCHEMA.split(";"):
            if statement.strip():
                self.db.execute(statement)
        for table, columns in ADDED_COLUMNS.items():
            have = {r["name"] for r in self.db.execute(f"PRAGMA table_info({table})")}
            for name, declaration in columns.items():
                if name not in have:
                    self.db.execute(f"ALTER TABLE {table} ADD COLUMN {name} {declaration}")
        self.db.execute("INSERT OR REPLACE INTO meta VALUES ('schema_version', ?)",
                        (str(SCHEMA_VERSION),))
        return str(SCHEMA_VERSION)

    def close(self) -> None:
        self.db.close()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------ transactions

    class _Tx:
        def __init__(self, db: sqlite3.Connection) -> None:
            self.db = db

        def __enter__(self) -> sqlite3.Connection:
            self.db.execute("BEGIN IMMEDIATE")  # take the write lock now, or wait for it
            return self.db

        def __exit__(self, exc_type: type[BaseException] | None, *rest: object) -> None:
            self.db.execute("ROLLBACK" if exc_type else "COMMIT")

    def transaction(self) -> Store._Tx:
        return Store._Tx(self.db)

    # ------------------------------------------------------------ writing

    def record(self, finding: Finding, *, night: str | None = None, key: str | None = None,
               seen: str | None = None, cause: dict | None = None,
               sighting: tuple[str, str] | None = None) -> bool:
        """One sighting: a new row (returns True) or a hit on an existing one. When ``night`` and
        ``key`` are given, the case file is marked processed in the same transaction, so a killed
        night neither loses the hit nor counts it twice. ``cause``: the signature's fields (kept
        from the first sighting); ``sighting``: the head and graph it was found through."""
        seen = seen or now()
        with self.transaction() as db:
            new = self._upsert(db, finding, seen)
            db.execute("INSERT OR IGNORE INTO versions_seen VALUES (?, ?, ?, ?)",
                       (finding.signature, finding.torch, finding.triton, seen))
            if cause is not None:  # the smallest core among the members names the cause
                row = db.execute("SELECT fields FROM causes WHERE signature = ?",
                                 (finding.signature,)).fetchone()
                if row is None or len(cause["core"]) < len(json.loads(row[0])["core"]):
                    db.execute("INSERT OR REPLACE INTO causes VALUES (?, ?)",
                               (finding.signature, json.dumps(cause, sort_keys=True)))
            if sighting is not None:
                db.execute("INSERT OR IGNORE INTO sightings VALUES (?, ?, ?, ?)",
                           (finding.signature, *sighting, seen))
            if night is not None and key is not None:
                outcome = f"refind: {finding.ledger}" if finding.ledger else \
                    "new" if new else "recurring"
                db.execute("INSERT OR REPLACE INTO processed VALUES (?, ?, ?, ?, ?)",
                           (night, key, finding.signature, outcome, seen))
        return new

    def _upsert(self, db: sqlite3.Connection, f: Finding, seen: str) -> bool:
        row = db.execute("SELECT status FROM findings WHERE signature = ?",
                         (f.signature,)).fetchone()
        if row is None:
            ok, k = f.reliability if f.reliability else (None, None)
            db.execute(
                "INSERT INTO findings (signature, kind, device, dtype, op_chain, output, title, "
                "summary, distance_ulps, first_seen, last_seen, hits, reliability_ok, "
                "reliability_k, status, case_path, repro_path, draft_path, attribution, "
                "value_class, arm, ledger) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 1, ?, ?, 'open', ?, ?, ?, ?, ?, ?, ?)",
                (f.signature, f.kind, f.device, f.dtype, f.op_chain, f.output, f.title,
                 f.summary, f.distance_ulps, seen, seen, ok, k, f.case_path, f.repro_path,
                 f.draft_path, json.dumps(f.attribution, sort_keys=True), f.value_class,
                 f.arm, f.ledger))
            return True
        # Seen again: a fixed bug that reappears is open again (a regression), fixed_in cleared.
        db.execute("UPDATE findings SET hits = hits + 1, last_seen = max(last_seen, ?), "
                   "status = CASE WHEN status = 'fixed' THEN 'open' ELSE status END, "
                   "fixed_in = CASE WHEN status = 'fixed' THEN NULL ELSE fixed_in END, "
                   "ledger = coalesce(ledger, ?) "  # a cause stored before the ledger knew it
                   "WHERE signature = ?", (seen, f.ledger, f.signature))
        return False

    def update(self, signature: str, **values: object) -> None:
        """Set columns of one row (paths, attribution, title …)."""
        allowed = {"case_path", "repro_path", "draft_path", "attribution", "title", "summary",
                   "distance_ulps", "output"}
        bad = set(values) - allowed
        if bad:
            raise ValueError(f"cannot update {sorted(bad)}")
        if "attribution" in values:
            values["attribution"] = json.dumps(values["attribution"], sort_keys=True)
        columns = ", ".join(f"{name} = ?" for name in values)
        with self.transaction() as db:
            db.execute(f"UPDATE findings SET {columns} WHERE signature = ?",
                       (*values.values(), signature))

    def set_status(self, signature: str, status: str, *, reliability: tuple[int, int],
                   fixed_in: str | None = None) -> None:
        """The result of a recheck: status, the k/k it was measured with, when."""
        if status not in STATUSES:
            raise ValueError(f"status must be one of {STATUSES}")
        with self.transaction() as db:
            db.execute("UPDATE findings SET status = ?, reliability_ok = ?, reliability_k = ?, "
                       "fixed_in = ?, checked_at = ? WHERE signature = ?",
                       (status, reliability[0], reliability[1],
                        fixed_in if status == "fixed" else None, now(), signature))

    def claim_draft(self, signature: str, path: str, previous: str | None = None) -> bool:
        """Reserve the draft of a finding whose draft path is still ``previous`` (None: it has
        none; else a claim never written): one writer wins, no duplicate drafts."""
        with self.transaction() as db:
            cursor = db.execute("UPDATE findings SET draft_path = ? WHERE signature = ? AND "
                                "draft_path IS ?", (path, signature, previous))
        return cursor.rowcount == 1

    def record_known(self, entry: str, night: str, key: str, counted_as: str = "known") -> None:
        """A case whose cause is already known (``fuzzer/known.toml``, or a known or not-a-bug
        row of the ledger): a hit on the entry, ``counted_as`` a known bug or ``by-design``."""
        seen = now()
        with self.transaction() as db:
            db.execute("INSERT OR IGNORE INTO known_hits (entry, night, key, at, counted_as) "
                       "VALUES (?, ?, ?, ?, ?)", (entry, night, key, seen, counted_as))
            db.execute("INSERT OR REPLACE INTO processed VALUES (?, ?, ?, ?, ?)",
                       (night, key, None, f"{counted_as}: {entry}", seen))

    def record_variant(self, signature: str, variant: str, title: str, night: str) -> None:
        """Another form of cause ``signature``'s mechanism (another view or elementwise op
        carrying it, NaN instead of a loss of accuracy), first met on ``night``: listed in its
        draft, not drafted."""
        with self.transaction() as db:
            db.execute("INSERT OR IGNORE INTO variants VALUES (?, ?, ?, ?, ?)",
                       (signature, variant, title, night, now()))

    def set_upstream(self, signature: str, state: str, url: str) -> bool:
        """Record the upstream issue of a root cause (``filed``, or ``wontfix``: closed upstream
        as expected behaviour); False when no root cause has this signature."""
        if state not in UPSTREAM_STATES:
            raise ValueError(f"upstream state must be one of {UPSTREAM_STATES}")
        with self.transaction() as db:
            cursor = db.execute("UPDATE findings SET upstream_state = ?, upstream_url = ? "
                                "WHERE signature = ?", (state, url, signature))
        return cursor.rowcount == 1

    def record_confirmations(self, signature: str, runs: list[Run],
                             fixed_upstream: str | None = None) -> None:
        """A cause's repro run under other torches (replacing the last such runs), and the
        newer torch it no longer reproduces on, if any (then it is not drafted)."""
        with self.transaction() as db:
            db.execute("DELETE FROM confirmations WHERE signature = ?", (signature,))
            for r in runs:
                db.execute("INSERT OR REPLACE INTO confirmations VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                           (signature, r.python, r.torch, r.outcome, r.code, r.output,
                            r.seconds, now()))
            db.execute("UPDATE findings SET fixed_upstream = ? WHERE signature = ?",
                       (fixed_upstream, signature))

    def record_arms(self, night: str, used: dict[str, dict]) -> None:
        """Tonight's cases, CPU-seconds and raw findings per arm (``used``: arm -> those three),
        as counted so far: each row set, not added to (a resumed night counts on from its own
        totals); the causes credited to it are kept."""
        with self.transaction() as db:
            for arm, row in used.items():
                db.execute("INSERT INTO arm_nights (night, arm, cases, seconds, findings) "
                           "VALUES (?, ?, ?, ?, ?) ON CONFLICT (night, arm) DO UPDATE SET "
                           "cases = excluded.cases, seconds = excluded.seconds, "
                           "findings = excluded.findings",
                           (night, arm, int(row.get("cases", 0)), float(row.get("seconds", 0)),
                            int(row.get("findings", 0))))

    def credit(self, night: str, arm: str, value: float) -> None:
        """A new real cause found tonight on ``arm``, worth ``value`` (its value class)."""
        with self.transaction() as db:
            db.execute("INSERT INTO arm_nights (night, arm, causes, value) VALUES (?, ?, 1, ?) "
                       "ON CONFLICT (night, arm) DO UPDATE SET causes = causes + 1, "
                       "value = value + excluded.value", (night, arm, value))

    def arm_nights(self, night: str | None = None) -> list[dict]:
        """Every night's row per arm (or one night's), oldest first."""
        query = "SELECT * FROM arm_nights" + (" WHERE night = ?" if night else "")
        return [dict(r) for r in self.db.execute(query + " ORDER BY night, arm",
                                                 (night,) if night else ())]

    def record_search(self, signature: str, query: str, results: list[dict]) -> None:
        """The likely duplicates an upstream issue search gave for a cause (the last search)."""
        with self.transaction() as db:
            db.execute("INSERT OR REPLACE INTO upstream_search VALUES (?, ?, ?, ?)",
                       (signature, query, now(), json.dumps(results, sort_keys=True)))

    def mark_processed(self, night: str, key: str, outcome: str,
                       signature: str | None = None) -> None:
        with self.transaction() as db:
            db.execute("INSERT OR REPLACE INTO processed VALUES (?, ?, ?, ?, ?)",
                       (night, key, signature, outcome, now()))

    def attempt(self, key: str) -> None:
        """A night starts the full pipeline on raw case file ``key``."""
        with self.transaction() as db:
            db.execute("INSERT INTO attempts (key, tries, at) VALUES (?, 1, ?) ON CONFLICT(key) "
                       "DO UPDATE SET tries = tries + 1, at = excluded.at", (key, now()))

    def failed(self, key: str, reason: str) -> int:
        """Its attempt ended unsettled (an error, a minimizer short of its fixpoint, a hang):
        the failures so far."""
        with self.transaction() as db:
            db.execute("INSERT INTO attempts (key, tries, failures, reason, at) "
                       "VALUES (?, 1, 1, ?, ?) ON CONFLICT(key) DO UPDATE SET "
                       "failures = failures + 1, reason = excluded.reason, at = excluded.at",
                       (key, reason[:500], now()))
            row = db.execute("SELECT failures FROM attempts WHERE key = ?", (key,)).fetchone()
        return int(row[0])

    # ------------------------------------------------------------ reading

    def attempts(self, key: str) -> tuple[int, int]:
        """Tries and failures of the full pipeline on raw case file ``key`` (0, 0 if none)."""
        row = self.db.execute("SELECT tries, failures FROM attempts WHERE key = ?",
                              (key,)).fetchone()
        return (int(row[0]), int(row[1])) if row else (0, 0)

    def get(self, signature: str) -> Finding | None:
        row = self.db.execute("SELECT * FROM findings WHERE signature = ?",
                              (signature,)).fetchone()
        return self._finding(row) if row else None

    def findings(self, status: str | None = None) -> list[Finding]:
        query = "SELECT * FROM findings" + (" WHERE status = ?" if status else "")
        rows = self.db.execute(query + " ORDER BY first_seen, signature",
                               (status,) if status else ()).fetchall()
        return [self._finding(r) for r in rows]

    def _finding(self, row: sqlite3.Row) -> Finding:
        data = dict(row)
        versions = self.db.execute("SELECT torch, triton FROM versions_seen WHERE signature = ? "
                                   "ORDER BY first_seen", (data["signature"],)).fetchall()
        ok, k = data.pop("reliability_ok"), data.pop("reliability_k")
        data["reliability"] = (ok, k) if k else None
        data["attribution"] = json.loads(data["attribution"] or "{}")
        data["versions"] = [(v["torch"], v["triton"]) for v in versions]
        return Finding(**data)

    def cause(self, signature: str) -> dict | None:
        row = self.db.execute("SELECT fields FROM causes WHERE signature = ?",
                              (signature,)).fetchone()
        return json.loads(row[0]) if row else None

    def upstream_search(self, signature: str) -> dict | None:
        """The last upstream search for a cause: ``query``, ``at``, ``results``; None if none."""
        row = self.db.execute("SELECT query, at, results FROM upstream_search WHERE "
                              "signature = ?", (signature,)).fetchone()
        return {"query": row["query"], "at": row["at"], "results": json.loads(row["results"])} \
            if row else None

    def confirmations(self, signature: str) -> list[Run]:
        """The last runs of a cause's repro under other torches, in the order they ran."""
        from fuzzer.triage.confirm import Run

        rows = self.db.execute("SELECT python, torch, outcome, code, output, seconds FROM "
                               "confirmations WHERE signature = ? ORDER BY rowid", (signature,))
        return [Run(**dict(row)) for row in rows]

    def sightings(self, signature: str) -> list[tuple[str, str]]:
        return [(r["head"], r["graph"]) for r in self.db.execute(
            "SELECT head, graph FROM sightings WHERE signature = ? ORDER BY first_seen",
            (signature,))]

    def known_hits(self, night: str | None = None, counted_as: str | None = None
                   ) -> dict[str, int]:
        """Hits per known entry (tonight's, or all; those counted as ``counted_as``, or all)."""
        where = [w for w, on in (("night = ?", night), ("counted_as = ?", counted_as)) if on]
        query = "SELECT entry, count(*) FROM known_hits" + \
            (f" WHERE {' AND '.join(where)}" if where else "")
        rows = self.db.execute(query + " GROUP BY entry ORDER BY entry",
                               tuple(v for v in (night, counted_as) if v))
        return {entry: n for entry, n in rows}

    def variants(self, signature: str) -> list[tuple[str, str]]:
        """The other forms its mechanism was found in: (signature, title), oldest first."""
        return [(r["variant"], r["title"]) for r in self.db.execute(
            "SELECT variant, title FROM variants WHERE signature = ? ORDER BY first_seen",
            (signature,))]

    def tally(self, night: str) -> dict[str, int]:
        """One night's causes by what they are (SUMMARY.md, the dashboard, ``findings
        --yield``): ``new`` mechanisms (in neither the known list nor numfuzz's ledger, nor one
        mechanism with a cause the store holds), ``refind`` (the ledger's causes found again),
        ``known`` and ``by-design`` entries hit (and their ``… hits``: raw cases), ``variants``
        of a stored mechanism, and
        ``signatures``: the new signatures as counted before causes were matched by mechanism
        and against the ledger (new mechanisms, re-finds under a signature not seen before,
        and variants)."""
        rows = list(self.night_rows(night))
        new = {r["signature"] for r in rows if r["outcome"] == "new"}
        refinds = [r for r in rows if r["outcome"].startswith("refind: ")]
        first_tonight = {r["signature"] for r in refinds if r["signature"] and self.db.execute(
            "SELECT 1 FROM processed WHERE signature = ? AND night != ? LIMIT 1",
            (r["signature"], night)).fetchone() is None}
        variants = self.db.execute("SELECT count(*) FROM variants WHERE night = ?",
                                   (night,)).fetchone()[0]
        known, by_design = self.known_hits(night, "known"), self.known_hits(night, "by-design")
        return {"new": len(new),
                "refind": len({r["outcome"].split(": ", 1)[1] for r in refinds}),
                "known": len(known), "known hits": sum(known.values()),
                "by-design": len(by_design), "by-design hits": sum(by_design.values()),
                "variants": int(variants),
                "signatures": len(new) + len(first_tonight) + int(variants)}

    def nights(self) -> list[str]:
        """Every night that processed a case file, oldest first."""
        return [r[0] for r in self.db.execute(
            "SELECT night FROM processed GROUP BY night ORDER BY min(at)")]

    def processed(self, night: str, key: str) -> sqlite3.Row | None:
        return self.db.execute("SELECT * FROM processed WHERE night = ? AND key = ?",
                               (night, key)).fetchone()

    def earlier(self, key: str) -> sqlite3.Row | None:
        """The most recent processing of this case file by any night, if any."""
        return self.db.execute("SELECT * FROM processed WHERE key = ? ORDER BY at DESC LIMIT 1",
                               (key,)).fetchone()

    def night_rows(self, night: str) -> Iterator[sqlite3.Row]:
        yield from self.db.execute("SELECT * FROM processed WHERE night = ? ORDER BY at, key",
                                   (night,))


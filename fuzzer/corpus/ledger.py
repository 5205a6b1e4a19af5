"""A campaign's ledger: which case indices are done, persisted atomically after every case.

Case ``i`` of a campaign is a pure function of its settings and ``i``, so the ledger need only
say which indices are done (``below``: every index under it, ``extra``: the ones above) and which
settings it was written for (``key``): ``--resume`` continues only a campaign with the same key.

One folder may hold several campaigns (``make run`` twice, a nightly corpus night after night):
each has its own ledger file, named by a digest of its key (``ledger_path``), so a new campaign
never overwrites an earlier one's; their case files share the folder, each named by its content
and recording its campaign seed and index (``origin``). ``campaigns_in`` lists the campaigns a
folder holds, for ``--resume`` to say which flags differ when none matches.
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Iterator
from pathlib import Path

from fuzzer.corpus.files import atomic_write
from fuzzer.errors import InputError

PREFIX = ".numfuzz-state"
LEGACY_FILE = ".numfuzz-state.json"  # the one ledger of a folder, before campaigns were apart
# Ledgers written before the compile surface was recorded only when set: the default one is
# the same campaign as none.
DEFAULT_SURFACE = {"dynamic": False, "mode": "default", "training": False}


def ledger_path(out: Path, key: dict) -> Path:
    """The ledger file of the campaign ``key`` in the folder ``out``."""
    text = json.dumps(_normalized(key), sort_keys=True)
    return Path(out) / f"{PREFIX}-{hashlib.sha256(text.encode()).hexdigest()[:12]}.json"


def campaigns_in(out: Path) -> list[tuple[Path, dict]]:
    """Every campaign ledger in ``out`` with its key, the most recently written first; files
    that cannot be read are left out."""
    found = []
    for path in Path(out).glob(f"{PREFIX}*.json"):
        try:
            key = json.loads(path.read_text()).get("key")
            found.append((path.stat().st_mtime, path, key))
        except (OSError, ValueError, AttributeError):
            continue
    return [(path, key) for _, path, key in sorted(found, key=lambda f: f[0], reverse=True)
            if isinstance(key, dict)]


class Ledger:
    """Which case indices are done (for ``--resume``); safe to mark from several threads."""

    def __init__(self, out: Path, key: dict, resume: bool) -> None:
        self.path, self.key = ledger_path(out, key), key
        self.done: set[int] = set()
        self.lock = threading.Lock()
        if not resume:
            return
        for path in (self.path, Path(out) / LEGACY_FILE):  # a legacy ledger of this campaign too
            if path.exists():
                try:
                    data = json.loads(path.read_text())
                    if same_campaign(data.get("key"), key):
                        self.done = set(range(int(data["below"]))) | set(map(int, data["extra"]))
                        return
                except (ValueError, TypeError, KeyError, AttributeError) as err:
                    raise InputError(f"--resume: {path} is not a readable ledger "
                                     f"({type(err).__name__}); move it away to start the "
                                     "campaign over") from None

    def next_indices(self) -> Iterator[int]:
        i = 0
        while True:
            if i not in self.done:
                yield i
            i += 1

    def mark(self, index: int) -> None:
        with self.lock:
            self.done.add(index)
            below = 0
            while below in self.done:
                below += 1
            extra = sorted(i for i in self.done if i > below)
            atomic_write(self.path, json.dumps({"key": self.key, "below": below,
                                                "extra": extra}))


def same_campaign(recorded: object, key: dict) -> bool:
    """Was ``recorded`` written for the campaign ``key`` describes?"""
    if not isinstance(recorded, dict):
        return False
    return _normalized(recorded) == _normalized(key)


def _normalized(key: dict) -> dict:
    key = dict(key)
    if key.get("surface") in (DEFAULT_SURFACE, {}):
        key.pop("surface")
    return key

"""A campaign's ledger: which case indices are done, persisted atomically after every case.

Case ``i`` of a campaign is a pure function of its settings and ``i``, so the ledger need only
say which indices are done (``below``: every index under it, ``extra``: the ones above) and which
settings it was written for (``key``): ``--resume`` continues only a campaign with the same key.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from pathlib import Path

from fuzzer.corpus.files import atomic_write

STATE_FILE = ".numfuzz-state.json"
# Ledgers written before the compile surface was recorded only when set: the default one is
# the same campaign as none.
DEFAULT_SURFACE = {"dynamic": False, "mode": "default", "training": False}


class Ledger:
    """Which case indices are done (for ``--resume``); safe to mark from several threads."""

    def __init__(self, path: Path, key: dict, resume: bool) -> None:
        self.path, self.key = path, key
        self.done: set[int] = set()
        self.lock = threading.Lock()
        if resume and path.exists():
            data = json.loads(path.read_text())
            if same_campaign(data.get("key"), key):
                self.done = set(range(data["below"])) | set(data["extra"])

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

"""Harness errors: numfuzz's own failures on one case or one finding, and the one rule for them.

Any exception while building, running, judging or saving a case (or minimizing, triaging,
drafting or rechecking a finding) belongs to that case or finding, never to the campaign: it is
counted, its first messages are kept for the progress line and the summaries, what is needed to
replay it goes to ``<corpus>/harness/`` (the case file when there is one, else the campaign seed
and index that regenerate it, with the traceback), and the work goes on with the next item.

One rule decides when so many items fail that going on would burn the night for nothing
(``HarnessLog.tripped``): ``LIMIT`` of the last ``WINDOW`` items (at least ``LIMIT * WINDOW`` of
them, so one early error cannot stop a run).
"""

from __future__ import annotations

import json
import os
import threading
import time
import traceback
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path

from fuzzer.corpus.case import Case
from fuzzer.corpus.files import atomic_write
from fuzzer.execute.task import HARNESS_ERROR, harness_error
from fuzzer.judge.kinds import Kind
from fuzzer.judge.verdict import Verdict

DIRECTORY = "harness"
WINDOW = 200  # items the stop rule looks back over
LIMIT = 0.05  # the share of them that may fail before a run stops
FIRST = 3  # messages kept for the progress line, summaries and --json


def is_harness_error(verdict: Verdict) -> bool:
    """A verdict that is numfuzz's own failure (a worker's or the driver's), not the case's."""
    return verdict.kind == Kind.SKIP and verdict.message.startswith(HARNESS_ERROR)


def error_verdict(stage: str, err: BaseException) -> Verdict:
    """The verdict of a case whose ``stage`` (generating, running, saving …) raised ``err``."""
    first = " ".join(str(err).splitlines())[:300]
    return harness_error(f"{stage}: {type(err).__name__}: {first}")


@dataclass
class HarnessLog:
    """Counts harness errors, keeps the first messages, saves each item for replay, and says
    when the stop rule trips. Thread-safe: campaign workers and the driver both report."""

    directory: Path  # <corpus>/harness
    count: int = 0
    messages: list[str] = field(default_factory=list)
    unsaved: int = 0  # records that could not be written (a full disk): still counted
    unsaved_because: str = ""  # why the first of them could not be
    recent: deque = field(default_factory=lambda: deque(maxlen=WINDOW))
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def ok(self) -> None:
        """One item went through without a harness error."""
        with self.lock:
            self.recent.append(False)

    def record(self, message: str, *, case: Case | None = None, where: dict | None = None,
               details: str = "") -> Path | None:
        """Count one harness error and save what replays it: ``case`` (with its inputs set) as a
        case file, and a JSON note with ``message``, ``where`` (seed, index, file …) and
        ``details`` (a traceback). Never raises: a record that cannot be written is counted."""
        with self.lock:
            self.count += 1
            self.recent.append(True)
            if len(self.messages) < FIRST:
                self.messages.append(message)
            number = self.count
        # The pid too: campaigns that share a corpus (and so this folder) never overwrite
        # each other's records made in the same second.
        stem = f"{time.strftime('%Y%m%dT%H%M%S')}-{os.getpid()}-{number:05d}"
        note = {"message": message, "where": where or {}, "details": details,
                "at": time.strftime("%Y-%m-%dT%H:%M:%S%z")}
        try:
            if case is not None and case.inputs:
                case.save(self.directory / f"{stem}.pt")
                note["case_file"] = f"{stem}.pt"
                note["replay"] = f"numfuzz replay {self.directory / (stem + '.pt')}"
            return atomic_write(self.directory / f"{stem}.json", json.dumps(note, indent=1))
        except Exception as err:  # a full disk or a case that cannot be saved: counted, and why
            with self.lock:
                self.unsaved += 1
                self.unsaved_because = self.unsaved_because or f"{type(err).__name__}: {err}"
            return None

    def tripped(self) -> bool:
        """The stop rule: at least ``LIMIT`` of the last ``WINDOW`` items were harness errors."""
        with self.lock:
            return sum(self.recent) >= LIMIT * WINDOW

    def stop_message(self) -> str:
        with self.lock:
            failed = sum(self.recent)
            seen = len(self.recent)
        first = f"; first: {self.messages[0]}" if self.messages else ""
        return (f"stopped: {failed} harness errors in the last {seen} cases (the limit is "
                f"{LIMIT:.0%} of {WINDOW}); see {self.directory}{first}")


def traceback_text(err: BaseException) -> str:
    """The last frames of ``err``'s traceback, for a harness record."""
    return "".join(traceback.format_exception(err))[-4000:]

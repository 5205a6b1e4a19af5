"""Lanes: the night's workers, each one fuzzing or processing, moved between the two by
backpressure, so the pipeline keeps pace with fuzzing instead of waiting for it to end.

A night on the local engine has ``workers`` lanes (``workers.default_workers``: one per core as
memory allows). While the campaign runs, each lane is one of its worker threads: between two
cases it asks ``processing_lanes`` how many lanes the backlog wants (``nightly.backlog``), and
lane ``slot`` processes backlog work on its own worker while ``slot`` is below that number,
then goes back to fuzzing. A lane asked to process that finds no work ready helps another
lane's representative instead: its triage shares its knob runs out (``pool.Spread``), so one
cause's triage runs on every lane that is free for it. After the campaign (``drain``), every
lane processes until the backlog is empty or the night's processing deadline comes. Each lane
has its own runner pool (during fuzzing, seeded with the lane's campaign worker: no extra
process for the minimizer; knob workers under another environment are the lane's own) and its
own store connection; the night's record is shared under ``Context.lock``.

The one backpressure rule (``processing_lanes``): nothing waits, every lane fuzzes; class 1-2
work waits (a silent wrong value, a memory-unsafe write, wrong aliasing), every lane processes;
other work waits, half the lanes (at least one) process and the rest fuzz.
"""

from __future__ import annotations

import threading
import time
from dataclasses import replace

from fuzzer.campaign.settings import worker_env
from fuzzer.execute.pool import RunnerPool, Spread, TaskRunner
from fuzzer.execute.workers import Recycle
from fuzzer.nightly import pipeline
from fuzzer.nightly.backlog import Backlog
from fuzzer.nightly.buckets import tells
from fuzzer.nightly.night import Context
from fuzzer.report.store import Store

IDLE_POLL = 1.0  # seconds a draining lane waits for another lane's representative to settle


def processing_lanes(total: int, waiting: int, urgent: int, fuzzing: bool) -> int:
    """How many of ``total`` lanes process the backlog now: ``waiting`` cases have work ready,
    ``urgent`` of them of value class 1 or 2; ``fuzzing``: the campaign still runs."""
    if not waiting:
        return 0
    if urgent or not fuzzing:
        return total
    return max(1, total // 2)


class Lanes:
    """The night's lanes over one backlog (see the module's docstring)."""

    def __init__(self, ctx: Context, total: int) -> None:
        self.ctx, self.total = ctx, max(1, total)
        self.backlog = Backlog(ctx.settings.corpus_dir, ctx.night.id, ctx.settings.max_findings,
                               tells(ctx.settings.known_file))
        self.fuzzing = True
        self.busy: set[int] = set()  # lanes processing now
        self.pools: dict[int, RunnerPool] = {}
        self.lock = threading.Lock()
        self.spread = Spread()  # a representative's knob runs, shared with idle lanes

    # ---------------------------------------------------------------- while fuzzing

    def between(self, slot: int, runner: TaskRunner) -> None:
        """Campaign worker thread ``slot``, between two cases: process backlog work on its own
        worker (``runner``) while backpressure asks this lane to."""
        if slot >= self.total or not self._may_want(slot):
            return  # the common case: no store opened, nothing read, back to fuzzing
        pool = self.pools.get(slot)
        if pool is None:
            pool = self.pools[slot] = self._pool({self.ctx.settings.campaign.device: runner})
        self._serve(slot, pool)

    # ---------------------------------------------------------------- after fuzzing

    def drain(self) -> None:
        """Every lane processes until the backlog is empty or the deadline comes; lane 0 on the
        night's own pool, the others on pools of their own."""
        self.fuzzing = False
        for pool in self.pools.values():  # their seeded campaign workers are closed by now
            pool.close()
        self.pools = {0: self.ctx.pool} | {slot: self._pool() for slot in range(1, self.total)}
        threads = [threading.Thread(target=self._serve, args=(slot, self.pools[slot]),
                                    daemon=True) for slot in range(1, self.total)]
        for thread in threads:
            thread.start()
        try:
            self._serve(0, self.ctx.pool)
        finally:
            for thread in threads:
                thread.join()
            for slot, pool in self.pools.items():
                if slot:
                    pool.close()

    # ---------------------------------------------------------------- a lane

    def _serve(self, slot: int, pool: RunnerPool) -> None:
        store = Store.in_reports(self.ctx.settings.reports)
        ctx = replace(self.ctx, store=store, pool=pool, spread=self.spread)
        try:
            while self._wanted(ctx, slot):
                work = self.backlog.take()
                if work is None:
                    if self.spread.help(ctx.runners(ctx.processing_deadline())):
                        continue  # a knob run of another lane's representative
                    if self.fuzzing or not self._others_busy(slot):
                        return
                    time.sleep(IDLE_POLL)  # a representative in flight may free its members
                    continue
                with self.lock:
                    self.busy.add(slot)
                try:
                    pipeline.work_on(ctx, self.backlog, work)
                except Exception as err:  # numfuzz's own failure: that case's, not the night's
                    ctx.harness_error("lane", work.item.key, err)
                    self.backlog.fail(work, ctx.store, f"error: {type(err).__name__}")
                finally:
                    with self.lock:
                        self.busy.discard(slot)
                with ctx.lock:  # what a kill would lose: the buckets and how each case settled
                    ctx.night.buckets = self.backlog.rows()
                ctx.checkpoint()
        finally:
            store.close()

    def _wanted(self, ctx: Context, slot: int) -> bool:
        """Should lane ``slot`` take backlog work now (time left, and backpressure)?"""
        if ctx.left(ctx.processing_deadline()) < pipeline.MIN_CASE_SECONDS:
            return False
        with ctx.lock:
            found = set(ctx.night.found)
        for key in self.backlog.refresh(ctx.store, found):
            earlier = ctx.store.earlier(key)
            if earlier is not None and ctx.store.processed(ctx.night.id, key) is None:
                pipeline.hit_again(ctx, key, earlier)
        waiting, urgent = self.backlog.waiting()
        helping, urgent_help = self.spread.waiting()
        waiting, urgent = waiting + helping, urgent + urgent_help
        if not waiting and not self.fuzzing:
            return self._others_busy(slot)
        return slot < processing_lanes(self.total, waiting, urgent, self.fuzzing) or \
            (not self.fuzzing and self._others_busy(slot))

    def _may_want(self, slot: int) -> bool:
        """Could ``_wanted`` say yes for this fuzzing lane: is there a case file to read, work
        ready or a knob run to help with, and backpressure for this lane? Asked before each case
        without opening a store (``_wanted`` opens one per lane and reads the corpus)."""
        with self.ctx.lock:
            found = set(self.ctx.night.found)
        if self.backlog.news(found):
            return True
        waiting, urgent = self.backlog.waiting()
        helping, urgent_help = self.spread.waiting()
        return slot < processing_lanes(self.total, waiting + helping, urgent + urgent_help,
                                       self.fuzzing)

    def _others_busy(self, slot: int) -> bool:
        with self.lock:
            return bool(self.busy - {slot})

    def _pool(self, runners: dict | None = None) -> RunnerPool:
        campaign = self.ctx.settings.campaign
        return RunnerPool(runners, timeout=campaign.timeout, warmup=campaign.recipe.warms_up,
                          recycle=Recycle(), base_env=worker_env(campaign))


def process(ctx: Context, lanes: Lanes | None = None) -> None:
    """After fuzzing: every lane of the night (one, made here, where none are given) processes
    the backlog until it is empty or the night's time is spent; what is left waits for the
    next night."""
    lanes = lanes or Lanes(ctx, 1)
    lanes.drain()
    ctx.night.backlog = lanes.backlog.left()
    if ctx.night.backlog:
        ctx.log(f"{ctx.night.backlog} case files left for the next night (max findings / time)")

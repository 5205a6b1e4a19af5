"""Error-guided search (``--search guided``): spend part of a campaign near its best near misses.

Every case comes back with a score (``oracle.regression_score``: how much worse compiled is than
eager against float64, 1 where the verdict rule starts to fire). The pool keeps the
``POOL_SIZE`` best cases that are not findings yet (a finding's neighbourhood mostly finds the same
bug again); once it holds one, a ``MUTANT_SHARE`` of the cases are mutants of a pool case (its
graph edited by ``gen.mutate`` with constant nudges added, its inputs rescaled across the
magnitude classes by ``inputs.draws_around``), the better-scored ones picked more often; the rest
are fresh cases exactly as ``--search random`` draws them.

A mutant is a pure function of its parent and the case seed, and its case file records both, so
every finding is replayable. Which parent case ``i`` gets depends on what the cases before it
scored, so with several workers the order cases finish in matters: only a one-worker guided
campaign is a pure function of its seed. ``--resume`` starts with an empty pool.
"""

from __future__ import annotations

import random
import threading
from dataclasses import dataclass
from typing import TYPE_CHECKING

from fuzzer.judge.kinds import Kind

if TYPE_CHECKING:  # torch-free at import: the command line lists SEARCHES without loading torch
    import torch

    from fuzzer.corpus.case import Case
    from fuzzer.execute.recipe import Recipe
    from fuzzer.execute.task import RunResult, Task
    from fuzzer.ir.graph import Graph

SEARCHES = ("random", "guided")
POOL_SIZE = 16
MUTANT_SHARE = 0.5
MIN_SCORE = 0.05  # below this compiled tracks eager closely: nothing to climb from
SALT = 0x6D75_7461  # separates the mutant/fresh draw from the case's other uses of its seed


@dataclass
class Parent:
    """A pool case: the program and the draw that scored best."""

    score: float
    index: int
    graph: Graph
    inputs: dict[str, torch.Tensor]
    dtype: str
    recipe: Recipe | None = None  # the surface it ran on: its mutants run there too


class SeedPool:
    """The best near misses so far; thread-safe (workers offer and draw concurrently)."""

    def __init__(self, size: int = POOL_SIZE) -> None:
        self.size = size
        self.parents: list[Parent] = []
        self.lock = threading.Lock()

    def offer(self, case: Case, task: Task, result: RunResult) -> None:
        """Keep the case if it is among the best-scored that are not findings."""
        verdict = result.verdict
        scores = result.scores or [verdict.score]
        if verdict.is_finding or verdict.kind == Kind.SKIP:
            return
        best = max(range(len(scores)), key=scores.__getitem__)
        if scores[best] < MIN_SCORE:
            return
        parent = Parent(scores[best], case.origin.get("index", -1), case.graph,
                        task.draws[best], case.dtype, case.recipe)
        with self.lock:
            self.parents.append(parent)
            self.parents.sort(key=lambda p: (-p.score, p.index))
            del self.parents[self.size:]

    def pick(self, rng: random.Random) -> Parent | None:
        """A parent, by rank: the best twice as likely as the median."""
        with self.lock:
            if not self.parents:
                return None
            weights = [1.0 / (1 + rank / max(1, len(self.parents) // 2))
                       for rank in range(len(self.parents))]
            return rng.choices(self.parents, weights)[0]


def mutant(parent: Parent, seed: int, draws: int) -> tuple[Graph, list[tuple[str, dict]]]:
    """The parent's graph with 1-3 edits (constant nudges among them) and input draws around its
    scored draw: the parent's values first, then rescaled into the magnitude classes."""
    from fuzzer.gen import inputs, mutate

    graph = mutate.mutate(parent.graph, seed, palette=mutate.GUIDED_EDITS)
    return graph, inputs.draws_around(graph, parent.inputs, seed, draws)


def wants_mutant(case_seed: int, pool: SeedPool) -> Parent | None:
    """The parent case ``case_seed`` mutates, or None for a fresh case."""
    rng = random.Random(case_seed ^ SALT)
    if rng.random() >= MUTANT_SHARE:
        return None
    return pool.pick(rng)

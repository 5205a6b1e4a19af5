"""Sizes that cross the backend's paths: dims around the vector widths, long reductions, empty
and size-1 dims, ranks up to 5, with the total bounded.

A compiled kernel runs its innermost dim in vectors (8 or 16 float32 lanes on AVX2/AVX-512, twice
that for 16-bit types and four times for 8-bit ones, 32 threads in a GPU warp) and what is left in
a scalar or masked tail; a transposed load goes through 2-d tiles of the vector width, with tails
in both dims. A dim of 1, w - 1, w, w + 1, 2w - 1 or 2w + 1 for w = 8, 16, 32, 64 sits next to
each of those edges on every machine, so a case is the same wherever it is drawn (no reading of
the machine's own width). A reduction over more than 1024 elements leaves a GPU's persistent
reduction, and one over thousands is split or run in parallel chunks (``LONG``).

The total is bounded (``LIMIT`` elements for a short program) so that compile time, not run time,
bounds a campaign: the edge bodies (``gen.edge``), the model grammars' spatial and sequence sizes
(``gen.grammar``) and the vision-op programs draw their shapes here.
"""

from __future__ import annotations

import math
import random

WIDTHS = (8, 16, 32, 64)  # vector lanes (8- to 32-bit types, AVX2 to AVX-512) and a GPU warp
LONG = (1023, 1025, 4097, 8193, 65537)  # around the persistent, split and parallel reductions
LONG_LIMIT = 3 * 8193  # a long program's total, at most (a lone dim of 65537 excepted)
SMALL = (1, 2, 3, 5)  # the dims beside the ones at a width
RANKS = (1, 2, 3, 4, 5)
RANK_WEIGHTS = (3, 4, 3, 2, 1)
LIMIT = 4096  # elements of a short program's input


def near_width(rng: random.Random, widths: tuple[int, ...] = WIDTHS,
               doubled: bool = True) -> int:
    """1, w - 1, w, w + 1 and (``doubled``) 2w - 1, 2w + 1 for a w of ``widths``: one dim on
    either side of a vector's edge."""
    w = rng.choice(widths)
    return rng.choice((1, w - 1, w, w + 1, *((2 * w - 1, 2 * w + 1) if doubled else ())))


def shape(rng: random.Random, rank: int | None = None, limit: int = LIMIT,
          empty: float = 0.1, at_least: int = 0) -> tuple[int, ...]:
    """A shape of ``rank`` dims (drawn, 1 to 5, where None): the innermost at a width
    (``near_width``), another at one half the time, the rest small, at most ``limit`` elements
    in all; with probability ``empty`` one dim is 0. ``at_least``: redrawn until it holds that
    many elements (a single dim when the draws do not get there)."""
    for _ in range(8):
        dims = _dims(rng, rank or rng.choices(RANKS, RANK_WEIGHTS)[0], limit)
        if not at_least and rng.random() < empty:
            dims[rng.randrange(len(dims))] = 0
        if math.prod(dims) >= at_least:
            return tuple(dims)
    return (max(at_least, 2 * rng.choice(WIDTHS) + 1),)


def _dims(rng: random.Random, rank: int, limit: int) -> list[int]:
    dims = [near_width(rng)] + [0] * (rank - 1)
    budget = max(limit // dims[0], 1)
    others = list(range(1, rank))
    rng.shuffle(others)
    for i, d in enumerate(others):
        wide = [v for v in (near_width(rng) for _ in range(3)) if v <= budget]
        options = wide if i == 0 and wide and rng.random() < 0.5 else \
            [v for v in SMALL if v <= budget]
        dims[d] = rng.choice(options or [1])
        budget = max(budget // dims[d], 1)
    return dims[1:] + dims[:1]  # the width-drawn dim innermost


def long_shape(rng: random.Random) -> tuple[int, ...]:
    """One dim from ``LONG`` (a reduction that is persistent or not, split or not), the others
    small, at most ``LONG_LIMIT`` elements unless the long dim alone is more."""
    dims = [rng.choice(LONG)]
    for _ in range(rng.choice((0, 0, 1, 2))):
        dims.append(rng.choice([v for v in SMALL if v * math.prod(dims) <= LONG_LIMIT] or [1]))
    rng.shuffle(dims)
    return tuple(dims)


def image(rng: random.Random, spatial: int, limit: int = LIMIT,
          empty: float = 0.1) -> tuple[int, ...]:
    """``(N, C, *spatial dims)`` for a pooling, resampling or padding op: each spatial dim at
    a width of 8 or 16 or small, the channels few or at a width, at most ``limit`` elements;
    with probability ``empty`` the batch or the channels are 0."""
    dims = [near_width(rng, (8, 16)) if rng.random() < 0.7 else rng.choice(SMALL)
            for _ in range(spatial)]
    while math.prod(dims) > limit // 2:
        dims[dims.index(max(dims))] = rng.choice(SMALL)
    budget = max(limit // math.prod(dims), 1)
    channels = rng.choice([c for c in (1, 3, 4, near_width(rng, (8, 16), False)) if c <= budget]
                          or [1])
    batch = rng.choice([n for n in (1, 1, 2) if n * channels <= budget] or [1])
    lead = [batch, channels]
    if rng.random() < empty:
        lead[rng.randrange(2)] = 0
    return (*lead, *dims)


def around(rng: random.Random, widths: tuple[int, ...] = (8, 16)) -> int:
    """w - 1, w or w + 1 for a w of ``widths``: a model's spatial or sequence size that still
    crosses a vector's tail."""
    w = rng.choice(widths)
    return rng.choice((w - 1, w, w + 1))

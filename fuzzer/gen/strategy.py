"""Strategies: what a campaign spends each case on, by name and weight.

A strategy is a program family and the input domains its draws cycle through. Case ``i`` of a
campaign draws its strategy from the weights with a generator seeded by the case seed alone, so a
case stays a pure function of (seed, i, weights): resumable, and the same on any engine.

Default weights follow yield (bench/RESULTS.md §12): ``cast-roundtrip`` produces findings that are
all the fp16/bf16 round trip Inductor keeps in float32 by design (``known.toml``:
fused-low-precision-roundtrip), so it is weighted down, not removed; ``--strategy NAME=WEIGHT``
chooses otherwise (0 turns one off).
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from fuzzer.errors import InputError

if TYPE_CHECKING:  # torch-free at import: the command line lists STRATEGIES without torch
    from fuzzer.gen.grammar import Builder
    from fuzzer.ir.graph import Graph

SALT = 0x5EED_57A7
LAYOUT_SALT = 0x1A_7007  # the generator of a program's input layouts
MAGNITUDES = ("normal", "large", "boundary", "tiny")  # the default domains of a model's draws
DRAWS = 4  # input draws per case unless --draws says otherwise


@dataclass(frozen=True)
class Strategy:
    name: str
    weight: float  # the default share of cases
    what: str
    cycle: tuple[str, ...]  # the input domains (gen.domains) its draws cycle through
    model: bool = False  # a vision/attention model (``--grammar`` picks which)


STRATEGIES: dict[str, Strategy] = {s.name: s for s in (
    Strategy("models", 3.0, "vision and attention models with the hazard motifs, the cast round "
             "trip excepted", MAGNITUDES, model=True),
    Strategy("cast-roundtrip", 0.25, "models with an explicit fp16/bf16 round trip: "
             "expected-by-default findings, so weighted down", MAGNITUDES, model=True),
    Strategy("model-overflow", 1.0, "models on inputs around the overflow edges, special values "
             "and subnormals", ("overflow", "special", "subnormal", "overflow"), model=True),
    Strategy("special-functions", 3.0, "special and transcendental functions at the edges of "
             "their domains", ("edges", "special", "overflow", "edges")),
    Strategy("decimal", 2.0, "floor division, remainder and rounding on decimal grids and "
             "exact integers", ("decimal", "integral", "decimal", "special")),
    Strategy("integer", 3.0, "integer and bool programs: wrap-around, bitwise, promotion, "
             "in-graph factories", ("normal", "large", "special", "boundary")),
    Strategy("shapes", 2.0, "empty, size-1, 0-d and SIMD-tail shapes, non-contiguous inputs, "
             "split reductions", ("normal", "special", "large", "normal")),
    Strategy("vision-ops", 2.0, "interpolate, pooling and padding variants: every mode, "
             "non-integer scales, sizes that keep a dim, ceil mode, padding counted or not, "
             "indices, adaptive windows; empty and size-1 dims, inf inputs",
             ("normal", "special", "large", "boundary")),
    # Opt-in (--strategy decompositions=W): its first two runs (RESULTS §25) gave 6 raw findings
    # in 1,213 cases, the lowest yield of all, no new cause among them; off by default it also
    # leaves every seeded campaign drawing what it drew before.
    Strategy("decompositions", 0.0, "ops the compiler rewrites into others: thresholded "
             "activations, losses with each reduction, distances and norms with an eps or p of "
             "0 or inf, at their thresholds", ("edges", "normal", "special", "edges")),
    Strategy("signs", 2.0, "signed zeros and NaNs of either sign through the ops their sign "
             "shows in (1/x, copysign, atan2, heads)", ("zeros", "zeros", "special", "boundary")),
    Strategy("state", 3.0, "views and in-place writes through them, reads of old aliases, "
             "out= forms, buffers a forward updates; judged on the state left behind",
             ("normal", "boundary", "large", "normal")),
)}


def parse_weights(pairs: tuple[str, ...] | list[str], grammar_name: str = "mixed") \
        -> dict[str, float]:
    """The campaign's weights: the defaults (only the model strategies when ``--grammar`` names
    one body), then each ``NAME=WEIGHT``; InputError on an unknown name or a bad weight."""
    weights = {name: s.weight for name, s in STRATEGIES.items()
               if grammar_name == "mixed" or s.model}
    for pair in pairs:
        name, sep, value = pair.partition("=")
        if not sep or name not in STRATEGIES:
            raise InputError(f"--strategy takes NAME=WEIGHT with NAME one of "
                             f"{', '.join(STRATEGIES)}; got {pair!r}")
        try:
            weight = float(value)
        except ValueError:
            raise InputError(f"--strategy {name}: weight {value!r} is not a number") from None
        if not weight >= 0 or weight == float("inf"):
            raise InputError(f"--strategy {name}: weight must be finite and at least 0")
        weights[name] = weight
    if not any(w > 0 for w in weights.values()):
        raise InputError("--strategy: every strategy has weight 0, nothing to run")
    return weights


def choose(case_seed: int, weights: dict[str, float]) -> Strategy:
    """The strategy of the case with this seed (deterministic)."""
    names = sorted(n for n, w in weights.items() if w > 0)
    rng = random.Random(case_seed ^ SALT)
    return STRATEGIES[rng.choices(names, [weights[n] for n in names])[0]]


def generate(strategy: Strategy, seed: int, grammar_name: str, dtype: str) -> Graph:
    """The program of a case under ``strategy``, its inputs (activations and weights) laid out
    in some programs (``domains.assign_layouts``, from a generator of its own so the program
    is the same either way)."""
    from fuzzer.gen import domains

    graph = _program(strategy, seed, grammar_name, dtype)
    domains.assign_layouts(graph, random.Random(seed ^ LAYOUT_SALT))
    return graph


def _program(strategy: Strategy, seed: int, grammar_name: str, dtype: str) -> Graph:
    """The program itself: a model, a stateful program or an edge body."""
    from fuzzer.gen import grammar

    if strategy.name == "cast-roundtrip":  # the first seed from here whose model keeps one
        for attempt in range(seed, seed + 50):
            graph = grammar.generate(attempt, grammar_name, dtype, [grammar.hazard_cast], 3.0)
            if "cast_roundtrip" in graph.op_names():
                return graph
        return graph
    if strategy.model:
        others = [h for h in grammar.HAZARDS if h is not grammar.hazard_cast]
        return grammar.generate(seed, grammar_name, dtype, others)
    if strategy.name == "state":
        return _stateful(seed, dtype)
    return _small(_body(strategy.name), seed, dtype)


def _stateful(seed: int, dtype: str) -> Graph:
    """A program with state (``gen.state``): every read it made is an output."""
    from fuzzer.gen import state
    from fuzzer.gen.grammar import Builder

    b = Builder(random.Random(seed), dtype)
    value, outputs = state.state_body(b)
    state.finish(b, value, outputs)
    return b.graph


def _small(body: Callable[[Builder], tuple[int, list[int]]], seed: int, dtype: str) -> Graph:
    """An edge body and its heads: the value itself, or an encoding of it."""
    from fuzzer.gen import grammar
    from fuzzer.gen.grammar import Builder
    from fuzzer.ir import ops

    b = Builder(random.Random(seed), dtype)
    y, taps = body(b)
    outputs = [y]
    if b.graph.node(y).dtype in ops.FLOAT_DTYPES and b.chance(0.4):
        if b.chance(0.2):
            outputs = [b.op("frexp", y, pick=1)]  # the exponent: an int32 head
        else:
            outputs = [grammar.add_head(b, y, taps)]
    if b.chance(0.3):
        outputs.append(b.pick(taps[1:] or taps))
    b.graph.outputs = list(dict.fromkeys(o for o in outputs
                                         if not b.graph.node(o).is_input))
    if not b.graph.outputs:  # every step was refused: the input as int64
        b.graph.outputs = [b.op("cast", taps[0], to="int64")]
    b.graph.remove_dead()
    return b.graph


def for_training(graph: Graph) -> Graph:
    """The graph with the float value under each discrete head as an output too: a training run
    differentiates float outputs only, and a model ending in encoding heads has none."""
    from fuzzer.ir import ops

    graph = graph.copy()
    floats = [graph.node(o).inputs[0] for o in graph.outputs
              if graph.node(o).dtype not in ops.FLOAT_DTYPES and graph.node(o).inputs
              and graph.node(graph.node(o).inputs[0]).dtype in ops.FLOAT_DTYPES]
    graph.outputs = list(dict.fromkeys([*graph.outputs, *floats]))
    return graph


def _body(name: str) -> Callable[[Builder], tuple[int, list[int]]]:
    """The edge body of a small-program strategy (``gen.edge``)."""
    from fuzzer.gen import edge, signs

    return {"special-functions": edge.special_body, "decimal": edge.decimal_body,
            "integer": edge.integer_body, "shapes": edge.shapes_body,
            "vision-ops": edge.vision_ops_body, "signs": signs.signs_body,
            "decompositions": edge.decomposition_body}[name]

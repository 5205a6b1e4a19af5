"""Mutation around a seed graph (``run --seed-model``): explore the neighbourhood of a user's model.

Each mutant is the seed graph plus one to three edits drawn from the grammars' own vocabulary:

- ``insert``: an activation, a hazard motif or a cast round trip spliced after a value;
- ``replace``: an elementwise op swapped for another of the same shape and dtype;
- ``rewire``: a value combined with another one (``add``/``sub``/``mul``/``maximum``) before its
  consumers read it, joining branches the model keeps apart;
- ``head``: a new encoding head (E8M0, int8 quantize, sign, comparison) on an inner value, since
  discrete outputs turn one ulp upstream into a wrong answer;
- ``nudge``: a float constant (a scale, a clamp bound, an epsilon) moved by a factor of 1/2 to 2
  or by one ulp; guided search only (``GUIDED_EDITS``), since a user's constants are theirs.

An edit that breaks a shape or dtype rule is dropped and another drawn, so a mutant is always a
valid graph. Mutants are pure functions of (seed graph, seed).
"""

from __future__ import annotations

import random
from collections.abc import Callable

from fuzzer.gen import grammar
from fuzzer.ir import ops
from fuzzer.ir.graph import Graph

MAX_TRIES = 20


def mutate(seed_graph: Graph, seed: int, edits: int | None = None,
           palette: list[Callable[[Graph, random.Random], bool]] | None = None) -> Graph:
    """A valid mutant of ``seed_graph``: 1–3 edits (or ``edits``) drawn from ``palette``
    (default ``EDITS``), deterministic in ``seed``."""
    rng = random.Random(seed)
    graph = seed_graph.copy()
    wanted = edits if edits is not None else rng.randint(1, 3)
    done = 0
    for _ in range(wanted * MAX_TRIES):
        if done == wanted:
            break
        edit = rng.choice(palette or EDITS)
        candidate = graph.copy()
        try:
            if edit(candidate, rng):
                candidate.infer()
                pruned = candidate.copy()  # what is returned has its dead nodes removed, which
                pruned.remove_dead()  # settles rereads anew in a program with state: check it
                pruned.infer()
                graph, done = candidate, done + 1
        except ops.InvalidGraph:
            continue  # a rule rejected this edit; draw another
    graph.remove_dead()
    return graph


def _float_values(graph: Graph) -> list[int]:
    """Nodes (inputs included) holding floating tensors: where edits may attach."""
    return [n for n in graph.order() if graph.node(n).dtype in ops.FLOAT_DTYPES
            and (not graph.node(n).is_input or graph.node(n).attrs.get("role") == "x")]


def _builder(graph: Graph, rng: random.Random, node: int) -> grammar.Builder:
    b = grammar.Builder(rng, graph.node(node).dtype)
    b.graph = graph
    return b


def _splice(graph: Graph, old: int, new: int, created_after: int) -> None:
    """Make the consumers ``old`` had before the edit (and its output slots) read ``new``."""
    graph.replace_uses(old, new, [u for u in graph.consumers(old) if u < created_after])


def insert_op(graph: Graph, rng: random.Random) -> bool:
    """A value flows on unchanged where an activation, hazard or cast could sit."""
    values = _float_values(graph)
    if not values:
        return False
    target = rng.choice(values)
    first_new = graph._next_id
    b = _builder(graph, rng, target)
    kind = rng.choice(["activation", "hazard", "hazard", "cast"])
    if kind == "activation":
        new = b.activation(target)
    elif kind == "hazard":
        new = rng.choice(grammar.HAZARDS)(b, target)
    else:
        new = grammar.hazard_cast(b, target)
    _splice(graph, target, new, first_new)
    return True


def replace_op(graph: Graph, rng: random.Random) -> bool:
    """An elementwise op could be any other: swap it, keeping its inputs and consumers."""
    swappable = ops.tagged("swappable")
    candidates = [n for n in graph.op_ids() if graph.node(n).op in swappable]
    if not candidates:
        return False
    node = graph.node(rng.choice(candidates))
    choice = rng.choice([op for op in swappable if op != node.op])
    node.op = choice
    node.attrs = {key: rng.choice(list(values))
                  for key, values in ops.spec(choice).choices.items()}
    return True


def rewire(graph: Graph, rng: random.Random) -> bool:
    """Two values the model keeps apart meet: ``a op b`` replaces ``a`` for its consumers."""
    values = _float_values(graph)
    if not values:
        return False
    a = rng.choice(values)
    below = graph.descendants(a)
    partners = [b for b in values if b not in below
                and graph.node(b).dtype == graph.node(a).dtype
                and _broadcasts_to(graph.node(b).shape, graph.node(a).shape)]
    if not partners:
        return False
    first_new = graph._next_id
    new = graph.add(rng.choice(ops.tagged("combine")), [a, rng.choice(partners)])
    _splice(graph, a, new, first_new)
    return True


def _broadcasts_to(shape: tuple[int, ...], target: tuple[int, ...]) -> bool:
    try:
        return ops.broadcast([shape, target], {}) == tuple(target)
    except ops.InvalidGraph:
        return False


def add_head(graph: Graph, rng: random.Random) -> bool:
    """A discrete view of an inner value becomes one more output."""
    values = [n for n in _float_values(graph) if not graph.node(n).is_input]
    if not values:
        return False
    target = rng.choice(values)
    b = _builder(graph, rng, target)
    head = grammar.add_head(b, target, values)
    if head == target or head in graph.outputs:
        return False
    graph.outputs.append(head)
    return True


def nudge_constant(graph: Graph, rng: random.Random) -> bool:
    """A constant decides which side of a boundary a value lands on: move one."""
    import math

    places = [(n, key) for n in graph.op_ids() for key, value in graph.node(n).attrs.items()
              if type(value) is float and math.isfinite(value) and value != 0.0]
    if not places:
        return False
    node, key = rng.choice(places)
    value = graph.node(node).attrs[key]
    if rng.random() < 0.5:
        moved = value * rng.choice([0.5, 0.75, 1.5, 2.0])
    else:
        moved = math.nextafter(value, rng.choice([math.inf, -math.inf]))
    graph.node(node).attrs[key] = moved
    return True


EDITS: list[Callable[[Graph, random.Random], bool]] = [insert_op, replace_op, rewire, add_head]
GUIDED_EDITS = [*EDITS, nudge_constant]

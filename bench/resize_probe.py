"""Probe (RESULTS §24): does automatic dynamic shapes find what one size of a program does not?

Each generated program (module state left out) is compiled once with torch.compile's defaults and
called at its own sizes (static), then at a second size (Dynamo recompiles it over symbolic
sizes), then at a third (the symbolic kernel is reused). A size is changed on every input dim
that holds it, and a program whose rendered code differs at the new size is not resized.
Compiled is compared with eager on each call: float outputs by ``rules.output_kind`` against
float64, discrete ones by whether compiled's code regresses from float64's (no evidence margins:
a flag for reading by hand, not a verdict). A crash where eager runs is printed too.

    python bench/resize_probe.py FIRST_SEED COUNT
"""

from __future__ import annotations

import random
import sys
import time

import torch

from fuzzer.execute import calling
from fuzzer.gen import inputs, strategy
from fuzzer.ir import render
from fuzzer.judge import rules, semantics

NEW_SIZES = (17, 31, 33, 65)  # besides d - 1, d + 1, 2d + 1, d + 8: vector widths and tails


def resized(graph, rng):
    """``graph`` with one size of its inputs changed everywhere it appears, or None."""
    dims = sorted({d for n in graph.input_ids() for d in graph.node(n).shape if d >= 2})
    if not dims:
        return None
    old = rng.choice(dims)
    new = rng.choice([old + 1, old - 1, 2 * old + 1, old + 8, *NEW_SIZES])
    if new == old:
        return None
    other = graph.copy()
    for n in other.input_ids():
        node = other.node(n)
        node.shape = tuple(new if s == old else s for s in node.shape)
    try:
        other.infer()
    except Exception:  # the program does not exist at that size
        return None
    return other if render.render_model(other) == render.render_model(graph) else None


def flags(eager, compiled, ref):
    """(output, what) for each output compiled gets wrong against eager and float64."""
    found = []
    for i, (e, c, r) in enumerate(zip(eager, compiled, ref)):
        if e.shape != c.shape or e.dtype != c.dtype:
            found.append((i, "meta"))
        elif e.is_floating_point():
            kind = rules.output_kind(e, c, r, 1e-4 if e.dtype == torch.float32 else 1e-2)
            if kind not in ("ok", "benign"):
                found.append((i, kind))
        elif bool(rules.discrete_regressions(e, c, r, None, e.dtype != torch.bool).any()):
            found.append((i, "discrete regression"))
    return found


def probe(seed: int, weights: dict[str, float]) -> tuple[int, str | None]:
    """How many calls a program got through, and what was flagged (None: nothing)."""
    rng = random.Random(seed)
    chosen = strategy.choose(seed, weights)
    dtype = rng.choice(["float32", "float32", "bfloat16"])
    if chosen.model:
        return 0, None
    graph = strategy.generate(chosen, seed, "mixed", dtype)
    if any(k != "x" for k in semantics.kinds(graph)):
        return 0, None
    sizes = [g for g in (resized(graph, rng) for _ in range(3)) if g is not None]
    if len(sizes) < 2:
        return 0, None
    model = render.load(render.render_model(graph), "model")
    written = [graph.input_ids().index(n) for n in graph.written_inputs()]
    torch._dynamo.reset()
    compiled = calling.compile_model(model, lambda f: torch.compile(f, fullgraph=True))
    for call, g in enumerate([graph, *sizes[:2]]):
        args = inputs.ordered(g, inputs.draws(g, seed * 10 + call, 1)[0][1])
        try:
            eager, _ = calling.call(model, args, written)
        except Exception:
            return call, None
        try:
            out, _ = calling.call(compiled, args, written)
        except Exception as err:
            line = f"{type(err).__name__}: {str(err).splitlines()[0][:200]}"
            return call, f"{chosen.name} call {call}: crash {line}"
        values = rules.float64_run(render.load(render.render_trace(g), "trace"), args) \
            if semantics.float64_stands(g) else None
        ref = [values[k] for k in semantics.judged(g)] if values is not None else eager
        found = flags(eager, out, ref)
        if found:
            shapes = [g.node(n).shape for n in g.input_ids()]
            return call, f"{chosen.name} {dtype} call {call} at {shapes}: {found}"
    return 3, None


def main(first: int, count: int) -> None:
    weights = {name: s.weight for name, s in strategy.STRATEGIES.items()}
    reached = [0, 0, 0]
    start = time.time()
    for seed in range(first, first + count):
        calls, flagged = probe(seed, weights)
        for k in range(min(calls, 3)):
            reached[k] += 1
        if flagged:
            print(f"seed {seed}: {flagged}", flush=True)
    print(f"{count} seeds in {time.time() - start:.0f} s; programs through call 1, 2, 3: "
          f"{reached}")


if __name__ == "__main__":
    main(int(sys.argv[1]), int(sys.argv[2]))

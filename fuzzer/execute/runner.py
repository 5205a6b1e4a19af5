"""Run one program eager (twice), compiled and in float64, and hand the outputs to the oracle.

This is the code a worker process executes; ``workers`` wraps it in isolated processes. A ``Task``
crosses the pipe as ``torch.save`` bytes of plain data (the graph as a dict, input tensors, the
recipe's fields) and is read back with ``weights_only=True``; the answer, a ``RunResult``, comes
back the same way.
"""

from __future__ import annotations

import contextlib
import io
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field

import torch

from fuzzer.execute import config
from fuzzer.execute.recipe import Recipe
from fuzzer.ir import render
from fuzzer.ir.graph import Graph
from fuzzer.judge import oracle, rules, semantics
from fuzzer.judge.oracle import Kind, Verdict

HARNESS_ERROR = "harness error"  # how a skip caused by numfuzz itself, not the case, begins


@dataclass
class Task:
    """One compiled program and the input draws to test it on."""

    graph: Graph
    draws: list[dict[str, torch.Tensor]]
    magnitudes: list[str] = field(default_factory=list)
    device: str = "cpu"
    recipe: Recipe = Recipe()
    keep_outputs: bool = False  # return the tensors too (replay tables, minimizer, drafts)
    model_file: str = ""  # set: judge this KernelBench file's own model instead (capture check)
    seed: int = 0

    def to_bytes(self) -> bytes:
        buf = io.BytesIO()
        torch.save({"graph": self.graph.to_dict(), "draws": self.draws,
                    "magnitudes": list(self.magnitudes), "device": self.device,
                    "recipe": self.recipe.fields(), "keep_outputs": self.keep_outputs,
                    "model_file": self.model_file, "seed": self.seed}, buf)
        return buf.getvalue()

    @classmethod
    def from_bytes(cls, data: bytes) -> Task:
        raw = torch.load(io.BytesIO(data), weights_only=True)
        recipe = Recipe.from_fields(**raw.pop("recipe"), trusted=True)  # from our own parent
        return cls(graph=Graph.from_dict(raw.pop("graph")), recipe=recipe, **raw)


@dataclass
class RunResult:
    """What running a task gave: the most severe draw's verdict, every draw's regression score
    (guided search climbs them) and, when asked, that draw's eager/compiled/float64 outputs."""

    verdict: Verdict
    scores: list[float] = field(default_factory=list)
    outputs: dict[str, list[torch.Tensor]] = field(default_factory=dict)

    def to_dict(self) -> dict:
        return {"verdict": self.verdict.to_dict(), "scores": list(self.scores),
                "outputs": self.outputs}

    @classmethod
    def from_dict(cls, data: dict) -> RunResult:
        """TypeError or ValueError on an answer not shaped like one."""
        return cls(Verdict.from_dict(data["verdict"]), list(data.get("scores") or []),
                   dict(data.get("outputs") or {}))

    @classmethod
    def lost(cls, kind: Kind, message: str) -> RunResult:
        """No answer: the worker crashed or hung (``kind``), or numfuzz itself failed."""
        return cls(Verdict(kind, message=message))


def harness_error(message: str) -> Verdict:
    """A skip that is numfuzz's own failure, not the case's (``campaign.harness`` counts them)."""
    return Verdict(Kind.SKIP, message=f"{HARNESS_ERROR}: {message}")


@dataclass
class Programs:
    """The rendered model and its eager-only trace twin, loaded once per task."""

    graph: Graph
    source: str
    model: Callable
    trace: Callable  # {node id: value} for every node (nodewise) or for the outputs only
    nodewise: bool = True  # False for a model file judged as itself: no graph to trace through
    eager_values: dict = field(default_factory=dict)  # not nodewise: what is known of its nodes

    @classmethod
    def build(cls, graph: Graph) -> Programs:
        source = render.render_model(graph)
        return cls(graph, source, render.load(source, "model"),
                   render.load(render.render_trace(graph), "trace"))


def inductor_config(overrides: dict) -> contextlib.AbstractContextManager:
    """fallback_random as the pt2 template asks, plus the recipe's knobs (allowlisted)."""
    import torch._inductor.config as inductor

    return inductor.patch({"fallback_random": True, **config.check(overrides)})


def run_task(task: Task) -> RunResult:
    """Judge every draw; the most severe verdict (and its outputs when asked)."""
    task.recipe.check_for(task.device)
    programs = Programs.build(task.graph)
    torch._dynamo.reset()
    compiled = task.recipe.compile(programs.model)
    verdicts, kept = [], []
    for i, inputs in enumerate(task.draws):
        args = [inputs[str(n)].to(task.device) for n in task.graph.input_ids()]
        verdict, outputs = run_draw(programs, compiled, args, task.recipe)
        verdict.draw = i
        verdict.magnitude = task.magnitudes[i] if i < len(task.magnitudes) else None
        verdicts.append(verdict)
        kept.append(outputs)
    worst = oracle.most_severe(verdicts)
    outputs = kept[worst.draw] if task.keep_outputs and worst.draw is not None else {}
    return RunResult(worst, [v.score for v in verdicts], outputs)


def run_draw(programs: Programs, compiled: Callable, args: list[torch.Tensor],
             recipe: Recipe) -> tuple[Verdict, dict]:
    """One draw's verdict and outputs. A training recipe runs forward and backward
    (``rules.forward_backward``); the gradients are judged after the outputs, and the outputs
    judged are the training graph's."""
    training = recipe.surface.training
    run = rules.forward_backward if training else _forward
    arity = len(programs.graph.outputs)
    try:
        eager_all = run(programs.model, args)
        eager = eager_all[:arity] if programs.nodewise else eager_all
        # A second eager run checks determinism; on a generated graph the trace is that run and
        # also gives every node's eager value (what a head's evidence is measured against).
        eager_values = programs.trace(*args) if programs.nodewise \
            else dict(programs.eager_values)
        again = [eager_values[o] for o in programs.graph.outputs] if programs.nodewise \
            else _forward(programs.model, args)
        if training:
            again = [*again, *run(programs.model, args)[arity:]]
    except Exception as err:  # a generator bug, not a compiler bug: never a finding
        return Verdict(Kind.SKIP, message=f"eager failed: {type(err).__name__}: {err}"), {}
    if not oracle.bitwise_equal(eager_all, again):
        return Verdict(Kind.SKIP, message="eager is nondeterministic on this input"), {}
    absent = config.missing(recipe.config)
    if absent:  # a knob this torch does not have: nothing was tested, nothing crashed
        return harness_error(f"not in this torch: {', '.join(absent)}"), {}
    patched = inductor_config(recipe.config)  # refuses a knob outside the allowlist
    try:
        with patched:
            out_all = run(compiled, args)
    except Exception as err:
        return Verdict(Kind.CRASH, message=error_line(err), frames=rules.torch_frames(err)), \
            {"eager": eager_all}
    values = rules.float64_run(programs.trace, args)
    ref_all = [values[o] for o in programs.graph.outputs]
    out = out_all[:arity] if training else out_all  # a wrong arity is a meta finding
    verdict = semantics.judge_graph(programs.graph, eager, out, values, eager_values,
                                    recipe.policy)
    if training:
        ref_all += rules.float64_run(lambda *wide: run(programs.model, wide), args)[arity:]
        floats = [n for n, t in zip(programs.graph.input_ids(), args) if t.is_floating_point()]
        verdict = oracle.with_gradients(verdict, eager_all[arity:], out_all[arity:],
                                        ref_all[arity:], floats)
    outputs = {"eager": [t.cpu() for t in eager_all], "compiled": [t.cpu() for t in out_all],
               "fp64": [t.cpu() for t in ref_all]}
    return verdict, outputs


def _forward(fn: Callable, args: list[torch.Tensor]) -> list[torch.Tensor]:
    out = fn(*args)
    return list(out) if isinstance(out, (tuple, list)) else [out]


def error_line(err: BaseException) -> str:
    """The exception's type and first meaningful line: what a crash signature keys on."""
    lines = [ln for ln in str(err).strip().splitlines() if ln.strip()]
    first = lines[0] if lines else ""
    if first.endswith(":") and len(lines) > 1:  # "backend='inductor' raised:" names no error
        first = f"{first} {lines[1].strip()}"
    tb = traceback.extract_tb(err.__traceback__)
    where = f" (at {tb[-1].filename.rsplit('/', 1)[-1]}:{tb[-1].lineno})" if tb else ""
    return f"{type(err).__name__}: {first[:300]}{where}"

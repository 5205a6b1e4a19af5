"""Run one program eager (twice), compiled (twice) and in float64, and hand the outputs to the
oracle.

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

from fuzzer.execute import config, faults, flags
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
    context_lost: bool = False  # a CUDA error poisoned the worker's context: replace it (faults)

    def to_dict(self) -> dict:
        return {"verdict": self.verdict.to_dict(), "scores": list(self.scores),
                "outputs": self.outputs, "context_lost": self.context_lost}

    @classmethod
    def from_dict(cls, data: dict) -> RunResult:
        """TypeError or ValueError on an answer not shaped like one."""
        return cls(Verdict.from_dict(data["verdict"]), list(data.get("scores") or []),
                   dict(data.get("outputs") or {}), bool(data.get("context_lost", False)))

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
    """Judge every draw; the most severe verdict (and its outputs when asked). A draw whose
    error poisoned the CUDA context ends the task (``faults``): its worker must be replaced."""
    task.recipe.check_for(task.device)
    programs = Programs.build(task.graph)
    torch._dynamo.reset()
    compiled = task.recipe.compile(programs.model)
    verdicts, kept = [], []
    lost = False
    for i, inputs in enumerate(task.draws):
        args = [inputs[str(n)].to(task.device) for n in task.graph.input_ids()]
        verdict, outputs = run_draw(programs, compiled, args, task.recipe)
        verdict.draw = i
        verdict.magnitude = task.magnitudes[i] if i < len(task.magnitudes) else None
        verdicts.append(verdict)
        kept.append(outputs)
        if faults.poisons_context(verdict.message):
            lost = True
            break
    worst = oracle.most_severe(verdicts)
    outputs = kept[worst.draw] if task.keep_outputs and worst.draw is not None else {}
    return RunResult(worst, [v.score for v in verdicts], outputs, context_lost=lost)


def run_draw(programs: Programs, compiled: Callable, args: list[torch.Tensor],
             recipe: Recipe) -> tuple[Verdict, dict]:
    """One draw's verdict and outputs. Eager runs twice and compiled runs twice, under the
    recipe's torch.backends flags (``flags.pin``); an element that differs between two runs of
    one side is never part of a finding (``oracle.steadied``). A training recipe runs forward
    and backward (``rules.forward_backward``); the gradients are judged after the outputs, and
    the outputs judged are the training graph's."""
    training = recipe.surface.training
    run = rules.forward_backward if training else _forward
    arity = len(programs.graph.outputs)
    flags.pin(recipe.flags)
    try:
        eager_all, again, eager_values, sdpa = _eager_runs(programs, args, recipe)
    except Exception as err:  # a generator bug, not a compiler bug: never a finding
        line = error_line(err)
        message = faults.oom_message(line) if faults.out_of_memory(line) \
            else f"eager failed: {line}"
        return Verdict(Kind.SKIP, message=message), {}
    eager = eager_all[:arity] if programs.nodewise else eager_all
    try:
        unstable = oracle.run_to_run(eager_all, again)
    except ValueError:
        return Verdict(Kind.SKIP, message="eager's two runs differ in number, shape or dtype "
                                          "of outputs on this input", sdpa=sdpa), {}
    absent = config.missing(recipe.config)
    if absent:  # a knob this torch does not have: nothing was tested, nothing crashed
        return harness_error(f"not in this torch: {', '.join(absent)}"), {}
    patched = inductor_config(recipe.config)  # refuses a knob outside the allowlist
    try:
        with patched:
            out_all = _compiled_run(compiled, args, run)
            second = _compiled_run(compiled, args, run)  # no recompile: a second run is cheap
    except Exception as err:
        line = error_line(err)
        if faults.out_of_memory(line):
            return Verdict(Kind.SKIP, message=faults.oom_message(line), sdpa=sdpa), \
                {"eager": eager_all}
        return Verdict(Kind.CRASH, message=line, frames=rules.torch_frames(err), sdpa=sdpa), \
            {"eager": eager_all}
    try:
        unstable = oracle.either(unstable, oracle.run_to_run(out_all, second))
    except ValueError:
        return Verdict(Kind.SKIP, message="compiled's two runs differ in number, shape or "
                                          "dtype of outputs on this input", sdpa=sdpa), {}
    steady = oracle.steadied(eager_all, out_all, unstable)
    try:
        values = rules.float64_run(programs.trace, args)
        ref_all = [values[o] for o in programs.graph.outputs]
        if training:
            ref_all += rules.float64_run(lambda *wide: run(programs.model, wide), args)[arity:]
    except torch.OutOfMemoryError as err:
        return Verdict(Kind.SKIP, message=faults.oom_message(error_line(err)), sdpa=sdpa), {}
    verdict = semantics.judge_graph(programs.graph, eager, steady[:arity] if training else steady,
                                    values, eager_values, recipe.policy)
    if training:
        floats = [n for n, t in zip(programs.graph.input_ids(), args) if t.is_floating_point()]
        verdict = oracle.with_gradients(verdict, eager_all[arity:], steady[arity:],
                                        ref_all[arity:], floats)
    oracle.note_unstable(verdict, unstable)
    verdict.sdpa = sdpa
    outputs = {"eager": [t.cpu() for t in eager_all], "compiled": [t.cpu() for t in out_all],
               "fp64": [t.cpu() for t in ref_all]}
    return verdict, outputs


def _eager_runs(programs: Programs, args: list[torch.Tensor], recipe: Recipe
                ) -> tuple[list[torch.Tensor], list[torch.Tensor], dict, list[str]]:
    """Eager twice: its outputs (gradients too, when training), the second run's, every node's
    eager value (a generated graph's trace: the second run; what a head's evidence is measured
    against) and the attention backends the first run used; eager alone is pinned to the
    recipe's ``eager_sdpa``, if any."""
    training = recipe.surface.training
    run = rules.forward_backward if training else _forward
    arity = len(programs.graph.outputs)
    pinned = recipe.flags.eager_sdpa if recipe.flags is not None else ""
    with flags.sdpa_pinned([pinned] if pinned else []):
        with flags.recording_sdpa() as seen:
            eager_all = run(programs.model, args)
        eager_values = programs.trace(*args) if programs.nodewise \
            else dict(programs.eager_values)
        again = [eager_values[o] for o in programs.graph.outputs] if programs.nodewise \
            else _forward(programs.model, args)
        if training:
            again = [*again, *run(programs.model, args)[arity:]]
    _synchronize()  # an asynchronous CUDA error of eager's surfaces as eager's
    return eager_all, again, eager_values, list(dict.fromkeys(seen))


def _compiled_run(compiled: Callable, args: list[torch.Tensor], run: Callable
                  ) -> list[torch.Tensor]:
    """One run of the compiled program. Its outputs are cloned at once: under CUDA graphs
    (``reduce-overhead``) the next run overwrites them in place. A kernel's asynchronous CUDA
    error surfaces here, as this run's, not at some later call."""
    mark_step = getattr(torch.compiler, "cudagraph_mark_step_begin", None)
    if mark_step is not None:  # a new iteration: CUDA graphs may reuse the last one's memory
        mark_step()
    outputs = [t.clone() for t in run(compiled, args)]
    _synchronize()
    return outputs


def _synchronize() -> None:
    """Wait for the GPU, if this process uses one: CUDA reports a kernel's error at the next
    synchronizing call, which would otherwise be some later, innocent one."""
    if torch.cuda.is_available() and torch.cuda.is_initialized():
        torch.cuda.synchronize()


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

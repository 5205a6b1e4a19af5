"""Run one program eager (twice), compiled and in float64, and hand the outputs to the oracle.

This is the code a worker process executes; ``workers`` wraps it in isolated processes. A ``Task``
is
plain data (the rendered source, the graph dict, input tensors), so it crosses a pipe as
``torch.save`` bytes and is read back with ``weights_only=True``.
"""

from __future__ import annotations

import contextlib
import importlib
import io
import os
import traceback
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

import torch

from fuzzer.errors import CaseError
from fuzzer.execute import config
from fuzzer.execute.surface import Surface
from fuzzer.ir import render
from fuzzer.ir.graph import Graph
from fuzzer.judge import oracle, policy, rules
from fuzzer.judge.oracle import Verdict

BUILTIN_BACKENDS = ("inductor", "aot_eager", "eager")
HARNESS_ERROR = "harness error"  # how a skip caused by numfuzz itself, not the case, begins
TRUST_ENV = "NUMFUZZ_TRUST_BACKENDS"  # module:function backends the user named themselves


@dataclass
class Task:
    """One compiled program and the input draws to test it on."""

    graph: dict
    draws: list[dict[str, torch.Tensor]]
    magnitudes: list[str] = field(default_factory=list)
    device: str = "cpu"
    backend: str = "inductor"
    config: dict = field(default_factory=dict)  # torch._inductor.config overrides
    keep_outputs: bool = False  # return the tensors too (replay tables, minimizer, drafts)
    model_file: str = ""  # set: judge this KernelBench file's own model instead (capture check)
    seed: int = 0
    policy: str = "float64"  # oracle.POLICIES: what discrete mismatches are judged against
    surface: dict = field(default_factory=dict)  # execute.surface.Surface: how it is compiled

    def to_bytes(self) -> bytes:
        buf = io.BytesIO()
        torch.save(asdict(self), buf)
        return buf.getvalue()

    @classmethod
    def from_bytes(cls, data: bytes) -> Task:
        return cls(**torch.load(io.BytesIO(data), weights_only=True))


def resolve_backend(name: str) -> str | Callable:
    """A torch.compile backend: a registered name, or ``module:attr`` (test doubles, custom
    ones). A task's backend comes from the caller, which checked a loaded case's with
    ``check_backend``."""
    if ":" not in name:
        return name
    module, _, attr = name.partition(":")
    return getattr(importlib.import_module(module), attr)


def check_backend(name: Any) -> str:
    """``name`` if it is a backend this process may use, else CaseError saying how to trust it.

    A registered name (``inductor``, ``aot_eager``, ``eager``, what ``list_backends`` gives) is
    data. ``module:function`` imports code, so it is used only when the user named it themselves:
    on the command line (``--backend`` of ``run``/``nightly``, or ``--trust-backend``), which puts
    it in ``NUMFUZZ_TRUST_BACKENDS`` for this process and its children. Never from a file alone.
    """
    if not isinstance(name, str) or not name:
        raise CaseError(f"backend must be a name, got {str(name)[:80]!r}")
    if name in BUILTIN_BACKENDS:
        return name
    if ":" in name:
        if name in trusted_backends():
            return name
        raise CaseError(f"backend {name[:80]!r} is code (module:function) named by a file; "
                        f"numfuzz imports it only if you trust it: numfuzz --trust-backend "
                        f"{name[:80]} <command> ...")
    if name in torch._dynamo.list_backends(exclude_tags=()):
        return name
    raise CaseError(f"unknown backend {name[:80]!r}: use {', '.join(BUILTIN_BACKENDS)} or another "
                    "name torch._dynamo.list_backends() gives")


def trusted_backends() -> set[str]:
    return {n for n in os.environ.get(TRUST_ENV, "").split(",") if n}


def trust_backend(name: str) -> None:
    """Let this process and its children use ``module:function`` backend ``name``."""
    if ":" in name:
        os.environ[TRUST_ENV] = ",".join(sorted(trusted_backends() | {name}))


@dataclass
class Programs:
    """The rendered model and its eager-only trace twin, loaded once per task."""

    graph: Graph
    source: str
    model: Callable
    trace: Callable  # {node id: value} for every node (nodewise) or for the outputs only
    nodewise: bool = True  # False for a model file judged as itself: no graph to trace through

    @classmethod
    def build(cls, graph: Graph) -> Programs:
        source = render.render_model(graph)
        return cls(graph, source, render.load(source, "model"),
                   render.load(render.render_trace(graph), "trace"))


def compile_model(model: Callable, backend: str, surface: Surface | None = None) -> Callable:
    surface = surface or Surface()
    return torch.compile(model, backend=resolve_backend(backend), **surface.compile_kwargs())


def inductor_config(overrides: dict) -> contextlib.AbstractContextManager:
    """fallback_random as the pt2 template asks, plus the task's knobs (allowlisted)."""
    import torch._inductor.config as inductor

    return inductor.patch({"fallback_random": True, **config.check(overrides)})


def run_task(task: Task) -> dict[str, Any]:
    """Judge every draw; return the most severe verdict (and outputs when asked)."""
    graph = Graph.from_dict(task.graph)
    surface = Surface.from_dict(task.surface)
    surface.check_for(task.device, task.backend)
    programs = Programs.build(graph)
    torch._dynamo.reset()
    compiled = compile_model(programs.model, task.backend, surface)
    verdicts, kept = [], []
    for i, inputs in enumerate(task.draws):
        args = [inputs[str(n)].to(task.device) for n in graph.input_ids()]
        verdict, outputs = run_draw(programs, compiled, args, task.config, task.policy,
                                    surface.training)
        verdict.draw = i
        verdict.magnitude = task.magnitudes[i] if i < len(task.magnitudes) else None
        verdicts.append(verdict)
        kept.append(outputs)
    worst = oracle.most_severe(verdicts)
    result: dict[str, Any] = {"verdict": worst.to_dict(),
                              "scores": [v.score for v in verdicts]}  # per draw: guided search
    if task.keep_outputs and worst.draw is not None:
        result["outputs"] = kept[worst.draw]
    return result


def run_draw(programs: Programs, compiled: Callable, args: list[torch.Tensor],
             overrides: dict, judged_by: str = "float64",
             training: bool = False) -> tuple[Verdict, dict]:
    """One draw's verdict and outputs. ``training``: forward and backward
    (``rules.forward_backward``); the gradients are judged after the outputs, and the outputs
    judged are the training graph's."""
    run = rules.forward_backward if training else _forward
    arity = len(programs.graph.outputs)
    try:
        eager_all = run(programs.model, args)
        eager = eager_all[:arity] if programs.nodewise else eager_all
        # A second eager run checks determinism; on a generated graph the trace is that run and
        # also gives every node's eager value (what a head's evidence is measured against).
        eager_values = programs.trace(*args) if programs.nodewise else {}
        again = [eager_values[o] for o in programs.graph.outputs] if programs.nodewise \
            else _forward(programs.model, args)
        if training:
            again = [*again, *run(programs.model, args)[arity:]]
    except Exception as err:  # a generator bug, not a compiler bug: never a finding
        return Verdict("skip", message=f"eager failed: {type(err).__name__}: {err}"), {}
    if not oracle.bitwise_equal(eager_all, again):
        return Verdict("skip", message="eager is nondeterministic on this input"), {}
    absent = config.missing(overrides)
    if absent:  # a knob this torch does not have: nothing was tested, nothing crashed
        return Verdict("skip", message=f"{HARNESS_ERROR}: not in this torch: "
                                       f"{', '.join(absent)}"), {}
    patched = inductor_config(overrides)  # refuses a knob outside the allowlist: not a crash
    try:
        with patched:
            out_all = run(compiled, args)
    except Exception as err:
        return Verdict("crash", message=_error_line(err), frames=rules.torch_frames(err)), \
            {"eager": eager_all}
    values = rules.float64_run(programs.trace, args)
    ref_all = [values[o] for o in programs.graph.outputs]
    out = out_all[:arity] if training else out_all  # a wrong arity is a meta finding
    verdict = policy.judge_graph(programs.graph, eager, out, values, eager_values, judged_by)
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


def _error_line(err: BaseException) -> str:
    """The exception's type and first meaningful line: what a crash signature keys on."""
    lines = [ln for ln in str(err).strip().splitlines() if ln.strip()]
    first = lines[0] if lines else ""
    if first.endswith(":") and len(lines) > 1:  # "backend='inductor' raised:" names no error
        first = f"{first} {lines[1].strip()}"
    tb = traceback.extract_tb(err.__traceback__)
    where = f" (at {tb[-1].filename.rsplit('/', 1)[-1]}:{tb[-1].lineno})" if tb else ""
    return f"{type(err).__name__}: {first[:300]}{where}"

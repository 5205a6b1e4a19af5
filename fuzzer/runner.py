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
import traceback
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

import torch

from fuzzer import oracle, render
from fuzzer.ir import Graph
from fuzzer.oracle import Verdict

BUILTIN_BACKENDS = ("inductor", "aot_eager", "eager")


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

    def to_bytes(self) -> bytes:
        buf = io.BytesIO()
        torch.save(asdict(self), buf)
        return buf.getvalue()

    @classmethod
    def from_bytes(cls, data: bytes) -> Task:
        return cls(**torch.load(io.BytesIO(data), weights_only=True))


def resolve_backend(name: str) -> str | Callable:
    """A torch.compile backend: a built-in name, or ``module:attr`` (test doubles, custom ones)."""
    if name in BUILTIN_BACKENDS:
        return name
    module, _, attr = name.partition(":")
    if not attr:
        raise ValueError(f"unknown backend {name!r}: use {', '.join(BUILTIN_BACKENDS)} "
                         "or module:function")
    return getattr(importlib.import_module(module), attr)


def upcast(t: torch.Tensor) -> torch.Tensor:
    return t.double() if t.is_floating_point() else t


@dataclass
class Programs:
    """The rendered model and its eager-only trace twin, loaded once per task."""

    graph: Graph
    source: str
    model: Callable
    trace: Callable

    @classmethod
    def build(cls, graph: Graph) -> Programs:
        source = render.render_model(graph)
        return cls(graph, source, render.load(source, "model"),
                   render.load(render.render_trace(graph), "trace"))

    def boundary_ulps(self, values: dict[int, torch.Tensor]) -> list[torch.Tensor | None]:
        """Per output: float64 distance (ulps) of each element from its head's discontinuity."""
        from fuzzer import generic, ops

        result = []
        for out in self.graph.outputs:
            node = self.graph.node(out)
            spec = ops.REGISTRY.get(node["op"])
            boundary = spec.boundary if spec is not None else None
            if node["op"] == "call" and generic.is_int_cast(node["attrs"]) and node["inputs"] \
                    and self.graph.node(node["inputs"][0])["dtype"] in ops.FLOAT_DTYPES:
                boundary = ops.to_int_ulps  # a captured x.to(int8): flips at the integers
            if boundary is None:
                result.append(None)
                continue
            head_inputs = [values[i] for i in node["inputs"]]
            working = ops.torch_dtype(self.graph.node(node["inputs"][0])["dtype"])
            result.append(boundary(head_inputs, node["attrs"], working).cpu())
        return result

    def undefined_elements(self, values: dict[int, torch.Tensor]) -> list[torch.Tensor | None]:
        """Per integer output: elements converted from a float64 NaN, whose value C++ leaves
        undefined (and, for an unclamped cast, from inf or out of the integer's range)."""
        from fuzzer import ops

        result: list[torch.Tensor | None] = []
        for out in self.graph.outputs:
            node = self.graph.node(out)
            if _is_index_output(node):  # maintainers do not treat differing indices as bugs
                result.append(torch.ones(tuple(node["shape"]), dtype=torch.bool))
                continue
            source = values.get(node["inputs"][0]) if node["inputs"] else None
            if node["dtype"] == "bool" or node["dtype"] not in ops.DISCRETE_DTYPES \
                    or source is None or not source.is_floating_point():
                result.append(None)
                continue
            bad = torch.isnan(source)
            if node["op"] in ("to_int32", "call"):  # no clamp before the conversion
                info = torch.iinfo(ops.torch_dtype(node["dtype"]))
                bad |= (source < info.min) | (source > info.max) | torch.isinf(source)
            shape = tuple(node["shape"])
            result.append(bad.cpu() if tuple(bad.shape) == shape else None)
        return result


INDEX_OPS = {"argmax", "argmin", "argsort"}  # always indices
INDEX_PICKS = {"topk", "sort", "max", "min", "kthvalue", "mode", "median"}  # element 1: indices


def _is_index_output(node: dict) -> bool:
    """A captured argmax/argmin/topk-indices output: ties make any answer valid."""
    if node["op"] != "call":
        return False
    name = str(node["attrs"].get("target", "")).rsplit(".", 1)[-1]
    return name in INDEX_OPS or (name in INDEX_PICKS and node["attrs"].get("pick") == 1)


def compile_model(model: Callable, backend: str) -> Callable:
    return torch.compile(model, backend=resolve_backend(backend), fullgraph=True, dynamic=False)


def inductor_config(overrides: dict) -> contextlib.AbstractContextManager:
    """fallback_random as the pt2 template asks, plus the task's knobs."""
    import torch._inductor.config as config

    return config.patch({"fallback_random": True, **overrides})


def run_task(task: Task) -> dict[str, Any]:
    """Judge every draw; return the most severe verdict (and outputs when asked)."""
    if task.model_file:
        from fuzzer.capture import run_original

        return run_original(task)
    graph = Graph.from_dict(task.graph)
    programs = Programs.build(graph)
    torch._dynamo.reset()
    compiled = compile_model(programs.model, task.backend)
    verdicts, kept = [], []
    for i, inputs in enumerate(task.draws):
        args = [inputs[str(n)].to(task.device) for n in graph.input_ids()]
        verdict, outputs = run_draw(programs, compiled, args, task.config)
        verdict.draw = i
        verdict.magnitude = task.magnitudes[i] if i < len(task.magnitudes) else None
        verdicts.append(verdict)
        kept.append(outputs)
    worst = oracle.most_severe(verdicts)
    result: dict[str, Any] = {"verdict": worst.to_dict()}
    if task.keep_outputs and worst.draw is not None:
        result["outputs"] = kept[worst.draw]
    return result


def run_draw(programs: Programs, compiled: Callable, args: list[torch.Tensor],
             config: dict) -> tuple[Verdict, dict]:
    try:
        eager = list(programs.model(*args))
        again = list(programs.model(*args))
    except Exception as err:  # a generator bug, not a compiler bug: never a finding
        return Verdict("skip", message=f"eager failed: {type(err).__name__}: {err}"), {}
    if not oracle.bitwise_equal(eager, again):
        return Verdict("skip", message="eager is nondeterministic on this input"), {}
    try:
        with inductor_config(config):
            out = compiled(*args)
        out = list(out) if isinstance(out, (tuple, list)) else [out]
    except Exception as err:
        return Verdict("crash", message=_error_line(err)), {"eager": eager}
    values = programs.trace(*[upcast(a) for a in args])
    ref = [values[o] for o in programs.graph.outputs]
    verdict = oracle.judge(eager, out, ref, programs.boundary_ulps(values), programs.graph.outputs,
                           programs.undefined_elements(values))
    outputs = {"eager": [t.cpu() for t in eager], "compiled": [t.cpu() for t in out],
               "fp64": [t.cpu() for t in ref]}
    return verdict, outputs


def _error_line(err: BaseException) -> str:
    """The exception's type and first meaningful line: what a crash signature keys on."""
    lines = [ln for ln in str(err).strip().splitlines() if ln.strip()]
    first = lines[0] if lines else ""
    if first.endswith(":") and len(lines) > 1:  # "backend='inductor' raised:" names no error
        first = f"{first} {lines[1].strip()}"
    tb = traceback.extract_tb(err.__traceback__)
    where = f" (at {tb[-1].filename.rsplit('/', 1)[-1]}:{tb[-1].lineno})" if tb else ""
    return f"{type(err).__name__}: {first[:300]}{where}"

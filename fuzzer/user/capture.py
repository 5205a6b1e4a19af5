"""A user's model file -> numfuzz's graph IR, weights included, checked to be the same program.

The file follows the KernelBench convention: ``class Model(nn.Module)``, ``get_inputs()`` and an
optional ``get_init_inputs()``. ``torch.manual_seed(seed)`` runs before the model is built and the
inputs are drawn, so a file and a seed always give the same case. Capture is three steps, a module
each: ``translate`` (Dynamo's FX graph into the IR), ``lift`` (registry ops and heads where they
render the same computation) and ``verify`` (bit for bit against the model's eager outputs; the
same divergence as the file's own model).
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from pathlib import Path

import torch

from fuzzer.corpus.case import Case, CaseError
from fuzzer.device import Device
from fuzzer.errors import CaptureError
from fuzzer.execute.original import load_model_file, one_line
from fuzzer.ir import ops
from fuzzer.ir.graph import Graph
from fuzzer.user.lift import fuse_heads, generic_ops
from fuzzer.user.translate import Translator, dynamo_graph
from fuzzer.user.verify import check_faithful, run_eager


def load_target(path: Path, seed: int = 0) -> Case:
    """A case file, or a KernelBench-style model file captured into a case."""
    if path.suffix == ".py":
        return capture_file(path, seed).case()
    if not path.exists():
        raise CaseError(f"{path}: no such file")
    return Case.load(path)


@dataclass
class Captured:
    """A model file as a graph, its inputs (weights included) and where it came from."""

    graph: Graph
    inputs: dict[str, torch.Tensor]
    dtype: str
    origin: dict = field(default_factory=dict)

    @property
    def generic_ops(self) -> int:
        return generic_ops(self.graph)

    def case(self, device: str = "auto") -> Case:
        if device == "auto":
            device = "cuda" if torch.cuda.is_available() else "cpu"
        return Case(graph=self.graph.copy(), inputs=dict(self.inputs), device=Device(device),
                    dtype=self.dtype, seed=int(self.origin.get("seed", 0)), grammar="user-model",
                    origin=dict(self.origin))


def capture_file(path: str | Path, seed: int = 0) -> Captured:
    loaded = load_model_file(path, seed)
    captured = capture_module(loaded.model, loaded.inputs, str(path))
    captured.origin.update({"model_file": str(path), "seed": seed})
    return captured


def capture_module(model: torch.nn.Module, inputs: list[torch.Tensor],
                   where: str = "model") -> Captured:
    """Trace ``model`` on ``inputs`` with Dynamo and translate its graph; verify it bit for bit."""
    expected = run_eager(model, inputs, where)  # a model that raises is reported as such
    # Tracing runs forward once, which may update buffers (BatchNorm in training mode) or the
    # inputs in place: trace a copy on clones, and record the untouched values.
    try:
        traced, clones = copy.deepcopy(model), [t.clone() for t in inputs]
    except Exception as err:
        raise CaptureError(f"{where}: Model cannot be copied: {one_line(err)}") from None
    gm, example = dynamo_graph(traced, clones, where)
    state = [*traced.named_parameters(), *traced.named_buffers()]
    names = {id(t): n for n, t in state}
    pristine = {**dict(model.named_parameters()), **dict(model.named_buffers())}
    untouched = {id(c): t for c, t in zip(clones, inputs)} | \
        {id(t): pristine[n] for n, t in state if n in pristine}
    translator = Translator(gm, example, clones, names, untouched,
                            outputs=len(expected.outputs))
    try:
        translator.run()
    except ops.InvalidGraph as err:
        raise CaptureError(f"{where}: cannot represent the model: {err}") from None
    for node_id in translator.graph.input_ids():
        attrs = translator.graph.node(node_id).attrs
        if attrs.get("role") == "x":
            translator.values[str(node_id)] = inputs[attrs["arg"]].detach().clone()
        elif attrs.get("name") in pristine:
            translator.values[str(node_id)] = pristine[attrs["name"]].detach().cpu().clone()
    graph = translator.graph
    graph.remove_dead()
    fuse_heads(graph)
    values = {str(n): translator.values[str(n)] for n in graph.input_ids()}
    check_faithful(expected, graph, values, where)
    sources = {str(n): where for n, where in translator.sources.items() if n in graph}
    return Captured(graph, values, _main_dtype(graph), {"sources": sources})


def _main_dtype(graph: Graph) -> str:
    """The case's dtype: the first floating activation's, else the first floating weight's."""
    ids = graph.input_ids()
    ranked = sorted(ids, key=lambda n: graph.node(n).attrs.get("role") != "x")
    for n in ranked:
        if graph.node(n).dtype in ops.FLOAT_DTYPES:
            return graph.node(n).dtype
    return "float32"

"""A user's model file, run as itself: loaded, built, and judged like any generated program.

The file follows the KernelBench convention: ``class Model(nn.Module)``, ``get_inputs()`` and an
optional ``get_init_inputs()``. ``torch.manual_seed(seed)`` runs before the model is built and the
inputs are drawn, so a file and a seed always give the same model and inputs. ``run_original``
judges the file's own module in a worker (a ``Task`` with ``model_file`` set), so a compiler crash
in it costs one worker; capture (``fuzzer.user``) compares that verdict with its captured case's.
The file's outputs are judged with what its captured graph knows (how far each discrete output's
float64 value sits from the head's boundary, which elements are undefined), so a model file and
its capture are graded by one rule and differ only where their compiled outputs do.

The float64 side is a second ``Model`` built afresh under the same seed (``float64_twin``), given
the judged instance's parameters and buffers by name, then converted with ``.double()``: a
closure the model's ``__init__`` stored (``self.mlpf = lambda x: m.c_proj(m.act(m.c_fc(x)))``),
shared submodules and tied weights all belong to the converted instance, which a
``deepcopy(model).double()`` does not give (a deep copy keeps the lambda, which still calls the
original float32 layers). What it still cannot convert: a tensor kept outside parameters and
buffers (a plain attribute, a closure over a tensor or a global), and a ``Model`` whose second
instance under the same seed has other parameter names or shapes; the float64 run then raises,
and the file is not judged (a harness error, never "does not diverge"). Every call of the model
(eager, compiled, float64) starts from the state it was built with (``starting_state``), so a
forward that updates its buffers (a step counter, running statistics) is judged on one state.
Loading a model file runs its code: only ever a file the user named on the command line.
"""

from __future__ import annotations

import importlib.util
import sys
import traceback
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from fuzzer.errors import CaptureError
from fuzzer.execute import faults, runner
from fuzzer.execute.recipe import Recipe
from fuzzer.execute.task import RunResult, Task
from fuzzer.ir import render
from fuzzer.ir.graph import Graph
from fuzzer.judge import oracle, rules


@dataclass
class ModelFile:
    path: Path
    model: torch.nn.Module
    inputs: list[torch.Tensor]
    build: Callable[[], torch.nn.Module] | None = None  # another Model, built as ``model`` was


def load_model_file(path: str | Path, seed: int = 0) -> ModelFile:
    """Import the file, seed, build ``Model(*get_init_inputs())`` and draw ``get_inputs()``."""
    path = Path(path)
    if not path.is_file():
        raise CaptureError(f"{path}: no such model file")
    name = f"numfuzz_user_model_{abs(hash(str(path.resolve())))}"
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise CaptureError(f"{path}: not a Python file")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # Dynamo looks a frame's module up by name
    try:
        spec.loader.exec_module(module)
    except Exception as err:
        raise CaptureError(f"{path}: importing it failed: {one_line(err)}"
                           f"{raised_at(err, path)}") from None
    cls, get_inputs = getattr(module, "Model", None), getattr(module, "get_inputs", None)
    if not (isinstance(cls, type) and issubclass(cls, torch.nn.Module)) or not callable(get_inputs):
        raise CaptureError(f"{path}: does not follow the KernelBench convention: it needs "
                           "`class Model(nn.Module)` and `def get_inputs()` (optionally "
                           "`def get_init_inputs()`)")
    get_init: Callable[[], Iterable[object]] = getattr(module, "get_init_inputs", lambda: [])

    def build() -> torch.nn.Module:
        torch.manual_seed(seed)
        return cls(*list(get_init()))

    try:
        model = build()
        inputs = list(get_inputs())  # after build, as always: the same draws for a seed
    except Exception as err:
        raise CaptureError(f"{path}: building Model or its inputs failed: {one_line(err)}"
                           f"{raised_at(err, path)}") from None
    for i, t in enumerate(inputs):
        if not isinstance(t, torch.Tensor):
            raise CaptureError(f"{path}: get_inputs() item {i} is a {type(t).__name__}; numfuzz "
                               "needs tensors (put constants in get_init_inputs())")
    return ModelFile(path, model, [t.detach().cpu() for t in inputs], build)


def one_line(err: BaseException) -> str:
    text = str(err).strip().splitlines()
    return f"{type(err).__name__}: {text[0][:200] if text else ''}"


def raised_at(err: BaseException, path: str | Path) -> str:
    """`` (at FILE:LINE)``: the deepest line of the user's file ``path`` that ``err`` passed
    through (a syntax error's own line), so the user sees where their code failed; empty when
    it never did."""
    try:
        target = Path(path).resolve()
    except (OSError, ValueError):
        return ""
    if isinstance(err, SyntaxError) and err.lineno is not None:
        return f" (at {path}:{err.lineno})"
    lines = [f.lineno for f in traceback.extract_tb(err.__traceback__)
             if Path(f.filename).resolve() == target]
    return f" (at {path}:{lines[-1]})" if lines else ""


def run_original(task: Task) -> RunResult:
    """Judge the model file itself (eager, compiled, float64) like ``runner.run_task`` does.

    Runs in a worker, so a compiler crash in the user's model costs only that worker. The file
    and seed define the model and its inputs; the float64 reference is a second instance of the
    model in double precision (``float64_twin``) on upcast inputs. Every call starts from the
    model's state as built (``starting_state``). ``task.graph`` only names the outputs, as in
    the case.
    """
    loaded = load_model_file(task.model_file, task.seed)
    reference = float64_twin(loaded).to(task.device)
    model = loaded.model.to(task.device)
    graph = task.graph
    as_built, reference_as_built = starting_state(model), starting_state(reference)

    def call(*args: torch.Tensor) -> tuple:
        return tuple(tensor_leaves(model(*args)))

    def forward(*args: torch.Tensor) -> tuple:
        as_built()
        mine = own(args)
        return (*call(*mine), *left_behind(graph, model, mine))

    args = [t.to(task.device) for t in loaded.inputs]
    known_fp64, known_eager, note = captured_values(task, forward(*args)[:len(graph.outputs)])

    def trace(*args: torch.Tensor) -> dict:
        reference_as_built()
        mine = own(args)
        try:
            wide = reference(*mine)
        except torch.OutOfMemoryError:
            raise
        except Exception as err:  # the file is then not judged: say why, in its own words
            raise CaptureError(f"{task.model_file}: the float64 reference (a second Model in "
                               f"double precision) raises: {one_line(err)}"
                               f"{raised_at(err, task.model_file)}") from None
        finals = [("final", n) for n in graph.written_inputs()]
        return {**known_fp64, **dict(zip(graph.outputs, tensor_leaves(wide))),
                **dict(zip(finals, left_behind(graph, reference, mine)))}

    captured = [task.draws[0][str(n)].to(task.device) for n in graph.input_ids()] \
        if known_fp64 else []
    programs = runner.Programs(graph, "", forward, trace, nodewise=False,
                               eager_values=known_eager,
                               nudged=(lambda _: runner.nudged_runs(graph, captured))
                               if known_fp64 else None, note=note)

    def compiled_by(recipe: Recipe) -> Callable:
        # The state is restored outside the compiled call, so the graph holds the model alone;
        # a deployment (torch.export, AOTInductor) takes the module itself, its weights its own.
        deployed = recipe.surface.deployed
        compiled = recipe.compile(model if deployed else call)

        def run(*args: torch.Tensor) -> tuple:
            as_built()
            mine = own(args)
            out = compiled(*mine)
            return (*(tensor_leaves(out) if deployed else out),
                    *left_behind(graph, model, mine))

        return run

    torch._dynamo.reset()
    verdict, outputs = runner.run_draw(programs, compiled_by(task.recipe), args, task.recipe)
    verdict.draw = 0
    lost = faults.poisons_context(verdict.message)
    if not lost:
        verdict = runner.expected_by_default(verdict, graph, task.recipe, lambda emulated: (
            runner.run_draw(programs, compiled_by(emulated), args, emulated)[0]))
    return RunResult(verdict, [verdict.score], outputs if task.keep_outputs else {},
                            context_lost=lost)


def own(args: tuple) -> list[torch.Tensor]:
    """The model's own copies of its inputs: a forward may write them (``x.add_(1)``)."""
    return [a.clone() for a in args]


def left_behind(graph: Graph, model: torch.nn.Module,
                inputs: list[torch.Tensor]) -> list[torch.Tensor]:
    """What a call left in the inputs, parameters and buffers its capture says it writes
    (``graph.written_inputs``: an input by its position ``arg``, a buffer by its ``name``), in
    that order, copied: judged like outputs, as ``semantics.judged`` keys them."""
    state = named_state(model)
    left = []
    for node_id in graph.written_inputs():
        attrs = graph.node(node_id).attrs
        value = inputs[attrs["arg"]] if "arg" in attrs else state.get(str(attrs.get("name")))
        if value is not None:
            left.append(value.detach().clone())
    return left


def named_state(model: torch.nn.Module) -> dict[str, torch.Tensor]:
    """Every parameter and buffer by name, non-persistent buffers too (a state dict leaves
    those out); a tied weight once."""
    return {**dict(model.named_parameters()), **dict(model.named_buffers())}


def starting_state(model: torch.nn.Module) -> Callable[[], None]:
    """A function that puts ``model``'s parameters and buffers back to their values now: a
    forward that updates a buffer (``self.steps += 1``, BatchNorm's running statistics in
    training mode) then starts each run from the same state, as its capture does."""
    saved = {name: t.detach().clone() for name, t in named_state(model).items()}

    def restore() -> None:
        current = named_state(model)
        with torch.no_grad():
            for name, value in saved.items():
                if name in current:  # rebound by forward (self.steps = self.steps + 1) too
                    current[name].copy_(value)

    return restore


def float64_twin(loaded: ModelFile) -> torch.nn.Module:
    """The float64 reference: ``Model`` instantiated afresh under the same seed, given the
    judged instance's parameters and buffers by name (the same values, even if something
    changed them after building), then ``.double()``. A fresh instance's closures, shared
    submodules and tied weights are its own, so all of them are converted; a deep copy's lambda
    would still call the float32 layers. CaptureError when it cannot be built alike."""
    where = loaded.path
    try:
        twin = loaded.build() if loaded.build is not None else None
    except Exception as err:
        raise CaptureError(f"{where}: building a second Model for the float64 reference "
                           f"failed: {one_line(err)}{raised_at(err, where)}") from None
    if twin is None:
        raise CaptureError(f"{where}: no way to build a second Model for the float64 reference")
    judged, theirs = named_state(loaded.model), named_state(twin)
    differs = sorted(set(judged) ^ set(theirs)) or [
        n for n, t in judged.items() if (t.shape, t.dtype) != (theirs[n].shape, theirs[n].dtype)]
    if differs:
        raise CaptureError(f"{where}: a second Model built under the same seed has other "
                           f"parameters or buffers ({', '.join(differs[:3])}): no float64 "
                           "reference follows the judged one")
    with torch.no_grad():
        for name, value in judged.items():
            theirs[name].copy_(value)
    return twin.double()


def captured_values(task: Task, eager_outputs: tuple) -> tuple[dict, dict, str]:
    """Every node's float64 and eager value in the task's captured graph, on its inputs: what a
    head's evidence is measured on. Only when the capture gives the model's eager outputs bit
    for bit (then its nodes are the model's values); else nothing, and the file is judged on
    its outputs alone, and the third value says why when the capture raised."""
    graph = task.graph
    if not task.draws or not graph.input_ids():
        return {}, {}, ""
    try:
        trace = render.load(render.render_trace(graph), "trace")
        args = [task.draws[0][str(n)].to(task.device) for n in graph.input_ids()]
        eager = trace(*args)
        if not oracle.bitwise_equal([eager[o] for o in graph.outputs], list(eager_outputs)):
            return {}, {}, ""
        return rules.float64_run(trace, args), eager, ""
    except Exception as err:  # a capture that cannot run here: the outputs alone still judge
        return {}, {}, f"judged on its outputs alone: its capture raises {one_line(err)}"


def tensor_leaves(out: Any) -> list[torch.Tensor]:
    """A module's outputs (a tensor, tuple, dict …) as a flat list of tensors."""
    flat = torch.utils._pytree.tree_leaves(out)
    return [t.detach() for t in flat if isinstance(t, torch.Tensor)]

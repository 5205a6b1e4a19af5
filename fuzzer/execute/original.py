"""A user's model file, run as itself: loaded, built, and judged like any generated program.

The file follows the KernelBench convention: ``class Model(nn.Module)``, ``get_inputs()`` and an
optional ``get_init_inputs()``. ``torch.manual_seed(seed)`` runs before the model is built and the
inputs are drawn, so a file and a seed always give the same model and inputs. ``run_original``
judges the file's own module in a worker (a ``Task`` with ``model_file`` set), so a compiler crash
in it costs one worker; capture (``fuzzer.user``) compares that verdict with its captured case's.
The file's outputs are judged with what its captured graph knows (how far each discrete output's
float64 value sits from the head's boundary, which elements are undefined), so a model file and
its capture are graded by one rule and differ only where their compiled outputs do.
Loading a model file runs its code: only ever a file the user named on the command line.
"""

from __future__ import annotations

import copy
import importlib.util
import sys
import traceback
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from fuzzer.errors import CaptureError
from fuzzer.execute import faults, runner
from fuzzer.ir import render
from fuzzer.judge import oracle, rules


@dataclass
class ModelFile:
    path: Path
    model: torch.nn.Module
    inputs: list[torch.Tensor]


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
    get_init = getattr(module, "get_init_inputs", lambda: [])
    torch.manual_seed(seed)
    try:
        init = list(get_init())
        model = cls(*init)
        inputs = list(get_inputs())
    except Exception as err:
        raise CaptureError(f"{path}: building Model or its inputs failed: {one_line(err)}"
                           f"{raised_at(err, path)}") from None
    for i, t in enumerate(inputs):
        if not isinstance(t, torch.Tensor):
            raise CaptureError(f"{path}: get_inputs() item {i} is a {type(t).__name__}; numfuzz "
                               "needs tensors (put constants in get_init_inputs())")
    return ModelFile(path, model, [t.detach().cpu() for t in inputs])


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


def run_original(task: runner.Task) -> runner.RunResult:
    """Judge the model file itself (eager, compiled, float64) like ``runner.run_task`` does.

    Runs in a worker, so a compiler crash in the user's model costs only that worker. The file
    and seed define the model and its inputs; the float64 reference is a double-precision copy
    of the module on upcast inputs. ``task.graph`` only names the outputs, as in the case.
    """
    loaded = load_model_file(task.model_file, task.seed)
    model = loaded.model.to(task.device)
    reference = copy.deepcopy(loaded.model).double().to(task.device)
    graph = task.graph

    def forward(*args: torch.Tensor) -> tuple:
        return tuple(tensor_leaves(model(*args)))

    args = [t.to(task.device) for t in loaded.inputs]
    known_fp64, known_eager = captured_values(task, forward(*args))

    def trace(*args: torch.Tensor) -> dict[int, torch.Tensor]:
        return {**known_fp64, **dict(zip(graph.outputs, tensor_leaves(reference(*args))))}

    programs = runner.Programs(graph, "", forward, trace, nodewise=False,
                               eager_values=known_eager)
    torch._dynamo.reset()
    compiled = task.recipe.compile(forward)
    verdict, outputs = runner.run_draw(programs, compiled, args, task.recipe)
    verdict.draw = 0
    return runner.RunResult(verdict, [verdict.score], outputs if task.keep_outputs else {},
                            context_lost=faults.poisons_context(verdict.message))


def captured_values(task: runner.Task, eager_outputs: tuple) -> tuple[dict, dict]:
    """Every node's float64 and eager value in the task's captured graph, on its inputs: what a
    head's evidence is measured on. Only when the capture gives the model's eager outputs bit
    for bit (then its nodes are the model's values); else nothing, and the file is judged on
    its outputs alone."""
    graph = task.graph
    if not task.draws or not graph.input_ids():
        return {}, {}
    try:
        trace = render.load(render.render_trace(graph), "trace")
        args = [task.draws[0][str(n)].to(task.device) for n in graph.input_ids()]
        eager = trace(*args)
        if not oracle.bitwise_equal([eager[o] for o in graph.outputs], list(eager_outputs)):
            return {}, {}
        return rules.float64_run(trace, args), eager
    except Exception:  # a capture that cannot run here: the outputs alone still judge
        return {}, {}


def tensor_leaves(out: Any) -> list[torch.Tensor]:
    """A module's outputs (a tensor, tuple, dict …) as a flat list of tensors."""
    flat = torch.utils._pytree.tree_leaves(out)
    return [t.detach() for t in flat if isinstance(t, torch.Tensor)]

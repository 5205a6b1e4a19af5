"""Is the captured case the user's model? Bit for bit in eager, and alike in divergence.

``run_eager``: the model on its own inputs, before anything is traced or compiled (a model that
raises there is the user's to fix, said in one line with where). ``check_faithful``: the captured
program must give the model's eager outputs bit for bit, or capture refuses. ``verify_capture``:
the file's own model and its captured case run side by side in a worker (the file judged as
itself, ``execute.original``, with the capture's knowledge of its heads, so both are graded by
one rule); they must show the same divergence on the same output before anything is minimized.
The file's own verdict is the one a user is told.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from pathlib import Path

import torch

from fuzzer.corpus.case import Case
from fuzzer.corpus.replay import replay_case
from fuzzer.errors import CaptureError
from fuzzer.execute.original import one_line, raised_at, tensor_leaves
from fuzzer.execute.pool import TaskRunner
from fuzzer.ir import render
from fuzzer.ir.graph import Graph
from fuzzer.judge import oracle
from fuzzer.judge.key import same_divergence
from fuzzer.judge.verdict import Verdict
from fuzzer.user.lift import generic_ops


@dataclass
class EagerRun:
    """What the model did in eager: its outputs, then its inputs and its parameters and buffers
    (by name) as forward left them (a stateful model writes them)."""

    outputs: list[torch.Tensor]
    inputs: list[torch.Tensor]
    state: dict[str, torch.Tensor]


def run_eager(model: torch.nn.Module, inputs: list[torch.Tensor], where: str) -> EagerRun:
    """The model in eager on its own inputs (a copy, on clones: forward may update buffers or
    inputs). A model that raises here has nothing to compile: CaptureError saying so, with the
    line of the user's file it raised from."""
    try:
        model = copy.deepcopy(model)
    except Exception as err:
        raise CaptureError(f"{where}: Model cannot be copied: {one_line(err)}") from None
    args = [t.clone() for t in inputs]
    try:
        outputs = tensor_leaves(model(*args))
    except Exception as err:
        raise CaptureError(f"{where}: Model itself raises in eager, before any compile: "
                           f"{one_line(err)}{raised_at(err, where)}") from None
    state = {n: t.detach() for n, t in [*model.named_parameters(), *model.named_buffers()]}
    return EagerRun(outputs, args, state)


def check_faithful(expected: EagerRun, graph: Graph, values: dict[str, torch.Tensor],
                   where: str) -> None:
    """The captured program's eager outputs must be the model's (``expected``), bit for bit,
    and so must every input, parameter or buffer it writes be after the call."""
    program = render.load(render.render_model(graph), "model")
    args = [values[str(n)].clone() for n in graph.input_ids()]
    try:
        got = list(program(*args))
    except Exception as err:
        raise CaptureError(f"{where}: the captured program fails to run: {one_line(err)}") \
            from None
    if len(got) != len(expected.outputs) or not oracle.bitwise_equal(expected.outputs, got):
        raise CaptureError(f"{where}: the captured program does not reproduce Model's eager "
                           "outputs bit for bit (randomness in forward?)")
    inputs = graph.input_ids()
    for node_id in graph.written_inputs():
        attrs = graph.node(node_id).attrs
        want = expected.inputs[attrs["arg"]] if "arg" in attrs else \
            expected.state.get(str(attrs.get("name")))
        if want is None or not oracle.bitwise_equal([want], [args[inputs.index(node_id)]]):
            raise CaptureError(f"{where}: the captured program does not leave "
                               f"{attrs.get('name', 'its input')} as Model does, bit for bit")


@dataclass
class CaptureCheck:
    reproduces: bool
    message: str
    case: Case
    original: Verdict  # the file's own verdict: the one the user is told
    outputs: dict = field(default_factory=dict)  # the capture's eager/compiled/float64 outputs
    original_outputs: dict = field(default_factory=dict)  # the file's own

    @property
    def captured(self) -> Verdict:
        """The captured case's verdict (``verify_capture`` judges the case before this exists)."""
        assert self.case.verdict is not None, "verify_capture sets the case's verdict"
        return self.case.verdict

    @property
    def agree(self) -> bool:
        """The file and its capture show the same divergence (or both none)."""
        return same_divergence(self.original, self.captured) or \
            not (self.original.is_finding or self.captured.is_finding)


def verify_capture(case: Case, runner: TaskRunner) -> CaptureCheck:
    """Run a captured case and the file's own model side by side: same divergence, same output?

    ``case`` comes from ``Captured.case`` (its origin names the file and seed); the original is
    judged with the case's backend and device.
    """
    path, seed = case.origin["model_file"], case.origin["seed"]
    task = case.task(keep_outputs=True)
    task.model_file, task.seed = str(Path(path).resolve()), seed
    own = runner.run(task)
    original = own.verdict
    replayed = replay_case(case, runner=runner)
    verdict, outputs = replayed.verdict, replayed.outputs
    case.verdict = verdict
    size = f"{len(case.graph)} ops, {generic_ops(case.graph)} generic"
    if not original.is_finding:
        message = f"{path}: Model does not diverge with --seed {seed} on {case.device} " \
                  f"({original.summary()})"
    elif not same_divergence(original, verdict):
        message = f"{path}: Model shows {original.summary()}, but its captured graph " \
                  f"({size}) shows {verdict.summary()}: not the same divergence"
    else:
        message = f"{path}: captured ({size}); the same divergence as Model itself: " \
                  f"{verdict.kind} in output {verdict.output}"
    reproduces = original.is_finding and same_divergence(original, verdict)
    return CaptureCheck(reproduces, message, case, original, outputs, own.outputs)

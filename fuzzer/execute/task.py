"""What crosses between a campaign and a worker, typed: the ``Task`` (a program, its input
draws, its recipe) and the ``RunResult`` (the most severe draw's verdict, every draw's score, the
outputs when asked). A ``Task`` crosses the pipe as ``torch.save`` bytes of plain data (the graph
as a dict, input tensors, the recipe's fields) and is read back with ``weights_only=True``; a
``RunResult`` as plain data too. A skip that is numfuzz's own failure (``harness_error``) is
told apart from the case's by its message.
"""

from __future__ import annotations

import io
from dataclasses import dataclass, field

import torch

from fuzzer.device import Device
from fuzzer.execute.recipe import Recipe
from fuzzer.ir.graph import Graph
from fuzzer.judge.kinds import Kind
from fuzzer.judge.verdict import Verdict

HARNESS_ERROR = "harness error"  # how a skip caused by numfuzz itself, not the case, begins


@dataclass
class Task:
    """One compiled program and the input draws to test it on."""

    graph: Graph
    draws: list[dict[str, torch.Tensor]]
    magnitudes: list[str] = field(default_factory=list)
    device: Device = Device("cpu")
    recipe: Recipe = Recipe()
    keep_outputs: bool = False  # return the tensors too (replay tables, minimizer, drafts)
    model_file: str = ""  # set: judge this KernelBench file's own model instead (capture check)
    seed: int = 0

    def __post_init__(self) -> None:
        self.device = Device(self.device)

    def to_bytes(self) -> bytes:
        buf = io.BytesIO()
        torch.save({"graph": self.graph.to_dict(), "draws": self.draws,
                    "magnitudes": list(self.magnitudes), "device": str(self.device),
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
                "outputs": {side: [own_storage(t) for t in values]
                            for side, values in self.outputs.items()},
                "context_lost": self.context_lost}

    @classmethod
    def from_dict(cls, data: dict) -> RunResult:
        """TypeError or ValueError on an answer not shaped like one."""
        return cls(Verdict.from_dict(data["verdict"]), list(data.get("scores") or []),
                   dict(data.get("outputs") or {}), bool(data.get("context_lost", False)))

    @classmethod
    def lost(cls, kind: Kind, message: str) -> RunResult:
        """No answer: the worker crashed or hung (``kind``), or numfuzz itself failed."""
        return cls(Verdict(kind, message=message))


def own_storage(value: object) -> object:
    """A tensor as a copy with a storage of its own (layout kept): a program's outputs and the
    state it leaves may share one storage under two dtypes (a ``.view(dtype)``), which
    ``torch.save`` refuses, and the values crossing the pipe need no aliasing between them."""
    return value.detach().clone() if isinstance(value, torch.Tensor) else value


def harness_error(message: str) -> Verdict:
    """A skip that is numfuzz's own failure, not the case's (``campaign.harness`` counts them)."""
    return Verdict(Kind.SKIP, message=f"{HARNESS_ERROR}: {message}")

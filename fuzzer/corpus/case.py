"""Case files: one program, one set of inputs, and what was seen, in a versioned ``.pt`` schema.

Written atomically (temp file, fsync, rename) the moment a finding is seen, so a campaign killed
with
SIGKILL loses nothing it already reported. Read with ``torch.load(weights_only=True)`` and then
validated field by field: a truncated, corrupt, wrong-version or hostile file raises ``CaseError``
with one line of explanation and never executes anything.
"""

from __future__ import annotations

import hashlib
import io
import pickle
import warnings
from dataclasses import dataclass, field
from pathlib import Path

import torch

from fuzzer.corpus.files import atomic_write
from fuzzer.device import Device
from fuzzer.errors import CaseError
from fuzzer.execute.recipe import Recipe
from fuzzer.execute.task import Task
from fuzzer.ir import ops
from fuzzer.ir.graph import Graph
from fuzzer.judge.verdict import Verdict

FORMAT = "numfuzz-case"
VERSION = 1
ARCHIVE_MAGIC = b"PK\x03\x04"  # torch.save writes a zip archive: anything else is not a case


def versions() -> dict[str, str]:
    found = {"torch": str(torch.__version__)}
    try:
        import triton

        found["triton"] = str(triton.__version__)
    except ImportError:
        found["triton"] = "none"
    return found


@dataclass
class Case:
    graph: Graph
    inputs: dict[str, torch.Tensor]
    device: Device = Device("cpu")
    dtype: str = "float32"
    recipe: Recipe = Recipe()  # how it was compiled and judged
    seed: int = 0
    grammar: str = ""
    verdict: Verdict | None = None
    versions: dict = field(default_factory=versions)
    origin: dict = field(default_factory=dict)  # campaign index, parent case, source file …

    def __post_init__(self) -> None:
        self.device = Device(self.device)

    # ------------------------------------------------------------ identity

    def digest(self) -> str:
        """Canonical hash of program and inputs: the minimizer's cache key and the file name."""
        h = hashlib.sha256(self.graph.digest().encode())
        for node_id in self.graph.input_ids():
            given = self.inputs[str(node_id)]
            h.update(f"{given.dtype}{tuple(given.shape)}".encode())
            if not given.is_contiguous():  # a layout is part of the case (older digests stay)
                h.update(f"{tuple(given.stride())}{given.storage_offset()}".encode())
            h.update(_raw_bytes(given))
        recipe = self.recipe
        h.update(f"{self.device}{recipe.backend}{sorted(recipe.config.items())}".encode())
        if recipe.policy != "float64":  # the default leaves older digests as they were
            h.update(recipe.policy.encode())
        if not recipe.surface.is_default:  # so does the default compile surface
            h.update(repr(sorted(recipe.surface.to_dict().items())).encode())
        if recipe.flags is not None and not recipe.flags.is_default:  # and torch's own flags
            h.update(repr(sorted(recipe.flags.to_dict().items())).encode())
        return h.hexdigest()

    def file_name(self) -> str:
        kind = self.verdict.kind if self.verdict else "case"
        return f"{kind}-{self.digest()[:12]}.pt"

    def ordered_inputs(self) -> list[torch.Tensor]:
        return [self.inputs[str(n)] for n in self.graph.input_ids()]

    def task(self, keep_outputs: bool = False, recipe: Recipe | None = None) -> Task:
        """The case as one task on its own inputs, run by its recipe or by ``recipe`` (a knob's
        variation of it)."""
        return Task(graph=self.graph, draws=[self.inputs], device=self.device,
                    recipe=recipe or self.recipe, keep_outputs=keep_outputs)

    # ------------------------------------------------------------ persistence

    def to_dict(self) -> dict:
        return {
            "format": FORMAT,
            "version": VERSION,
            "graph": self.graph.to_dict(),
            "inputs": {k: v.detach().cpu() for k, v in self.inputs.items()},
            "device": str(self.device),
            "dtype": self.dtype,
            **self.recipe.fields(),  # backend, config, policy, surface, flags
            "seed": int(self.seed),
            "grammar": self.grammar,
            "verdict": self.verdict.to_dict() if self.verdict else None,
            "versions": dict(self.versions),
            "origin": dict(self.origin),
        }

    def to_bytes(self) -> bytes:
        buf = io.BytesIO()
        torch.save(self.to_dict(), buf)
        return buf.getvalue()

    def save(self, path: str | Path) -> Path:
        """Atomic write: readers see the old file or the new one, never half of one."""
        return atomic_write(path, self.to_bytes())

    @classmethod
    def load(cls, path: str | Path) -> Case:
        path = Path(path)
        if not path.is_file():
            raise CaseError(f"{path}: no such case file")
        try:
            with path.open("rb") as f:
                magic = f.read(len(ARCHIVE_MAGIC))
        except OSError as err:  # unreadable, or gone since is_file()
            raise CaseError(f"{path}: cannot read it ({err.strerror or err})") from None
        if magic != ARCHIVE_MAGIC:  # random bytes, text, a raw pickle
            raise CaseError(f"{path}: not a numfuzz case file (not a torch.save archive)")
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                data = torch.load(path, weights_only=True, map_location="cpu")
        except pickle.UnpicklingError:
            raise CaseError(f"{path}: refused: it holds objects other than tensors and plain data "
                            "(torch.load(weights_only=True) will not run them)") from None
        except Exception as err:  # truncated or corrupt archives, wrong file types
            raise CaseError(f"{path}: not a readable numfuzz case file (truncated or corrupt: "
                            f"{type(err).__name__})") from None
        try:
            return cls.from_dict(data)
        except CaseError as err:
            raise CaseError(f"{path}: {err}") from None

    @classmethod
    def from_dict(cls, data: object) -> Case:
        if not isinstance(data, dict) or not isinstance(data.get("format"), str) \
                or data["format"] != FORMAT:
            raise CaseError("not a numfuzz case file")
        if type(data.get("version")) is not int or data["version"] != VERSION:
            raise CaseError(f"case schema version {data.get('version')!r}, this numfuzz reads "
                            f"{VERSION}")
        try:
            graph = Graph.from_dict(data["graph"])
            given = dict(data["inputs"])
            for node_id in graph.input_ids():
                check_input(graph, node_id, given.get(str(node_id)))
            inputs = {str(n): given[str(n)] for n in graph.input_ids()}  # nothing else is kept
            verdict = Verdict.from_dict(data["verdict"]) if data.get("verdict") else None
            recipe = Recipe.from_fields(data["backend"], data.get("config"),
                                        data.get("surface"), data.get("policy", "float64"),
                                        data.get("flags"))  # none in older files: not recorded
            return cls(graph=graph, inputs=inputs, device=_device(data["device"]),
                       dtype=str(data["dtype"]), recipe=recipe, seed=int(data.get("seed", 0)),
                       grammar=str(data.get("grammar", "")), verdict=verdict,
                       versions=dict(data.get("versions") or {}),
                       origin=dict(data.get("origin") or {}))
        except ops.InvalidGraph as err:
            raise CaseError(f"invalid graph: {err}") from None
        except (KeyError, TypeError, ValueError, AttributeError, IndexError, ArithmeticError,
                RuntimeError, RecursionError) as err:
            raise CaseError(f"malformed case: {type(err).__name__}: {err}") from None


def _raw_bytes(t: torch.Tensor) -> bytes:
    """The elements' bytes in row-major order, whatever the strides (a size-1 dim may have any
    stride and still count as contiguous, so ``contiguous()`` alone is not enough)."""
    flat = t.detach().cpu().reshape(-1)
    dense = torch.empty(flat.shape, dtype=flat.dtype)
    dense.copy_(flat)
    return dense.view(torch.uint8).numpy().tobytes()


def _device(value: object) -> Device:
    """``cpu``, ``cuda`` or ``cuda:N``: a device string torch parses, nothing else."""
    text = str(value)
    try:
        if torch.device(text).type not in ("cpu", "cuda") or text.strip() != text:
            raise ValueError
    except (RuntimeError, ValueError):
        raise CaseError(f"device {text[:40]!r} is not cpu or cuda[:N]") from None
    return Device(text)


def check_input(graph: Graph, node_id: int, tensor: object) -> None:
    """CaseError unless ``tensor`` is a tensor of the shape and dtype the graph gives input
    ``node_id``."""
    node = graph.node(node_id)
    if not isinstance(tensor, torch.Tensor):
        raise CaseError(f"input {node_id} is missing or not a tensor")
    want = (tuple(node.shape), node.dtype)
    got = (tuple(tensor.shape), str(tensor.dtype).removeprefix("torch."))
    if want != got:
        raise CaseError(f"input {node_id} is {got}, the graph says {want}")
    if node.attrs.get("role") == "unique" and tensor.dim() and not _distinct(
            tensor, int(node.attrs.get("dim", 0))):
        # a write to a repeated index without accumulation keeps either value: not defined
        raise CaseError(f"input {node_id} repeats an index it must keep distinct")


def _distinct(index: torch.Tensor, dim: int) -> bool:
    """Are the values of ``index`` distinct along ``dim`` (in every slice across it)?"""
    ordered = index.sort(dim=dim).values
    return bool((ordered.diff(dim=dim) != 0).all()) if index.shape[dim] > 1 else True

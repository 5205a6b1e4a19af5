"""The compile surface: how a case is compiled (dynamic shapes, mode, training), one home for it.

Chosen per campaign (``--dynamic``, ``--mode``, ``--training``) and recorded in every case, so
replay, minimize, triage and ``repro.py`` compile exactly as the campaign did. ``compile_kwargs``
is the one place the arguments of ``torch.compile`` are decided: the workers call it, and
``repro.py`` prints the same dict. A case's surface is data from a file, so ``Surface.from_dict``
checks every field and raises ``CaseError`` in one line on anything else.

Training runs forward and backward (``rules.forward_backward``): the gradients of the sum of the
float outputs with respect to every float input, weights included, are judged by the same rules as
outputs. The forward outputs judged then come from the same compiled training graph, so a forward
value the partitioner recomputes for the backward is judged too.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from fuzzer.errors import CaseError, record_fields

MODES = ("default", "max-autotune", "max-autotune-no-cudagraphs", "reduce-overhead")
CUDA_ONLY_MODES = ("reduce-overhead",)  # CUDA graphs: nothing to capture on the CPU


@dataclass(frozen=True)
class Surface:
    dynamic: bool = False  # torch.compile(dynamic=True): kernels over symbolic sizes
    mode: str = "default"
    training: bool = False  # forward and backward, gradients judged like outputs

    @classmethod
    def from_dict(cls, data: Any) -> Surface:
        """The surface a case or task records; CaseError naming the first bad field."""
        surface = cls(**record_fields(data, ("dynamic", "mode", "training"), "surface"))
        if type(surface.dynamic) is not bool or type(surface.training) is not bool:
            raise CaseError("surface dynamic and training must be true or false")
        if surface.mode not in MODES:
            raise CaseError(f"surface mode {str(surface.mode)[:80]!r} is not one of "
                            f"{', '.join(MODES)}")
        return surface

    def to_dict(self) -> dict:
        return asdict(self)

    @property
    def is_default(self) -> bool:
        return self == Surface()

    def check_for(self, device: str, backend: str) -> None:
        """CaseError when this surface cannot be compiled so: torch hands a mode to a backend
        that is a function (``module:function``) as an argument it may not take (the built-in
        ones ignore it), and CUDA graphs need CUDA."""
        if self.mode != "default" and ":" in backend:
            raise CaseError(f"mode {self.mode} is Inductor's; backend {backend} is a function")
        if self.mode in CUDA_ONLY_MODES and not device.startswith("cuda"):
            raise CaseError(f"mode {self.mode} needs a CUDA device")

    def compile_kwargs(self) -> dict:
        """The keyword arguments of ``torch.compile`` besides the backend."""
        return {"fullgraph": True, "dynamic": self.dynamic,
                "mode": None if self.mode == "default" else self.mode}

    def label(self) -> str:
        """How a person reads it: ``static``, or e.g. ``dynamic, max-autotune, training``."""
        parts = [p for p, on in (("dynamic", self.dynamic), (self.mode, self.mode != "default"),
                                 ("training", self.training)) if on]
        return ", ".join(parts) or "static"

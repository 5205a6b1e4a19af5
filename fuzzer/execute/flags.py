"""The torch.backends flags a case runs under (``Flags``), and which attention kernel eager ran.

On a GPU eager's own float32 math is not IEEE by default: cuDNN convolutions use TF32
(``torch.backends.cudnn.allow_tf32``, on by default), cuBLAS matmuls follow
``torch.backends.cuda.matmul.allow_tf32`` (off by default), and fp16/bf16 GEMMs may reduce in
reduced precision (on by default). That is eager's noise, not the compiler's: a worker pins the
recipe's flags before every draw, so eager and compiled run under the same ones (Inductor's extern
kernels and its max-autotune templates read them too), and the verdict grades compiled's error
against float64 by eager's own, so TF32 rounding on both sides is not a finding. The flags are
part of the recipe: recorded in every case file, pinned in its repro.py, and turned off by
triage's ``tf32=off`` knob. A case file from before they were recorded has none (``None``): it
ran under the flags its worker started with, and is run so again.

Scaled dot-product attention: eager picks flash, memory-efficient, cuDNN or math by dtype, shape
and device. ``recording_sdpa`` notes the backend of each of eager's calls (what
``torch._fused_sdp_choice``, the function SDPA itself consults, says); the verdict keeps them and
repro.py pins them (``torch.nn.attention.sdpa_kernel``). ``Flags.eager_sdpa`` pins eager alone to
one backend: triage's ``eager_sdpa=math`` asks whether compiled is worse than plain math too.

Only the legacy setters are used: on torch 2.11 and 2.13 they keep the legacy and the new
(``fp32_precision``) TF32 state consistent, while setting the new API alone to ``tf32`` makes the
legacy getters, which Inductor calls, raise. Flags are read and set by presence, never by version.
This module imports torch only inside its functions (the command line reads recipes without it).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass, fields
from typing import Any

from fuzzer.errors import CaseError, record_fields

# The flags, as torch spells them (repro.py sets these very attributes).
TORCH_NAMES = {
    "matmul_tf32": "torch.backends.cuda.matmul.allow_tf32",
    "cudnn_tf32": "torch.backends.cudnn.allow_tf32",
    "fp16_reduction": "torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction",
    "bf16_reduction": "torch.backends.cuda.matmul.allow_bf16_reduced_precision_reduction",
}
# Where the legacy TF32 getters raise (a process that mixed the legacy and the new API), the new
# API says the same thing and never raises.
NEW_API = {"matmul_tf32": "torch.backends.cuda.matmul.fp32_precision",
           "cudnn_tf32": "torch.backends.cudnn.conv.fp32_precision"}
SDPA_BACKENDS = ("MATH", "FLASH_ATTENTION", "EFFICIENT_ATTENTION", "CUDNN_ATTENTION",
                 "OVERRIDEABLE")  # torch.nn.attention.SDPBackend members a case may name


@dataclass(frozen=True)
class Flags:
    """Eager's float math switches (defaults: torch's own), and an optional pin of eager's
    attention backend."""

    matmul_tf32: bool = False  # torch.backends.cuda.matmul.allow_tf32
    cudnn_tf32: bool = True  # torch.backends.cudnn.allow_tf32 (convolutions)
    fp16_reduction: bool = True  # reduced-precision reductions in fp16 GEMMs
    bf16_reduction: bool = True  # and in bf16 ones
    eager_sdpa: str = ""  # an SDPA_BACKENDS name eager alone is pinned to ("": torch chooses)

    @classmethod
    def from_dict(cls, data: Any) -> Flags:
        """The flags a case or task records; CaseError naming the first bad field."""
        flags = cls(**record_fields(data, (f.name for f in fields(cls)), "flags"))
        for name in TORCH_NAMES:
            if type(getattr(flags, name)) is not bool:
                raise CaseError(f"flags {name} must be true or false")
        if flags.eager_sdpa not in ("", *SDPA_BACKENDS):
            raise CaseError(f"flags eager_sdpa {str(flags.eager_sdpa)[:40]!r} is not one of "
                            f"{', '.join(SDPA_BACKENDS)}")
        return flags

    def to_dict(self) -> dict:
        return asdict(self)

    @property
    def is_default(self) -> bool:
        return self == Flags()

    def with_changes(self, changes: dict) -> Flags:
        """These flags with ``changes`` (field -> value) applied: one knob of triage."""
        return Flags.from_dict({**self.to_dict(), **changes})

    @classmethod
    def current(cls) -> Flags:
        """The flags this process runs under now (flags this torch lacks: their defaults)."""
        found = {name: value for name in TORCH_NAMES
                 if (value := _read(name)) is not None}
        return cls.from_dict(found)

    def label(self) -> str:
        """How a person reads them: ``TF32 conv on, matmul off; reduced-precision fp16/bf16
        GEMM reductions on/on``."""
        on = {True: "on", False: "off"}
        text = (f"TF32 conv {on[self.cudnn_tf32]}, matmul {on[self.matmul_tf32]}; "
                f"reduced-precision fp16/bf16 GEMM reductions {on[self.fp16_reduction]}/"
                f"{on[self.bf16_reduction]}")
        return text + (f"; eager's SDPA pinned to {self.eager_sdpa}" if self.eager_sdpa else "")

    def source_lines(self) -> list[str]:
        """The statements that set these flags, as repro.py runs them."""
        return [f"{TORCH_NAMES[name]} = {getattr(self, name)!r}" for name in TORCH_NAMES]


def _resolve(path: str) -> tuple[Any, str]:
    import torch

    parts = path.split(".")
    owner: Any = torch
    for part in parts[1:-1]:
        owner = getattr(owner, part)
    return owner, parts[-1]


def _read(name: str) -> bool | None:
    """A flag's value in this process, or None when this torch does not have it."""
    owner, attr = _resolve(TORCH_NAMES[name])
    try:
        return bool(getattr(owner, attr))
    except AttributeError:
        return None
    except RuntimeError:  # legacy and new TF32 APIs mixed: the legacy getter refuses
        owner, attr = _resolve(NEW_API[name])
        return getattr(owner, attr, None) == "tf32"


_startup: Flags | None = None  # what this process started with: what unrecorded cases ran under


def pin(flags: Flags | None) -> None:
    """Set this process's flags to ``flags`` (None: to those it started with). Only the flags
    that differ are set, with the legacy setters (see the module docstring)."""
    global _startup
    if _startup is None:
        _startup = Flags.current()
    wanted = flags if flags is not None else _startup
    for name in TORCH_NAMES:
        value = getattr(wanted, name)
        if _read(name) not in (None, value):
            owner, attr = _resolve(TORCH_NAMES[name])
            setattr(owner, attr, value)


# ------------------------------------------------------------------ attention backends


def sdpa_pinned(names: Sequence[str]) -> contextlib.AbstractContextManager:
    """``torch.nn.attention.sdpa_kernel`` on ``names`` (SDPA_BACKENDS), or nothing when empty or
    when this torch has no such context manager."""
    if not names:
        return contextlib.nullcontext()
    try:
        from torch.nn.attention import SDPBackend, sdpa_kernel
    except ImportError:
        return contextlib.nullcontext()
    return sdpa_kernel([getattr(SDPBackend, name) for name in names])


@contextlib.contextmanager
def recording_sdpa() -> Iterator[list[str]]:
    """Within it, the backend of each ``scaled_dot_product_attention`` call is appended to the
    list it gives (by ``torch._fused_sdp_choice`` on the call's own arguments; nothing where this
    torch lacks it or cannot say)."""
    import torch
    import torch.nn.functional as F
    from torch.overrides import TorchFunctionMode

    seen: list[str] = []
    choose = getattr(torch, "_fused_sdp_choice", None)

    class Recorder(TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            kwargs = kwargs or {}
            if func is F.scaled_dot_product_attention and choose is not None:
                with contextlib.suppress(Exception):  # a call it cannot price: not recorded
                    seen.append(_backend_name(int(choose(*args, **kwargs))))
            return func(*args, **kwargs)

    with Recorder():
        yield seen


def _backend_name(value: int) -> str:
    from torch.nn.attention import SDPBackend

    try:
        return SDPBackend(value).name
    except ValueError:
        return f"backend {value}"

"""Known root causes: ``fuzzer/known.toml`` matched against a cause's signature fields.

A cause that matches an entry is already known upstream (a bug with an issue, or behaviour that
is expected by default): the nightly counts it as a hit on the entry instead of drafting it.
The file's header documents the conditions; every condition an entry sets must hold.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from pathlib import Path

import torch

from fuzzer.errors import InputError

KNOWN_FILE = Path(__file__).resolve().parent.parent / "known.toml"
# One op has several spellings: ``torch.remainder`` and ``operator.mod`` in a captured model,
# ``remainder`` and ``remainder_scalar`` in a generated one. Conditions compare bare names.
ALIASES = {"mod": "remainder", "floor_divide": "floordiv", "truediv": "div",
           "true_divide": "div", "and_": "bitwise_and", "or_": "bitwise_or",
           "xor": "bitwise_xor", "invert": "bitwise_not", "lshift": "shl", "rshift": "shr"}
SUFFIXES = ("_scalar", "_dims", "_c", "_mul", "_step")  # generated variants of one op


def bare(label: str) -> str:
    """An op label without its namespace and variant suffix: ``torch.remainder``,
    ``operator.mod`` and ``remainder_scalar`` are all ``remainder``."""
    name = label.rsplit(".", 1)[-1]
    for suffix in SUFFIXES:
        if name.endswith(suffix) and len(name) > len(suffix):
            name = name[:-len(suffix)]
            break
    return ALIASES.get(name, name)


@dataclass(frozen=True)
class Known:
    id: str
    what: str
    urls: tuple[str, ...] = ()
    family: tuple[str, ...] = ()
    device: str = ""
    vanishes_with: tuple[str, ...] = ()
    core_any: tuple[str, ...] = ()
    core_all: tuple[str, ...] = ()
    torch: str = ""

    def matches(self, fields: dict, version: str | None = None) -> bool:
        core = {bare(label) for label in fields.get("core", [])}
        return all((
            not self.family or fields.get("family") in self.family,
            not self.device or fields.get("device") == self.device,
            set(self.vanishes_with) <= set(fields.get("vanishes_with", [])),
            not self.core_any or bool(core & {bare(label) for label in self.core_any}),
            {bare(label) for label in self.core_all} <= core,
            applies_to(self.torch, version or str(torch.__version__)),
        ))


def applies_to(spec: str, version: str) -> bool:
    """``">=2.5,<2.14"`` against a torch version (torch's own version comparison)."""
    have = torch.torch_version.TorchVersion(version.split("+")[0])
    for part in (p.strip() for p in spec.split(",") if p.strip()):
        op = next(o for o in (">=", "<=", "==", ">", "<") if part.startswith(o)) \
            if part[0] in "<>=" else "=="
        want = part.removeprefix(op).strip()
        if not {">=": have >= want, "<=": have <= want, "==": have == want, ">": have > want,
                "<": have < want}[op]:
            return False
    return True


@cache
def entries(path: Path = KNOWN_FILE) -> tuple[Known, ...]:
    """The entries of ``path``; InputError (one line) on a malformed file."""
    import tomllib

    try:
        data = tomllib.loads(path.read_text())
        found = []
        for raw in data.get("known", []):
            values = {k: tuple(v) if isinstance(v, list) else v for k, v in raw.items()}
            if isinstance(values.get("family"), str):
                values["family"] = (values["family"],)
            found.append(Known(**values))
        return tuple(found)
    except (OSError, ValueError, TypeError) as err:
        raise InputError(f"{path}: not a valid known-issues file: {err}") from None


def match(fields: dict, known: tuple[Known, ...] | None = None) -> Known | None:
    """The first entry the cause matches, if any."""
    for entry in entries() if known is None else known:
        if entry.matches(fields):
            return entry
    return None

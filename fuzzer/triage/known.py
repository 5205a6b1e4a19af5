"""Known root causes: ``fuzzer/known.toml`` matched against a cause's signature fields.

A cause that matches an entry is already known upstream (a bug with an issue, or behaviour that
is expected by default): the nightly counts it as a hit on the entry instead of drafting it.
The file's header documents the conditions; every condition an entry sets must hold.

An entry's ``status`` is what upstream decided: ``open`` (no released fix known), ``wontfix``
(closed as expected behaviour) or ``fixed`` with ``fixed_in``, the first torch release holding
the fix. A match on a torch older than ``fixed_in`` is known ("fixed in X"); a match on
``fixed_in`` or later means the bug came back (``Known.reappeared``): a regression, drafted.
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


STATUSES = ("open", "wontfix", "fixed")


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
    status: str = "open"  # what upstream decided (STATUSES); files without it are open
    fixed_in: str = ""  # with status "fixed": the first torch release holding the fix

    def __post_init__(self) -> None:
        if self.status not in STATUSES:
            raise ValueError(f"entry {self.id!r}: status must be one of {STATUSES}, "
                             f"not {self.status!r}")
        if (self.status == "fixed") != bool(self.fixed_in):
            raise ValueError(f"entry {self.id!r}: fixed_in goes with status \"fixed\", and "
                             "only with it")
        for part in (q.strip() for q in self.torch.split(",") if q.strip()):
            try:  # a spec that parses nowhere would silently never match
                torch.torch_version.Version(part.lstrip("<>="))
            except torch.torch_version.InvalidVersion:
                raise ValueError(f"entry {self.id!r}: torch {self.torch!r} is not like "
                                 "\">=2.5,<2.14\"") from None
        if self.fixed_in:  # a release torch can compare with
            try:
                torch.torch_version.Version(str(self.fixed_in))
            except torch.torch_version.InvalidVersion:
                raise ValueError(f"entry {self.id!r}: fixed_in {self.fixed_in!r} is not a torch "
                                 "version") from None

    def reappeared(self, version: str | None = None) -> bool:
        """Fixed upstream in a release this torch is at or past: a match is a regression."""
        return self.status == "fixed" and \
            applies_to(f">={self.fixed_in}", version or str(torch.__version__))

    def state(self, version: str | None = None) -> str:
        """How a person reads the entry's upstream state on this torch."""
        if self.status != "fixed":
            return self.status
        if self.reappeared(version):
            return f"fixed in {self.fixed_in}, but seen again on this torch"
        return f"fixed in {self.fixed_in}"

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
    except (OSError, ValueError, TypeError, AttributeError) as err:  # AttributeError: not tables
        raise InputError(f"{path}: not a valid known-issues file: {err}") from None


def match(fields: dict, known: tuple[Known, ...] | None = None,
          version: str | None = None) -> Known | None:
    """The first entry the cause matches that still holds on this torch; else the first fixed
    entry it matches although this torch holds the fix (``reappeared``: the caller drafts it as a
    regression); else None."""
    found = [e for e in (entries() if known is None else known) if e.matches(fields, version)]
    return next((e for e in found if not e.reappeared(version)), found[0] if found else None)

"""Known root causes: ``fuzzer/known.toml`` matched against a cause's signature fields.

A cause that matches an entry is already known upstream (a bug with an issue, or behaviour that
is expected by default): the nightly counts it as a hit on the entry instead of drafting it.
The file's header documents the conditions; every condition an entry sets must hold.

An entry's ``status`` is what upstream decided: ``open`` (no released fix known), ``wontfix``
(closed as expected behaviour) or ``fixed`` with ``fixed_in``, the first torch release holding
the fix. A match on a torch older than ``fixed_in`` is known ("fixed in X"); a match on
``fixed_in`` or later means the bug came back (``Known.reappeared``): a regression, drafted.

Each entry carries a ``repro``: a few lines of plain torch that exit 1 while the bug is there.
``check`` runs them under this torch and others (``triage.confirm``) and ``measure`` says, per
entry, when it was fixed as measured and where the file says otherwise; ``write_measured``
puts that back into the file, editing only the entry's ``status`` and ``fixed_in`` lines
(``numfuzz known --check --write``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from dataclasses import fields as fields_of
from functools import cache
from pathlib import Path
from typing import Any

import torch

from fuzzer.corpus.files import atomic_write
from fuzzer.errors import InputError
from fuzzer.triage.confirm import (
    ABSENT,
    CONFIRM_TIMEOUT,
    REPRODUCES,
    Interpreter,
    Run,
    release,
    run_under,
)

KNOWN_FILE = Path(__file__).resolve().parent.parent / "known.toml"
# One op has several spellings: ``torch.remainder`` and ``operator.mod`` in a captured model,
# ``remainder`` and ``remainder_scalar`` in a generated one. Conditions compare bare names.
ALIASES = {"mod": "remainder", "floor_divide": "floordiv", "truediv": "div",
           "true_divide": "div", "and_": "bitwise_and", "or_": "bitwise_or",
           "xor": "bitwise_xor", "invert": "bitwise_not", "lshift": "shl", "rshift": "shr"}
SUFFIXES = ("_scalar", "_dims", "_c", "_mul", "_step", "_size", "_scale")  # generated
# variants of one op (``interpolate_size`` and ``interpolate_scale`` are ``F.interpolate``)


def bare(label: str) -> str:
    """An op label without its namespace and variant suffix: ``torch.remainder``,
    ``operator.mod`` and ``remainder_scalar`` are all ``remainder``."""
    name = label.rsplit(".", 1)[-1]
    for suffix in SUFFIXES:
        if name.endswith(suffix) and len(name) > len(suffix):
            name = name[:-len(suffix)]
            break
    return ALIASES.get(name, name)


STATUSES = ("open", "wontfix", "fixed", "by-design")
# What a hit on an entry of each status is counted as (SUMMARY.md, ``findings --yield``): a
# bug upstream knows, or behaviour torch documents (not a bug at all).
KNOWN, BY_DESIGN = "known", "by-design"


@dataclass(frozen=True, kw_only=True)
class Conditions:
    """What a cause must show to be a known one: every condition set holds (an empty one holds
    for any cause). The one matcher of the known list (``known.toml``) and of numfuzz's own
    ledger (``fuzzer/causes.toml``, ``triage.ledger``), each condition read off the cause's
    signature fields (``signature.signature_fields``) and, unhashed, its mechanism (``root``:
    where it first diverges), its value class and its crash message."""

    family: tuple[str, ...] = ()
    device: str = ""
    vanishes_with: tuple[str, ...] = ()
    core_any: tuple[str, ...] = ()
    core_all: tuple[str, ...] = ()
    torch: str = ""
    aliased_arguments: str = ""  # "output" or "read" (``signature.aliased_arguments``)
    error_any: tuple[str, ...] = ()  # a crash: one of these is in its exception type or frames
    message_any: tuple[str, ...] = ()  # one of these is in its verdict's message
    # A cause that shows as a crash or as a wrong value: where it crashes, one of these is in
    # the crash's message (not asked of its other forms).
    crashes_with: tuple[str, ...] = ()
    needs: tuple[str, ...] = ()  # options of its surface it needs (``freezing=True``), all
    stage: str = ""  # a deployment: this is in the name of the stage that first shows it
    layout: tuple[str, ...] = ()  # layout facts that tell it (``attribute.LAYOUT_FACTS``), all
    gradient: bool | None = None  # a diverging gradient (True) or a forward value (False)
    value_class: tuple[int, ...] = ()  # its value class (``triage.value``) is one of these
    # Where it first goes wrong, where located: one of these ops (an unlocated cause is judged
    # by the rest alone). A program that merely holds the op is not enough where located.
    root_any: tuple[str, ...] = ()
    # Its mechanism, whatever kind it shows as: the op where the divergence first appears
    # (``triage.locate``), and the family it shows there. A cause whose first divergent op is
    # one of ``mechanism_ops`` (showing one of ``mechanism_family``) matches without its
    # family and core (a zero of the wrong sign in ``clamp`` seen through ``copysign``).
    mechanism_ops: tuple[str, ...] = ()
    mechanism_family: tuple[str, ...] = ()

    def check_torch(self, name: str) -> None:
        """A ``torch`` spec that parses nowhere would silently never match: ValueError."""
        for part in (q.strip() for q in self.torch.split(",") if q.strip()):
            try:
                torch.torch_version.Version(part.lstrip("<>="))
            except torch.torch_version.InvalidVersion:
                raise ValueError(f"entry {name!r}: torch {self.torch!r} is not like "
                                 "\">=2.5,<2.14\"") from None

    def matches(self, fields: dict, version: str | None = None) -> bool:
        """Every condition holds, the family and core ones either on the cause as it showed
        or on its mechanism (``fields["root"]``: the first divergent op and its family)."""
        core = {bare(label) for label in fields.get("core", [])}
        shown = all((
            not self.family or fields.get("family") in self.family,
            not self.core_any or bool(core & {bare(label) for label in self.core_any}),
            {bare(label) for label in self.core_all} <= core,
        ))
        return (shown or self.by_mechanism(fields.get("root") or {})) and all((
            not self.device or fields.get("device") == self.device,
            set(self.vanishes_with) <= set(fields.get("vanishes_with", [])),
            not self.aliased_arguments or
            fields.get("aliased_arguments") == self.aliased_arguments,
            not self.error_any or any(part in str(where) for part in self.error_any
                                      for where in fields.get("error", [])),
            not self.message_any or any(part in str(fields.get("message", ""))
                                        for part in self.message_any),
            not self.crashes_with or fields.get("family") != "crash" or
            any(part in str(fields.get("message", "")) for part in self.crashes_with),
            set(self.needs) <= set(fields.get("needs", [])),
            not self.stage or self.stage in str(fields.get("stage", "")),
            set(self.layout) <= set(fields.get("layout", [])),
            self.gradient is None or bool(fields.get("gradient")) == self.gradient,
            not self.value_class or fields.get("value_class") in self.value_class,
            self.first_wrong_is_one(str((fields.get("root") or {}).get("op", ""))),
            applies_to(self.torch, version or str(torch.__version__)),
        ))

    def first_wrong_is_one(self, op: str) -> bool:
        """``root_any`` holds: no such condition, no op located, or the located op is one."""
        return not self.root_any or not op or \
            bare(op) in {bare(label) for label in self.root_any}

    def by_mechanism(self, root: dict) -> bool:
        """Does the cause's first divergent op (``root``: its ``op`` and ``family``) match this
        entry's mechanism?"""
        return bool(self.mechanism_ops) and bare(str(root.get("op", ""))) in \
            {bare(label) for label in self.mechanism_ops} and \
            (not self.mechanism_family or root.get("family") in self.mechanism_family)

    def specificity(self) -> int:
        """How much a match on it says: a point per condition it sets, and two per fact that
        must all hold (each layout fact, surface option, knob, op of ``core_all``)."""
        every = ("layout", "needs", "vanishes_with", "core_all")
        return sum(2 * len(value) if f.name in every else
                   int(bool(value) or value is False)
                   for f in fields_of(Conditions) if (value := getattr(self, f.name)) != ())

    @property
    def fingerprinted(self) -> bool:
        """Does a raw crash's file alone tell this cause (its exception, frames or message),
        with no condition that only triage can decide (knobs, surface options, layout, stage)?
        Such a raw crash is settled by one confirming run, before anything is minimized
        (``nightly.buckets``)."""
        return bool(self.error_any or self.message_any or self.crashes_with) and not (
            self.vanishes_with or self.needs or self.layout or self.stage)


@dataclass(frozen=True, kw_only=True)
class Known(Conditions):
    """One entry of the known list: the conditions a cause must show, and what upstream
    decided of it (``status``: open, wontfix, fixed in ``fixed_in``, or by-design: behaviour
    torch documents, ``urls`` naming where)."""

    id: str
    what: str
    urls: tuple[str, ...] = ()
    status: str = "open"  # what upstream decided (STATUSES); files without it are open
    fixed_in: str = ""  # with status "fixed": the first torch release holding the fix
    repro: str = ""  # a standalone torch script: exit 1 the bug is there, 0 not, 2 cannot run

    def __post_init__(self) -> None:
        if self.status not in STATUSES:
            raise ValueError(f"entry {self.id!r}: status must be one of {STATUSES}, "
                             f"not {self.status!r}")
        if (self.status == "fixed") != bool(self.fixed_in):
            raise ValueError(f"entry {self.id!r}: fixed_in goes with status \"fixed\", and "
                             "only with it")
        self.check_torch(self.id)
        if self.fixed_in:  # a release torch can compare with
            try:
                torch.torch_version.Version(str(self.fixed_in))
            except torch.torch_version.InvalidVersion:
                raise ValueError(f"entry {self.id!r}: fixed_in {self.fixed_in!r} is not a torch "
                                 "version") from None

    @property
    def counted_as(self) -> str:
        """What a hit on it is: known (a bug upstream knows) or by-design."""
        return BY_DESIGN if self.status == "by-design" else KNOWN

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


def table_values(raw: dict) -> dict[str, Any]:
    """A TOML table's values as ``Conditions`` (and its subclasses) take them: lists as tuples,
    a lone family as a tuple of one. Unchecked: a wrong type or key is the dataclass's
    TypeError, which a reader turns into its one line."""
    values: dict[str, Any] = {k: tuple(v) if isinstance(v, list) else v for k, v in raw.items()}
    if isinstance(values.get("family"), str):
        values["family"] = (values["family"],)
    return values


@cache
def entries(path: Path = KNOWN_FILE) -> tuple[Known, ...]:
    """The entries of ``path``; InputError (one line) on a malformed file."""
    import tomllib

    try:
        data = tomllib.loads(path.read_text())
        return tuple(Known(**table_values(raw)) for raw in data.get("known", []))
    except (OSError, ValueError, TypeError, AttributeError) as err:  # AttributeError: not tables
        raise InputError(f"{path}: not a valid known-issues file: {err}") from None


def match(fields: dict, known: tuple[Known, ...] | None = None,
          version: str | None = None) -> Known | None:
    """The first entry the cause matches that still holds on this torch; else the first fixed
    entry it matches although this torch holds the fix (``reappeared``: the caller drafts it as a
    regression); else None."""
    found = [e for e in (entries() if known is None else known) if e.matches(fields, version)]
    return next((e for e in found if not e.reappeared(version)), found[0] if found else None)


# ------------------------------------------------------------------ measured by the repros


@dataclass
class Measured:
    """One entry's ``repro`` run under each torch, oldest first, and what that says of the file:
    ``fixed_in``, measured (the oldest release it no longer reproduces on, after one it does);
    ``note`` where the file says otherwise; ``change``, what ``known --check --write`` sets
    (``status``, and ``fixed_in``: None removes it)."""

    entry: Known
    runs: list[Run]
    fixed_in: str | None = None
    note: str = ""
    change: dict | None = None

    def to_dict(self) -> dict:
        return {"id": self.entry.id, "status": self.entry.status,
                "fixed_in": self.entry.fixed_in or None,
                "runs": [r.to_dict() for r in self.runs], "measured_fixed_in": self.fixed_in,
                "note": self.note, "change": self.change}


def version_of(text: str) -> torch.torch_version.TorchVersion:
    return torch.torch_version.TorchVersion(text.split("+")[0])


def measure(entry: Known, runs: list[Run]) -> Measured:
    """What the runs say of the entry. Runs that could not run are shown, never counted. The
    file's ``fixed_in`` agrees with a measurement when it lies after the newest release that
    reproduces and no later than the first that does not after it (the releases between were
    not measured)."""
    runs = sorted(runs, key=lambda r: version_of(r.torch))
    found = Measured(entry, runs)
    ran = [r for r in runs if r.outcome in (REPRODUCES, ABSENT)]
    said = entry.state(ran[-1].torch if ran else None)
    if not entry.repro or not ran:
        found.note = "no repro in the file" if not entry.repro else "ran on no torch here"
        return found
    last, found.fixed_in = last_and_fix(ran)
    if last is None:  # fixed before the oldest torch measured, or a repro this machine misses
        if entry.status != "fixed" or version_of(ran[0].torch) < entry.fixed_in:
            found.note = f"the file says {said}, but no measured torch reproduces it"
        return found
    if found.fixed_in is not None:  # fixed after the newest torch that still reproduces
        gone = ran[ran.index(last) + 1]
        if entry.status == "fixed" and version_of(release(last.torch)) < entry.fixed_in \
                and version_of(entry.fixed_in) <= found.fixed_in:
            return found
        found.note = (f"the file says {said}, but it reproduces on {last.torch} and not on "
                      f"{gone.torch}: fixed in {found.fixed_in}")
        found.change = {"status": "fixed", "fixed_in": found.fixed_in}
    elif entry.status == "fixed" and version_of(entry.fixed_in) <= release(last.torch):
        found.note = f"the file says fixed in {entry.fixed_in}, but {last.torch} still reproduces"
        found.change = {"status": "open", "fixed_in": None}
    return found


def last_and_fix(ran: list[Run]) -> tuple[Run | None, str | None]:
    """Of repro runs that ran, oldest torch first: the newest that reproduces (None: none
    does), and the release of the first after it that does not (None: still reproduces on the
    newest): fixed in that release, as measured."""
    present = [i for i, r in enumerate(ran) if r.outcome == REPRODUCES]
    if not present:
        return None, None
    gone = ran[present[-1] + 1:]
    return ran[present[-1]], release(gone[0].torch) if gone else None


def check(known: tuple[Known, ...], pythons: Sequence[Interpreter],
          timeout: float = CONFIRM_TIMEOUT,
          progress: Callable[[str], None] | None = None) -> list[Measured]:
    """Every entry's repro, each in a fresh process under each interpreter, measured."""
    import tempfile

    results = []
    with tempfile.TemporaryDirectory(prefix="numfuzz-known-") as folder:
        for entry in known:
            script = Path(folder) / f"{entry.id}.py"
            runs = []
            if entry.repro:
                atomic_write(script, entry.repro)
                for python in pythons:
                    runs.append(run_under(script, python, timeout))
                    if progress:
                        progress(f"{entry.id}: torch {python.torch}: {runs[-1].outcome}")
            results.append(measure(entry, runs))
    return results


def write_measured(path: Path, measured: list[Measured]) -> list[str]:
    """Each entry's ``change`` written into the file at ``path``, a targeted edit of that
    entry's block (every other line and comment kept); the ids changed."""
    text = path.read_text()
    changed = [m for m in measured if m.change]
    for m in changed:
        assert m.change is not None  # changed holds only the entries with one
        text = rewrite_entry(text, m.entry.id, m.change["status"], m.change["fixed_in"])
    if changed:
        atomic_write(path, text)
        entries.cache_clear()  # read afresh from now on
    return [m.entry.id for m in changed]


def rewrite_entry(text: str, entry_id: str, status: str, fixed_in: str | None) -> str:
    """``text`` with entry ``entry_id``'s ``status`` and ``fixed_in`` lines set (added after its
    ``torch`` line when missing; ``fixed_in`` removed when None); checked by reading it back."""
    import tomllib

    lines = text.splitlines(keepends=True)
    block = _block(lines, entry_id)
    keys = {_key(lines[i]): i for i in block if _key(lines[i])}
    anchor = keys.get("status", keys.get("torch", keys["id"]))  # _block found its id line
    edits = {"status": f'status = "{status}"\n',
             "fixed_in": f'fixed_in = "{fixed_in}"\n' if fixed_in else None}
    for key, line in edits.items():  # status first, so fixed_in lands after it
        keys = {_key(lines[i]): i for i in _block(lines, entry_id) if _key(lines[i])}
        if key in keys:
            lines[keys[key]:keys[key] + 1] = [line] if line else []
        elif line:
            anchor = keys.get("status", anchor)
            lines.insert(anchor + 1, line)
    new = "".join(lines)
    try:
        entry = next(e for e in tomllib.loads(new)["known"] if e.get("id") == entry_id)
    except (ValueError, StopIteration, KeyError) as err:
        raise InputError(f"known list: cannot edit entry {entry_id!r} in place ({err})") \
            from None
    if (entry.get("status"), entry.get("fixed_in")) != (status, fixed_in):
        raise InputError(f"known list: editing entry {entry_id!r} in place did not give "
                         f"status {status!r}, fixed_in {fixed_in!r}")
    return new


def _block(lines: list[str], entry_id: str, header: str = "[[known]]") -> list[int]:
    """The line numbers of entry ``entry_id``'s table (those after its ``header`` up to the
    next), outside multi-line strings."""
    tables: list[list[int]] = []
    quoted = False
    for i, line in enumerate(lines):
        if not quoted and line.strip() == header:
            tables.append([])
        elif tables and not quoted:
            tables[-1].append(i)
        if line.count("'''") % 2 or line.count('"""') % 2:
            quoted = not quoted
    for table in tables:
        if any(_key(lines[i]) == "id" and _value(lines[i]) == entry_id for i in table):
            return table
    raise InputError(f"known list: no entry {entry_id!r}")


def _value(line: str) -> object:
    """The value a one-line ``key = value`` sets (a comment after it allowed)."""
    import tomllib

    try:
        return next(iter(tomllib.loads(line).values()))
    except (ValueError, StopIteration):
        return None


def _key(line: str) -> str:
    """The key a top-level ``key = value`` line sets, else ''."""
    name, sep, _ = line.partition("=")
    return name.strip() if sep and not line.startswith((" ", "#")) and \
        name.strip().isidentifier() else ""

"""``numfuzz known``: the known list, and with ``--check`` each known cause measured by its repro.

``known`` lists the entries of ``fuzzer/known.toml`` (or ``--known FILE``): id, what upstream
decided, ``fixed_in``, whether it carries a repro. ``known --check`` runs every entry's repro
under the installed torch and under each ``--confirm-with`` interpreter (fresh processes, a
timeout each; ``triage.confirm``) and prints a table, cause by torch version: reproduces, fixed,
or cannot run, the ``fixed_in`` that measurement gives, and where it contradicts the file
(``triage.known.measure``). ``--write`` puts the measured status and ``fixed_in`` back into the
file, editing only those lines of the entries concerned. Exit 0 once the check ran (a
contradiction is shown, not an error); 2 for bad input: a missing interpreter, one without
torch, a malformed list or one that cannot be written.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

import click

from fuzzer.cli.common import UserError, log_line, main, strict_json

if TYPE_CHECKING:
    from fuzzer.triage.confirm import Interpreter
    from fuzzer.triage.known import Known, Measured

# How the table says a repro's outcome: absent on a torch is "fixed" there for a known cause.
SAID = {"reproduces": "reproduces", "does not reproduce": "fixed", "cannot run": "cannot run"}


@main.command("known")
@click.option("--check", is_flag=True,
              help="Run every entry's repro under this torch and each --confirm-with one: per "
                   "cause and torch version, reproduces / fixed / cannot run.")
@click.option("--confirm-with", "confirm_with", multiple=True, metavar="PYTHON",
              help="Another environment's python to run the repros under too (repeatable).")
@click.option("--known", "known_file", type=click.Path(dir_okay=False, exists=True,
                                                       path_type=Path),
              help="The known list (default: fuzzer/known.toml).")
@click.option("--write", is_flag=True,
              help="With --check: write the measured status and fixed_in back into the list "
                   "(only those lines of the entries the measurement corrects).")
@click.option("--timeout", type=click.FloatRange(min=1), default=600, show_default=True,
              help="Seconds for one repro under one torch.")
@click.option("--json", "as_json", is_flag=True)
def known_command(check: bool, confirm_with: tuple[str, ...], known_file: Path | None,
                  write: bool, timeout: float, as_json: bool) -> None:
    """The known causes; with --check, each one's repro run on this torch and others.

    Exit 0: listed, or checked (contradictions with the file are shown in the table); 2: bad
    input (a missing interpreter or one without torch, a malformed or unwritable list)."""
    from fuzzer.triage import confirm, known

    path = known_file or known.KNOWN_FILE
    entries = known.entries(path)
    if not check:
        if write or confirm_with:
            raise UserError("--write and --confirm-with go with --check")
        _print_entries(entries, path, as_json)
        return
    if write and not os.access(path, os.W_OK):
        raise UserError(f"--write: {path} cannot be written")
    pythons = (confirm.this_interpreter(), *confirm.interpreters(confirm_with))
    measured = known.check(entries, pythons, timeout, progress=None if as_json else log_line)
    written = known.write_measured(path, measured) if write else []
    if as_json:
        click.echo(strict_json({"known": str(path),
                                "torches": [{"python": p.python, "torch": p.torch}
                                            for p in pythons],
                                "entries": [m.to_dict() for m in measured],
                                "written": written}))
        return
    _print_check(measured, pythons)
    if written:
        click.echo(f"wrote the measured status and fixed_in of {', '.join(written)} to {path}")
    elif write:
        click.echo(f"{path}: nothing to correct")


def _print_entries(entries: tuple[Known, ...], path: Path, as_json: bool) -> None:
    rows = [{"id": e.id, "status": e.status, "fixed_in": e.fixed_in or None,
             "torch": e.torch, "repro": bool(e.repro), "what": e.what} for e in entries]
    if as_json:
        click.echo(strict_json({"known": str(path), "entries": rows}))
        return
    from rich.console import Console
    from rich.table import Table

    table = Table(title=f"{path}: {len(rows)} known causes")
    for col in ("id", "status", "fixed in", "repro", "what"):
        table.add_column(col, overflow="fold")
    for e in entries:  # the rows, typed: each row is its entry's
        table.add_row(e.id, e.status, e.fixed_in or "", "yes" if e.repro else "no", e.what[:90])
    Console(width=160).print(table)


def _print_check(measured: list[Measured], pythons: tuple[Interpreter, ...]) -> None:
    from rich.console import Console
    from rich.table import Table

    from fuzzer.triage.known import version_of

    torches = sorted(dict.fromkeys(p.torch for p in pythons), key=version_of)
    table = Table(title="known causes measured by their repros")
    for col in ("known cause", "the file says", *(f"torch {v}" for v in torches), "measured",
                "note (where the file says otherwise)"):
        table.add_column(col, overflow="fold")
    for m in measured:
        said = {r.torch: SAID.get(r.outcome, r.outcome) for r in m.runs}
        file_says = f"fixed in {m.entry.fixed_in}" if m.entry.fixed_in else m.entry.status
        table.add_row(m.entry.id, file_says, *(said.get(v, "-") for v in torches),
                      f"fixed in {m.fixed_in}" if m.fixed_in else "", m.note)
    Console(width=200).print(table)

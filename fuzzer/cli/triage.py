"""``numfuzz triage CASE``: which knob, surface option, layout fact or compiler stage makes a
divergence vanish, where it first goes wrong, its value class and signature, and the known cause
it is, if any (exit 0; 3 when the case does not reproduce in a fresh compile, as for
``minimize``). ``--confirm-with PYTHON`` runs its repro.py under another environment's torch too
(``triage.confirm``). Bad input is one line on stderr and exit 2.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click

from fuzzer.cli.common import (
    CONFIRM_WITH,
    UserError,
    follow_malloc_check,
    knob_names,
    log_line,
    main,
    strict_json,
)

if TYPE_CHECKING:  # the commands import what they use when they run: --help stays light

    from fuzzer.corpus.case import Case
    from fuzzer.triage.attribute import Attribution
    from fuzzer.triage.confirm import Decision, Run


@main.command("triage")
@click.argument("case_path", metavar="CASE", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--knobs", help="Comma-separated knob names (default: all of them, which a cause "
                              "signature needs; with a subset no signature is given).")
@click.option("--k", "k", type=click.IntRange(1, 20), default=3, show_default=True,
              help="Fresh runs per knob, by majority (the nightly's default).")
@click.option("--no-bisect", is_flag=True, help="Skip torch's CompilerBisector.")
@click.option("--timeout", type=float, default=300, show_default=True)
@CONFIRM_WITH
@click.option("--json", "as_json", is_flag=True)
def triage_command(case_path: Path, knobs: str | None, k: int, no_bisect: bool, timeout: float,
                   confirm_with: tuple[str, ...], as_json: bool) -> None:
    """Which knob or compiler stage makes a case's divergence go away, and its cause signature
    (taken as the nightly takes it: see ``triage.signature``).

    Exit 0: attributed (the table says which knobs, if any, make it vanish); 3: the case does not
    reproduce in a fresh compile, so there is nothing to attribute; 2: bad input (a file that is
    not a case, or records no divergence, or a --confirm-with interpreter without torch)."""
    from dataclasses import asdict

    from fuzzer.corpus.case import Case
    from fuzzer.execute.pool import RunnerPool
    from fuzzer.triage import confirm
    from fuzzer.triage.attribute import attribute, bisect_summary, knob_named, run_bisect
    from fuzzer.triage.signature import cause_of, signature_caveat, signature_of

    case = Case.load(case_path)
    if case.verdict is None or not case.verdict.is_finding:
        raise UserError(f"{case_path}: the case records no divergence to triage")
    checking = follow_malloc_check(case.origin, case.verdict.kind if case.verdict else "")
    names = knob_names(knobs)
    pythons = confirm.interpreters(confirm_with)  # a bad one is one line now, before any run
    say = None if as_json else log_line
    pool = RunnerPool(timeout=timeout, warmup=case.recipe.warms_up, base_env=checking)
    try:
        if names is None:
            attribution, fields = cause_of(case, pool, k=k, progress=say)
            sig, caveat = signature_of(fields), signature_caveat(case)
        else:
            attribution = attribute(case, pool, [knob_named(n) for n in names], say, k=k)
            sig, caveat = None, "no signature: --knobs ran a subset of the knobs it is taken over"
        if not no_bisect and attribution.reproduces:
            attribution.bisect = run_bisect(case)
            if say:
                say(f"bisector: {bisect_summary(attribution.bisect)}")
    finally:
        pool.close()
    runs = []
    for python in pythons:  # the case's repro.py under each other torch
        if say:
            say(f"confirming on torch {python.torch} ({python.python})")
        runs += confirm.confirm_case(case, [python])
    decision = confirm.decide(runs) if pythons else None
    if as_json:
        confirmed = {"confirmations": [r.to_dict() for r in runs],
                     "confirmed": asdict(decision)} if decision else {}
        from fuzzer.triage import value
        from fuzzer.triage.signature import mechanism_of

        worth = value.classify(case, mechanism_of(attribution))
        click.echo(strict_json({"case": str(case_path), "signature": sig,
                                "signature_caveat": caveat,
                                "attribution": attribution.to_dict(),
                                "needs": attribution.needs(),
                                "value_class": {"number": worth.number, "words": worth.words,
                                                "why": worth.why}, **confirmed}))
    else:
        _print_attribution(case, attribution, sig, caveat)
        if decision is not None:
            _print_confirmations(runs, decision)
    sys.exit(0 if attribution.reproduces else 3)


def cause_lines(case: Case, attribution: Attribution) -> list[str]:
    """What triage says of the cause besides the knobs: the options of its surface it needs,
    where it first diverges, its value class, and the known entry it is, if any."""
    from fuzzer.execute.surface import DEPLOYED
    from fuzzer.triage import known, value
    from fuzzer.triage.locate import Location
    from fuzzer.triage.signature import mechanism_of, signature_fields

    lines = []
    if attribution.surface_knobs():
        lines.append("needs of its surface: " + (", ".join(attribution.needs()) or
                                                 "no single option (taking back any one alone "
                                                 "leaves it)"))
    elif not any(k in DEPLOYED for k in case.recipe.config):
        lines.append("needs of its surface: none (a default compile)")
    if attribution.layout_knobs():
        lines.append("needs of how its inputs are stored: " + (", ".join(attribution.layout())
                                                               or "none"))
    if attribution.stage():
        lines.append(f"stage: it appears in {attribution.stage()}")
    located = Location.from_dict(attribution.root)
    if located is not None:
        lines.append(f"where: {located.summary()}")
    root = mechanism_of(attribution)
    lines.append(value.classify(case, root).line())
    entry = known.match({**signature_fields(case, attribution), "root": root})
    if entry is not None:
        lines.append(f"known: {entry.id} ({entry.state()}): {entry.what[:120]}")
    return lines


def _print_confirmations(runs: list[Run], decision: Decision) -> None:
    """Per torch named with --confirm-with: whether the case's repro.py reproduces there."""
    from rich.console import Console
    from rich.table import Table

    table = Table(title="the case's repro.py under each --confirm-with torch")
    for col in ("torch", "python", "repro.py", "s", "it printed"):
        table.add_column(col, overflow="fold")
    for r in runs:
        table.add_row(r.torch, r.python, r.outcome, f"{r.seconds:.0f}",
                      (r.output.splitlines() or [""])[0][:80])
    console = Console(width=160)
    console.print(table)
    console.print(f"a nightly would {'draft it' if decision.drafted else 'not draft it'}: "
                  f"{decision.why}")


def _print_attribution(case: Case, attribution: Attribution, sig: str | None,
                       caveat: str) -> None:
    from rich.console import Console
    from rich.table import Table

    from fuzzer.triage.attribute import bisect_summary

    assert case.verdict is not None  # triage_command refuses a case that records none
    console = Console(width=120)
    console.print(f"[bold]{case.verdict.summary()}[/]")
    if not attribution.reproduces:
        console.print(f"does not reproduce in a fresh compile: {attribution.baseline}")
        return
    table = Table(title="each knob alone, fresh compile")
    for col in ("knob", "divergence", "verdict under the knob", "s"):
        table.add_column(col)
    for k in attribution.knobs:
        table.add_row(k.knob, k.outcome, k.verdict[:60], f"{k.seconds:.1f}")
    console.print(table)
    console.print(f"vanishes with: {', '.join(attribution.vanishing()) or 'no knob'}")
    for line in cause_lines(case, attribution):
        console.print(line)
    if attribution.bisect is not None:
        console.print(f"bisector: {bisect_summary(attribution.bisect)}")
    if sig is not None:
        console.print(f"signature: {sig}")
    if caveat:
        console.print(f"note: {caveat}")

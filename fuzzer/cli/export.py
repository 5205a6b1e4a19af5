"""``numfuzz export --pytest DIR``: each open root cause of the store as an xfail regression test
that fails once the bug is fixed (``report.export``). Bad input is one line on stderr and exit 2.
"""

from __future__ import annotations

from pathlib import Path

import click

from fuzzer.cli.common import (
    UserError,
    main,
    writable,
)


@main.command("export")
@click.option("--pytest", "out", type=click.Path(file_okay=False, path_type=Path), required=True,
              help="Write each open root cause as an xfail pytest module under this directory.")
@click.option("--reports", type=click.Path(file_okay=False, path_type=Path),
              default=Path("reports"), show_default=True)
def export_command(out: Path, reports: Path) -> None:
    """Open root causes as regression tests: xfail while the bug is there, failing (strict) once
    a torch fixes it, which says: close the issue."""
    from fuzzer.report.export import pytest_module
    from fuzzer.report.store import DB_NAME, Store

    if not (reports / DB_NAME).is_file():
        raise UserError(f"{reports / DB_NAME}: no findings store (run `numfuzz nightly` first)")
    writable(out, "--pytest")
    with Store.in_reports(reports) as store:
        # A cause upstream closed as expected behaviour is not a bug to wait for a fix of.
        findings = [f for f in store.findings(status="open")
                    if f.case_path and f.upstream_state != "wontfix"]
    for finding in findings:
        click.echo(f"wrote {pytest_module(finding, out)}")
    click.echo(f"{len(findings)} open root causes exported; run: python -m pytest {out}")

"""``numfuzz dashboard``: a static HTML page over every night of a reports folder
(``report.dashboard``), viewable offline. Bad input is one line on stderr and exit 2.
"""

from __future__ import annotations

from pathlib import Path

import click

from fuzzer.cli.common import (
    UserError,
    main,
    writable,
)


@main.command("dashboard")
@click.option("--reports", type=click.Path(file_okay=False, path_type=Path),
              default=Path("reports"), show_default=True)
@click.option("-o", "--out", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Where to write the page [default: REPORTS/dashboard.html].")
def dashboard_cmd(reports: Path, out: Path | None) -> None:
    """Write a static HTML page over every night under REPORTS: each cause (class, kind,
    surface, first and last seen, hits per night, upstream state, draft and repro), the latest
    night's queue, and plots over nights. It loads nothing from the network; the nightly
    rewrites it after each night."""
    from fuzzer.report import dashboard
    from fuzzer.report.store import DB_NAME

    if not (reports / DB_NAME).exists():
        raise UserError(f"{reports}: no findings store ({DB_NAME}) here; run numfuzz nightly "
                        "first, or pass --reports")
    if out is not None:
        writable(out.parent, "--out")
    try:  # a store of another schema is an InputError: one line, exit 2 (cli.common)
        path = dashboard.write(reports, out)
    except ImportError as err:
        raise UserError(f"the dashboard needs matplotlib ({err}); pip install matplotlib") \
            from None
    click.echo(str(path))

"""Stage 12, the command line. Thin: parse, call one stage, present the result.

One module per command or group (``fuzz``: run; ``cases``: replay, corpus, minimize;
``locate``: which line of a model compiled first goes wrong on; ``triage``; ``nightly``;
``findings``: the store, its yield and numfuzz's ledger; ``dashboard``; ``export``: xfail
regression tests; ``known``: the known list, measured by its repros) and ``common``: the group
that turns every user error into one line and exit 2, the options and helpers they share. May
import every earlier stage.
"""

from fuzzer.cli import (  # noqa: F401  (each registers its commands)
    cases,
    dashboard,
    export,
    findings,
    fuzz,
    known,
    locate,
    nightly,
    triage,
)
from fuzzer.cli.common import UserError, main, parse_duration, strict_json

__all__ = ["UserError", "main", "parse_duration", "strict_json"]

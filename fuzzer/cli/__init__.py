"""Stage 12, the command line. Thin: parse, call one stage, present the result.

One module per command group (``fuzz``: run; ``cases``: replay, corpus, minimize; ``locate``:
which line of a model compiled first goes wrong on; ``findings``: triage, nightly, findings;
``known``: the known list, measured by its repros) and ``common``: the
group that turns every user error into one line and exit 2, and the helpers they share. May
import every earlier stage.
"""

from fuzzer.cli import (  # noqa: F401  (each registers its commands)
    cases,
    findings,
    fuzz,
    known,
    locate,
)
from fuzzer.cli.common import UserError, main, parse_duration, strict_json

__all__ = ["UserError", "main", "parse_duration", "strict_json"]

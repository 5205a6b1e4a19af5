"""Stage 11, the command line. Thin: parse, call one stage, present the result.

One module per command group (``fuzz``: run; ``cases``: replay, corpus, minimize; ``findings``:
triage, nightly, findings; ``known``: the known list, measured by its repros) and ``common``: the
group that turns every user error into one line and exit 2, and the helpers they share. May
import every earlier stage.
"""

from fuzzer.cli import cases, findings, fuzz, known  # noqa: F401  (each registers its commands)
from fuzzer.cli.common import UserError, main, parse_duration, strict_json

__all__ = ["UserError", "main", "parse_duration", "strict_json"]

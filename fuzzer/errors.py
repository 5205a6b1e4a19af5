"""Errors that mean "the user's input cannot be used", shared by every stage.

Each carries one line for the user; the command line turns any of them into that line and exit
status 2 (``fuzzer.cli.common``). They live here, below every stage, because a model file is
loaded by the execution stage and captured by the user stage, and both report the same error.
"""

from collections.abc import Iterable


class InputError(ValueError):
    """Something the user gave numfuzz that it cannot use. The message is kept to one line
    (a hostile file's strings may hold newlines) of at most ``LIMIT`` characters."""

    LIMIT = 600

    def __init__(self, message: object = "") -> None:
        text = " ".join(str(message).splitlines())
        super().__init__(text if len(text) <= self.LIMIT else text[:self.LIMIT] + "…")


class CaseError(InputError):
    """A case file (or a model file standing in for one) that cannot be used."""


def record_fields(data: object, allowed: Iterable[str], what: str) -> dict:
    """``data``, a record read from a case file (``what``: its name there), as a dict holding
    only ``allowed`` fields; CaseError naming the first that is not."""
    if not isinstance(data, dict):
        raise CaseError(f"{what} must be a dict, got {type(data).__name__}")
    unknown = sorted(map(str, set(data) - set(allowed)))
    if unknown:
        raise CaseError(f"{what} has unknown field {unknown[0][:80]!r}")
    return data


class CaptureError(CaseError):
    """A model file that cannot be loaded or turned into a case."""


class HarnessError(RuntimeError):
    """The machine cannot run what was asked (a worker that cannot see its GPU): not a finding
    and not a skip; the campaign stops and says so in one line."""


class StoreError(InputError):
    """A findings store this numfuzz cannot open (another schema version, not a database)."""


class OutputError(InputError):
    """A folder numfuzz was told to write to that it cannot use: it cannot be made, is not
    writable, or has no room (``corpus.files.ready_to_write``), or a write to it failed later."""

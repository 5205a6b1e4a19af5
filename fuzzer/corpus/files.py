"""Atomic file writes, the one way every stage writes a file someone else may read.

A temp file in the same directory, fsync, then ``os.replace``: a reader (or a process killed with
SIGKILL half-way) sees the old file or the new one, never half of one. Files get the usual
permissions (``mkstemp`` alone makes them 0600, and a corpus or a reports folder is meant to be
shared). ``ready_to_write`` checks an output folder before any work starts, with the same kind of
write: a command that would spend minutes and then fail to save says so at once.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

from fuzzer.errors import OutputError

ROOM = 32 * 2**20  # free bytes an output folder needs up front: case files, the ledger, a repro
PROBE = ".numfuzz-write-probe"


def atomic_write(path: str | Path, data: bytes | str) -> Path:
    """Write ``data`` (text is UTF-8) to ``path`` atomically, creating its directory."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    payload = data.encode() if isinstance(data, str) else data
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    umask = os.umask(0)
    os.umask(umask)
    try:
        os.fchmod(fd, 0o666 & ~umask)
        with os.fdopen(fd, "wb") as f:
            f.write(payload)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


def ready_to_write(folder: str | Path, option: str) -> Path:
    """``folder`` exists or can be made, takes a file, and has room for a case (``ROOM``);
    otherwise ``OutputError`` in one line naming ``option``. Nothing is left behind: a missing
    folder is not made here (its nearest existing parent is probed), the probe file is removed."""
    folder = Path(folder)
    probed = folder
    while not probed.exists():
        if probed.parent == probed:
            break
        probed = probed.parent
    if not probed.is_dir():
        raise OutputError(f"{option} {folder}: cannot be made: {probed} is a file, not a folder")
    try:
        probe = probed / f"{PROBE}-{os.getpid()}"  # two commands starting at once: two probes
        atomic_write(probe, b"")
        probe.unlink(missing_ok=True)
        free = shutil.disk_usage(probed).free
    except OSError as err:
        raise OutputError(f"{option} {folder}: cannot write there: {err.strerror or err}") \
            from None
    if free < ROOM:
        raise OutputError(f"{option} {folder}: only {free // 2**20} MiB free there; numfuzz "
                          f"needs {ROOM // 2**20} MiB to save what it finds")
    return folder


def os_failure(err: OSError) -> str:
    """A failed read or write in one line: the file (the folder, for an atomic write's temp
    file) and the reason."""
    if not err.filename:
        return str(err.strerror or err)
    path = Path(err.filename)
    if path.name.startswith(".") and path.suffix == ".tmp":
        path = path.parent
    return f"{path}: {err.strerror or err}"


def write_failure(err: OSError) -> str:
    """A write that failed after work began (a full disk, a folder made read-only), in one line."""
    return f"cannot write {os_failure(err)}"

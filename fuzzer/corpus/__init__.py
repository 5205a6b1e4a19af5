"""Stage 5, the corpus: cases on disk.

Owns the versioned case-file schema and its validation (``case``), atomic file writes for every
stage (``files``), a campaign's ledger of done case indices (``ledger``) and replaying a case in
a worker, or listing a corpus (``replay``).
May import ``ir``, ``gen``, ``judge`` and ``execute``.
"""

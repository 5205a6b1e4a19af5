"""Stage 5, the corpus: cases on disk and the campaigns that fill it.

Owns the versioned case-file schema and its validation (``case``), atomic file writes for every
stage (``files``), campaigns (``campaign``; ``harness``: numfuzz's own failures on one case or
finding, saved for replay, and the stop rule; ``guided``: error-guided search around the best near
misses; ``fleet``: the same campaign on a Ray cluster, needs the ``ray`` extra) and replaying a
case in a worker (``replay``).
May import ``ir``, ``gen``, ``judge`` and ``execute``.
"""

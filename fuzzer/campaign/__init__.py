"""Stage 6, campaigns: the engines that fill a corpus with findings.

Owns a campaign's settings and case ``i`` as a pure function of them (``settings``), the arms
(a surface crossed with a strategy) and the plan that splits its time over them by their yield of
new causes (``arms``), the one loop core every engine runs through: budget, ledger, harness log,
summary, the one place a kept case is saved (``loop``), the engines (``local``: worker processes
here; ``fleet``: Ray actors, needs the ``ray`` extra) and the one way to pick one (``engine``),
error-guided
search around the best near misses (``guided``) and numfuzz's own failures on a case or a
finding, saved for replay, with the one stop rule (``harness``).
May import ``ir``, ``gen``, ``judge``, ``execute`` and ``corpus``.
"""

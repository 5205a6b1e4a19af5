"""Stage 3, judging: what counts as a divergence, and whether two divergences are the same.

Owns the oracle (``oracle``: verdicts per output, PyTorch's ``same`` rule, int-flips and their
evidence), the oracle's policy over a graph (``policy``: which elements are undefined, which
outputs are indices, each head's distance from its discontinuity) and the one divergence key
(``key``) that the minimizer, triage, recheck, nightly and ``repro.py`` all use.
May import ``fuzzer.ir``.
"""

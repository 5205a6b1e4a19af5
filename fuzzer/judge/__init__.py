"""Stage 3, judging: what counts as a divergence, and whether two divergences are the same.

Owns the verdict kinds and their orders (``kinds``), the per-output rules and evidence margins
that repro files embed verbatim (``rules``), the oracle (``oracle``: verdicts per output, PyTorch's
``same`` rule, int-flips and their evidence), the verdict types (``verdict``: torch-free, so the
store and anything reading case verdicts need not import torch; ``details``: what each output's
verdict records, typed, and checked when read from plain data), what a graph says about its
outputs' elements (``semantics``: which elements are undefined, which outputs are indices, each
head's distance from its discontinuity) and the one divergence key (``key``) that the minimizer,
triage, recheck, nightly and ``repro.py`` all use. "Policy" means one thing: float64's rule or
eager parity (``kinds.POLICIES``). May import ``fuzzer.ir``.
"""

"""Stage 8, reduction: shrink a case and write it as a standalone ``repro.py``.

Owns the total order of case sizes (``size``), the shrinker with its passes, apart from any
execution (``shrinker``: any predicate), the minimizer that wires it to a worker and the
divergence key (``minimize``), the self-judging repro file (``repro``) and the program it runs,
as a module of its own (``repro_main``), and the plain reproducer a draft opens with
(``snippet``).
May import every earlier stage.
"""

"""Stage 9, triage: which knob or compiler stage makes a divergence vanish (``attribute``), the
bug's stable signature and whether two causes are one mechanism (``signature``), where the
divergence first appears (``locate``), what a cause is worth to a maintainer (``value``), what is
already known upstream (``known``, each entry measured by its repro), what numfuzz itself found
before (``ledger``: FINDINGS.md's causes, matched by mechanism), and a script run under another
environment's torch (``confirm``).
May import every earlier stage.
"""

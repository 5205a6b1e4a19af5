"""Stage 9, triage: which knob or compiler stage makes a divergence vanish (``attribute``), the
bug's stable signature (``signature``), where the divergence first appears (``locate``), what a
cause is worth to a maintainer (``value``), what is already known upstream (``known``, each entry
measured by its repro), and a script run under another environment's torch (``confirm``).
May import every earlier stage.
"""

"""Stage 9, triage: which knob or compiler stage makes a divergence vanish (``attribute``), the
bug's stable signature (``signature``) and what is already known upstream (``known``).
May import every earlier stage.
"""

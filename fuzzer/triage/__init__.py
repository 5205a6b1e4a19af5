"""Stage 8, triage: which knob or compiler stage makes a divergence vanish (``triage``), and the
bug's stable signature (``signature``). May import every earlier stage.
"""

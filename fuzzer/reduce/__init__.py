"""Stage 7, reduction: shrink a case (``minimize``) and write it as a standalone ``repro.py``
(``repro``). May import every earlier stage.
"""

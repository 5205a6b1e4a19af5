"""Stage 9, reporting: the findings store (``store``), issue drafts (``draft``) and the nightly job
(``nightly``). May import every earlier stage.
"""

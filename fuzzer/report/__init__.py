"""Stage 10, reporting: the findings store (``store``), issue drafts (``draft``), the nightly job
(``nightly``) in its parts: night state and settings (``night``), the per-finding pipeline
(``pipeline``), recheck (``recheck``), SUMMARY.md (``summary``), a cause upstream: its issue,
the comment once fixed, likely duplicates (``upstream``), and xfail regression tests
(``export``). May import every earlier stage.
"""

"""Stage 10, reporting: what a finding becomes for a person. The findings store (``store``), the
order causes are worked on and shown in (``ranking``), issue drafts built from typed values
(``draft``), the environment a draft reports (``environment``), a cause upstream: its issue, the
comment once fixed, likely duplicates (``upstream``), and xfail regression tests (``export``).
May import every earlier stage.
"""

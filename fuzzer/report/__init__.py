"""Stage 10, reporting: what a finding becomes for a person. The findings store (``store``), the
order causes are worked on and shown in (``ranking``), issue drafts built from typed values
(``draft``), the layer a cause is in and its labels (``labels``), a tlparse report of the
plain reproducer (``tlparse``), the environment a draft reports (``environment``), a cause
upstream: its issue, the comment once fixed, likely duplicates (``upstream``), xfail regression
tests (``export``), and one HTML page over every night (``dashboard``).
May import every earlier stage.
"""

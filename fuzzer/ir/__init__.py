"""Stage 1, the graph IR: what a program is, and the only thing later stages pass around.

Owns the op registry (``ops``: arity, shape and dtype rules, source templates, the discontinuity of
each discrete head), generic calls for ops outside it (``generic``), the ``Graph`` itself
(``graph``), its canonical form and hash (``canon``), and IR -> Python source (``render``).
Imports nothing from numfuzz outside this package.
"""

# The registry is complete only once generic calls have registered themselves.
from fuzzer.ir import generic, ops  # noqa: F401

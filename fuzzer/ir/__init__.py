"""Stage 1, the graph IR: what a program is, and the only thing later stages pass around.

Owns the op registry (``ops``, a package with one entry per op, by family: arity, shape and
dtype rules, source templates, the discontinuity of each discrete head, each op's input domain,
what it aliases and writes, and the torch calls it captures), generic calls for ops outside it
(``generic``), the ``Graph`` of typed ``Node``s with its one canonical form and hash (``graph``:
``canonical_order``, ``digest``, ``op_chain``; the versions and statement order of a program with
state, ``State``), and IR -> Python source (``render``).
Imports nothing from numfuzz outside this package.
"""

# The registry is complete only once generic calls have registered themselves.
from fuzzer.ir import generic, ops  # noqa: F401

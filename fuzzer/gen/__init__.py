"""Stage 2, generation: graphs and inputs to test.

Owns the op grammars (``grammar``: vision and attention bodies, hazard motifs, encoding heads;
``edge``: short programs at the edges: special functions, decimal division, integers, shapes),
the named, weighted strategies a campaign draws its cases from (``strategy``), input domains and
layouts (``domains``), seeded input draws (``inputs``) and mutation of a captured graph
(``mutate``). May import ``fuzzer.ir``.
"""

"""Stage 2, generation: graphs and inputs to test.

Owns the op grammars (``grammar``: vision and attention bodies, hazard motifs, encoding heads),
seeded input draws by magnitude class (``inputs``) and mutation of a captured graph (``mutate``).
May import ``fuzzer.ir``.
"""

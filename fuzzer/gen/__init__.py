"""Stage 2, generation: graphs and inputs to test.

Owns the op grammars (``grammar``: vision and attention bodies, hazard motifs, the patterns
rewrites match, copies into other layouts, encoding heads; ``edge``: short programs at the edges:
special functions, decimal division, integers, shapes, resampling, pooling and padding;
``state``: programs with views, in-place writes through them and buffers a forward updates;
``signs``: signed zeros and NaN signs through the ops their sign shows in),
the named, weighted strategies a campaign draws its cases from (``strategy``), the shapes the
programs draw, around the vector widths (``sizes``), input domains and layouts, and which inputs
get one (``domains``), seeded input draws (``inputs``) and mutation of a captured graph
(``mutate``). May import ``fuzzer.ir``.
"""

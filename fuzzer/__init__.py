"""numfuzz: a differential fuzzer for torch.compile numerics.

One data path, a subpackage per stage, in the order data flows (``STAGES``):

    ir -> gen -> judge -> execute -> corpus -> campaign -> user -> reduce -> triage -> report
       -> nightly -> cli

A module may import only from its own stage or an earlier one, and the graph IR is the one thing
passed between stages; ``tests/test_layout.py`` fails on an import against the flow or a cycle.
Below every stage, importable from any: ``errors`` (user errors, one line and exit 2), ``clock``
(the one clock every budget reads) and ``device`` (the device a case runs on, typed).
"""

__version__ = "0.1.0"

# Earlier stages first. Each subpackage's docstring says what it owns.
STAGES = ("ir", "gen", "judge", "execute", "corpus", "campaign", "user", "reduce", "triage",
          "report", "nightly", "cli")

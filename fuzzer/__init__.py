"""numfuzz: a differential fuzzer for torch.compile numerics.

The data path, one module per stage: ops (registry) -> grammar -> ir -> render -> runner/workers ->
oracle -> case -> campaign; then minimize -> repro; triage -> store -> draft -> nightly; capture and
mutate bring a user's own model into the same IR.
"""

__version__ = "0.1.0"

"""Stage 7, users' own models: a KernelBench-style file captured into the IR as a case.

Owns capture in three parts: ``translate`` (Dynamo's FX graph into the IR), ``lift`` (calls a
registry op renders exactly, as the registry says, and written-out heads) and ``verify`` (bit for
bit against the model's eager outputs, and the same divergence as the file's own model), with
``capture`` the entry point (``capture_file``, ``load_target``).
May import every earlier stage.
"""

"""Stage 6, users' own models: a KernelBench-style file captured into the IR as a case.

Owns Dynamo capture (``capture``) and the check that the captured case diverges like the file.
May import every earlier stage.
"""

"""Stage 4, execution: run a program eager (twice), compiled and in float64, in isolation.

Owns the task format (``runner.Task``), the in-worker runner, how a case is compiled
(``surface``: dynamic shapes, mode, training; ``config``: the Inductor options allowed), the
isolated long-lived worker processes (``workers``) and running a user's model file as itself
(``original``).
May import ``fuzzer.ir`` and ``fuzzer.judge``.
"""

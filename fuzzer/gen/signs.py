"""Signed zeros and NaN signs: programs that make a zero of one sign (or a NaN of one sign) and
feed it to what depends on that sign.

A zero's sign is made by ``minimum``/``maximum`` of the two zeros, ``clamp``, ``where``, ``neg``,
``frac`` and the steps of a negative fraction (``ceil(-0.5)`` is -0.0), a product with a zero, a
sum with -0.0; it shows through ``1 / x`` (±inf), ``copysign``, ``atan2`` (±pi) and discrete
heads. Inputs come from the ``zeros`` domain (both zeros, both NaNs, small values of both
signs). Float outputs are judged by the signed-zero rule too (``judge.rules``): a zero of the
other sign where the program defines it is a finding even where every tolerance passes.
"""

from __future__ import annotations

from fuzzer.gen import sizes
from fuzzer.gen.grammar import Builder

MAKERS = ("minimum", "maximum", "clamp", "where", "neg", "frac", "ceil", "round", "trunc",
          "mul_zero", "add_negzero", "mul")
SHOWS = ("reciprocal", "copysign", "atan2", "div_one", "sign")


def signs_body(b: Builder) -> tuple[int, list[int]]:
    """A zero maker or two, then something its sign shows through (see the module docstring).
    Returns (the value a head may encode, the values to output)."""
    shape = sizes.shape(b.rng, limit=1024, empty=0.0)  # vector widths and their tails
    x = b.input(shape)
    taps = [x]
    y = x
    for _ in range(b.rng.randint(1, 2)):
        y = make_zero(b, y, shape) or y
        taps.append(y)
    shown = show_sign(b, y, shape)
    if shown is not None:
        taps.append(shown)
    return (shown if shown is not None else y), taps[1:] or taps


def make_zero(b: Builder, y: int, shape: tuple[int, ...]) -> int | None:
    kind = b.pick(list(MAKERS))
    if kind in ("minimum", "maximum", "mul"):
        return b.attempt(kind, y, b.input(shape))
    if kind == "clamp":
        return b.attempt("clamp", y, lo=b.pick([-0.0, 0.0, -1.0]), hi=b.pick([0.0, -0.0, 1.0]))
    if kind == "where":
        mask = b.input(shape, role="mask", dtype="bool")
        return b.attempt("where", mask, y, b.op("neg", y))
    if kind == "mul_zero":  # x * 0.0: -0.0 for a negative x, NaN for inf (a rewrite must keep it)
        return b.attempt("mul_scalar", y, value=b.pick([0.0, -0.0]))
    if kind == "add_negzero":  # x + -0.0 is x, -0.0 included; x + 0.0 turns -0.0 into +0.0
        return b.attempt("add_scalar", y, value=b.pick([-0.0, 0.0]))
    return b.attempt(kind, y)


def show_sign(b: Builder, y: int, shape: tuple[int, ...]) -> int | None:
    kind = b.pick(list(SHOWS))
    if kind == "reciprocal":
        return b.attempt("reciprocal", y)
    if kind == "div_one":
        return b.attempt("div", b.input(shape), y)
    if kind == "copysign":
        return b.attempt("copysign", b.input(shape), y)
    if kind == "atan2":
        return b.attempt("atan2", y, b.input(shape))
    return b.attempt("sign", y)

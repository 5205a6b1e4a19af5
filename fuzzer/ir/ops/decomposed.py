"""Ops the compiler rewrites into other ops (tag ``decomp``): activations with thresholds and
slopes, losses, distances and normalizations, and a few elementwise ops built from others
(``float_power``, ``nextafter``, ``logaddexp2``, ``xlog1py``, ``ndtr``).

Eager runs one ATen kernel for each; Inductor lowers most through a Python decomposition
(``torch._decomp``, ``torch._refs``) into pointwise and reduction primitives, and that rewrite
is where the decomposition class of compiled bugs lives: a threshold compared with ``>`` where
the kernel uses ``>=``, a ``beta`` of 0 divided by, an ``eps`` clamped in another place, a
reduction mean taken over the wrong count, a loss's log of 0. Every entry's attrs come from its
``choices``, and the strategy ``decompositions`` (``gen.edge.decomposition_body``) draws them;
``edges`` puts the inputs on each op's thresholds. Torch decides every shape and dtype (``meta``).
"""

from __future__ import annotations

import math

from fuzzer.ir.ops.spec import register, unary

DECOMP = ("decomp",)
REDUCTIONS = ("mean", "sum", "none")
DIMS = (-1, 0, 1)
EPS = (1e-8, 1e-12, 0.0, 1e-3)


def _x(*shape: int) -> dict:
    return {"shape": shape, "role": "x"}


X = (_x(2, 3, 8),)
XY = (_x(2, 3, 8), _x(2, 3, 8))


def _activation(name: str, template: str, choices: dict, edges: tuple[float, ...]) -> None:
    unary(name, template, meta=True, tags=DECOMP, attrs=tuple(choices), choices=choices,
          edges=lambda f, points=edges: points,
          example=(X, {key: values[0] for key, values in choices.items()}))


# ---------------------------------------------------------------- activations
# Each at its thresholds (``edges``): where the piecewise definition switches branch.
_activation("elu", "F.elu({0}, alpha={alpha})", {"alpha": (1.0, 0.5, 2.0, 0.0)}, (0.0, -1e-3))
_activation("celu", "F.celu({0}, alpha={alpha})", {"alpha": (1.0, 0.5, 3.0)}, (0.0, -1e-3))
_activation("selu", "F.selu({0})", {}, (0.0, -1e-3, 80.0))
_activation("leaky_relu", "F.leaky_relu({0}, negative_slope={slope})",
            {"slope": (0.01, 0.2, 0.0, -0.5, 1.5)}, (0.0,))
_activation("hardtanh", "F.hardtanh({0}, min_val={low}, max_val={high})",
            {"low": (-1.0, 0.0, -0.5), "high": (1.0, 6.0, 0.5)}, (-1.0, 1.0, 0.0, 6.0, 0.5, -0.5))
_activation("relu6", "F.relu6({0})", {}, (0.0, 6.0))
_activation("softsign", "F.softsign({0})", {}, (0.0, 1e30, -1e30))
_activation("tanhshrink", "F.tanhshrink({0})", {}, (0.0, 1e-3, 9.0))
_activation("hardshrink", "F.hardshrink({0}, lambd={lambd})",
            {"lambd": (0.5, 0.0, 1.0, 1e-3)}, (0.5, -0.5, 1.0, -1.0, 1e-3, 0.0))
_activation("softshrink", "F.softshrink({0}, lambd={lambd})",
            {"lambd": (0.5, 0.0, 1.0, 1e-3)}, (0.5, -0.5, 1.0, -1.0, 1e-3, 0.0))
_activation("threshold", "F.threshold({0}, {limit}, {value})",
            {"limit": (0.0, 0.5, -1.0), "value": (0.0, -1.0, 20.0, math.inf)}, (0.0, 0.5, -1.0))
_activation("rrelu_eval", "F.rrelu({0}, lower={lower}, upper={upper}, training=False)",
            {"lower": (0.125, 0.0, 0.3), "upper": (1.0 / 3.0, 0.5, 1.0)}, (0.0,))
_activation("softmin", "F.softmin({0}, dim={dim})", {"dim": DIMS}, (88.0, -88.0))
unary("glu", "F.glu({0}, dim={dim})", meta=True, tags=DECOMP, category="layout",
      attrs=("dim",), choices={"dim": DIMS}, example=(X, {"dim": -1}))

# ---------------------------------------------------------------- losses of (input, target)


def _loss(name: str, template: str, choices: dict, reductions: tuple = REDUCTIONS) -> None:
    choices = {"reduction": reductions, **choices}
    register(name, 2, template, meta=True, tags=DECOMP, category="reduction",
             attrs=tuple(choices), choices=choices,
             example=(XY, {key: values[0] for key, values in choices.items()}))


_loss("mse_loss", "F.mse_loss({0}, {1}, reduction={reduction})", {})
_loss("l1_loss", "F.l1_loss({0}, {1}, reduction={reduction})", {})
_loss("smooth_l1_loss", "F.smooth_l1_loss({0}, {1}, reduction={reduction}, beta={beta})",
      {"beta": (1.0, 0.0, 0.5, 1e-6)})
_loss("huber_loss", "F.huber_loss({0}, {1}, reduction={reduction}, delta={delta})",
      {"delta": (1.0, 0.5, 2.0, 1e-6)})
_loss("soft_margin_loss", "F.soft_margin_loss({0}, {1}, reduction={reduction})", {})
_loss("kl_div", "F.kl_div({0}, {1}, reduction={reduction}, log_target={log_target})",
      {"log_target": (False, True)}, reductions=("batchmean", "sum", "none"))  # "mean" warns
_loss("bce_with_logits",
      "F.binary_cross_entropy_with_logits({0}, {1}, reduction={reduction})", {})
_loss("poisson_nll_loss", "F.poisson_nll_loss({0}, {1}, log_input={log_input}, full={full}, "
      "eps={eps}, reduction={reduction})",
      {"log_input": (True, False), "full": (False, True), "eps": (1e-8, 0.0, 0.5)})
_loss("hinge_embedding_loss",
      "F.hinge_embedding_loss({0}, {1}, margin={margin}, reduction={reduction})",
      {"margin": (1.0, 0.0, 2.5)})
_loss("multilabel_soft_margin_loss",
      "F.multilabel_soft_margin_loss({0}, {1}, reduction={reduction})", {})
_loss("cross_entropy_soft", "F.cross_entropy({0}, {1}, reduction={reduction}, "
      "label_smoothing={smoothing})", {"smoothing": (0.0, 0.1, 1.0)})

# ---------------------------------------------------------------- distances and normalizations
register("normalize", 1, "F.normalize({0}, p={p}, dim={dim}, eps={eps})", meta=True,
         tags=DECOMP, category="reduction", attrs=("p", "dim", "eps"),
         choices={"p": (2.0, 1.0, 3.0, math.inf, 0.5), "dim": DIMS, "eps": EPS},
         example=(X, {"p": 2.0, "dim": -1, "eps": 1e-12}))
register("cosine_similarity", 2, "F.cosine_similarity({0}, {1}, dim={dim}, eps={eps})",
         meta=True, tags=DECOMP, category="reduction", attrs=("dim", "eps"),
         choices={"dim": DIMS, "eps": EPS}, example=(XY, {"dim": -1, "eps": 1e-8}))
register("pairwise_distance", 2,
         "F.pairwise_distance({0}, {1}, p={p}, eps={eps}, keepdim={keepdim})", meta=True,
         tags=DECOMP, category="reduction", attrs=("p", "eps", "keepdim"),
         choices={"p": (2.0, 1.0, 0.0, math.inf, 3.0), "eps": EPS, "keepdim": (False, True)},
         example=(XY, {"p": 2.0, "eps": 1e-6, "keepdim": False}))
register("dist", 2, "torch.dist({0}, {1}, p={p})", meta=True, tags=DECOMP,
         category="reduction", attrs=("p",), choices={"p": (2.0, 1.0, 0.0, math.inf, 3.0)},
         example=(XY, {"p": 2.0}))
unary("renorm", "torch.renorm({0}, p={p}, dim={dim}, maxnorm={maxnorm})", meta=True,
      tags=DECOMP, category="reduction", attrs=("p", "dim", "maxnorm"),
      choices={"p": (2.0, 1.0, 3.0), "dim": (0, 1, -1), "maxnorm": (1.0, 0.0, 1e-3, 5.0)},
      example=(X, {"p": 2.0, "dim": 0, "maxnorm": 1.0}))
unary("local_response_norm", "F.local_response_norm({0}, {size}, alpha={alpha}, beta={beta}, "
      "k={k})", meta=True, tags=DECOMP, category="reduction",
      attrs=("size", "alpha", "beta", "k"),
      choices={"size": (2, 3, 5), "alpha": (1e-4, 1.0), "beta": (0.75, 0.0, 2.0),
               "k": (1.0, 0.0, 2.0)},
      example=(X, {"size": 2, "alpha": 1e-4, "beta": 0.75, "k": 1.0}))
unary("instance_norm", "F.instance_norm({0}, eps={eps})", meta=True, tags=DECOMP,
      category="reduction", attrs=("eps",), choices={"eps": (1e-5, 0.0, 1.0)},
      example=(X, {"eps": 1e-5}))
unary("lp_pool1d", "F.lp_pool1d({0}, {p}, {kernel}, stride={stride}, ceil_mode={ceil})",
      meta=True, tags=DECOMP, category="pool", attrs=("p", "kernel", "stride", "ceil"),
      choices={"p": (2.0, 1.0, 3.0, 0.5), "kernel": (2, 3), "stride": (None, 1, 2),
               "ceil": (False, True)},
      example=(X, {"p": 2.0, "kernel": 3, "stride": None, "ceil": False}))
unary("diff", "torch.diff({0}, n={n}, dim={dim})", meta=True, tags=DECOMP, category="layout",
      attrs=("n", "dim"), choices={"n": (1, 2, 3), "dim": DIMS},
      example=(X, {"n": 1, "dim": -1}))
unary("trapezoid", "torch.trapezoid({0}, dx={dx}, dim={dim})", meta=True, tags=DECOMP,
      category="reduction", attrs=("dx", "dim"), choices={"dx": (1.0, 0.1, 3.0), "dim": DIMS},
      example=(X, {"dx": 1.0, "dim": -1}))
unary("cumulative_trapezoid", "torch.cumulative_trapezoid({0}, dx={dx}, dim={dim})", meta=True,
      tags=DECOMP, category="reduction", attrs=("dx", "dim"),
      choices={"dx": (1.0, 0.1, 3.0), "dim": DIMS}, example=(X, {"dx": 1.0, "dim": -1}))

# ---------------------------------------------------------------- elementwise, built from others
for _name, _template, _edges in (
        ("float_power", "torch.float_power({0}, {1})", (0.0, 1.0, -1.0)),
        ("nextafter", "torch.nextafter({0}, {1})", (0.0, 1e-45, 3.4e38)),
        ("logaddexp2", "torch.logaddexp2({0}, {1})", (0.0, 128.0, -128.0)),
        ("xlog1py", "torch.special.xlog1py({0}, {1})", (0.0, -1.0))):
    register(_name, 2, _template, meta=True, tags=DECOMP, category="binary",
             edges=lambda f, points=_edges: points, example=(XY, {}))
unary("ndtr", "torch.special.ndtr({0})", meta=True, tags=DECOMP,
      edges=lambda f: (0.0, -38.0, 8.0, -5.0), example=(X, {}))

"""Arms and the plan: how a campaign splits its time over surfaces and strategies by what each
has yielded.

An arm is a surface of the catalogue (``execute.surface.CATALOGUE``) crossed with a strategy
(``gen.strategy``). What an arm is worth is its yield: **new real causes per CPU-second**, a cause
counting only when, after minimize and triage, it was neither in the store, nor known, nor
expected by default, weighted by its value class (``triage.value``: a silent wrong value on
ordinary inputs counts 1, a signed zero 0.1). Raw findings and known hits earn nothing. The
nightly credits each new cause to the arm of the case it came from and records every arm's cases
and seconds per night (the store's ``arm_nights``); ``history`` discounts older nights
(``HALF_LIFE`` nights), so an arm whose bugs were all found loses its share.

The plan (``plan``) turns that history into a share of CPU-seconds per arm: a prior share
(the catalogue's ``prior`` times the strategy's default weight) stands for ``PRIOR_SECONDS`` of
measurement, the measured yield for the rest (a Gamma-Poisson rate), and a floor of ``FLOOR`` of
the time is dealt out evenly, so every arm is tried every night. An arm's cases then come with
probability share / cost per case, so an expensive arm (max-autotune) gets its share of the time,
not of the cases.

Replayable: the plan is computed once, when the campaign starts, and recorded (the ledger's key,
the night's ``night.json``); case ``i`` draws its arm from the plan with a generator seeded by the
case seed alone (``Plan.choose``), so case ``i`` is a pure function of (seed, i, plan), whatever
the engine, the workers or the timing, and ``numfuzz run --seed S --plan night.json`` replays it.
Pins: ``--strategy`` keeps the strategy weights as given (only the surfaces adapt), and a surface
given by flags (``--dynamic``, ``--mode``, ``--training``, ``--inductor-config``) means no plan.
"""

from __future__ import annotations

import hashlib
import json
import math
import random
from collections.abc import Iterable
from dataclasses import dataclass, field

from fuzzer.errors import InputError
from fuzzer.execute.surface import CATALOGUE, Entry
from fuzzer.gen import strategy

SURFACE_SALT = 0x5_0A_F4CE  # the generator that picks a case's surface, given its strategy
PRIOR_SECONDS = 3600.0  # CPU-seconds of measurement the prior share stands for
PRIOR_CAUSES = 1.0  # value-weighted causes the prior spreads over every arm
PRIOR_CASES = 20.0  # cases the prior cost per case stands for
FLOOR = 0.2  # of the time, dealt out evenly over the arms: every arm is tried every night
HALF_LIFE = 7.0  # nights after which a night's measurements count half
CASE_SECONDS = 4.0  # seconds per case on the default surface before any is measured (2-core CPU)


@dataclass(frozen=True)
class Arm:
    surface: str
    strategy: str

    @property
    def key(self) -> str:
        return f"{self.surface}/{self.strategy}"

    @classmethod
    def of(cls, key: str) -> Arm:
        surface, _, chosen = key.partition("/")
        return cls(surface, chosen)


@dataclass
class Usage:
    """What an arm was given and what it gave, summed over nights (discounted by age)."""

    cases: float = 0.0
    seconds: float = 0.0
    findings: float = 0.0  # raw findings: shown, never earning
    causes: float = 0.0  # new real causes
    value: float = 0.0  # the same, weighted by value class

    def add(self, other: Usage, weight: float = 1.0) -> None:
        for name in ("cases", "seconds", "findings", "causes", "value"):
            setattr(self, name, getattr(self, name) + weight * getattr(other, name))

    def to_dict(self) -> dict:
        return {k: round(v, 3) for k, v in self.__dict__.items()}


def history(rows: Iterable[tuple[int, str, Usage]]) -> dict[str, Usage]:
    """Per arm, the usage of ``rows`` (nights ago, arm key, usage), each night discounted by
    its age (``HALF_LIFE``): what the plan reads."""
    found: dict[str, Usage] = {}
    for age, key, usage in rows:
        found.setdefault(key, Usage()).add(usage, 0.5 ** (max(0, age) / HALF_LIFE))
    return found


@dataclass
class Plan:
    """Per arm: its share of the CPU-seconds and its expected seconds per case, and how they
    came about (``prior`` and ``rate`` for the tables)."""

    shares: dict[str, float]
    cost: dict[str, float]
    rate: dict[str, float] = field(default_factory=dict)  # value per CPU-hour, estimated
    prior: dict[str, float] = field(default_factory=dict)

    def probabilities(self) -> dict[str, float]:
        """Per arm, the probability that a case is spent on it: share over cost, normalized."""
        raw = {k: s / self.cost[k] for k, s in self.shares.items() if s > 0}
        total = sum(raw.values())
        return {k: v / total for k, v in sorted(raw.items())}

    def strategy_weights(self) -> dict[str, float]:
        """The marginal weight of each strategy: what ``gen.strategy.choose`` draws from."""
        weights: dict[str, float] = {}
        for key, p in self.probabilities().items():
            name = Arm.of(key).strategy
            weights[name] = weights.get(name, 0.0) + p
        return weights

    def choose(self, case_seed: int) -> Arm:
        """The arm of the case with this seed: its strategy as ``gen.strategy`` draws it from
        the marginal weights, then its surface given that strategy, from a generator of its
        own. A pure function of (case seed, plan)."""
        picked = strategy.choose(case_seed, self.strategy_weights()).name
        surfaces = sorted((Arm.of(k).surface, p) for k, p in self.probabilities().items()
                          if Arm.of(k).strategy == picked)
        rng = random.Random(case_seed ^ SURFACE_SALT)
        return Arm(rng.choices([s for s, _ in surfaces], [p for _, p in surfaces])[0], picked)

    def to_dict(self) -> dict:
        return {"shares": {k: round(v, 6) for k, v in sorted(self.shares.items())},
                "cost": {k: round(v, 3) for k, v in sorted(self.cost.items())},
                "rate": {k: round(v, 6) for k, v in sorted(self.rate.items())},
                "prior": {k: round(v, 6) for k, v in sorted(self.prior.items())}}

    @classmethod
    def from_dict(cls, data: object) -> Plan:
        """A recorded plan (``night.json``, ``--plan``); InputError on anything else."""
        try:
            if not isinstance(data, dict):  # a list, a string, a number: no tables to read
                raise TypeError(f"{type(data).__name__} is not a JSON object")
            shares = {str(k): float(v) for k, v in data["shares"].items()}
            cost = {str(k): float(v) for k, v in data["cost"].items()}
            rate = {str(k): float(v) for k, v in data.get("rate", {}).items()}
            prior = {str(k): float(v) for k, v in data.get("prior", {}).items()}
        except (TypeError, KeyError, AttributeError, ValueError) as err:
            raise InputError(f"not a plan of arms ({type(err).__name__}: {err})") from None
        for key in shares:
            arm = Arm.of(key)
            if arm.surface not in CATALOGUE or arm.strategy not in strategy.STRATEGIES:
                raise InputError(f"plan: no arm {key!r} (surfaces: {', '.join(CATALOGUE)})")
        if set(cost) != set(shares) or not all(c > 0 and math.isfinite(c) for c in cost.values()) \
                or not any(s > 0 for s in shares.values()) or \
                not all(s >= 0 and math.isfinite(s) for s in shares.values()):
            raise InputError("plan: every arm needs a share (>= 0, some > 0) and a cost (> 0)")
        return cls(shares, cost, rate, prior)

    def fingerprint(self) -> str:
        """What a ledger key records of the plan: a digest of its probabilities."""
        text = json.dumps({k: round(v, 6) for k, v in self.probabilities().items()},
                          sort_keys=True)
        return hashlib.sha256(text.encode()).hexdigest()[:12]

    def surfaces(self) -> list[str]:
        return sorted({Arm.of(k).surface for k in self.shares})


def plan(entries: list[Entry], weights: dict[str, float], used: dict[str, Usage] | None = None,
         *, pin_strategies: bool = False) -> Plan:
    """The plan over the arms of ``entries`` × the strategies of ``weights`` (weight > 0 and
    the entry pairs with it), from the discounted ``used`` history (``history``). With
    ``pin_strategies`` (``--strategy`` given), each strategy keeps its weight and only the
    split of its time over the surfaces adapts."""
    used = used or {}
    arms = [Arm(e.name, s) for e in entries for s, w in sorted(weights.items())
            if w > 0 and e.pairs_with(s)]
    if not arms:
        raise InputError("no arm to fuzz: no surface here pairs with the strategies chosen")
    entry = {e.name: e for e in entries}
    prior_raw = {a.key: entry[a.surface].prior * weights[a.strategy] for a in arms}
    total = sum(prior_raw.values())
    prior = {k: v / total for k, v in prior_raw.items()}
    rate = {k: (u.value + PRIOR_CAUSES * prior[k]) / (u.seconds + PRIOR_SECONDS)
            for k, u in ((k, used.get(k, Usage())) for k in prior)}
    shares = _with_floor(rate) if not pin_strategies else _pinned(arms, rate, weights)
    seen = [u for k, u in used.items() if Arm.of(k).surface == "default" and u.cases > 0]
    base = sum(u.seconds for u in seen) / sum(u.cases for u in seen) if seen else CASE_SECONDS
    cost = {}
    for a in arms:
        u = used.get(a.key, Usage())
        expected = base * entry[a.surface].cost
        cost[a.key] = (u.seconds + PRIOR_CASES * expected) / (u.cases + PRIOR_CASES)
    return Plan(shares, cost, {k: r * 3600 for k, r in rate.items()}, prior)


def _with_floor(rate: dict[str, float]) -> dict[str, float]:
    """Shares proportional to the rates, over a floor dealt out evenly."""
    total = sum(rate.values())
    n = len(rate)
    return {k: FLOOR / n + (1 - FLOOR) * r / total for k, r in rate.items()}


def _pinned(arms: list[Arm], rate: dict[str, float], weights: dict[str, float]
            ) -> dict[str, float]:
    """Each strategy's share as its weight says; within it, the surfaces by rate and floor."""
    total = sum(weights[s] for s in {a.strategy for a in arms})
    shares = {}
    for name in {a.strategy for a in arms}:
        own = _with_floor({a.key: rate[a.key] for a in arms if a.strategy == name})
        shares.update({k: v * weights[name] / total for k, v in own.items()})
    return shares

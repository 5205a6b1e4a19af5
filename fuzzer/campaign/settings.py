"""A campaign's settings, and case ``i`` of a campaign as a pure function of them.

Case ``i`` is a pure function of (seed, i, grammar, dtypes, strategy weights or the plan of arms,
recipe), so any case can be regenerated exactly and a campaign resumes from its ledger; with a
guided search's pool, a case may instead mutate one of the pool's cases (``guided``), and its case
file names its parent. With a plan (``arms``), case ``i`` draws its arm, a surface and a strategy,
from it; without one, every case compiles on the recipe's own surface (pinned by flags).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import torch

from fuzzer.campaign import guided
from fuzzer.campaign.arms import Plan
from fuzzer.corpus.case import Case
from fuzzer.corpus.ledger import DEFAULT_SURFACE, campaigns_in, ledger_path, same_campaign
from fuzzer.device import Device
from fuzzer.errors import InputError
from fuzzer.execute import memcheck
from fuzzer.execute.recipe import Recipe
from fuzzer.execute.surface import CATALOGUE
from fuzzer.execute.task import Task
from fuzzer.execute.workers import Recycle
from fuzzer.gen import inputs, strategy
from fuzzer.gen.strategy import DRAWS
from fuzzer.ir.graph import Graph
from fuzzer.judge.kinds import COUNTED
from fuzzer.judge.verdict import Verdict


@dataclass
class Settings:
    out: Path = Path("corpus")  # where findings are saved (the corpus)
    device: Device = Device("cpu")
    cases: int | None = None
    seconds: float | None = None
    seed: int = 0
    grammar: str = "mixed"
    dtypes: tuple[str, ...] = ("float32", "bfloat16", "float16")
    draws: int = DRAWS
    workers: int = 1
    gpus: tuple[int, ...] | None = None  # --gpus: indices of the visible GPUs (default all)
    recipe: Recipe = Recipe()  # how every case compiles and is judged
    timeout: float = 300
    resume: bool = False
    keep_benign: bool = False  # also save weak-flip and benign cases (not findings)
    seed_graph: Graph | None = None  # --seed-model: mutate this graph instead of generating
    seed_inputs: dict[str, torch.Tensor] | None = None
    seed_model: str = ""  # the file seed_graph was captured from
    strategies: dict[str, float] | None = None  # name -> weight (gen.strategy); None: defaults
    search: str = "random"  # guided.SEARCHES: guided mutates the best near misses too
    recycle: Recycle = field(default_factory=Recycle)  # when a worker is replaced (workers)
    plan: Plan | None = None  # arms: surface x strategy by yield (campaign.arms); None: pinned
    malloc_check: bool = False  # workers under glibc's malloc checking (execute.memcheck)

    def __post_init__(self) -> None:
        self.device = Device(self.device)

    def weights(self) -> dict[str, float]:
        return self.strategies if self.strategies is not None \
            else strategy.parse_weights((), self.grammar)

    def ledger_key(self) -> dict:
        """What makes two runs one campaign (``corpus.ledger``): everything case ``i`` depends
        on. Defaults added since are left out, so older ledgers still resume."""
        recipe = self.recipe
        key = {"seed": self.seed, "grammar": self.grammar, "dtypes": list(self.dtypes),
               "backend": recipe.backend, "seed_model": self.seed_model,
               "strategies": {k: v for k, v in sorted(self.weights().items())}}
        if recipe.policy != "float64":
            key["policy"] = recipe.policy
        if recipe.config:
            key["config"] = dict(sorted(recipe.config.items()))
        if not recipe.surface.is_default:
            key["surface"] = dict(sorted(recipe.surface.to_dict().items()))
        if recipe.flags is not None and not recipe.flags.is_default:
            key["flags"] = dict(sorted(recipe.flags.to_dict().items()))
        if self.search != "random":
            key["search"] = self.search
        if self.draws != DRAWS:
            key["draws"] = self.draws
        if self.plan is not None:
            key["plan"] = self.plan.fingerprint()
        return key

    def check_resume(self) -> None:
        """``--resume`` continues the campaign these settings describe; InputError, naming the
        flags that differ, when ``out`` holds only other campaigns. (Nothing recorded at all:
        a new campaign starts.)"""
        if not self.resume or ledger_path(self.out, self.ledger_key()).exists():
            return
        held = campaigns_in(self.out)
        if not held or any(same_campaign(key, self.ledger_key()) for _, key in held):
            return
        differ = "; ".join(key_difference(held[0][1], self.ledger_key()))
        raise InputError(f"--resume: {self.out} holds another campaign: {differ}. Give the "
                         "recorded flags to resume it, or leave out --resume to start a new "
                         "campaign beside it (each keeps its own ledger)")


# The flag that sets each field of a ledger key, and the value a field left out stands for.
FLAGS = {"seed": "--seed", "grammar": "--grammar", "dtypes": "--dtype", "backend": "--backend",
         "seed_model": "--seed-model", "strategies": "--strategy", "policy": "--policy",
         "config": "--inductor-config", "surface": "--dynamic/--mode/--training",
         "search": "--search", "draws": "--draws", "plan": "--plan (the arms' shares)"}
LEFT_OUT = {"policy": "float64", "config": {}, "search": "random", "draws": DRAWS,
            "surface": DEFAULT_SURFACE, "plan": ""}


def _filled(key: dict) -> dict:
    return {**LEFT_OUT, **key}


def key_difference(recorded: dict, key: dict) -> list[str]:
    """The flags whose values differ between a recorded campaign and this one, as a person
    reads them: ``--seed (recorded 13, now 0)``."""
    old, new = _filled(recorded), _filled(key)

    def shown(value: object) -> str:
        if isinstance(value, list):
            return ",".join(map(str, value))
        if isinstance(value, dict):
            return ",".join(f"{k}={v:g}" if isinstance(v, float) else f"{k}={v}"
                            for k, v in sorted(value.items())) or "none"
        return str(value) if value != "" else "none"

    return [f"{FLAGS.get(field, field)} (recorded {shown(old.get(field))}, now "
            f"{shown(new.get(field))})" for field in sorted(set(old) | set(new), key=str)
            if old.get(field) != new.get(field)]


def worker_env(settings: Settings) -> dict[str, str] | None:
    """What a campaign's workers are started with: glibc's malloc checking where asked."""
    return memcheck.environment() if settings.malloc_check else None


def surface_name(recipe: Recipe) -> str:
    """The catalogue surface a case ran on: its own name, ``default`` for the default compile
    with no option set, else ``pinned`` (flags chose it: not an arm of the catalogue)."""
    if recipe.surface.name:
        return recipe.surface.name
    return "default" if recipe.surface.is_default and not recipe.config else "pinned"


def case_seed(seed: int, index: int) -> int:
    return (seed * 1_000_003 + index) & 0x7FFF_FFFF


def make_case(settings: Settings, index: int,
              pool: guided.SeedPool | None = None) -> tuple[Case, Task]:
    """Case ``index``: its graph, its input draws, and the task that tests them; with a guided
    search's ``pool``, maybe a mutant of one of its cases instead (``guided.wants_mutant``)."""
    seed = case_seed(settings.seed, index)
    dtype = settings.dtypes[index % len(settings.dtypes)]
    recipe = settings.recipe
    parent = guided.wants_mutant(seed, pool) if pool is not None else None
    if parent is not None:
        graph, draws = guided.mutant(parent, seed, settings.draws)
        dtype, chosen, recipe = parent.dtype, "guided", parent.recipe or recipe
    elif settings.seed_graph is not None:
        from fuzzer.gen.mutate import mutate

        graph = mutate(settings.seed_graph, seed)
        draws = inputs.draws_around(graph, settings.seed_inputs or {}, seed, settings.draws)
        chosen = "mutant"
    else:
        arm = settings.plan.choose(seed) if settings.plan is not None else None
        picked = strategy.STRATEGIES[arm.strategy] if arm is not None \
            else strategy.choose(seed, settings.weights())
        recipe = settings.recipe.on(CATALOGUE[arm.surface]) if arm is not None else recipe
        graph = strategy.generate(picked, seed, settings.grammar, dtype)
        if recipe.surface.training:
            graph = strategy.for_training(graph)
        draws = inputs.draws(graph, seed, settings.draws, picked.cycle)
        if recipe.surface.deployed:  # one package per case: its constants are the first draw's
            draws = inputs.same_state(graph, draws)
        chosen = picked.name
    origin = {"campaign_seed": settings.seed, "index": index, "strategy": chosen,
              "surface": surface_name(recipe)}
    if parent is not None:
        origin.update(parent_index=parent.index, parent_score=round(parent.score, 4))
    if settings.seed_model:
        origin["seed_model"] = settings.seed_model
    case = Case(graph=graph, inputs={}, device=settings.device, dtype=dtype,
                recipe=recipe, seed=seed,
                grammar="mutant" if settings.seed_graph is not None or parent is not None
                else settings.grammar, origin=origin)
    task = Task(graph=graph, draws=[d for _, d in draws], magnitudes=[m for m, _ in draws],
                device=settings.device, recipe=recipe)
    return case, task


def arm_of(origin: dict) -> str:
    """The arm a case was spent on, ``surface/strategy`` (``campaign.arms``), from its origin."""
    return f"{origin.get('surface', 'default')}/{origin.get('strategy', '')}"


def kept_case(settings: Settings, case: Case, task: Task, verdict: Verdict) -> Case | None:
    """The case file a verdict earns (the draw it names, and the verdict), or None: only
    findings are kept, and with ``keep_benign`` weak flips and benign differences too."""
    if not (verdict.is_finding or (settings.keep_benign and verdict.kind in COUNTED)):
        return None
    draw = verdict.draw or 0
    case.inputs = task.draws[draw]
    case.verdict = verdict
    case.origin["magnitude"] = task.magnitudes[draw] if task.magnitudes else None
    if settings.malloc_check or memcheck.active():  # its worker ran under malloc checking
        case.origin[memcheck.ORIGIN_KEY] = True
    return case

"""What every ``numfuzz`` command shares: the group, its one place for user errors, and helpers.

Exit codes: 0 ok, 1 findings present (for ``replay``: the divergence reproduces), 2 usage or input
error. Every user error is one line on stderr, never a traceback: the group itself turns the
pipeline's validation errors (``fuzzer.errors.InputError``) and a failed read or write of the
environment (``OSError``: a full disk, a folder made read-only under a running command) into
``UserError``, so no command wraps them on its own. Output folders are checked before any work
starts (``writable``).
"""

from __future__ import annotations

import json
import math
import os
import re
import shlex
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click

from fuzzer.device import Device
from fuzzer.errors import HarnessError, InputError
from fuzzer.execute.recipe import Recipe, check_backend, trust_backend

if TYPE_CHECKING:
    from fuzzer.campaign.arms import Plan, Usage

# a click command function (or command) that option decorators wrap and hand back as it was
Decorated = TypeVar("Decorated", bound=Callable[..., object])

# a value ``--inductor-config key=value`` reads: true/false, none, an integer or a word
OptionValue = bool | int | str | None


class UserError(click.ClickException):
    """A problem with what the user gave us: one line, exit 2."""

    exit_code = 2

    def show(self, file: object = None) -> None:
        click.echo(f"numfuzz: error: {self.message}", err=True)


class NumfuzzGroup(click.Group):
    """The command group; every subcommand's validation errors become one line and exit 2, and so
    do click's own usage errors (an unknown option, a missing argument, a bad choice)."""

    def main(self, args: Sequence[str] | None = None, prog_name: str | None = None,
             complete_var: str | None = None, standalone_mode: bool = True,
             **extra: Any) -> Any:
        if not standalone_mode:
            return super().main(args, prog_name, complete_var, standalone_mode=False, **extra)
        try:
            code = super().main(args, prog_name, complete_var, standalone_mode=False, **extra)
        except click.UsageError as err:
            where = f" (see {err.ctx.command_path} --help)" if err.ctx is not None else ""
            click.echo(f"numfuzz: error: {' '.join(err.format_message().split())}{where}",
                       err=True)
            sys.exit(2)
        except click.ClickException as err:
            err.show()
            sys.exit(err.exit_code)
        except click.Abort:
            click.echo("numfuzz: aborted", err=True)
            sys.exit(1)
        sys.exit(code if isinstance(code, int) else 0)

    def invoke(self, ctx: click.Context) -> object:
        try:
            return super().invoke(ctx)
        except (InputError, HarnessError) as err:  # CaseError, StoreError, InvalidGraph …
            raise UserError(str(err)) from None
        except OSError as err:  # the environment failed under a running command
            from fuzzer.corpus.files import os_failure

            raise UserError(os_failure(err)) from None
        except KeyboardInterrupt:
            click.echo(f"numfuzz: interrupted; everything found so far is saved"
                       f"{resume_hint(ctx)}", err=True)
            sys.exit(130)


def resume_hint(ctx: click.Context) -> str:
    """How to continue an interrupted ``run``: the same command with ``--resume``."""
    if ctx.invoked_subcommand != "run":
        return ""
    args = [a for a in sys.argv[1:] if a != "--resume"]
    return (f"; to continue: numfuzz {shlex.join(args)} --resume (with the same campaign "
            "flags: seed, grammar, dtype, backend, strategies, compile options)")


@click.group(cls=NumfuzzGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="numfuzz")
@click.option("--trust-backend", "trusted", multiple=True, metavar="MODULE:FUNCTION",
              help="Let case files use this custom torch.compile backend (it is imported and "
                   "run). Without it a case file naming module:function is refused.")
@click.option("--malloc-check", is_flag=True,
              help="Run every worker and script under glibc's malloc checking: a compiled "
                   "kernel that writes past its buffer aborts its worker (a crash finding) "
                   "instead of passing unnoticed. Needs glibc 2.34 or later.")
def main(trusted: tuple[str, ...], malloc_check: bool) -> None:
    """Differential fuzzer for torch.compile numerics: eager vs Inductor vs float64."""
    if malloc_check:
        from fuzzer.execute import memcheck

        memcheck.enable()
    for name in trusted:
        if ":" not in name:
            raise UserError(f"--trust-backend takes module:function, got {name!r}")
        importable_backend(name, "--trust-backend")
        trust_backend(name)


def follow_malloc_check(origin: dict, kind: str = "") -> dict[str, str]:
    """The environment a case found under glibc's malloc checking, or a memory-unsafe one, runs
    its workers under here too (``memcheck.follow``; {} where none)."""
    from fuzzer.execute import memcheck

    return memcheck.follow(origin, lambda text: click.echo(f"numfuzz: {text}", err=True), kind)


def writable(folder: Path, option: str) -> Path:
    """An output folder checked before any work starts (``corpus.files.ready_to_write``)."""
    from fuzzer.corpus.files import ready_to_write

    return ready_to_write(folder, option)


def trusted_on_command_line(backend: str) -> str:
    """A ``--backend`` the user typed: registered names are checked, module:function is trusted
    (its case files load in this process and the workers it starts)."""
    if ":" in backend:
        importable_backend(backend, "--backend")
        trust_backend(backend)
        return backend
    try:
        return check_backend(backend)
    except InputError as err:
        raise UserError(str(err)) from None


def importable_backend(name: str, option: str) -> None:
    """A ``module:function`` backend the user named, imported once here before any work: a typo
    is one line now, not a harness error on every case. It runs the user's own module, which
    naming it on the command line allows; the workers find it the same way (the current
    directory first on the path)."""
    from fuzzer.execute.recipe import resolve_backend

    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    try:
        backend = resolve_backend(name)
    except Exception as err:
        raise UserError(f"{option} {name}: cannot import it: {type(err).__name__}: "
                        f"{' '.join(str(err).split())[:200]}") from None
    if not callable(backend):
        raise UserError(f"{option} {name}: is a {type(backend).__name__}, not a function")


def parse_duration(text: str | None) -> float | None:
    """'90s', '30m', '8h', '1h30m' -> seconds."""
    if text is None:
        return None
    parts = re.fullmatch(r"(?:(\d+(?:\.\d+)?)h)?(?:(\d+(?:\.\d+)?)m)?(?:(\d+(?:\.\d+)?)s?)?",
                         text.strip())
    if not text.strip() or not parts or not any(parts.groups()):
        raise UserError(f"cannot read duration {text!r}: use e.g. 90s, 30m, 8h or 1h30m")
    h, m, s = (float(g) if g else 0.0 for g in parts.groups())
    return h * 3600 + m * 60 + s


def resolve_device(device: str) -> Device:
    import torch

    if device == "auto":
        return Device("cuda" if torch.cuda.is_available() else "cpu")
    if Device(device).is_cuda and not torch.cuda.is_available():
        raise UserError("--device cuda asked for, but this torch sees no CUDA device")
    return Device(device)


def supported_dtypes(device: str, wanted: str) -> tuple[str, ...]:
    if wanted != "all":
        return ({"fp32": "float32", "bf16": "bfloat16", "fp16": "float16"}.get(wanted, wanted),)
    return ("float32", "bfloat16", "float16")


def strict_json(value: object) -> str:
    """JSON that strict parsers accept: inf/NaN (a nonfinite finding's values) become strings."""

    def clean(v: object) -> object:
        if isinstance(v, float) and not math.isfinite(v):
            return str(v)
        if isinstance(v, dict):
            return {k: clean(x) for k, x in v.items()}
        if isinstance(v, (list, tuple)):
            return [clean(x) for x in v]
        return v

    return json.dumps(clean(value), indent=2, allow_nan=False)


def is_tty() -> bool:
    return sys.stdout.isatty()


def stamped(text: str) -> str:
    """A progress line with the time of day in front."""
    return f"{time.strftime('%H:%M:%S')} {text}"


def log_line(text: str) -> None:
    """A timestamped progress line on stderr."""
    click.echo(stamped(text), err=True)


# ------------------------------------------------------------------ the compile surface


def campaign_options(command: Decorated) -> Decorated:
    """What a campaign fuzzes and how, the same for ``run`` and ``nightly``: the device, the
    grammar, the backend, a case's timeout, the policy discrete flips are judged by, the
    strategies' weights, the engine (and Ray's address) and the search."""
    from fuzzer.campaign.guided import SEARCHES
    from fuzzer.gen.strategy import STRATEGIES
    from fuzzer.judge.kinds import POLICIES

    for decorate in reversed((
        click.option("--device", type=click.Choice(["auto", "cpu", "cuda"]), default="auto",
                     show_default=True),
        click.option("--grammar", type=click.Choice(["mixed", "vision", "attention"]),
                     default="mixed", show_default=True),
        click.option("--backend", default="inductor", show_default=True,
                     help="torch.compile backend: inductor, aot_eager, eager, or "
                          "module:function."),
        click.option("--timeout", type=float, default=300, show_default=True,
                     help="Seconds per case before the worker is killed and the case is a "
                          "timeout."),
        click.option("--policy", type=click.Choice(POLICIES), default="float64",
                     show_default=True,
                     help="float64: a discrete flip is a finding only where compiled is further "
                          "from float64 than eager (PyTorch's rule). parity: every discrete "
                          "mismatch with eager is one (eager's rounding is your spec); each "
                          "element is still classed as regressing or benign."),
        click.option("--strategy", "strategies", multiple=True, metavar="NAME=WEIGHT",
                     help="Weight of a strategy (repeatable; 0 turns it off): "
                          + ", ".join(f"{n} [{s.weight:g}]" for n, s in STRATEGIES.items())
                          + ". A --grammar other than mixed keeps only the model strategies."),
        click.option("--engine", type=click.Choice(["local", "ray"]), default="local",
                     show_default=True,
                     help="local: worker processes here. ray: one actor per GPU (or per "
                          "--workers CPU slot) of a Ray cluster, which fuzzes (and, for a "
                          "night, minimizes and triages); needs numfuzz[ray]."),
        click.option("--ray-address", help="The Ray cluster to join (auto: the one `ray start` "
                                           "made here); default: start a local one."),
        click.option("--search", type=click.Choice(SEARCHES), default="random",
                     show_default=True,
                     help="guided: also spend half the cases mutating the best near misses so "
                          "far (cases where compiled is closest to failing the verdict rules); "
                          "see fuzzer/campaign/guided.py."),
    )):
        command = decorate(command)
    return command


def compile_options(command: Decorated) -> Decorated:
    """``--dynamic``, ``--mode``, ``--inductor-config`` and ``--training``: how a campaign
    compiles its cases (recorded in each, so replay, minimize and repro.py do the same)."""
    from fuzzer.execute.surface import MODES

    for decorate in reversed((
        click.option("--dynamic", is_flag=True,
                     help="Compile with dynamic=True (kernels over symbolic sizes)."),
        click.option("--mode", type=click.Choice(MODES), default="default", show_default=True,
                     help="torch.compile mode (reduce-overhead: CUDA only)."),
        click.option("--inductor-config", "inductor_config", multiple=True, metavar="KEY=VALUE",
                     help="An Inductor option for every case (repeatable), from the same "
                          "allowlist as case files (fuzzer/execute/config.py), e.g. "
                          "cpp_wrapper=true, numerics=strict."),
        click.option("--training", is_flag=True,
                     help="Run forward and backward; judge the gradients of inputs and weights "
                          "against eager and a float64 backward, like outputs."),
    )):
        command = decorate(command)
    return command


def arm_options(command: Decorated) -> Decorated:
    """``--surface``, ``--plan`` and ``--no-malloc-check``: which surfaces of the catalogue a
    campaign splits its time over by yield (``campaign.arms``), a recorded plan to replay, and
    whether its CPU workers run under glibc's malloc checking (on by default where glibc has
    it: a heap overflow then shows every time it happens)."""
    from fuzzer.execute.surface import CATALOGUE

    for decorate in reversed((
        click.option("--surface", "surfaces", multiple=True, type=click.Choice(list(CATALOGUE)),
                     help="A surface of the catalogue to fuzz on (repeatable; default: every one "
                          "this torch and device run). The time goes to each surface x strategy "
                          "arm by its yield of new causes per CPU-second. --dynamic, --mode, "
                          "--training and --inductor-config pin one surface instead."),
        click.option("--plan", "plan_file", type=click.Path(dir_okay=False, exists=True,
                                                            path_type=Path),
                     help="Replay a recorded plan of arms (a night's night.json, or a JSON "
                          "object with shares and cost): with the same seed, the same cases."),
        click.option("--no-malloc-check", "no_malloc_check", is_flag=True,
                     help="Do not run the CPU workers under glibc's malloc checking (on by "
                          "default where glibc has it; numfuzz --malloc-check forces it)."),
    )):
        command = decorate(command)
    return command


def pinned_surface(dynamic: bool, mode: str, training: bool,
                   inductor_config: tuple[str, ...]) -> bool:
    """Did the flags pin a compile surface (so no plan of arms is made)?"""
    return dynamic or mode != "default" or training or bool(inductor_config)


def surfaces_of(surfaces: tuple[str, ...], pinned: bool, plan_file: Path | None,
                seed_model: Path | None = None) -> tuple[str, ...] | None:
    """The catalogue surfaces a campaign's plan covers, or None for no plan: flags pin one
    surface, and a seed model is mutated on the surface it came with."""
    if pinned and (surfaces or plan_file):
        raise UserError("--surface and --plan choose among the catalogue's surfaces; --dynamic, "
                        "--mode, --training and --inductor-config pin one of your own: give one "
                        "or the other")
    if pinned or seed_model is not None:
        return None
    from fuzzer.execute.surface import CATALOGUE

    return surfaces or tuple(CATALOGUE)


def plan_of(surfaces: tuple[str, ...] | None, plan_file: Path | None, device: str,
            backend: str, weights: dict[str, float], pin_strategies: bool,
            reports: Path | None = None) -> Plan | None:
    """A campaign's plan of arms (``campaign.arms.Plan``): recorded (``--plan``), or made from
    the surfaces here that run and the yields ``reports``' store holds (priors without one);
    None for a pinned surface."""
    from fuzzer.campaign import arms
    from fuzzer.execute import surface

    if plan_file is not None:
        try:
            data = json.loads(plan_file.read_text())
        except (OSError, ValueError) as err:
            raise UserError(f"--plan {plan_file}: not JSON ({err})") from None
        return arms.Plan.from_dict(data.get("plan", data) if isinstance(data, dict) else data)
    if surfaces is None:
        return None
    entries, why = surface.available(device, backend, list(surfaces))
    if not entries:
        raise UserError(f"no surface of {', '.join(surfaces)} runs here: "
                        + "; ".join(f"{n}: {w}" for n, w in why.items()))
    used: dict[str, Usage] = {}
    if reports is not None and (reports / "findings.sqlite").is_file():
        from fuzzer.nightly.night import arm_history
        from fuzzer.report.store import Store

        with Store.in_reports(reports) as store:
            used = arm_history(store, time.strftime("%Y-%m-%d"))
    return arms.plan(entries, weights, used, pin_strategies=pin_strategies)


def malloc_check_by_default(device: str, no_malloc_check: bool) -> bool:
    """Do a CPU campaign's workers run under glibc's malloc checking (``Settings.malloc_check``)?
    Yes unless told not to, or glibc has none (then without, as before), or the whole process
    already runs under it (``numfuzz --malloc-check``)."""
    from fuzzer.execute import memcheck

    return Device(device).is_cpu and not no_malloc_check and not memcheck.active() \
        and memcheck.library() is not None


def recipe_of(backend: str, inductor_config: tuple[str, ...], dynamic: bool, mode: str,
              training: bool, policy: str, device: str) -> Recipe:
    """The recipe a campaign's options ask for, built and checked once, here; UserError (one
    line, exit 2) when it cannot compile so on ``device``."""
    from fuzzer.errors import CaseError
    from fuzzer.execute.surface import Surface

    recipe = Recipe(trusted_on_command_line(backend), inductor_options(inductor_config),
                    Surface(dynamic=dynamic, mode=mode, training=training), policy)
    try:
        recipe.check_for(device)
    except CaseError as err:
        raise UserError(f"--mode: {err}") from None
    return recipe


def inductor_options(pairs: tuple[str, ...]) -> dict:
    """``key=value`` pairs as an Inductor config dict: true/false, none, integers and words;
    each key and value checked against the allowlist case files obey."""
    from fuzzer.errors import CaseError
    from fuzzer.execute import config

    options: dict[str, OptionValue] = {}
    for pair in pairs:
        key, sep, text = pair.partition("=")
        if not sep or not key.strip():
            raise UserError(f"--inductor-config takes KEY=VALUE, got {pair!r}")
        options[key.strip()] = _option_value(text.strip())
    try:
        return config.check(options)
    except CaseError as err:
        raise UserError(f"--inductor-config: {err}") from None


def _option_value(text: str) -> OptionValue:
    words = {"true": True, "false": False, "none": None}
    if text.lower() in words:
        return words[text.lower()]
    try:
        return int(text)
    except ValueError:
        return text


def knob_names(text: str | None) -> tuple[str, ...] | None:
    """``--knobs``: comma-separated knob names, each checked (one line for an unknown one);
    None where not given."""
    if text is None:
        return None
    from fuzzer.triage.attribute import knob_named

    names = tuple(n.strip() for n in text.split(",") if n.strip())
    for name in names:
        try:
            knob_named(name)
        except KeyError as err:
            raise UserError(str(err.args[0])) from None
    return names


# ``--confirm-with`` (``triage``, ``nightly``, ``findings --ledger --measure``).
CONFIRM_WITH = click.option(
    "--confirm-with", "confirm_with", multiple=True, metavar="PYTHON",
    help="Another environment's python (e.g. a nightly build's), repeatable: the case's "
         "repro.py runs there too, and a cause is drafted only when it reproduces on every "
         "torch named (one that no longer does on a newer torch is fixed upstream there).")

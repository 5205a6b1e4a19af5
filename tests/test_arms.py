"""Arms and the plan (issue 50): a campaign splits its time over surface x strategy arms by their
yield of new causes per CPU-second, over a floor that keeps every arm tried; case ``i`` is a pure
function of (seed, i, plan); a fake bug planted on one surface pulls a simulated-clock campaign's
time toward it night after night while the barren arms keep their floor."""

from __future__ import annotations

from pathlib import Path

import pytest

from fuzzer.campaign import arms
from fuzzer.campaign.local import run_campaign
from fuzzer.campaign.settings import arm_of, make_case
from fuzzer.corpus.case import Case
from fuzzer.errors import InputError
from fuzzer.execute.surface import CATALOGUE
from fuzzer.gen import strategy
from fuzzer.nightly.night import arm_history
from fuzzer.report.store import Store
from fuzzer.triage.signature import float_core
from tests.conftest import campaign_settings

# The surfaces a custom (fake) backend can take: those without Inductor options or modes.
FAKE_SURFACES = [CATALOGUE[n] for n in ("default", "dynamic", "automatic-dynamic", "training")]
WEIGHTS = {"special-functions": 1.0, "decimal": 1.0}


def test_a_plan_from_priors_gives_every_arm_its_floor_and_shares_time_not_cases() -> None:
    entries = [CATALOGUE["default"], CATALOGUE["freezing"], CATALOGUE["automatic-dynamic"]]
    plan = arms.plan(entries, strategy.parse_weights(()))
    assert sum(plan.shares.values()) == pytest.approx(1.0)
    floor = arms.FLOOR / len(plan.shares)
    assert min(plan.shares.values()) >= floor
    # freezing pairs only with the programs that hold module state
    assert "freezing/signs" not in plan.shares and "freezing/models" in plan.shares
    # a higher prior is a larger share; a dearer arm gets its share of time, so fewer cases
    assert plan.shares["freezing/models"] > plan.shares["default/models"]
    p = plan.probabilities()
    assert plan.cost["automatic-dynamic/models"] > plan.cost["default/models"]
    assert p["automatic-dynamic/models"] / p["default/models"] == pytest.approx(
        plan.shares["automatic-dynamic/models"] / plan.shares["default/models"]
        * plan.cost["default/models"] / plan.cost["automatic-dynamic/models"])


def test_yield_moves_the_shares_and_a_barren_arm_keeps_its_floor() -> None:
    used = {"default/decimal": arms.Usage(cases=500, seconds=20000, value=0.0),
            "dynamic/decimal": arms.Usage(cases=100, seconds=4000, causes=3, value=3.0)}
    before = arms.plan(FAKE_SURFACES, WEIGHTS)
    after = arms.plan(FAKE_SURFACES, WEIGHTS, used)
    assert after.shares["dynamic/decimal"] > 2 * before.shares["dynamic/decimal"]
    assert after.shares["default/decimal"] < before.shares["default/decimal"]
    assert after.shares["default/decimal"] >= arms.FLOOR / len(after.shares)
    pinned = arms.plan(FAKE_SURFACES, WEIGHTS, used, pin_strategies=True)
    by_strategy = pinned.strategy_weights()
    assert by_strategy["decimal"] == pytest.approx(by_strategy["special-functions"], rel=0.3)


def test_older_nights_count_less() -> None:
    rows = [(0, "a/x", arms.Usage(seconds=100, value=1)),
            (int(arms.HALF_LIFE), "a/x", arms.Usage(seconds=100, value=1))]
    assert arms.history(rows)["a/x"].value == pytest.approx(1.5)


def test_a_case_is_a_pure_function_of_seed_index_and_plan(tmp_path: Path) -> None:
    plan = arms.plan(FAKE_SURFACES, WEIGHTS)
    settings = campaign_settings(out=tmp_path, seed=3, backend="tests.fakes:inject_inf",
                                 strategies=WEIGHTS, plan=plan)
    again = campaign_settings(out=tmp_path, seed=3, backend="tests.fakes:inject_inf",
                              strategies=WEIGHTS, plan=arms.Plan.from_dict(plan.to_dict()))
    drawn = {}
    for i in range(40):
        (a, _), (b, _) = make_case(settings, i), make_case(again, i)
        assert (a.graph.digest(), a.recipe) == (b.graph.digest(), b.recipe)
        assert a.recipe.surface.name == a.origin["surface"]
        drawn[arm_of(a.origin)] = drawn.get(arm_of(a.origin), 0) + 1
    assert len({arm.split("/")[0] for arm in drawn}) >= 3  # the plan spreads over surfaces
    other = arms.plan(FAKE_SURFACES[:2], WEIGHTS)
    assert settings.ledger_key() != campaign_settings(
        out=tmp_path, seed=3, backend="tests.fakes:inject_inf", strategies=WEIGHTS,
        plan=other).ledger_key()  # a campaign is its seed and its plan


def test_without_a_plan_a_campaign_draws_what_it_always_drew(tmp_path: Path) -> None:
    settings = campaign_settings(out=tmp_path, seed=8)
    for i in range(20):
        case, _ = make_case(settings, i)
        seed = (8 * 1_000_003 + i) & 0x7FFF_FFFF
        assert case.origin["strategy"] == strategy.choose(seed, settings.weights()).name
        assert case.origin["surface"] == "default" and case.recipe.surface.name == ""


def test_a_recorded_plan_is_checked_field_by_field() -> None:
    good = arms.plan(FAKE_SURFACES, WEIGHTS).to_dict()
    with pytest.raises(InputError, match="no arm"):
        arms.Plan.from_dict({**good, "shares": {"nowhere/decimal": 1.0},
                             "cost": {"nowhere/decimal": 1.0}})
    with pytest.raises(InputError, match="share"):
        arms.Plan.from_dict({**good, "cost": {k: -1 for k in good["cost"]}})
    with pytest.raises(InputError):
        arms.Plan.from_dict(["not", "a", "plan"])


def _night(store: Store, night: str, out: Path, seen: set[tuple[str, ...]]) -> dict[str, float]:
    """One simulated night at the campaign level: the plan from the store's yields, a campaign
    on it, and each finding whose core is new credited to its arm (what the nightly's pipeline
    does after minimizing and triaging). Its CPU-seconds per surface."""
    plan = arms.plan(FAKE_SURFACES, WEIGHTS, arm_history(store, night), pin_strategies=True)
    settings = campaign_settings(out=out, device="cpu", seconds=40, seed=len(seen) + 7,
                                 backend="tests.fakes:nan_when_dynamic", strategies=WEIGHTS,
                                 draws=1, dtypes=("float32",), plan=plan)
    summary = run_campaign(settings)
    store.record_arms(night, {arm: row.to_dict() for arm, row in summary.arms.items()})
    for path in summary.paths:
        case = Case.load(path)
        core = tuple(float_core(case))
        if core not in seen:
            seen.add(core)
            store.credit(night, arm_of(case.origin), 1.0)
    spent: dict[str, float] = {}
    for arm, row in summary.arms.items():
        surface = arm.split("/")[0]
        spent[surface] = spent.get(surface, 0.0) + row.seconds
    return spent


def test_a_bug_planted_on_one_surface_pulls_the_time_toward_it(sim_clock, tmp_path: Path) -> None:
    """A fake backend wrong only where it compiles symbolic sizes (dynamic=True, or automatic
    dynamic's recompile): three simulated nights move the time there, and the barren surfaces
    (static, training) keep their floor."""
    store = Store(tmp_path / "findings.sqlite")
    seen: set[tuple[str, ...]] = set()
    nights = [_night(store, f"2030-01-0{n}", tmp_path / f"corpus{n}", seen) for n in (1, 2, 3)]
    store.close()
    dynamic = [(s.get("dynamic", 0) + s.get("automatic-dynamic", 0)) / sum(s.values())
               for s in nights]
    assert dynamic[2] > dynamic[0] + 0.15, nights
    final = arms.plan(FAKE_SURFACES, WEIGHTS, arm_history(Store(tmp_path / "findings.sqlite"),
                                                          "2030-01-04"), pin_strategies=True)
    floor = arms.FLOOR / len(final.shares)
    barren = [k for k in final.shares if k.split("/")[0] in ("default", "training")]
    assert barren and all(final.shares[k] >= floor * 0.99 for k in barren)
    assert all(final.shares[k] < final.shares[f"dynamic/{k.split('/')[1]}"] for k in barren)


def test_findings_yield_shows_the_standing_table(tmp_path: Path) -> None:
    import json

    from click.testing import CliRunner

    from fuzzer.cli import main

    with Store.in_reports(tmp_path) as store:
        store.record_arms("2030-01-01#1", {"default/decimal": {"cases": 10, "seconds": 40.0,
                                                               "findings": 2}})
        store.credit("2030-01-01#1", "default/decimal", 1.0)
    result = CliRunner().invoke(main, ["findings", "--reports", str(tmp_path), "--yield",
                                       "--json"])
    assert result.exit_code == 0, result.output
    rows = {r["arm"]: r for r in json.loads(result.output)["arms"]}
    row = rows["default/decimal"]
    assert (row["causes"], row["findings"], row["value"]) == (1, 2, 1.0)
    assert row["share"] > arms.FLOOR / len(rows)  # the arm that earned gets more than a floor

"""New means new: numfuzz remembers what it found. A night's cause that is one of its own ledger
causes (FINDINGS.md, ``fuzzer/causes.toml``) is a re-find under its id, never drafted as new;
causes that differ only in the view or elementwise op that carries them, or in NaN against a
loss of accuracy, are one mechanism with variants; the layout facts a generator chose are knobs
of the ablation, told in the signature, the title and the matching; a crash whose file already
names a known cause is settled by one run, whatever surface it showed on; and a night counts
new mechanisms, re-finds, known and by-design hits apart."""

from __future__ import annotations

import json
import random

import pytest
import torch
from click.testing import CliRunner

from fuzzer.cli.common import main
from fuzzer.execute.pool import RunnerPool
from fuzzer.gen import domains
from fuzzer.gen.grammar import Builder
from fuzzer.judge.kinds import Kind
from fuzzer.judge.verdict import Verdict
from fuzzer.nightly import pipeline
from fuzzer.nightly.backlog import Backlog
from fuzzer.nightly.buckets import tells
from fuzzer.nightly.night import Context, Night, Spent
from fuzzer.report import draft
from fuzzer.report.store import Store
from fuzzer.triage import known, ledger
from fuzzer.triage.attribute import Attribution, KnobResult
from fuzzer.triage.known import Conditions
from fuzzer.triage.signature import mechanism_key, same_mechanism
from tests import triage_fakes as tf
from tests.conftest import night_settings

VALUE = {"device": "cpu", "backend": "inductor", "vanishes_with": []}


def cause(**fields) -> dict:
    return {"family": "accuracy", "core": [], **VALUE, **fields}


# ------------------------------------------------------------------ the ledger, matched


def test_the_ledger_loads_and_each_kept_repro_is_there() -> None:
    causes = ledger.causes()
    ids = [c.id for c in causes]
    assert len(ids) == len(set(ids)) and {"N1", "N7", "N19", "K27", "X2"} <= set(ids)
    assert all(c.repro_paths() for c in causes if c.id in ("N5", "N7", "N9", "N19", "N20"))
    assert {c.id[0]: c.counted_as for c in causes} == {
        "N": ledger.REFIND, "K": known.KNOWN, "X": known.BY_DESIGN, "Z": known.BY_DESIGN}
    assert ledger.named("N19").state() == "found, not filed"


def test_the_most_specific_form_wins_n7_before_n6() -> None:
    """N6 (a write not seen through a window passed beside its input) and N7 (the same with the
    input at a storage offset) both match aliased arguments at an offset; N7 says more."""
    n7 = cause(layout=["aliased", "offset"], aliased_arguments="read")
    n6 = cause(layout=["aliased"], aliased_arguments="read")
    assert ledger.match(n7).id == "N7"
    assert ledger.match(n6).id == "N6"
    assert ledger.match(cause(layout=["offset"])) is None  # an offset alone is neither


def test_n19_is_known_by_its_layout_and_its_surface_not_by_a_linear_alone() -> None:
    gemm = {"needs": ["freezing=True", "max_autotune_gemm_backends=CPP"],
            "core": ["layer_norm", "linear", "add", "gt"], "family": "flip"}
    assert ledger.match(cause(**gemm, layout=["flat"])).id == "N19"
    assert ledger.match(cause(**gemm, layout=["offset"])).id == "N19"
    assert ledger.match(cause(**gemm)) is None  # no layout fact: another GEMM cause
    assert ledger.match(cause(**{**gemm, "needs": []}, layout=["flat"])) is None


def test_a_recorded_signature_is_its_cause_whatever_its_fields() -> None:
    """FINDINGS lists N1's signatures; a night that signs one again found N1."""
    assert ledger.match(cause(signature="6c3623d2fc4e456f")).id == "N1"
    assert ledger.match(cause(signature="0" * 16)) is None


def test_a_form_holds_only_where_every_condition_does() -> None:
    form = Conditions(family=("crash",), message_any=("conflicting declaration",))
    crash = {"family": "crash", "message": "CppCompileError: conflicting declaration 'auto x'"}
    assert form.matches(crash) and form.fingerprinted
    assert not form.matches({**crash, "message": "CppCompileError: something else"})
    assert not form.matches({**crash, "family": "accuracy"})
    either = Conditions(aliased_arguments="output", crashes_with=("ViewMeta",))
    assert either.matches({"family": "accuracy", "aliased_arguments": "output"})
    assert not either.matches({"family": "crash", "aliased_arguments": "output", "message": "x"})
    assert Conditions(layout=("flat",), family=("crash",)).fingerprinted is False


# ------------------------------------------------------------------ one mechanism, one draft


def test_views_that_carry_one_write_are_one_mechanism() -> None:
    """An export of a write through a view returning ``narrow``, ``x0[1::2]``, ``unsqueeze`` or
    ``diagonal`` of its input: one behaviour, four cores."""
    export = {"family": "aliasing", "stage": "export's decompositions", **VALUE}
    forms = [cause(**export, core=["mul_", view]) for view in
             ("narrow", "slice_step", "unsqueeze", "diagonal")]
    assert all(same_mechanism(forms[0], None, f, None) for f in forms[1:])
    other_stage = {**forms[0], "stage": "Inductor on the exported graph"}
    assert not same_mechanism(forms[0], None, other_stage, None)


def test_a_write_carried_out_by_another_elementwise_op_is_one_mechanism() -> None:
    """N7's write lands one element off; ``* -3.0`` or ``+ 1`` only carries it out."""
    a = cause(core=["pow_", "unsqueeze", "mul_scalar"], layout=["aliased", "offset"],
              aliased_arguments="read")
    b = cause(core=["add_", "add_scalar"], layout=["aliased", "offset"],
              aliased_arguments="read", family="nonfinite")
    assert same_mechanism(a, {"op": "pow_"}, b, {"op": "add_"})
    assert not same_mechanism(a, {"op": "pow_"}, {**b, "layout": ["aliased"]}, {"op": "add_"})


def test_nan_and_a_loss_of_accuracy_of_one_op_are_one_mechanism_two_ops_are_two() -> None:
    simd = {"vanishes_with": ["cpp.simdlen=0"]}
    erf_nan = cause(**simd, family="nonfinite", core=["erf", "reciprocal"])
    erf_loss = cause(**simd, family="accuracy", core=["erf"])
    expm1 = cause(**simd, family="accuracy", core=["expm1"])
    assert same_mechanism(erf_nan, {"op": "erf"}, erf_loss, {"op": "erf"})
    assert not same_mechanism(erf_loss, {"op": "erf"}, expm1, {"op": "expm1"})
    assert mechanism_key(erf_loss, None) is None  # unlocated, nothing structural: not told


def test_one_crash_is_one_mechanism_on_every_surface_and_two_programs_are_two() -> None:
    """A night merged a C++ compile error of ``sum → sum`` into one of ``view(int16) → abs_``:
    the same exception and frames (the compiler's), two bugs (N5 and N10)."""
    error = ["InductorError", "torch/_inductor/cpp_builder.py:build"]
    a = cause(family="crash", error=error, needs=["freezing=True"], core=["view_dtype", "abs_"])
    b = cause(family="crash", error=error, stage="export's decompositions",
              core=["view_dtype", "abs_", "narrow"])
    assert same_mechanism(a, None, b, None)  # one crash, another surface, a view more
    assert not same_mechanism(a, None, {**b, "error": ["RuntimeError", *error[1:]]}, None)
    summed = cause(family="crash", error=error, core=["sum", "sum"],
                   vanishes_with=["cpp.simdlen=0"])
    assert not same_mechanism(a, None, summed, None)


# ------------------------------------------------------------------ layout facts as knobs


def _laid_out_graph():
    b = Builder(random.Random(0), "float32")
    x = b.input((4, 6))
    w1, w2 = b.input((6,), role="w"), b.input((6,), role="w")
    view = b.op("slice", x, index=((1, 3, None),))
    b.graph.node(view).attrs["passed"] = True
    b.graph.outputs = [b.op("add", b.op("mul", x, w1), w2), b.op("mul_scalar", view, value=2.0)]
    for n in (w1, w2):
        b.graph.node(n).attrs.update(state="param", flat=0)
    inputs = {str(n): torch.ones(b.graph.node(n).shape) for n in b.graph.input_ids()}
    inputs[str(x)] = domains.lay_out(torch.arange(24.0).reshape(4, 6), "offset")
    return b.graph, inputs, x


def test_the_layout_facts_of_a_program_and_each_taken_back_alone() -> None:
    graph, inputs, x = _laid_out_graph()
    assert domains.layout_facts(graph, inputs) == ["flat", "offset", "aliased"]
    for fact in ("flat", "offset", "aliased"):
        g, values = domains.without_layout_fact(graph, inputs, fact)
        assert fact not in domains.layout_facts(g, values)
        assert [f for f in domains.layout_facts(g, values)] == \
            [f for f in ("flat", "offset", "aliased") if f != fact]
        assert all(torch.equal(values[k], inputs[k]) for k in inputs)  # the same values
    assert inputs[str(x)].storage_offset() == 1  # the case's own inputs are untouched
    strided = {**inputs, str(x): domains.lay_out(inputs[str(x)].contiguous(), "transposed")}
    assert "strides" in domains.layout_facts(graph, strided)


def test_a_divergence_that_needs_an_offset_is_told_so_by_triage(fake_runner) -> None:
    """``nan_on_layout`` diverges only when an input is not contiguous from its storage's
    start: the layout knob says the offset is what it needs, the signature keeps it, the title
    says it, and the knob that takes back what the case does not have is not there."""
    from fuzzer.triage.signature import signature_fields

    b = Builder(random.Random(0), "float32")
    x = b.input((8,))
    b.graph.outputs = [b.op("mul_scalar", x, value=2.0)]
    inputs = {str(x): domains.lay_out(torch.linspace(-1, 1, 8), "offset")}
    case = tf.judged_case(b.graph, inputs, "tests.fakes:nan_on_layout", fake_runner)
    assert case.verdict.kind == Kind.NONFINITE
    attribution = tf.attributed(case, fake_runner)
    assert attribution.layout() == ["offset"]
    assert [k.knob for k in attribution.layout_knobs()] == ["layout:offset"]
    assert signature_fields(case, attribution)["layout"] == ["offset"]
    assert "with an input at a storage offset" in draft.title_for(case, attribution)
    assert "storage offset" not in draft.title_for(case)
    assert "every input at storage offset 0" in draft.ablation(attribution)
    contiguous = tf.judged_case(b.graph, {str(x): torch.linspace(-1, 1, 8)},
                                "tests.fakes:nan_on_layout", fake_runner)
    assert not contiguous.verdict.is_finding  # the fact is what tells it, both ways


def test_a_title_names_the_op_that_first_goes_wrong_where_its_expression_does_not() -> None:
    """A head's input is already in the title's expression (``e8m0(x * 3.0)``): said once. An
    op the diverging expression does not show (a write whose value a later read carries out;
    here another output's op) comes first: ``<op> goes wrong first; …``."""
    b = Builder(random.Random(0), "float32")
    x = b.input((4,))
    scaled = b.op("mul_scalar", x, value=3.0)
    other = b.op("exp", x)
    b.graph.outputs = [b.op("e8m0", scaled, eps=1e-30), other]
    case = tf.case_of_verdict(b.graph)

    def at(node: int, label: str) -> Attribution:
        return Attribution(True, "", root={"node": node, "label": label, "kind": "accuracy"})

    assert draft.title_for(case, at(scaled, "mul_scalar")) == draft.title_for(case)
    title = draft.title_for(case, at(other, "exp"))
    assert title.startswith("[inductor][cpu] torch.exp(x) goes wrong first; "), title
    # named in the expression under its op's name though rendered otherwise (a night's title
    # said ``F.conv2d(x0, p1, p2, stride=1, …) goes wrong first; …(conv2d(x0, p1, p2))``)
    b = Builder(random.Random(0), "float32")
    x, w, bias = b.input((1, 2, 6, 6)), b.input((3, 2, 3, 3), role="w"), b.input((3,), role="b")
    conv = b.op("conv2d", x, w, bias, stride=1, padding=0, groups=1)
    b.graph.outputs = [b.op("sign_int8", b.op("avg_pool2d", conv, kernel=2))]
    deep = tf.case_of_verdict(b.graph)
    assert "goes wrong first" not in draft.title_for(deep, at(conv, "conv2d"))


# ------------------------------------------------------------------ a night's cause recorded


@pytest.fixture
def ctx(fake_runner, tmp_path):
    settings = night_settings(reports=tmp_path / "reports")
    with Store.in_reports(settings.reports) as store:
        yield Context(settings, Night("2030-01-02", 1, 1), settings.reports / "2030-01-02",
                      store, RunnerPool({"cpu": fake_runner}), lambda line: None)


def _recorded(ctx, case, attribution, key):
    from fuzzer.triage.signature import signature_fields

    fields = signature_fields(case, attribution)
    return pipeline._record(ctx, key, case, attribution, fields, (3, 3), ("e8m0", "x"),
                            "default/grammar")


def test_a_ledger_cause_found_again_is_a_refind_not_a_new_cause(ctx, fake_runner, monkeypatch):
    case = tf.planted_case("tests.fakes:uint8_plus_one", fake_runner)
    attribution = Attribution(True, "", knobs=[KnobResult("cpp.simdlen=0", "vanishes")])
    mine = ledger.LedgerCause("N99", "uint8 e8m0 codes bumped by one", 1, "new",
                              forms=(Conditions(family=("flip",), core_any=("mul_scalar",),
                                                vanishes_with=("cpp.simdlen=0",)),))
    monkeypatch.setattr(ledger, "causes", lambda path=None: (mine,))
    settled = _recorded(ctx, case, attribution, "a.pt")
    (finding,) = ctx.store.findings()
    assert finding.ledger == "N99" and not finding.awaits_draft and not settled.known
    assert ctx.store.processed(ctx.night.id, "a.pt")["outcome"] == "refind: N99"
    tally = ctx.store.tally(ctx.night.id)
    assert (tally["new"], tally["refind"], tally["signatures"]) == (0, 1, 1)
    assert ctx.store.arm_nights(ctx.night.id) == []  # a re-find earns its arm nothing
    monkeypatch.setattr(ledger, "causes", lambda path=None: ())  # the same cause, unknown
    other = tf.planted_case("tests.fakes:uint8_plus_one", fake_runner, scale=5.0)
    _recorded(ctx, other, attribution, "b.pt")
    assert ctx.store.processed(ctx.night.id, "b.pt")["outcome"] == "refind: N99"  # remembered


def test_a_cause_new_tonight_then_its_variant_is_one_draft(ctx, fake_runner, monkeypatch):
    monkeypatch.setattr(ledger, "causes", lambda path=None: ())
    case = tf.planted_case("tests.fakes:uint8_plus_one", fake_runner)
    knobs = [KnobResult("cpp.simdlen=0", "vanishes")]
    first = Attribution(True, "", knobs=knobs, root={"node": case.graph.outputs[0],
                                                     "label": "e8m0", "kind": "int-flip"})
    _recorded(ctx, case, first, "a.pt")
    b = Builder(random.Random(0), "float32")  # the same head, fed through another op
    x = b.input((4,))
    b.graph.outputs = [b.op("e8m0", b.op("add_scalar", b.op("exp", x), value=1.0), eps=1e-30)]
    variant = tf.judged_case(b.graph, {str(x): torch.tensor([0.3, 1.5, -2.0, 7.0])},
                             "tests.fakes:uint8_plus_one", fake_runner)
    again = Attribution(True, "", knobs=knobs, root={"node": variant.graph.outputs[0],
                                                     "label": "e8m0", "kind": "int-flip"})
    _recorded(ctx, variant, again, "b.pt")
    (finding,) = ctx.store.findings()
    (shown,) = ctx.store.variants(finding.signature)
    assert shown[0] != finding.signature and "exp" in shown[1], shown
    tally = ctx.store.tally(ctx.night.id)
    assert (tally["new"], tally["variants"], tally["signatures"]) == (1, 1, 2)
    assert "The same mechanism was also found in these forms" in draft.variants_text(
        ctx.store.variants(finding.signature))


def test_export_returning_a_new_tensor_for_a_view_of_a_written_input_is_by_design() -> None:
    """The packaged entry, matched by the aliasing reason the judge writes and the stage the
    deployment's triage names: by design on export's decompositions, not elsewhere."""
    from fuzzer.judge.details import Details
    from fuzzer.judge.verdict import OutputVerdict
    from fuzzer.triage.signature import said

    out = OutputVerdict(0, 3, Kind.ALIASING, "float32", Details(
        reason="output 0 shares storage with x0 in eager, with no input compiled"))
    fields = {"family": "aliasing", "device": "cpu", "core": ["mul_", "narrow"],
              "stage": "export's decompositions", "vanishes_with": [],
              "message": said(Verdict(Kind.ALIASING, 0, 3, [out]))}
    entry = known.match(fields)
    assert entry.id == "export-decomposed-output-view-of-written-input"
    assert entry.counted_as == known.BY_DESIGN
    assert known.match({**fields, "stage": "Inductor on the exported graph"}) is None


def test_a_documented_behaviour_is_counted_as_by_design(ctx, fake_runner, monkeypatch):
    case = tf.planted_case("tests.fakes:uint8_plus_one", fake_runner)
    documented = known.Known(id="documented", what="by design", status="by-design",
                             family=("flip",))
    monkeypatch.setattr(known, "entries", lambda path=None: (documented,))
    settled = _recorded(ctx, case, Attribution(True, ""), "a.pt")
    assert settled.known and settled.counted_as == "by-design"
    assert ctx.store.findings() == []
    tally = ctx.store.tally(ctx.night.id)
    assert (tally["by-design"], tally["known"], tally["new"]) == (1, 0, 0)


# ------------------------------------------------------------------ a known crash, by its file


def _crash(fake_runner, tmp_path, name: str, message: str, surface: dict | None):
    from dataclasses import replace

    from fuzzer.execute.surface import Surface

    graph = tf.e8m0_graph()
    case = tf.judged_case(graph, {str(graph.input_ids()[0]): torch.ones(4)},
                          "tests.fakes:raises", fake_runner)
    assert case.verdict.kind == Kind.CRASH
    case.verdict = Verdict(Kind.CRASH, message=f"{case.verdict.message} ({message})",
                           frames=case.verdict.frames)
    if surface:
        case.recipe = replace(case.recipe, surface=Surface(**surface))
    return case.save(tmp_path / f"{name}.pt")


def test_a_crash_whose_file_names_a_ledger_cause_is_one_bucket_settled_by_a_run(
        ctx, fake_runner, tmp_path):
    corpus = ctx.settings.corpus_dir
    corpus.mkdir(parents=True)
    n5 = "conflicting declaration ‘auto at_Half_tmp_acc0_vec’"
    _crash(fake_runner, corpus, "plain", n5, None)
    _crash(fake_runner, corpus, "dynamic", n5, {"name": "dynamic", "dynamic": True})
    _crash(fake_runner, corpus, "other", "a planted failure of another kind", None)
    backlog = Backlog(corpus, ctx.night.id, None, tells())
    backlog.refresh(ctx.store, set())
    by_known = {b.fingerprint.known: b for b in backlog.buckets.values()}
    assert sorted(len(b.keys) for b in backlog.buckets.values()) == [1, 2]
    told = by_known["N5"]
    assert told.fingerprint.counted_as == ledger.REFIND and told.fingerprint.surface == "any"
    while (work := backlog.take()) is not None:
        if work.bucket is told:
            pipeline.work_on(ctx, backlog, work)
        else:
            backlog.settle(work, "left to the full pipeline")
    assert all(how.startswith("refind: N5") or how.startswith("bucket hit on refind N5")
               for how in told.outcomes.values()), told.outcomes
    assert ctx.store.attempts("plain.pt") == (0, 0)  # nothing minimized
    assert ctx.store.tally(ctx.night.id)["refind"] == 1


# ------------------------------------------------------------------ what a user sees


def test_findings_ledger_lists_each_cause_with_its_state(tmp_path) -> None:
    result = CliRunner().invoke(main, ["findings", "--ledger", "--json",
                                       "--reports", str(tmp_path)])
    assert result.exit_code == 0, result.output
    rows = {r["id"]: r for r in json.loads(result.output)["ledger"]}
    assert rows["N19"]["state"] == "found, not filed" and rows["N19"]["matched_by"] == 2
    assert rows["N19"]["found_again"] == 0 and rows["N1"]["value_class"] == 4
    refused = CliRunner().invoke(main, ["findings", "--measure", "--reports", str(tmp_path)])
    assert refused.exit_code == 2 and "go with --ledger" in refused.output


def test_a_refinds_draft_says_which_of_numfuzzs_causes_it_is() -> None:
    note = ledger.named("N19").draft_note()
    assert note.startswith("This is numfuzz's own cause **N19** (FINDINGS.md, found, not filed)")


# ------------------------------------------------------------------ edges a review found


def test_n20_is_not_taken_for_n6() -> None:
    """N20 (a gradient lost through a write into an aliased argument) and N6 (a forward value
    not seen through a window) both read arguments that alias: the gradient tells them apart."""
    n20 = cause(layout=["aliased"], aliased_arguments="read", gradient=True,
                core=["index_copy_", "mul_scalar"])
    assert ledger.match(n20).id == "N20"
    assert ledger.match({k: v for k, v in n20.items() if k != "gradient"}).id == "N6"


def test_where_it_first_goes_wrong_decides_an_edge_cause() -> None:
    """N1 is interpolate's decomposition: a NaN that first appears elsewhere in a program that
    holds an interpolate is not N1; unlocated, the program's ops decide."""
    nan = cause(family="nonfinite", core=["interpolate_size", "log"], value_class=4)
    assert ledger.match({**nan, "root": {"op": "interpolate_size"}}).id == "N1"
    assert ledger.match({**nan, "root": {"op": "log"}}) is None
    assert ledger.match(nan).id == "N1"


def test_measured_fixed_in_is_the_first_release_after_the_last_that_showed_it() -> None:
    from fuzzer.triage.confirm import ABSENT, REPRODUCES, Run

    def run(torch_version: str, outcome: str) -> Run:
        return Run("python", torch_version, outcome, 1 if outcome == REPRODUCES else 0, "", 1.0)

    cause_n19 = ledger.named("N19")
    runs = [run("2.15.0", ABSENT), run("2.11.0", REPRODUCES), run("2.13.0", ABSENT)]
    assert ledger.measured_state(cause_n19, runs) == "fixed in 2.13 (reproduces on 2.11.0)"
    assert ledger.measured_state(cause_n19, runs[1:2]) == "reproduces on 2.11.0"
    assert ledger.measured_state(cause_n19, []) == "no repro here"


def test_a_timeout_is_never_told_by_its_file() -> None:
    """``synthetic-base-output-view``'s crash form is told by its message; a timeout of a
    program that returns a view of an aliased argument has no message to tell it."""
    from fuzzer.nightly import buckets

    (entry,) = [c for i, _, c in tells() if i == "synthetic-base-output-view"]
    raw = {"family": "timeout", "aliased_arguments": "output", "message": "timed out"}
    assert entry.matches(raw)  # the conditions alone would take it ...
    case = tf.case_of_verdict(tf.e8m0_graph())
    case.verdict = Verdict(Kind.TIMEOUT, message="timeout: no answer in 300s")
    assert buckets.fingerprint(case, tells()).known == ""  # ... its file does not


def test_two_ledger_causes_told_by_their_crashes_are_two_refinds(tmp_path) -> None:
    with Store.in_reports(tmp_path) as store:
        store.record_known("N5", "n", "a.pt", ledger.REFIND)
        store.record_known("N10", "n", "b.pt", ledger.REFIND)
        store.record_known("N10", "n", "c.pt", ledger.REFIND)
        assert store.tally("n")["refind"] == 2 and store.tally("n")["signatures"] == 0


def test_a_cause_stored_before_the_ledger_knew_it_learns_its_id(ctx, fake_runner,
                                                                monkeypatch) -> None:
    case = tf.planted_case("tests.fakes:uint8_plus_one", fake_runner)
    attribution = Attribution(True, "", knobs=[KnobResult("cpp.simdlen=0", "vanishes")])
    monkeypatch.setattr(ledger, "causes", lambda path=None: ())
    _recorded(ctx, case, attribution, "a.pt")
    (before,) = ctx.store.findings()
    assert before.ledger is None and before.awaits_draft
    mine = ledger.LedgerCause("N99", "uint8 e8m0 codes bumped by one", 1, "new",
                              forms=(Conditions(family=("flip",), core_any=("mul_scalar",)),))
    monkeypatch.setattr(ledger, "causes", lambda path=None: (mine,))
    _recorded(ctx, case, attribution, "b.pt")
    (after,) = ctx.store.findings()
    assert after.ledger == "N99" and not after.awaits_draft and after.hits == 2
    assert ctx.store.processed(ctx.night.id, "b.pt")["outcome"] == "refind: N99"


def test_a_draft_asked_for_by_ledger_id_is_written_where_the_user_reads_it(
        ctx, fake_runner, monkeypatch) -> None:
    from fuzzer.cli import findings as cli_findings
    from fuzzer.nightly import drafts

    case = tf.planted_case("tests.fakes:uint8_plus_one", fake_runner)
    mine = ledger.LedgerCause("N99", "uint8 e8m0 codes bumped by one", 1, "new",
                              forms=(Conditions(family=("flip",), core_any=("mul_scalar",)),))
    monkeypatch.setattr(ledger, "causes", lambda path=None: (mine,))
    _recorded(ctx, case, Attribution(True, ""), "a.pt")
    written = []
    monkeypatch.setattr(drafts, "write_draft_for",
                        lambda ctx, finding, path, env: written.append((finding, path)) or path)
    path = cli_findings.draft_on_request(ctx.settings.reports, "N99", known.KNOWN_FILE)
    ((finding, where),) = written
    assert finding.ledger == "N99" and path == where
    assert where.parent == ctx.settings.reports / "drafts"
    with pytest.raises(Exception, match="no cause with that signature or ledger id"):
        cli_findings.draft_on_request(ctx.settings.reports, "N98", known.KNOWN_FILE)


def test_a_drafts_first_lines_say_it_is_numfuzzs_own_cause(fake_runner, tmp_path) -> None:
    from fuzzer.reduce import snippet

    case = tf.planted_case("tests.fakes:uint8_plus_one", fake_runner)
    finding = pipeline.finding_for(case, None, (3, 3))
    plain = snippet.plain_repro(case, None, tmp_path, finding.signature)
    text = draft.render_draft(draft.Cause(
        finding, case, None, plain, (1, "(0,) eager 1 compiled 2"), "", [],
        ledger_note=ledger.named("N19").draft_note(),
        variants=[("f" * 16, "[inductor][cpu] another form")]), tmp_path / "d.md")
    head = text.split("### 🐛 Describe the bug")[0]
    assert "> This is numfuzz's own cause **N19**" in head
    assert "`ffffffffffffffff`: [inductor][cpu] another form" in text


def test_summary_lists_the_arms_that_found_and_folds_the_quiet_ones(ctx) -> None:
    """78 arms once made a table of 78 rows: now those that found something, one row for the
    rest that ran, and a line for those planned and not run."""
    from fuzzer.nightly import summary

    ctx.night.plan = {"shares": {"a/x": 0.5, "b/y": 0.3, "c/z": 0.2}}
    ctx.night.arms = {"a/x": Spent(cases=3, findings=2, seconds=30.0),
                      "b/y": Spent(cases=5, findings=0, seconds=10.0)}
    ctx.store.credit(ctx.night.id, "a/x", 1.0)
    lines = summary._arm_section(ctx)
    rows = [line for line in lines if line.startswith("| ") and "---" not in line][1:]
    assert rows == ["| a/x | 50.0% | 3 | 30 | 2 | 1 | 1.00 |",
                    "| the other 1 arms that ran (no raw finding) | 30.0% | 5 | 10 | 0 | 0 "
                    "| 0.00 |"]
    assert "Planned and not run tonight (1): c/z." in lines


def test_arithmetic_on_indices_is_never_strong_by_distance() -> None:
    """A night drafted ``max_pool2d_indices(x0) + x2`` of an all-NaN window, eager 3 and
    compiled 0: both indices select a NaN (another index among equal values), but the sum was
    judged as an ordinal integer, three steps apart. An integer computed from an index output is
    not ordinal and not exact; the index output itself is still judged by what it selects."""
    from fuzzer.judge import rules, semantics

    b = Builder(random.Random(0), "float32")
    x = b.input((1, 1, 2, 2))
    offset = b.input((1, 1, 1, 1), dtype="int64")
    picked = b.op("max_pool2d_indices", x, kernel=3, stride=1, padding=1, dilation=1,
                  ceil=True, pick=1)
    plain = b.op("add", offset, offset)
    b.graph.outputs = [b.op("add", picked, offset), plain, picked]
    assert semantics.ordinal(b.graph) == [False, True, True]
    assert semantics.evidence_source(b.graph, plain) == semantics.EXACT
    assert semantics.evidence_source(b.graph, b.graph.outputs[0]) != semantics.EXACT
    e, c = torch.tensor([3]), torch.tensor([0])
    assert rules.output_kind(e, c, e, 0.0, ordinal=False) == "weak-flip"
    assert rules.output_kind(e, c, e, 0.0, ordinal=True) == "int-flip"  # as it was judged


def test_a_measured_fix_is_written_into_the_ledger_and_read_back(tmp_path) -> None:
    """``findings --ledger --measure --write``: the cause's own fixed_in line, set or removed,
    its match forms and every other cause untouched."""
    from fuzzer.triage.confirm import ABSENT, REPRODUCES, Run

    path = tmp_path / "causes.toml"
    path.write_text(ledger.LEDGER_FILE.read_text())
    runs = [Run("p", "2.13.0", REPRODUCES, 1, "", 1.0), Run("p", "2.15.0", ABSENT, 0, "", 1.0)]
    assert ledger.measured_fix(runs) == "2.15"
    assert ledger.measured_fix(runs[:1]) == "" and ledger.measured_fix(runs[1:]) is None
    try:
        assert ledger.write_fixed_in(path, {"N19": "2.15"}) == ["N19"]
        again = ledger.causes(path)
        assert ledger.named("N19", again).state() == "fixed in 2.15"
        assert ledger.named("N19", again).forms == ledger.named("N19").forms
        assert [c for c in again if c.id != "N19"] == \
            [c for c in ledger.causes() if c.id != "N19"]
        assert ledger.write_fixed_in(path, {"N19": None}) == ["N19"]
        assert path.read_text() == ledger.LEDGER_FILE.read_text()
    finally:
        ledger.causes.cache_clear()


def test_a_cpp_compile_error_is_told_by_its_program_where_the_message_says_no_more() -> None:
    """torch 2.15's crash message is ``CppCompileError: C++ compile error`` whatever failed:
    N5 (a reduction stored twice, vectorized) and N10 (``abs`` of an int16 view) are told by
    their programs."""
    crash = {"family": "crash", "device": "cpu", "vanishes_with": [],
             "message": "InductorError: CppCompileError: C++ compile error (at cpp_builder.py:814)"}
    assert ledger.match({**crash, "core": ["view_dtype", "abs_"]}).id == "N10"
    summed = {**crash, "core": ["sum", "sum"], "vanishes_with": ["cpp.simdlen=0"]}
    assert ledger.match(summed).id == "N5"
    assert ledger.match({**summed, "vanishes_with": []}) is None
    assert ledger.match({**crash, "core": ["exp"]}) is None


def test_a_nan_eager_made_at_a_heads_input_is_undefined_whatever_float64_says() -> None:
    """A night quantized ``conv(x) * 0`` where eager's float32 conv overflowed to -inf (float64's
    did not): eager's NaN cast to int8 gave 0, compiled's -128, float64 0. Casting a NaN is not
    defined: such an element is not compared; one float64 alone calls NaN still is."""
    from fuzzer.judge import semantics

    b = Builder(random.Random(0), "float32")
    x = b.input((3,))
    scaled = b.op("mul_scalar", x, value=0.0)
    b.graph.outputs = [b.op("quant_int8", scaled, scale=1.0)]
    fp64 = {scaled: torch.tensor([0.0, 0.0, float("nan")], dtype=torch.float64)}
    own = {scaled: torch.tensor([float("nan"), 0.0, 0.0])}
    assert semantics.undefined_elements(b.graph, fp64)[0].tolist() == [False, False, True]
    assert semantics.undefined_elements(b.graph, fp64, own)[0].tolist() == [True, False, True]


def test_an_integer_view_of_a_rounded_float_is_not_ordinal() -> None:
    """A night drafted ``x0.view(int16)`` read after ``x0[0::3].scatter_add_(...)`` in float16
    as an int flip, 8 steps from eager: steps of a bit view are the float's ulps, and the float
    under it was half an ulp of a partial sum away. The int16 view of a float an op wrote is not
    ordinal (at most a weak flip); one of an input's own bits, written with integer arithmetic
    (N9's ``x.view(int32).index_add_``), stays exact evidence."""
    from fuzzer.judge import rules, semantics

    b = Builder(random.Random(0), "float16")
    x = b.input((6, 63))
    bits = b.op("view_dtype", b.op("view", x, size=(2, 189)), to="int16")
    index = b.input((2, 63), dtype="int64")
    b.op("scatter_add_", b.op("slice", x, index=((0, None, 3),)), index, b.input((2, 63)), dim=0)
    y = b.input((4, 6), dtype="int32")
    counts = b.op("view_dtype", b.input((4, 6), dtype="float32"), to="int32")
    b.op("index_add_", counts, b.input((4,), dtype="int64"), y, dim=0)
    b.graph.outputs = [b.graph.current(bits), b.graph.current(counts)]
    assert semantics.reads_rounded_bits(b.graph, b.graph.outputs[0])
    assert semantics.ordinal(b.graph) == [False, True]
    assert semantics.evidence_source(b.graph, b.graph.outputs[1]) == semantics.EXACT
    e, c = torch.tensor([-11912], dtype=torch.int16), torch.tensor([-11904], dtype=torch.int16)
    assert rules.output_kind(e, c, e, 0.0, ordinal=False) == "weak-flip"
    assert rules.output_kind(e, c, e, 0.0, ordinal=True) == "int-flip"  # as it was judged


def test_a_written_inputs_state_takes_its_core_from_what_wrote_it() -> None:
    """A divergence in an input's state after the call (``x.scatter_add_(...)`` in float16)
    had an empty core, since the input itself is no op: every state divergence on one device
    with the same knobs shared one signature. Its core is what computed the last write."""
    from fuzzer.corpus.case import Case
    from fuzzer.triage.signature import float_core

    def state_case(write: str) -> Case:
        b = Builder(random.Random(0), "float16")
        x = b.input((4, 6))
        if write == "scatter_add_":
            b.op(write, x, b.input((3, 6), dtype="int64"), b.input((3, 6)), dim=0)
        else:
            b.op(write, x, b.op("exp", b.input((4, 6))))
        b.graph.outputs = []
        return Case(graph=b.graph, inputs={}, dtype="float16",
                    verdict=Verdict(Kind.ACCURACY, None, x))

    assert float_core(state_case("scatter_add_")) == ["scatter_add_"]
    assert float_core(state_case("mul_")) == ["exp", "mul_"]


def test_a_drafts_snippet_keeps_a_weights_layout_and_its_title_names_the_weight() -> None:
    """A night's draft of a frozen conv whose bias is every other element of a buffer (N24)
    built its modules from ``p.clone()``: a strided clone is contiguous, so its snippet printed
    no divergence, and its title said "a non-contiguous input". The snippet copies a laid-out
    weight with its strides and offset; the title says weight."""
    from fuzzer.corpus.case import Case
    from fuzzer.reduce.snippet import snippet_source

    b = Builder(random.Random(0), "float32")
    x = b.input((2, 4))
    w = b.input((4,), role="w", state="param")
    b.graph.outputs = [b.op("mul", x, w)]
    strided = torch.arange(8.0)[::2]
    case = Case(graph=b.graph, inputs={str(x): torch.ones(2, 4), str(w): strided},
                verdict=Verdict(Kind.ACCURACY, 0, b.graph.outputs[0]))
    source = snippet_source(case, {}, inputs_file="inputs.pt")
    assert "m = Model(copy(p1))" in source and "def copy(x):" in source
    assert domains.layout_words(case.graph, case.inputs, "strides") == \
        "with a non-contiguous weight"
    case.inputs[str(w)] = strided.clone()  # contiguous: the plain clone, no helper
    assert "m = Model(p1.clone())" in snippet_source(case, {}, inputs_file="inputs.pt")
    assert domains.layout_words(case.graph, {str(x): strided.reshape(2, 2).t(),
                                             str(w): torch.ones(4)}, "strides") == \
        "with a non-contiguous input"


def test_a_titles_chain_of_calls_never_names_numfuzzs_reread() -> None:
    """Titles read "slice → scatter_ → reread → narrow → div_": ``reread`` (a view read again
    after a write to its storage) is numfuzz's IR, no call a maintainer can find in torch."""
    from fuzzer.corpus.case import Case
    from fuzzer.report import draft

    b = Builder(random.Random(0), "float32")
    x = b.input((4, 6))
    window = b.op("slice", x, index=((1, None, None),))
    b.op("mul_", x, b.input((4, 6)))
    b.graph.outputs = []
    reread = b.graph.current(window)
    assert b.graph.node(reread).op == "reread"
    b.op("div_", reread, b.input((3, 6)))
    case = Case(graph=b.graph, inputs={}, verdict=Verdict(Kind.CRASH, None, None))
    assert draft.diverging_expression(case) == "slice → mul_ → div_"


def test_a_raised_snippets_output_keeps_the_exception_line() -> None:
    """A night's draft of a C++ compile error printed the compiler's last warnings and said
    its snippet "did NOT show the divergence": the exception's line, far above them in the
    message, was cut. The line that says what raised is kept whatever follows it."""
    from fuzzer.reduce.snippet import shows_divergence
    from fuzzer.triage.confirm import TRACEBACK, exception_line

    err = "\n".join([TRACEBACK, '  File "s.py", line 3, in <module>',
                     "torch._inductor.exc.InductorError: CppCompileError: C++ compile error",
                     "", "Output:", *[f"vec512_qint.h:{n}: warning: overflow" for n in range(9)],
                     "Set TORCHDYNAMO_VERBOSE=1 for the full Dynamo stack trace"])
    line = exception_line(err)
    assert line == "torch._inductor.exc.InductorError: CppCompileError: C++ compile error"
    assert exception_line("no traceback here") == ""
    crash = Verdict(Kind.CRASH, None, None,
                    message="InductorError: CppCompileError: C++ compile error")
    from fuzzer.corpus.case import Case

    case = Case(graph=Builder(random.Random(0), "float32").graph, inputs={}, verdict=crash)
    assert shows_divergence(case, f"raised:\n{line}")
    assert not shows_divergence(case, "raised:\nSet TORCHDYNAMO_VERBOSE=1 for the full trace")

"""Attribution on planted divergences (fake backends that a knob or the environment switches off)
and on a real Inductor CPU divergence that emulate_precision_casts removes; the bisector; and the
signature's stability across runs, processes and node renamings."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from pathlib import Path

import pytest

from fuzzer.execute.pool import RunnerPool
from fuzzer.execute.workers import LocalRunner
from fuzzer.gen.grammar import Builder
from fuzzer.ir.graph import Graph, op_chain
from fuzzer.report import labels
from fuzzer.triage.attribute import (
    AOT_EAGER,
    EAGER_BACKEND,
    EAGER_NOT_RUN,
    Attribution,
    Knob,
    KnobResult,
    attribute,
    bisect_summary,
    knob_named,
    run_bisect,
)
from fuzzer.triage.signature import signature
from tests import triage_fakes as tf

ROOT = Path(__file__).resolve().parent.parent
PLANTED_KNOBS = [knob_named(n) for n in ("emulate_precision_casts", "pattern_matcher=False",
                                         "cpp.simdlen=0", "online_softmax=False",
                                         "backend=aot_eager")]


@pytest.fixture(scope="module")
def pool(fake_runner):
    pool = RunnerPool({"cpu": fake_runner}, timeout=60, warmup=False)
    yield pool
    pool.close()


def outcomes(attribution: Attribution) -> dict[str, str]:
    return {k.knob: k.outcome for k in attribution.knobs}


# ------------------------------------------------------------------ planted


def test_planted_divergence_vanishes_only_with_its_knob(pool):
    case = tf.planted_case("tests.triage_fakes:plant_unless_emulate", pool.get("cpu"))
    assert case.verdict.kind == "int-flip"
    first = attribute(case, pool, PLANTED_KNOBS)
    assert first.reproduces
    assert outcomes(first) == {"emulate_precision_casts": "vanishes",
                               "pattern_matcher=False": "persists", "cpp.simdlen=0": "persists",
                               "online_softmax=False": "n/a", "backend=aot_eager": "vanishes"}
    again = attribute(case, pool, PLANTED_KNOBS)
    assert signature(case, first) == signature(case, again)


def test_backend_planted_divergence_attributed_to_no_knob(pool):
    case = tf.planted_case("tests.fakes:uint8_plus_one", pool.get("cpu"))
    attribution = attribute(case, pool, PLANTED_KNOBS)
    assert attribution.vanishing() == ["backend=aot_eager"]
    other = attribute(tf.planted_case("tests.triage_fakes:plant_unless_emulate",
                                      pool.get("cpu")), pool, PLANTED_KNOBS)
    assert signature(case, attribution) != signature(case, other)


def test_the_eager_backend_runs_only_where_aot_eager_shows_the_divergence(pool):
    case = tf.planted_case("tests.triage_fakes:plant_unless_emulate", pool.get("cpu"))
    eager = knob_named(EAGER_BACKEND)
    told = attribute(case, pool, [eager, knob_named(AOT_EAGER)])
    assert outcomes(told) == {AOT_EAGER: "vanishes", EAGER_BACKEND: "n/a"}
    assert told.knobs[0].verdict == EAGER_NOT_RUN
    assert "was not run" in labels.isolation_text(case, told)
    # a stand-in for aot_eager that keeps the planted backend: it persists, so eager runs
    keeps = Knob(AOT_EAGER, {"pattern_matcher": False})
    ran = attribute(case, pool, [eager, keeps])
    assert outcomes(ran) == {AOT_EAGER: "persists", EAGER_BACKEND: "vanishes"}
    assert [k.knob for k in ran.knobs] == [EAGER_BACKEND, AOT_EAGER]  # in the order asked
    assert "was not run" not in labels.isolation_text(case, ran)


def test_environment_knob_gets_its_own_worker(pool):
    case = tf.planted_case("tests.triage_fakes:plant_unless_env", pool.get("cpu"))
    fixed_build = Knob("fixed build", env={tf.FIXED_ENV: "1"})
    no_op = Knob("unrelated variable", env={"NUMFUZZ_UNRELATED": "1"})
    attribution = attribute(case, pool, [fixed_build, no_op])
    assert outcomes(attribution) == {"fixed build": "vanishes", "unrelated variable": "persists"}
    assert pool.get("cpu", {tf.FIXED_ENV: "1"}) is not pool.get("cpu")


def test_case_that_no_longer_reproduces_is_not_attributed(fake_runner):
    case = tf.planted_case("tests.triage_fakes:plant_unless_env", fake_runner)
    assert case.verdict.kind == "int-flip"
    fixed_build = LocalRunner("cpu", timeout=60, env={tf.FIXED_ENV: "1"}, warmup=False)
    try:
        attribution = attribute(case, RunnerPool({"cpu": fixed_build}), PLANTED_KNOBS)
    finally:
        fixed_build.close()
    assert not attribution.reproduces and attribution.knobs == []
    assert "ok" in attribution.baseline


# ------------------------------------------------------------------ real Inductor


@pytest.mark.inductor
def test_real_cpu_roundtrip_is_attributed_as_this_torch_behaves(inductor_runner):
    """Triage reports, knob by knob, what Inductor on this CPU does to the fp16 round trip,
    measured independently (``tf.inductor_keeps_roundtrip``): no outcome is written in here."""
    graph, inputs = tf.fp16_roundtrip_gt()
    case = tf.judged_case(graph, inputs, "inductor", inductor_runner, tf.AS_IS)
    if tf.inductor_keeps_roundtrip():
        assert case.verdict.kind == "ok", case.verdict.summary()  # this torch rounds: no bug
        return
    assert case.verdict.kind == "int-flip", case.verdict.summary()
    pool = RunnerPool({"cpu": inductor_runner})
    # the knobs it reads (each run a real compile): every other knob's outcome is the fakes'
    asked = ("emulate_precision_casts", "cpp.simdlen=0", "fallback_by_default",
             "backend=aot_eager", "eager_numerics.division_rounding")
    attribution = attribute(case, pool, [knob_named(name) for name in asked])
    got = outcomes(attribution)
    for knob in ("emulate_precision_casts", "cpp.simdlen=0", "fallback_by_default"):
        fixed = tf.inductor_keeps_roundtrip(**knob_named(knob).config)
        assert got[knob] == ("vanishes" if fixed else "persists"), (knob, attribution.knobs)
    assert got["backend=aot_eager"] == "vanishes"  # no Inductor, no fused round trip
    assert got["eager_numerics.division_rounding"] == "n/a"  # Triton-only, not run on the CPU
    bisect = run_bisect(case)
    assert bisect["status"] == "found", bisect
    assert bisect["backend"] == "inductor"
    if got["emulate_precision_casts"] == "vanishes":
        assert "emulate_precision_casts" in bisect["subsystem"]
    assert any(step.startswith("aot_eager/") for step in bisect["steps"])


def test_bisector_results_read_as_one_line():
    found = {"status": "found", "backend": "inductor"}
    assert bisect_summary({**found, "subsystem": "lowerings", "bisect_number": 7,
                           "debug_info": "aten.erf"}) == \
        "backend inductor, subsystem lowerings, application #7 (aten.erf)"
    assert bisect_summary({**found, "subsystem": "inductor_emulate_precision_casts",
                           "bisect_number": 0,
                           "debug_info": "inductor_emulate_precision_casts"}) == \
        "backend inductor, subsystem inductor_emulate_precision_casts (a config change fixes it)"
    assert bisect_summary({**found, "backend": "aot_eager", "subsystem": None,
                           "bisect_number": None, "debug_info": None}) == "backend aot_eager"
    assert bisect_summary({"status": "timeout", "message": "no answer within 900s"}) == \
        "timeout: no answer within 900s"


def test_bisector_is_skipped_for_other_backends(pool):
    case = tf.planted_case("tests.fakes:uint8_plus_one", pool.get("cpu"))
    assert run_bisect(case)["status"] == "skipped"


# ------------------------------------------------------------------ signature


def diamond(order_seed: int, scale: float = 3.0, dtype: str = "float32") -> Graph:
    """e8m0(sub(mul(x, s), mul(y, s))) with two outputs, node ids shuffled by ``order_seed``.
    Equal seeds give equal graphs; different ones the same graph under other ids and another
    node order in its dict."""
    b = Builder(random.Random(0), dtype)
    x, y = b.input((4,)), b.input((4,))
    d = b.op("sub", b.op("mul_scalar", x, value=scale), b.op("mul_scalar", y, value=scale))
    b.graph.outputs = [b.op("e8m0", d, eps=1e-30), b.op("sign_int8", d)]
    return shuffled(b.graph, order_seed)


def shuffled(graph: Graph, seed: int) -> Graph:
    data = graph.to_dict()
    ids = [n["id"] for n in data["nodes"]]
    new_ids = random.Random(seed).sample(range(100, 200), len(ids))
    mapping = dict(zip(ids, new_ids))
    nodes = [{**n, "id": mapping[n["id"]], "inputs": [mapping[i] for i in n["inputs"]]}
             for n in data["nodes"]]
    if seed % 2:  # another valid topological order: the second input before the first
        nodes[0], nodes[1] = nodes[1], nodes[0]
    return Graph.from_dict({**data, "nodes": nodes,
                            "outputs": [mapping[o] for o in data["outputs"]]})


def case_of(graph: Graph, kind: str = "int-flip", device: str = "cpu"):
    return tf.case_of_verdict(graph, kind=kind, device=device)


ATTRIBUTED = Attribution(True, "int-flip", [KnobResult("emulate_precision_casts", "vanishes"),
                                            KnobResult("cpp.simdlen=0", "persists")])


def test_signature_ignores_node_ids_and_dict_order():
    graphs = [diamond(seed) for seed in (1, 2, 3, 4)]
    assert len({tuple(g.order()) for g in graphs}) > 1  # the ids really differ
    assert len({" ".join(op_chain(g)) for g in graphs}) == 1
    assert len({signature(case_of(g), ATTRIBUTED) for g in graphs}) == 1


def test_signature_ignores_constants_shapes_values_dtype_and_head_but_not_the_cause():
    base = signature(case_of(diamond(1)), ATTRIBUTED)
    assert signature(case_of(diamond(2, scale=1e5)), ATTRIBUTED) == base
    assert signature(case_of(diamond(1, dtype="bfloat16")), ATTRIBUTED) == base
    swapped = diamond(1)
    swapped.outputs.reverse()  # the diverging output is now the sign head: the same float core
    assert signature(case_of(swapped), ATTRIBUTED) == base
    different = [
        signature(case_of(diamond(1), kind="nonfinite"), ATTRIBUTED),
        signature(case_of(diamond(1), device="cuda:1"), ATTRIBUTED),
        signature(case_of(diamond(1)), Attribution(True, "int-flip", [])),
        signature(case_of(tf.e8m0_graph()), ATTRIBUTED),
    ]
    assert base not in different and len(set(different)) == len(different)
    assert signature(case_of(diamond(1), kind="parity"), ATTRIBUTED) == base  # one flip family


def test_signature_ignores_knobs_outside_the_full_set_and_merges_contained_cores():
    from fuzzer.triage.signature import same_cause, signature_fields

    extra = Attribution(True, "int-flip", [*ATTRIBUTED.knobs,
                                           KnobResult("my_private_knob", "vanishes")])
    assert signature(case_of(diamond(1)), extra) == signature(case_of(diamond(1)), ATTRIBUTED)
    short = signature_fields(case_of(tf.e8m0_graph()), ATTRIBUTED)
    long = signature_fields(case_of(diamond(1)), ATTRIBUTED)
    assert short["core"] == ["mul_scalar"] and long["core"] == ["mul_scalar", "mul_scalar", "sub"]
    assert same_cause(short, long) and same_cause(long, short)
    assert not same_cause(short, {**long, "vanishes_with": []})
    assert not same_cause({**short, "core": ["exp"]}, long)
    size = {**short, "core": ["interpolate_size"]}  # one op, two spellings: one cause
    assert same_cause(size, {**short, "core": ["interpolate_scale"]})
    assert same_cause({**short, "core": ["add_scalar", "exp"]}, {**short, "core": ["add", "exp"]})
    assert not same_cause(size, {**short, "core": ["interpolate_antialias"]})  # another kernel


def test_arguments_sharing_storage_are_part_of_the_cause_and_of_the_known_list():
    """A program called with a view of its input beside it (``forward(x0, x0[2:])``) is another
    cause than the same ops on arguments of their own; one that returns a view of such an
    argument (``output``) matches the known synthetic-base entry (#198095), one that only reads
    through it (``read``) does not."""
    from fuzzer.triage import known
    from fuzzer.triage.signature import same_cause, signature_fields

    def program(returns_view: bool) -> Graph:
        b = Builder(random.Random(0), "float32")
        x = b.input((6, 2))
        window = b.op("slice", x, index=((2, None, None),), passed=True)
        b.op("mul_scalar_", x, value=2.0)
        read = b.current(window)
        b.graph.outputs = [b.op("slice", read, index=((None, 2, None),)) if returns_view
                           else b.op("exp", read)]
        b.graph.infer()
        return b.graph

    nothing_vanishes = Attribution(True, "accuracy", [])
    output, read = (signature_fields(case_of(program(v), kind="accuracy"), nothing_vanishes)
                    for v in (True, False))
    assert output["aliased_arguments"] == "output" and read["aliased_arguments"] == "read"
    plain = signature_fields(case_of(tf.e8m0_graph()), ATTRIBUTED)
    assert "aliased_arguments" not in plain
    assert not same_cause(read, {**read, "aliased_arguments": "output"})
    entry = known.match(output)
    assert entry is not None and entry.id == "synthetic-base-output-view", entry
    assert known.match(read) is None or known.match(read).id != "synthetic-base-output-view"


def test_a_crash_matches_a_known_entry_by_where_it_raised():
    """``error_any`` matches a crash by a string in its exception type or torch frames: the
    2.11 compile error inside ``_as_strided_scatter_meta`` (the GPU run's most frequent crash,
    RESULTS §4) is known and fixed in 2.15; the same crash raised elsewhere is not this entry."""
    from fuzzer.triage import known

    where = "torch/_prims/__init__.py:_as_strided_scatter_meta"
    fields = {"family": "crash", "device": "cuda", "core": ["as_strided", "sign_"],
              "error": ["BackendCompilerFailed", where, "torch/__init__.py:_check"]}
    entry = known.match(fields, version="2.11.0")
    assert entry is not None and entry.id == "as-strided-scatter-storage-bounds", entry
    assert entry.state("2.11.0") == "fixed in 2.15"
    assert entry.reappeared("2.15.0")  # seen again where it is fixed: a regression, drafted
    elsewhere = {**fields, "error": ["BackendCompilerFailed", "torch/_inductor/lowering.py:x"]}
    assert all(e.id != "as-strided-scatter-storage-bounds"
               for e in known.entries() if e.matches(elsewhere, "2.11.0"))


def test_signature_is_the_same_in_another_process(tmp_path):
    case = case_of(diamond(3))
    case.save(tmp_path / "case.pt")
    (tmp_path / "attr.json").write_text(json.dumps(ATTRIBUTED.to_dict()))
    code = ("import json, sys; from fuzzer.corpus.case import Case; "
            "from fuzzer.triage.attribute import Attribution; "
            "from fuzzer.triage.signature import signature; "
            "a = Attribution.from_dict(json.load(open(sys.argv[2]))); "
            "print(signature(Case.load(sys.argv[1]), a))")
    env = {**os.environ, "PYTHONPATH": str(ROOT), "PYTHONHASHSEED": "12345"}
    out = subprocess.run([sys.executable, "-c", code, str(tmp_path / "case.pt"),
                          str(tmp_path / "attr.json")], capture_output=True, text=True, env=env,
                         check=True).stdout.strip()
    assert out == signature(case, ATTRIBUTED)


def test_a_knob_for_a_compiler_the_cases_path_does_not_run_is_not_applicable():
    """A torch.compile backend on a deployed case (AOTInductor, or the exported program compiled
    with Inductor), or an Inductor option on the exported program run with no compiler, cannot
    change it: "n/a", and nothing is run (no pool)."""
    from dataclasses import replace

    from fuzzer.execute.surface import Surface
    from fuzzer.triage.attribute import flip

    case = tf.case_of_verdict(tf.e8m0_graph())
    aoti = replace(case, recipe=replace(case.recipe, surface=Surface(path="aoti", name="aoti")))
    exported = replace(case, recipe=replace(case.recipe,
                                            surface=Surface(path="export", name="export")))
    inductor = replace(case, recipe=replace(
        case.recipe, surface=Surface(path="export-inductor")))
    assert flip(aoti, knob_named("backend=aot_eager"), pool=None).outcome == "n/a"
    # torch.compile of the exported program takes Inductor, not the recipe's backend
    assert flip(inductor, knob_named("backend=aot_eager"), pool=None).outcome == "n/a"
    assert not knob_named("emulate_precision_casts").idle_on(inductor)
    assert flip(exported, knob_named("emulate_precision_casts"), pool=None).outcome == "n/a"
    assert not knob_named("emulate_precision_casts").idle_on(aoti)  # Inductor builds the package
    assert not knob_named("backend=aot_eager").idle_on(case)  # torch.compile's own path

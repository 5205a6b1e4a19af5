"""Issue drafts a maintainer reads as they are: the title in the bug's words, the plain
reproducer (rendered for planted cases and run in a fresh interpreter, where it must print values
that show the divergence), the sections, ranking, the gh command, collect_env per night."""

from __future__ import annotations

import random
import re
import shlex

import pytest
import torch

from fuzzer.corpus.case import Case
from fuzzer.corpus.replay import replay_case
from fuzzer.execute.pool import RunnerPool
from fuzzer.execute.recipe import Recipe
from fuzzer.execute.surface import Surface
from fuzzer.gen.grammar import Builder
from fuzzer.judge.kinds import Kind
from fuzzer.judge.verdict import OutputVerdict, Verdict
from fuzzer.reduce import snippet
from fuzzer.report import draft, environment, ranking
from fuzzer.report.store import Finding
from fuzzer.triage.attribute import attribute, knob_named
from tests import triage_fakes as tf
from tests.conftest import assert_draft_reads_once, run_repro

ENV = "PyTorch version: 2.13.0+cpu\nIs debug build: False\nOS: test\nGCC version: 12\n" \
      "Clang version: Could not collect\nVulnerability Spectre v1: Mitigation\n" \
      "Flags: fpu vme\n[pip3] torch==2.13.0+cpu\n"


@pytest.fixture(scope="module")
def judged(fake_runner):
    """A planted int-flip judged by a worker, attributed, and recorded as a finding."""
    case = tf.planted_case("tests.triage_fakes:plant_unless_emulate", fake_runner)
    knobs = [knob_named("emulate_precision_casts"), knob_named("pattern_matcher=False")]
    attribution = attribute(case, RunnerPool({"cpu": fake_runner}, warmup=False), knobs)
    finding = Finding(signature="0123456789abcdef", kind="int-flip", device="cpu",
                      dtype="float32", op_chain="", title=draft.title_for(case),
                      reliability=(3, 3), hits=2, first_seen="2030-01-01T01:00:00Z",
                      last_seen="2030-01-02T01:00:00Z", versions=[("2.13.0+cpu", "none")])
    return case, attribution, finding


def render(judged, tmp_path, result=None):
    case, attribution, finding = judged
    path = tmp_path / "2030-01-02" / f"{finding.signature}.md"
    plain = snippet.plain_repro(case, None, tmp_path, finding.signature)
    result = result or (0, "(0,) eager 127 compiled 128 float64 127")
    repro = tmp_path / "findings" / finding.signature / "repro.py"
    text = draft.render_draft(draft.Cause(finding, case, attribution, plain, result, ENV, [],
                                          repro), path)
    return text, path, plain


# ------------------------------------------------------------------ titles


def flip_case(values: list[float], eager: int, compiled: int) -> Case:
    """``torch.sign(torch.expm1(x))`` with a hand-made verdict: titles read only data."""
    b = Builder(random.Random(0), "float32")
    x = b.input((len(values),))
    out = b.op("sign_int8", b.op("expm1", x))
    b.graph.outputs = [out]
    element = {"index": [0], "eager": eager, "compiled": compiled, "fp64": eager}
    verdict = Verdict(Kind.INT_FLIP, 0, out, [OutputVerdict(
        0, out, Kind.INT_FLIP, "int8", {"count": 1, "total": len(values),
                                         "elements": [element]})])
    return Case(graph=b.graph, inputs={str(x): torch.tensor(values)}, verdict=verdict)


def test_what_a_plain_reproducer_printed_is_read_in_each_of_its_forms():
    """A night's draft said "it did NOT show the divergence" over a snippet that printed
    ``(0, 0, 0, 4) eager 1.03 compiled inf``: a program with a dtype view is judged against
    eager alone, its snippet prints no float64 column, and the reader knew only the form with
    one. Every form the snippet prints (``snippet._prints``), read both ways."""
    case = flip_case([0.5], eager=1, compiled=0)
    forms = [
        ("(0,) eager 1 compiled 0 float64 1", "(0,) eager 1 compiled 1 float64 1"),
        ("(0, 0, 0, 4) eager 1.0302734375 compiled inf", "(0, 0, 0, 4) eager 1.03 compiled 1.03"),
        ("max |eager - float64| 0.1 max |compiled - float64| 0.5",
         "max |eager - float64| 0.5 max |compiled - float64| 0.1"),
        ("max |compiled - eager| 2.5", "max |compiled - eager| 0.0"),
        ("max |compiled - eager| nan", "max |compiled - eager| 0.0"),
        ("eager torch.Size([2]) torch.uint8 compiled torch.Size([2]) torch.bool",
         "eager torch.Size([2]) torch.uint8 compiled torch.Size([2]) torch.uint8"),
        ("eager:    [['x0'], []]\ncompiled: [[], []]",  # which inputs each output shares
         "eager:    [['x0'], []]\ncompiled: [['x0'], []]"),
    ]
    for shows, does_not in forms:
        assert snippet.shows_divergence(case, "W1128 a warning line\n" + shows), shows
        assert not snippet.shows_divergence(case, does_not), does_not


def test_title_is_in_the_words_of_the_bug():
    case = flip_case([-1.1754944e-38, 0.5], eager=-1, compiled=0)
    assert draft.title_for(case) == ("[inductor][cpu] torch.sign(torch.expm1(x)).to(torch.int8) "
                                     "of -1.18e-38 gives 0 under torch.compile (eager -1)")
    case.device, case.recipe = "cuda:0", Recipe("tests.fakes:uint8_plus_one")
    assert draft.title_for(case).startswith("[uint8_plus_one][cuda] torch.sign(")
    b = Builder(random.Random(0), "float32")
    x, y = b.input((2,)), b.input((2,))
    rem = b.op("remainder", x, y)
    b.graph.outputs = [rem]
    inf = {"index": [1], "eager": 0.0, "compiled": -float("inf"), "fp64": 0.0}
    two = Case(graph=b.graph, inputs={str(x): torch.ones(2), str(y): torch.tensor([2.0, -1e-45])},
               verdict=Verdict(Kind.NONFINITE, 0, rem, [OutputVerdict(
                   0, rem, Kind.NONFINITE, "float32", {"elements": [inf]})]))
    assert draft.title_for(two) == ("[inductor][cpu] torch.remainder(x0, x1) of (1.0, -1.4e-45) "
                                    "gives -inf under torch.compile (eager 0.0)")


def test_title_of_a_long_expression_names_the_head_and_of_a_float_output_its_values(judged):
    case, _, _ = judged  # x * 3.0 into the E8M0 head: the head's template is long
    element = case.verdict.diverging.details.elements[0]
    value = case.inputs[str(case.graph.input_ids()[0])].reshape(-1)[element.index[0]].item()
    assert draft.title_for(case) == (
        f"[plant_unless_emulate][cpu] e8m0(x * 3.0) of {draft.short(value)} gives "
        f"{element.compiled} under torch.compile (eager {element.eager})")
    b = Builder(random.Random(0), "float32")
    x = b.input((2, 8))
    soft = b.op("softmax", x, dim=-1)
    b.graph.outputs = [soft]
    nan = {"index": [1, 3], "eager": 0.0, "compiled": float("nan"), "fp64": 0.0}
    softmax = Case(graph=b.graph, inputs={str(x): torch.zeros(2, 8)}, verdict=Verdict(
        Kind.NONFINITE, 0, soft, [OutputVerdict(0, soft, Kind.NONFINITE, "float32",
                                                {"elements": [nan]})]))
    assert draft.title_for(softmax) == ("[inductor][cpu] torch.softmax(x, dim=-1) of 0.0 gives "
                                        "nan under torch.compile (eager 0.0)")


def test_the_duplicate_search_uses_torch_names_not_numfuzz_ones():
    """A maintainer's search for ``remainder_scalar`` finds nothing upstream; ``remainder`` does.
    Glue ops (``mul``, ``add``) would narrow GitHub's AND of terms to nothing."""
    b = Builder(random.Random(0), "float32")
    x = b.input((4,))
    out = b.op("add", b.op("mul_scalar", b.op("remainder_scalar", x, value=0.1), value=3.0), x)
    b.graph.outputs = [out]
    case = Case(graph=b.graph, inputs={str(x): torch.ones(4)})
    assert draft.search_command(case) == ("gh search issues --repo pytorch/pytorch --match "
                                          "title,body 'remainder inductor'")
    assert "'expm1 sign inductor'" in draft.search_command(flip_case([0.5], 1, 0))


def test_every_op_says_its_torch_name_in_its_entry():
    """What upstream calls an op is its registry entry's (``OpSpec.torch_name``, the call a
    title shows ``torch_call``): a function, a method, or nothing for an indexing."""
    from fuzzer.ir import ops

    assert ops.spec("remainder_scalar").torch_name == "remainder"
    assert ops.spec("index_add_").torch_name == "index_add_"
    assert (ops.spec("expm1").torch_call, ops.spec("index_add_").torch_call) == \
        ("torch.expm1", None)
    assert ops.spec("slice").torch_name is None and ops.spec("conv2d").torch_call == "F.conv2d"
    assert (ops.spec("gt_scalar").torch_name, ops.spec("mul").torch_name) == ("gt", "mul")
    assert [n for n, spec in ops.REGISTRY.items()
            if spec.template and not spec.torch_name] == ["slice_step"]  # an indexing


def test_a_value_used_twice_forty_deep_gets_a_short_title_at_once():
    """Each use copies its input's expression: ``add(v, v)`` forty deep would be 2**40
    characters; the title names the calls instead, and only those the output depends on."""
    b = Builder(random.Random(0), "float32")
    v = x = b.input((2,))
    for _ in range(40):
        v = b.op("add", v, v)
    unrelated = b.op("cos", x)
    b.graph.outputs = [v, unrelated]
    inf = {"index": [0], "eager": 1.0, "compiled": float("inf"), "fp64": 1.0}
    case = Case(graph=b.graph, inputs={str(x): torch.ones(2)}, verdict=Verdict(
        Kind.NONFINITE, 0, v, [OutputVerdict(0, v, Kind.NONFINITE, "float32",
                                             {"elements": [inf]})]))
    title = draft.title_for(case)
    assert "add → add → … → add → add → add" in title and "cos" not in title, title


# ------------------------------------------------------------------ the plain reproducer


@pytest.fixture(scope="module")
def worker(fake_runner):
    return fake_runner


def judged_case(graph, inputs, backend: str, runner, surface: Surface | None = None,
                config: dict | None = None) -> Case:
    recipe = Recipe(backend, dict(config or {}), surface or Surface())
    case = Case(graph=graph, inputs=inputs, recipe=recipe)
    case.verdict = replay_case(case, runner=runner).verdict
    assert case.verdict.is_finding, case.verdict.summary()
    return case


def printed(tmp_path, plain: snippet.Plain, name: str = "plain.py") -> str:
    """The snippet run in a fresh interpreter, as a maintainer would: its output."""
    path = tmp_path / name
    path.write_text(plain.source)
    done = run_repro(path, cwd=path.parent)  # where a maintainer keeps the inputs file
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def element_lines(output: str) -> list[tuple[str, str, str]]:
    return re.findall(r"eager (\S+) compiled (\S+) float64 (\S+)", output)


def test_plain_snippet_of_a_small_case_prints_the_flip(worker, tmp_path):
    case = tf.planted_case("tests.fakes:uint8_plus_one", worker)
    plain = snippet.plain_repro(case, None, tmp_path, "sig")
    assert plain.inputs_file is None and "torch.tensor([0.3, 1.5, -2.0, 7.0])" in plain.source
    assert "from tests.fakes import uint8_plus_one" in plain.source
    assert "torch.compile(model, backend=uint8_plus_one)" in plain.source
    assert len(plain.source.splitlines()) <= 15
    output = printed(tmp_path, plain)
    lines = element_lines(output)
    assert lines and all(int(c) == int(e) + 1 for e, c, _ in lines)  # the planted +1
    assert snippet.shows_divergence(case, output)


def test_large_inputs_become_a_seeded_expression_checked_by_running_it(worker, tmp_path):
    b = Builder(random.Random(0), "float32")
    x = b.input((4, 16))
    b.graph.outputs = [b.op("e8m0", b.op("erf", x), eps=1e-30)]
    inputs = {str(x): torch.randn(4, 16, generator=torch.Generator().manual_seed(3))}
    case = judged_case(b.graph, inputs, "tests.fakes:erf_quarter", worker)
    plain = snippet.plain_repro(case, worker, tmp_path, "sig")
    assert plain.inputs_file is None and "torch.manual_seed(0)" in plain.source
    assert "torch.randn(4, 16).mul(" in plain.source
    assert not torch.equal(plain.case.inputs[str(x)], inputs[str(x)])  # other values …
    output = printed(tmp_path, plain)
    printed_elements = element_lines(output)
    assert printed_elements and all(e != c for e, c, _ in printed_elements), output
    shown = [tuple(e.index) for e in plain.case.verdict.diverging.details.elements[:4]]
    assert output.startswith(str(shown[0]))  # … and the elements that differ there
    # The draft's title and table give what the reproducer printed, not the case's own values.
    finding = Finding(signature="sig", kind="int-flip", device="cpu", dtype="float32",
                      op_chain="", title="")
    text = draft.render_draft(draft.Cause(finding, case, None, plain, (0, output), ENV),
                              tmp_path / "sig.md")
    eager, compiled, fp64 = printed_elements[0]
    assert f"| {shown[0]} | {eager} | {compiled} | {fp64} |" in text
    assert text.startswith(f"# {draft.title_for(plain.case)}\n")


def test_inputs_no_seeded_expression_reproduces_are_loaded_from_a_file(worker, tmp_path):
    b = Builder(random.Random(0), "float32")
    x = b.input((32,))
    b.graph.outputs = [b.op("tanh", x)]
    values = torch.linspace(-1, 1, 32)
    values[5] = 1e-40  # a subnormal: the planted NaN fires only then
    case = judged_case(b.graph, {str(x): values}, "tests.fakes:nan_on_subnormal", worker)
    plain = snippet.plain_repro(case, worker, tmp_path, "sig")
    assert plain.inputs_file == tmp_path / "sig.inputs.pt" and plain.inputs_file.is_file()
    assert "torch.load('sig.inputs.pt')" in plain.source
    output = printed(tmp_path, plain)
    assert [c for _, c, _ in element_lines(output)] == ["nan"], output


def test_the_snippet_compiles_as_the_case_recorded(worker, tmp_path):
    """nan_when_dynamic diverges only under dynamic=True: the snippet must say so to show it."""
    b = Builder(random.Random(0), "float32")
    x = b.input((3,))
    b.graph.outputs = [b.op("tanh", x)]
    case = judged_case(b.graph, {str(x): torch.tensor([0.5, -1.0, 2.0])},
                       "tests.fakes:nan_when_dynamic", worker, Surface(dynamic=True),
                       {"emulate_precision_casts": True})
    plain = snippet.plain_repro(case, worker, tmp_path, "sig")
    assert "torch.compile(model, backend=nan_when_dynamic, dynamic=True)" in plain.source
    assert "torch._inductor.config.emulate_precision_casts = True" in plain.source
    lines = element_lines(printed(tmp_path, plain))
    assert lines and lines[0][1] == "nan" and lines[0][0] != "nan"


def test_a_training_case_prints_the_gradient_it_judged(worker, tmp_path):
    b = Builder(random.Random(0), "float32")
    x = b.input((4,))
    b.graph.outputs = [b.op("tanh", x)]
    case = judged_case(b.graph, {str(x): torch.tensor([0.5, -1.0, 2.0, 0.25])},
                       "tests.fakes:scaled_gradients", worker, Surface(training=True))
    assert case.verdict.kind == Kind.ACCURACY  # the gradient 1.25 times too large
    plain = snippet.plain_repro(case, worker, tmp_path, "sig")
    assert "def outputs(fn, *xs):" in plain.source
    output = printed(tmp_path, plain)
    eager, compiled = map(float, re.findall(r"float64\| (\S+)", output))
    assert compiled > 10 * eager, output
    assert snippet.shows_divergence(case, output)


def test_literals_read_back_exactly():
    for value, dtype in ((0.1, torch.float32), (-0.0, torch.float32), (1e-45, torch.float32),
                         (3.0, torch.bfloat16), (65504.0, torch.float16)):
        exact = torch.tensor(value, dtype=dtype).item()
        text = snippet.literal(exact, dtype)
        assert torch.tensor(eval(text), dtype=dtype).item() == exact  # noqa: S307
        assert len(text) <= 10, text
    assert snippet.literal(0.30000001192092896, torch.float32) == "0.3"
    assert snippet.literal(65504.0, torch.float16) == "65504.0"
    assert snippet.literal(float("inf"), torch.float32) == "torch.inf"


# ------------------------------------------------------------------ the draft


def test_draft_opens_with_the_plain_reproducer_and_keeps_every_section(judged, tmp_path):
    text, path, plain = render(judged, tmp_path)
    case, _, finding = judged
    assert text.startswith(f"# {finding.title}\n")
    assert "generated by numfuzz" in text.lower() and "person must check" in text
    sections = text.split("```python\n", 1)
    assert "### 🐛 Describe the bug" in sections[0] and "`torch.compile` (" in sections[0]
    assert sections[1].startswith(plain.source)  # the plain reproducer comes first
    assert "it shows the divergence" in text and "eager 127 compiled 128" in text
    element = case.verdict.outputs[0].details.elements[0]
    row = f"| {tuple(element.index)} | {element.eager!r} | {element.compiled!r} | " \
          f"{element.fp64!r} |"
    assert row in text  # observed eager / compiled / float64 values
    assert "**Why this is a bug:**" in text and "**Distance from the discontinuity:**" in text
    assert "**vanishes with** `emulate_precision_casts`" in text
    assert "Persists with: `pattern_matcher=False`" in text
    assert "`CompilerBisector.do_bisect`: not run." in text
    assert "Reproduces 3/3 fresh runs; 2 hits" in text
    assert "[`repro.py`](../findings/0123456789abcdef/repro.py)" in text  # linked, not pasted
    assert "def main():" not in text and "mermaid" not in text
    assert "PyTorch version: 2.13.0+cpu" in text and "GCC version: 12" in text
    assert "Vulnerability" not in text and "Flags" not in text and "Could not collect" not in text
    assert "ATen CPU capability:" in text
    assert "fallback_random = True" in text and "gh search issues" in text
    gh = draft.gh_command(finding.title, path)
    assert gh in text
    assert shlex.split(gh) == ["gh", "issue", "create", "--repo", "pytorch/pytorch", "--title",
                               finding.title, "--body-file", str(path)]
    assert_draft_reads_once(text)


def test_a_snippet_that_did_not_show_it_or_did_not_run_is_said_so(judged, tmp_path):
    text, _, _ = render(judged, tmp_path, (0, "(0,) eager 127 compiled 127 float64 127"))
    assert "it did NOT show the divergence in this run" in text
    text, _, _ = render(judged, tmp_path, (None, ""))
    assert "Not run here" in text


def test_ranking_nonfinite_then_far_flips_then_the_rest():
    def f(sig, kind, ulps=None):
        return Finding(signature=sig, kind=kind, device="cpu", dtype="float32", op_chain="",
                       distance_ulps=ulps, first_seen="2030-01-01T00:00:00Z")

    order = ranking.ranked([f("near", "int-flip", 0.2), f("crash", "crash"),
                          f("far", "int-flip", 900.0), f("acc", "accuracy"),
                          f("nan", "nonfinite"), f("mid", "int-flip", 3.0),
                          f("unknown", "int-flip")])
    assert [x.signature for x in order] == ["nan", "far", "mid", "near", "unknown", "crash",
                                            "acc"]


def test_collect_env_is_read_from_the_night_cache(tmp_path, monkeypatch):
    cached = tmp_path / "collect_env.txt"
    cached.write_text("PyTorch version: from the cache\n")

    def must_not_run(timeout):
        raise AssertionError("collect_env ran although the night has it cached")

    monkeypatch.setattr(environment, "collect_env", must_not_run)
    assert environment.collect_env_cached(cached) == "PyTorch version: from the cache\n"
    monkeypatch.setattr(environment, "collect_env", lambda timeout: "PyTorch version: fresh")
    fresh = tmp_path / "other" / "collect_env.txt"
    assert environment.collect_env_cached(fresh) == "PyTorch version: fresh"
    assert fresh.read_text() == "PyTorch version: fresh\n"


def test_a_cases_surface_options_are_taken_back_one_by_one_and_the_draft_names_what_it_needs():
    """The C++ GEMM surface's options each become a knob that turns one back (the template's
    backend back to ATen), and the ablation names the one whose taking back made it vanish."""
    from fuzzer.triage.attribute import Attribution, KnobResult, surface_knobs

    options = {"freezing": True, "max_autotune": True, "max_autotune_gemm_backends": "CPP"}
    case = tf.case_of_verdict(tf.e8m0_graph("float32", 3.0), kind="memory-unsafe")
    case.recipe = Recipe("inductor", options)
    knobs = {k.name: k.config for k in surface_knobs(case)}
    assert knobs == {"surface:freezing=True": {"freezing": False},
                     "surface:max_autotune=True": {"max_autotune": False},
                     "surface:max_autotune_gemm_backends=CPP":
                         {"max_autotune_gemm_backends": "ATEN"}}
    outcomes = {"surface:freezing=True": "persists", "surface:max_autotune=True": "vanishes",
                "surface:max_autotune_gemm_backends=CPP": "vanishes"}
    attribution = Attribution(True, "memory-unsafe", [KnobResult(name, outcome)
                                                      for name, outcome in outcomes.items()])
    assert attribution.needs() == ["max_autotune=True", "max_autotune_gemm_backends=CPP"]
    assert draft.ablation(attribution).splitlines()[0] == (
        "Its surface's options, each taken back alone (fresh compiles): it **needs** "
        "`max_autotune=True`, `max_autotune_gemm_backends=CPP` (vanishes without); taking "
        "back `freezing=True` (persists).")

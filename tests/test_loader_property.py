"""The loader's guarantee as a property: any mutation of a valid case file either loads into a
valid ``Case`` or raises ``CaseError``, never anything else, and never runs code.

Hypothesis mutates a valid case dict (a generated graph plus a generic call node, a verdict, a
config): it replaces values anywhere with junk (wrong types, huge numbers, NaN-filled tensors,
nested containers) or with hostile strings that try to run a canary module, deletes keys and
adds junk ones. A loaded case is then rendered and run eagerly, the way replay would use it: if
any hostile string reached the program text, the canary file appears.
"""

from __future__ import annotations

import copy
import io
import math
import os
import random
import sys
from pathlib import Path

import pytest
import torch

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from fuzzer.corpus.case import Case, CaseError  # noqa: E402
from fuzzer.execute.recipe import Recipe  # noqa: E402
from fuzzer.gen import inputs  # noqa: E402
from fuzzer.gen.grammar import Builder  # noqa: E402
from fuzzer.ir import render  # noqa: E402
from fuzzer.judge.oracle import Head, judge  # noqa: E402

# Bounded for CI; NUMFUZZ_PROPERTY_EXAMPLES raises it (bench/RESULTS.md records a long run).
EXAMPLES = int(os.environ.get("NUMFUZZ_PROPERTY_EXAMPLES", "300"))
CANARY_MODULE = "numfuzz_canary"

HOSTILE = [
    f"{CANARY_MODULE}:go", f"{CANARY_MODULE}.go", f"__import__('{CANARY_MODULE}')",
    f"x) or __import__('{CANARY_MODULE}') or (x", f'"""\nimport {CANARY_MODULE}\n"""',
    f"'\nimport {CANARY_MODULE}\n'", f"a=__import__('{CANARY_MODULE}'), b", "os.system",
    "torch.save", "torch.hub.load", "cpp.cxx", "../../etc/passwd", "\x00", "∞", "",
    "inductor\nimport os", "cuda:99999999999999999999",
]


def base_case() -> Case:
    """A valid case with a registry head, a generic call and a verdict: every field populated."""
    b = Builder(random.Random(0), "float32")
    x = b.input((2, 3))
    h = b.op("call", b.op("tanh", x), target="torch.cumsum", args=[{"in": 0}],
             kwargs={"dim": 1, "dtype": {"dtype": "float32"}})
    head = b.op("quant_int8", h, scale=0.1, zero_point=0)
    b.graph.outputs = [head, h]
    case = Case(graph=b.graph, inputs=dict(inputs.draws(b.graph, 0, 1)[0][1]),
                recipe=Recipe(config={"emulate_precision_casts": True}), origin={"index": 1})
    e = torch.tensor([1, 2, 3], dtype=torch.int8)
    far = Head(torch.zeros(3).double(), torch.ones(3).double(), torch.zeros(3).double(),
               torch.ones(3, dtype=torch.bool))
    case.verdict = judge([e], [e + 1], [e.double()], [far], [head])
    return case


BASE = base_case().to_dict()

leaf = st.one_of(
    st.none(), st.booleans(), st.integers(min_value=-2**70, max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True), st.sampled_from(HOSTILE),
    st.text(max_size=12),
    st.builds(lambda n, nan: torch.full((n,), math.nan if nan else 1.0), st.integers(0, 4),
              st.booleans()),
)
junk = st.recursive(leaf, lambda kids: st.one_of(
    st.lists(kids, max_size=3), st.dictionaries(st.one_of(st.sampled_from(HOSTILE),
                                                          st.text(max_size=6)), kids,
                                                max_size=3)), max_leaves=8)


def _paths(value: object, prefix: tuple = ()) -> list[tuple]:
    """Every place in a nested dict/list a mutation can reach."""
    found = [prefix]
    if isinstance(value, dict):
        for k, v in value.items():
            found += _paths(v, prefix + (k,))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            found += _paths(v, prefix + (i,))
    return found


PATHS = [p for p in _paths(BASE) if p]


@st.composite
def mutated(draw: st.DrawFn) -> dict:
    data = copy.deepcopy(BASE)
    for _ in range(draw(st.integers(1, 3))):
        path = draw(st.sampled_from(PATHS))
        parent = data
        try:
            for key in path[:-1]:
                parent = parent[key]
            action = draw(st.sampled_from(["replace", "hostile", "delete", "add"]))
            if action == "replace":
                parent[path[-1]] = draw(junk)
            elif action == "hostile":
                parent[path[-1]] = draw(st.sampled_from(HOSTILE))
            elif action == "delete" and isinstance(parent, dict):
                del parent[path[-1]]
            elif action == "add" and isinstance(parent, dict):
                parent[draw(st.sampled_from(HOSTILE))] = draw(junk)
        except (KeyError, IndexError, TypeError):
            pass  # an earlier mutation removed or replaced the path: the next one still counts
    return data


@pytest.fixture(scope="module")
def canary(tmp_path_factory: pytest.TempPathFactory):
    """A module that, if anything ever imports it, leaves a file behind."""
    root = tmp_path_factory.mktemp("canary")
    flag = root / "CANARY-RAN"
    (root / f"{CANARY_MODULE}.py").write_text(
        f"open({str(flag)!r}, 'w').write('ran')\ndef go(*args, **kwargs):\n    return None\n")
    sys.path.insert(0, str(root))
    yield flag
    sys.path.remove(str(root))
    sys.modules.pop(CANARY_MODULE, None)


def _use(case: Case) -> None:
    """What replay does with a loaded case short of compiling: render it and run it eagerly."""
    model = render.load(render.render_model(case.graph), "model")
    case.digest()
    if case.verdict is not None:
        case.verdict.summary()
    try:
        model(*case.ordered_inputs())
    except Exception:  # noqa: BLE001  (eager may reject junk values; only the canary matters)
        pass


COUNT = {"examples": 0, "loaded": 0, "refused": 0}


@settings(max_examples=EXAMPLES, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(data=mutated(), through_file=st.booleans())
def test_loading_any_mutation_gives_a_case_or_a_case_error(canary: Path, data: dict,
                                                           through_file: bool) -> None:
    COUNT["examples"] += 1
    try:
        if through_file:
            buf = io.BytesIO()
            torch.save(data, buf)
            path = canary.parent / "mutant.pt"
            path.write_bytes(buf.getvalue())
            case = Case.load(path)
        else:
            case = Case.from_dict(data)
    except CaseError as err:
        COUNT["refused"] += 1
        assert "\n" not in str(err).strip()  # one line for the user
    else:
        COUNT["loaded"] += 1
        assert isinstance(case, Case)
        Case.from_dict(case.to_dict())  # what loaded is valid: it round-trips
        _use(case)
    assert not canary.exists(), f"a hostile value ran code: {data!r}"[:500]


def test_the_property_test_covered_both_outcomes() -> None:
    """Runs after the property (file order): it exercised loads and refusals, not one side."""
    if COUNT["examples"] == 0:
        pytest.skip("the property test did not run in this session")
    assert COUNT["loaded"] > 0 and COUNT["refused"] > 0, COUNT
    print(f"loader property: {COUNT}")


def test_the_canary_detects_an_import(canary: Path) -> None:
    """The check can fail: importing the canary module does leave the file."""
    import importlib

    sys.modules.pop(CANARY_MODULE, None)
    importlib.import_module(CANARY_MODULE)
    assert canary.exists()
    canary.unlink()
    sys.modules.pop(CANARY_MODULE, None)

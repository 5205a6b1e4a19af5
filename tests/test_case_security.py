"""Case files are data, never code: the config and backend holes stay closed, generic calls
stay plain calls, the store checks its schema, and capture failures are one line."""

from __future__ import annotations

import os
import random
import sqlite3
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner

from fuzzer.cli import main
from fuzzer.corpus.case import Case, CaseError
from fuzzer.errors import StoreError
from fuzzer.execute.recipe import TRUST_ENV, Recipe
from fuzzer.gen import inputs
from fuzzer.gen.grammar import Builder
from fuzzer.ir.ops import InvalidGraph
from fuzzer.report.store import DB_NAME, Store
from tests.conftest import python

REPO = Path(__file__).resolve().parents[1]


def small_case(**fields: object) -> Case:
    b = Builder(random.Random(0), "float32")
    x = b.input((2, 3))
    b.graph.outputs = [b.op("e8m0", b.op("tanh", x), eps=1e-30)]
    return Case(graph=b.graph, inputs=dict(inputs.draws(b.graph, 0, 1)[0][1]), **fields)


def numfuzz(*args: str, cwd: Path, trusted: str = "") -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(REPO), TRUST_ENV: trusted}
    return python("-m", "fuzzer", *args, cwd=cwd, env=env, timeout=300)


def test_a_config_naming_a_compiler_is_refused_and_never_runs(tmp_path: Path) -> None:
    flag = tmp_path / "RAN"
    script = tmp_path / "cxx.sh"
    script.write_text(f"#!/bin/sh\ntouch {flag}\nexec g++ \"$@\"\n")
    script.chmod(0o755)
    hostile = small_case(recipe=Recipe(config={"cpp.cxx": [str(script)]}))
    path = hostile.save(tmp_path / "hostile.pt")
    with pytest.raises(CaseError, match="cpp.cxx"):
        Case.load(path)
    proc = numfuzz("replay", str(path), cwd=tmp_path)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.count("\n") == 1 and "not an allowed numerics knob" in proc.stderr
    assert not flag.exists()


def test_a_config_value_of_the_wrong_type_is_refused() -> None:
    data = small_case().to_dict()
    data["config"] = {"emulate_precision_casts": "yes"}
    with pytest.raises(CaseError, match="emulate_precision_casts"):
        Case.from_dict(data)
    data["config"] = {"cpp.simdlen": 0, "fallback_random": True}
    assert Case.from_dict(data).recipe.config == {"cpp.simdlen": 0, "fallback_random": True}


def _plant_module(directory: Path, flag: Path) -> None:
    """``evilmod.fn``: a backend that behaves like eager, and leaves a file when imported."""
    (directory / "evilmod.py").write_text(
        f"open({str(flag)!r}, 'w').write('imported')\n"
        "def fn(gm, example_inputs):\n    return gm.forward\n")


def test_a_module_function_backend_in_a_file_is_refused_until_trusted(tmp_path: Path) -> None:
    flag = tmp_path / "IMPORTED"
    _plant_module(tmp_path, flag)
    path = small_case(recipe=Recipe("evilmod:fn")).save(tmp_path / "hostile.pt")
    refused = numfuzz("replay", str(path), cwd=tmp_path)
    assert refused.returncode == 2, refused.stderr
    assert refused.stderr.count("\n") == 1 and "--trust-backend evilmod:fn" in refused.stderr
    assert not flag.exists()  # the worker runs `python -m` in this directory: still not imported
    trusted = numfuzz("--trust-backend", "evilmod:fn", "replay", str(path), "--json",
                      cwd=tmp_path)
    assert trusted.returncode == 0, trusted.stderr[-2000:]  # eager-equal backend: no divergence
    assert flag.exists()  # the user named it: now it is the user's code to run


def test_registered_backend_names_are_data() -> None:
    data = small_case().to_dict()
    for name in ("inductor", "aot_eager", "eager"):
        data["backend"] = name
        assert Case.from_dict(data).recipe.backend == name
    data["backend"] = "no_such_backend"
    with pytest.raises(CaseError, match="unknown backend"):
        Case.from_dict(data)


@pytest.mark.parametrize("key", ["dim=0) or print('x') or (1", "not a name", "lambda", "1x"])
def test_generic_call_keywords_must_be_names(key: str) -> None:
    data = small_case().to_dict()
    node = next(n for n in data["graph"]["nodes"] if n["op"] == "tanh")
    node.update(op="call", attrs={"target": "torch.cumsum", "args": [{"in": 0}],
                                  "kwargs": {key: 1}})
    with pytest.raises(CaseError, match="keyword"):
        Case.from_dict(data)
    node["attrs"]["kwargs"] = {"dim": 1}
    assert Case.from_dict(data).graph.op_names() == ["torch.cumsum", "e8m0"]


def test_generic_call_values_must_be_plain_data() -> None:
    data = small_case().to_dict()
    node = next(n for n in data["graph"]["nodes"] if n["op"] == "tanh")
    node.update(op="call", attrs={"target": "torch.cumsum", "args": [{"in": 0}],
                                  "kwargs": {"dim": {"slice": ["a", None, None]}}})
    with pytest.raises(CaseError, match="slice"):
        Case.from_dict(data)


@pytest.mark.parametrize("kwargs, refusal", [
    ({"dtype": {"dtype": "float32"}, "device": "cpu"}, "device must be an input's"),
    ({"dtype": {"dtype": "float32"}, "device": {"device_of": 0}, "pin_memory": False}, None),
])
def test_a_factory_call_allocates_nothing_until_run_and_takes_its_device_from_an_input(
        kwargs: dict, refusal: str | None) -> None:
    data = small_case().to_dict()
    node = next(n for n in data["graph"]["nodes"] if n["op"] == "tanh")
    node.update(op="call", attrs={"target": "torch.full", "args": [[1 << 40], 1.0],
                                  "kwargs": kwargs})
    with pytest.raises(CaseError, match=refusal or "more than numfuzz runs"):
        Case.from_dict(data)  # a terabyte of ones is refused while its shape is inferred


def test_a_store_of_another_schema_is_refused_with_what_to_do(tmp_path: Path) -> None:
    Store.in_reports(tmp_path).close()
    db = sqlite3.connect(tmp_path / DB_NAME)
    db.execute("UPDATE meta SET value = '99' WHERE key = 'schema_version'")
    db.commit()
    db.close()
    with pytest.raises(StoreError, match="schema version 99.*move it aside"):
        Store.in_reports(tmp_path)
    result = CliRunner().invoke(main, ["findings", "--reports", str(tmp_path)])
    assert result.exit_code == 2 and result.output.count("\n") == 1, result.output
    (tmp_path / "junk" / DB_NAME).parent.mkdir()
    (tmp_path / "junk" / DB_NAME).write_bytes(b"not a database at all" * 100)
    with pytest.raises(StoreError, match="not a numfuzz findings store"):
        Store.in_reports(tmp_path / "junk")


SOFTMAX_KEYWORD = '''
import torch
import torch.nn as nn
import torch.nn.functional as F

class Model(nn.Module):
    def forward(self, x):
        return F.softmax(input=x, dim=-1)

def get_inputs():
    return [torch.randn(2, 8)]
'''


def test_softmax_called_by_keyword_is_captured(tmp_path: Path) -> None:
    from fuzzer.user.capture import capture_file

    path = tmp_path / "softmax_kw.py"
    path.write_text(SOFTMAX_KEYWORD)
    captured = capture_file(path)  # kept as the generic call it is: F.softmax(input=x, dim=-1)
    assert captured.graph.op_names() == ["F.softmax"]


def test_a_call_capture_cannot_translate_is_one_line_naming_the_op() -> None:
    from fuzzer.user.translate import Translator

    class Broken(Translator):
        def call(self, node):  # what any translation bug looks like from outside
            raise IndexError("list index out of range")

    import torch

    gm = torch.fx.symbolic_trace(torch.nn.Softmax(dim=-1))
    translator = Broken(gm, [torch.ones(2, 3)], [], {})
    with pytest.raises(InvalidGraph, match="cannot translate call_function 'softmax'.*IndexError"):
        translator.run()

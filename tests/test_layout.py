"""The package's shape: imports flow from later stages to earlier ones only, with no cycles, and
the rules that must live in one place do."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import networkx as nx
import pytest

import fuzzer
from fuzzer.judge.kinds import Kind

PACKAGE = Path(fuzzer.__file__).resolve().parent
# Below every stage: the version and stage list, user errors, the one clock every budget reads,
# the device a case runs on.
BASE = ("fuzzer", "fuzzer.errors", "fuzzer.clock", "fuzzer.device")


def _module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {_module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def stage_of(module: str) -> int:
    """-1 for the base modules, else the index of the module's subpackage in ``fuzzer.STAGES``."""
    if module in BASE:
        return -1
    if module == "fuzzer.__main__":
        return fuzzer.STAGES.index("cli")
    return fuzzer.STAGES.index(module.split(".")[1])


def imports_of(module: str) -> set[str]:
    """Every numfuzz module ``module`` imports, at the top or inside a function (a lazy import
    against the flow is a dependency all the same)."""
    tree = ast.parse(MODULES[module].read_text())
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [f"{node.module}.{a.name}" if f"{node.module}.{a.name}" in MODULES
                     else node.module for a in node.names]
        else:
            continue
        found |= {n for n in names if n.split(".")[0] == "fuzzer"}
    return found


def import_graph() -> nx.DiGraph:
    graph = nx.DiGraph()
    for module in MODULES:
        graph.add_node(module)
        for target in imports_of(module):
            if target != module:
                graph.add_edge(module, target)
    return graph


def test_every_module_belongs_to_a_stage() -> None:
    for module in MODULES:
        assert stage_of(module) >= -1, module


def test_imports_only_go_from_later_stages_to_earlier_ones() -> None:
    against = [f"{a} (stage {stage_of(a)}) imports {b} (stage {stage_of(b)})"
               for a, b in import_graph().edges if stage_of(b) > stage_of(a)]
    assert not against, "\n".join(against)


def test_there_is_no_import_cycle() -> None:
    graph = import_graph()
    cycle = [] if nx.is_directed_acyclic_graph(graph) else nx.find_cycle(graph)
    assert not cycle, " -> ".join(a for a, _ in cycle)


def test_the_layout_checks_can_fail() -> None:
    """A planted back-edge and a planted cycle are caught by the same functions."""
    graph = import_graph()
    graph.add_edge("fuzzer.ir.graph", "fuzzer.report.store")
    assert any(stage_of(b) > stage_of(a) for a, b in graph.edges)
    graph.add_edge("fuzzer.report.store", "fuzzer.ir.graph")
    assert not nx.is_directed_acyclic_graph(graph)


def test_every_subpackage_says_what_it_owns_and_may_import() -> None:
    for stage in fuzzer.STAGES:
        doc = ast.get_docstring(ast.parse((PACKAGE / stage / "__init__.py").read_text()))
        assert doc and "import" in doc.lower(), stage


def test_every_subpackage_names_each_of_its_modules() -> None:
    """A stage's docstring describes the code as it is: each module of it named (``name``)."""
    for stage in fuzzer.STAGES:
        doc = ast.get_docstring(ast.parse((PACKAGE / stage / "__init__.py").read_text()))
        missing = [p.stem for p in (PACKAGE / stage).glob("*.py")
                   if p.stem != "__init__" and f"``{p.stem}``" not in doc]
        assert not missing, (stage, missing)


@pytest.mark.parametrize("call", ["os.replace(", ".write_text(", "os.fsync("])
def test_files_are_written_in_one_place(call: str) -> None:
    """Atomic writes live in ``corpus/files.py``; nothing else writes a file by hand."""
    writers = [m for m, p in MODULES.items() if call in p.read_text()]
    assert writers in ([], ["fuzzer.corpus.files"]), writers


def test_divergence_rules_are_not_written_twice() -> None:
    """The "same divergence" question and the per-output rules have one home each."""
    for module, path in MODULES.items():
        text = path.read_text()
        if module != "fuzzer.judge.key":
            assert "def same_divergence" not in text, module
            assert 'message.split(":")' not in text, module  # the crash key: key.error_type
        if module != "fuzzer.judge.rules":
            assert "def diverges" not in text and "def discrete_flips" not in text, module


def test_harness_errors_are_recognised_in_one_place() -> None:
    """Whether a verdict is numfuzz's own failure is ``campaign.harness.is_harness_error``."""
    for module, path in MODULES.items():
        if module != "fuzzer.campaign.harness":
            assert "startswith(HARNESS_ERROR)" not in path.read_text(), module


def test_the_shrinker_knows_nothing_of_execution() -> None:
    """``reduce.shrinker`` takes any predicate: it imports nothing of execution, and nothing it
    reaches starts or pools workers."""
    graph = import_graph()
    direct = [m for m in graph.successors("fuzzer.reduce.shrinker")
              if m.startswith("fuzzer.execute.")]
    reached = nx.descendants(graph, "fuzzer.reduce.shrinker")
    assert not direct and not reached & {"fuzzer.execute.workers", "fuzzer.execute.pool"}, \
        (direct, sorted(reached))


KINDS = "|".join(re.escape(k.value) for k in Kind)
KIND_SPELLED = re.compile(rf"""kind\s*(==|!=)\s*["']({KINDS})["']"""
                          rf"""|kind\s+(not\s+)?in\s+\(["']({KINDS})["']""")


def test_verdict_kinds_are_named_not_spelled() -> None:
    """Outside the judge, a kind is ``Kind.INT_FLIP``, never the string ``"int-flip"``."""
    spelled = [f"{m}: {line.strip()}" for m, p in MODULES.items() if not m.startswith(
        "fuzzer.judge.") and m not in ("fuzzer.reduce.repro", "fuzzer.reduce.repro_main")
        # repro.py's own text (its program, repro_main, embedded verbatim) knows no numfuzz
        for line in p.read_text().splitlines() if KIND_SPELLED.search(line)]
    assert not spelled, "\n".join(spelled)


def test_fresh_compiles_are_spelled_once() -> None:
    """"No cache hits" is ``execute.recipe`` (``Recipe.fresh``, ``FRESH_ENV``); the config
    allowlist names the option too."""
    spelling = re.compile(r"force_disable_caches|FORCE_DISABLE_CACHES")
    found = [m for m, p in MODULES.items() if spelling.search(p.read_text())]
    assert sorted(found) == ["fuzzer.execute.config", "fuzzer.execute.recipe"], found


TORCH_FREE = ("fuzzer.judge.verdict", "fuzzer.judge.kinds", "fuzzer.judge.details",
              "fuzzer.report.store")


def test_verdicts_and_the_store_read_without_torch() -> None:
    """A verdict, its kinds and the findings store are data: a tool that reads them (a
    dashboard, the findings ledger) must not pay torch's import, and a cycle back into the
    oracle would make it."""
    import subprocess
    import sys
    code = ("import sys\n" + "".join(f"import {m}\n" for m in TORCH_FREE)
            + "print('torch' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, cwd=PACKAGE.parent)
    assert out.stdout.strip() == "False"


def test_the_graph_library_stays_behind_the_graph_interface() -> None:
    """Only ``ir/graph.py`` knows the IR is a networkx DiGraph; everything else asks ``Graph``."""
    users = [m for m in MODULES if "networkx" in MODULES[m].read_text()
             or re.search(r"\bgraph\.g\b", MODULES[m].read_text())]
    assert users == ["fuzzer.ir.graph"], users


def test_the_device_is_asked_one_way() -> None:
    """"Is it CUDA?" has one answer (``fuzzer.device.Device``), not a string test per caller."""
    asking = [m for m, p in MODULES.items() if m != "fuzzer.device"
              and re.search(r"""(device|\.type)\s*==\s*["'](cuda|cpu)["']|startswith\(["']cuda""",
                            p.read_text())]
    assert not asking, asking

"""A root cause's life after filing, and upstream's side: known entries' status and fixed_in
against fake torch versions, the store's upstream columns (a version-1 store opened and
migrated), ``findings --filed`` / ``--wontfix`` and the known causes ``findings`` lists, a night
that drafts a known fix come back and then counts a wontfix cause as known, and ``findings
--upstream`` against a fake GitHub on the loopback that serves recorded responses (never the
real network)."""

from __future__ import annotations

import json
import os
import socket
import sqlite3
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, urlparse

import pytest
from click.testing import CliRunner

from fuzzer.cli import main
from fuzzer.errors import InputError
from fuzzer.execute.pool import RunnerPool
from fuzzer.nightly.job import run_night
from fuzzer.nightly.recheck import Recheck
from fuzzer.report import upstream
from fuzzer.report.store import DB_NAME, SCHEMA_VERSION, Finding, Store
from fuzzer.triage import known
from tests import triage_fakes as tf
from tests.conftest import night_settings

DATA = Path(__file__).resolve().parent / "data"
ISSUE = "https://github.com/pytorch/pytorch/issues/4242"


# ------------------------------------------------------------------ known entries


def entry(**fields) -> known.Known:
    return known.Known(id=fields.pop("id", "planted"), what="planted", core_any=("expm1",),
                       **fields)


EXPM1 = {"family": "flip", "device": "cpu", "core": ["expm1"], "vanishes_with": []}


def test_a_fixed_entry_is_known_before_its_release_and_a_regression_from_it() -> None:
    fixed = entry(status="fixed", fixed_in="2.14")
    for version, came_back in [("2.13.0", False), ("2.13.1+cpu", False),
                               ("2.14.0a0+git1234", False), ("2.14.0", True),
                               ("2.14.1+cu126", True), ("2.15.0.dev20261001+cpu", True)]:
        assert known.match(EXPM1, (fixed,), version) is fixed, version
        assert fixed.reappeared(version) is came_back, version
    assert fixed.state("2.13.0") == "fixed in 2.14"
    assert fixed.state("2.14.0") == "fixed in 2.14, but seen again on this torch"
    for status in ("open", "wontfix"):  # no fix to come back from, whatever the torch
        assert not entry(status=status).reappeared("99.0") and entry(status=status).state() \
            == status
    # A later entry that still holds wins over a fix that came back; no match at all is None.
    still = entry(id="still-open")
    assert known.match(EXPM1, (fixed, still), "2.15.0") is still
    assert known.match(EXPM1, (fixed, still), "2.13.0") is fixed
    assert known.match({**EXPM1, "core": ["erf"]}, (fixed, still), "2.15.0") is None


def test_known_files_without_status_load_and_bad_ones_are_one_line(tmp_path: Path) -> None:
    old = tmp_path / "old.toml"
    old.write_text('[[known]]\nid = "old"\nwhat = "an entry from before status"\n'
                   'core_any = ["expm1"]\ntorch = ">=2.5"\n')
    (loaded,) = known.entries(old)
    assert (loaded.status, loaded.fixed_in) == ("open", "") and not loaded.reappeared("9.0")
    for bad, says in [('status = "closed"', "status must be one of"),
                      ('status = "fixed"', "fixed_in goes with"),
                      ('fixed_in = "2.14"', "fixed_in goes with"),
                      ('status = "fixed"\nfixed_in = "soon"', "not a torch version")]:
        path = tmp_path / f"bad{len(says)}{len(bad)}.toml"
        path.write_text(f'[[known]]\nid = "bad"\nwhat = "x"\n{bad}\n')
        with pytest.raises(InputError, match=says) as err:
            known.entries(path)
        assert "\n" not in str(err.value)


def test_the_packaged_list_knows_upstream_states() -> None:
    """The causes a CPU night finds that upstream has decided on (known_research.md)."""
    simd = {"family": "flip", "device": "cpu", "vanishes_with": ["cpp.simdlen=0"]}
    expm1 = known.match({**simd, "core": ["expm1"]}, version="2.13.0")
    assert expm1.id == "vectorized-expm1-cancellation" and expm1.state("2.13.0") == \
        "fixed in 2.14" and expm1.reappeared("2.14.0")
    assert known.match({**simd, "core": ["erf"]}, version="2.13.0").id == \
        "vectorized-erf-atanh-tiny"
    assert known.match({**simd, "core": ["gelu"]}, version="2.13.0").status == "wontfix"
    assert known.match({**simd, "core": ["expm1"], "vanishes_with": []}, version="2.13.0") \
        is None  # not the vectorized path: not this entry
    std = {"family": "nonfinite", "device": "cpu", "core": ["std_c"], "vanishes_with": []}
    assert known.match(std, version="2.13.0").id == "std-var-float32-accumulation"
    asinh = {"family": "nonfinite", "device": "cpu", "core": ["asinh"], "vanishes_with": []}
    assert known.match(asinh, version="2.12.0").state("2.12.0") == "fixed in 2.13"
    assert known.match(asinh, version="2.13.0").reappeared("2.13.0")  # 2.13 holds the fix
    roundtrip = {"family": "flip", "device": "cpu", "core": ["cast_roundtrip"],
                 "vanishes_with": ["emulate_precision_casts"]}
    assert known.match(roundtrip, version="2.13.0").status == "wontfix"
    minimum = {"family": "accuracy", "core": ["minimum"], "vanishes_with": []}
    assert known.match({**minimum, "device": "cpu"}, version="2.14.0").status == "open"
    assert known.match({**minimum, "device": "cuda"}, version="2.14.0").reappeared("2.14.0")


# ------------------------------------------------------------------ the store


def finding(sig: str, kind: str = "nonfinite", **kw) -> Finding:
    return Finding(signature=sig, kind=kind, device="cpu", dtype="float32",
                   op_chain="input expm1(%0) reciprocal(%1)->out0", title=f"[numfuzz] {sig}",
                   torch="2.13.0", triton="none", **kw)


def test_a_version_1_store_opens_migrated_and_keeps_its_rows(tmp_path: Path) -> None:
    db = sqlite3.connect(tmp_path / DB_NAME)  # as numfuzz 9a5c8c0 wrote it
    db.executescript((DATA / "findings_store_v1.sql").read_text())
    db.close()
    with Store.in_reports(tmp_path) as store:
        (old,) = store.findings()
        assert (old.signature, old.hits, old.reliability, old.upstream_state) == \
            ("0123456789abcdef", 1, (3, 3), None)
        assert store.known_hits() == {"fused-low-precision-roundtrip": 1}
        # version 5's columns: the old hit is a known one, the old finding re-finds nothing
        assert store.known_hits(counted_as="known") == store.known_hits()
        assert old.ledger is None
        assert store.set_upstream(old.signature, "wontfix", ISSUE)
        store.record_search(old.signature, "repo:pytorch/pytorch is:issue mul", [])
    with Store.in_reports(tmp_path) as again:  # opened a second time: nothing to migrate
        assert again.get("0123456789abcdef").upstream_url == ISSUE
        assert again.upstream_search("0123456789abcdef")["results"] == []
    version = sqlite3.connect(tmp_path / DB_NAME).execute(
        "SELECT value FROM meta WHERE key = 'schema_version'").fetchone()[0]
    assert version == str(SCHEMA_VERSION) == "5"


def test_upstream_states_are_checked_and_an_unknown_signature_is_said(tmp_path: Path) -> None:
    with Store.in_reports(tmp_path) as store:
        store.record(finding("a" * 16))
        assert not store.set_upstream("b" * 16, "filed", ISSUE)
        with pytest.raises(ValueError):
            store.set_upstream("a" * 16, "closed", ISSUE)
        with pytest.raises(sqlite3.IntegrityError):  # the column's own check, too
            store.db.execute("UPDATE findings SET upstream_state = 'closed'")
        assert store.set_upstream("a" * 16, "filed", ISSUE)
        store.set_status("a" * 16, "fixed", reliability=(0, 3), fixed_in="2.14.0")
        got = store.get("a" * 16)
    assert (got.upstream_state, got.upstream_url, got.status) == ("filed", ISSUE, "fixed")


# ------------------------------------------------------------------ findings --filed/--wontfix


@pytest.fixture
def reports(tmp_path: Path) -> Path:
    """Three causes: two searchable (expm1, and one with an empty core), one hit known."""
    reports = tmp_path / "reports"
    with Store.in_reports(reports) as store:
        store.record(finding("a" * 16), cause={"core": ["expm1", "reciprocal"]})
        store.record(finding("b" * 16, kind="int-flip"), cause={"core": []})
        store.record(finding("c" * 16, kind="accuracy"), cause={"core": ["erf"]})
        store.record_known("vectorized-expm1-cancellation", "2030-01-01#1", "x.pt")
    return reports


def cli(*args: str, env: dict | None = None):
    return CliRunner().invoke(main, ["findings", *args], env=env)


def test_filed_and_wontfix_are_recorded_and_listed(reports: Path) -> None:
    filed = cli("--reports", str(reports), "--filed", "a" * 16, ISSUE)
    assert filed.exit_code == 0, filed.output
    assert f"{'a' * 16}: filed upstream as {ISSUE}" in filed.output
    wontfix = cli("--reports", str(reports), "--wontfix", "c" * 16,
                  "https://github.com/pytorch/pytorch/issues/189804", "--json")
    assert wontfix.exit_code == 0, wontfix.output
    with Store.in_reports(reports) as store:
        store.record_known("c" * 16, "2030-01-02#1", "y.pt")  # what a night does with it
    shown = json.loads(cli("--reports", str(reports), "--json").stdout)
    rows = {r["signature"]: r for r in shown["findings"]}
    assert (rows["a" * 16]["upstream_state"], rows["a" * 16]["upstream_url"]) == ("filed", ISSUE)
    assert rows["c" * 16]["upstream_state"] == "wontfix" and rows["b" * 16]["upstream_url"] \
        is None
    by_id = {r["id"]: r for r in shown["known"]}
    assert by_id["vectorized-expm1-cancellation"]["hits"] == 1
    assert by_id["vectorized-expm1-cancellation"]["state"].startswith("fixed in 2.14")
    assert by_id["c" * 16]["state"] == "wontfix" and by_id["c" * 16]["urls"] == [
        "https://github.com/pytorch/pytorch/issues/189804"]
    table = cli("--reports", str(reports)).output
    assert f"│ filed {ISSUE} " in table and "│ wontfix https://github.com/pytorch/pytorch/" \
        "issues/189804 │" in table, table
    assert "known causes: 2 hits (counted, not drafted)" in table
    assert f"  {'c' * 16}: 1 hits, wontfix" in table


def test_a_night_of_known_causes_only_still_shows_them(tmp_path: Path) -> None:
    with Store.in_reports(tmp_path) as store:
        store.record_known("fused-low-precision-roundtrip", "2030-01-01#1", "x.pt")
    shown = cli("--reports", str(tmp_path))
    assert "0 findings" in shown.output and "fused-low-precision-roundtrip: 1 hits, wontfix" \
        in shown.output, shown.output


def test_bad_upstream_input_is_one_line_and_exit_2(reports: Path, tmp_path: Path) -> None:
    for args in (["--filed", "f" * 16, ISSUE], ["--wontfix", "a" * 16, "issue 4242"],
                 ["--filed", "a" * 16, "ftp://example.org/4242"], ["--filed", "a" * 16]):
        result = cli("--reports", str(reports), *args)
        assert result.exit_code == 2, (args, result.output)
        assert result.output.count("\n") == 1 and "error" in result.output.lower(), result.output
    missing = cli("--reports", str(tmp_path / "none"), "--filed", "a" * 16, ISSUE)
    assert missing.exit_code == 2 and missing.output.count("\n") == 1
    with Store.in_reports(reports) as store:  # nothing was recorded by the refused ones
        assert all(f.upstream_state is None for f in store.findings())


def test_findings_recheck_shows_the_ready_comment(reports: Path, monkeypatch) -> None:
    from fuzzer.nightly import recheck

    def replayed(store, pool, **kwargs):
        comment = upstream.close_comment(ISSUE, "2.14.0", 3, 3)
        return [Recheck("a" * 16, "t", "open", "fixed", 0, 3, upstream_state="filed",
                        upstream_url=ISSUE, comment=comment),
                Recheck("b" * 16, "u", "open", "open", 3, 3)]

    monkeypatch.setattr(recheck, "recheck", replayed)
    shown = cli("--reports", str(reports), "--recheck")
    assert shown.exit_code == 0, shown.output
    assert (f"  {ISSUE}: numfuzz: no longer reproduces on torch 2.14.0 (3/3 clean runs of the "
            "minimized repro); close #4242?") in shown.output
    data = json.loads(cli("--reports", str(reports), "--recheck", "--json").stdout)
    assert [r["comment"] != "" for r in data["rechecks"]] == [True, False]


def test_issue_references() -> None:
    assert upstream.issue_ref(ISSUE) == "#4242"
    assert upstream.issue_ref("https://github.com/pytorch/pytorch/pull/190533") == "#190533"
    assert upstream.issue_ref("https://github.com/triton-lang/triton/issues/6376") == \
        "triton-lang/triton#6376"
    assert upstream.issue_ref("https://bugs.example.org/4242") is None
    assert upstream.close_comment("https://bugs.example.org/4242", "2.15.0", 2, 2).endswith(
        "(2/2 clean runs of the minimized repro); close this issue?")


# ------------------------------------------------------------------ a night


def test_a_known_fix_come_back_is_a_finding_and_a_wontfix_cause_is_known(
        fake_runner, tmp_path: Path, few_knobs) -> None:
    reports = tmp_path / "reports"
    planted = tf.planted_case("tests.fakes:uint8_plus_one", fake_runner)
    os.utime(planted.save(reports / "corpus" / planted.file_name()), (1_000_000, 1_000_000))
    known_file = tmp_path / "known.toml"  # the planted cause, fixed upstream long ago
    known_file.write_text('[[known]]\nid = "planted-fixed"\nwhat = "planted: e8m0 bumped"\n'
                          f'urls = ["{ISSUE}"]\nfamily = ["flip"]\ndevice = "cpu"\n'
                          'status = "fixed"\nfixed_in = "2.0"\n')
    settings = night_settings(reports=reports, device="cpu", cases=1, seed=1, k=1,
                              max_calls=10, bisect=False, date="2030-03-01",
                              dtypes=("float32",), backend="eager", max_drafts=0,
                              known_file=known_file)
    pool = RunnerPool({"cpu": fake_runner}, warmup=False)
    lines: list[str] = []
    first = run_night(settings, log=lines.append, pool=pool)
    with Store.in_reports(reports) as store:
        (cause,) = store.findings()  # a finding, not a known hit: this torch holds the fix
        note = upstream.appendix(store, cause, known_file, "2.13.0")
        assert upstream.appendix(store, cause, known_file, "1.13.0") == ""  # before the fix
    assert cause.draft_path is None and "1 drafts wait for the next night" in first.read_text()
    assert f"`{cause.signature}` matches `planted-fixed` (fixed in 2.0)" in first.read_text()
    assert "#### Fixed upstream before" in note and f"fixed upstream in torch 2.0 ({ISSUE})" \
        in note and "reproduces on torch 2.13.0" in note

    # Upstream closes it as expected before it was drafted. The next night finds it again
    # through another case: a known hit on the cause, not a finding hit, and still no draft.
    recorded = cli("--reports", str(reports), "--wontfix", cause.signature, ISSUE)
    assert recorded.exit_code == 0, recorded.output
    again = tf.planted_case("tests.fakes:uint8_plus_one", fake_runner, scale=5.0)
    os.utime(again.save(reports / "corpus" / again.file_name()), (1_000_000, 1_000_000))
    settings.date, settings.max_drafts = "2030-03-02", 5
    second = run_night(settings, log=lines.append, pool=pool)
    with Store.in_reports(reports) as store:
        (after,) = store.findings()
        assert store.known_hits("2030-03-02#1") == {cause.signature: 1}, lines
    assert after.hits == cause.hits and after.draft_path is None
    assert not list((reports / "2030-03-02").glob(f"{cause.signature}*.md"))
    summary = second.read_text()
    assert "## New findings: 0" in summary and "## Known causes: 1 hits" in summary
    assert f"| `{cause.signature}` | known | 1 | wontfix |" in summary


# ------------------------------------------------------------------ --upstream, fake GitHub


RECORDED = json.loads((DATA / "github_search_issues.json").read_text())


class FakeGitHub(BaseHTTPRequestHandler):
    """Serves the recorded search responses; remembers each request's query and token."""

    requests: list[dict] = []
    status = 200

    def do_GET(self) -> None:  # noqa: N802 (http.server's name)
        url = urlparse(self.path)
        query = parse_qs(url.query)
        self.requests.append({"path": url.path, "q": query["q"][0],
                              "per_page": query.get("per_page"),
                              "auth": self.headers.get("Authorization")})
        if self.status != 200:
            self.send_error(self.status, "API rate limit exceeded")
            return
        body = json.dumps(RECORDED["strict" if " nan cpu" in query["q"][0] else "loose"])
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        self.wfile.write(body.encode())

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def github():
    FakeGitHub.requests, FakeGitHub.status = [], 200
    server = ThreadingHTTPServer(("127.0.0.1", 0), FakeGitHub)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}", FakeGitHub
    server.shutdown()
    server.server_close()


def test_upstream_lists_likely_duplicates_and_appends_them_to_the_draft(reports: Path,
                                                                        github) -> None:
    api, served = github
    draft_file = reports / "2030-01-01" / f"{'a' * 16}.md"
    draft_file.parent.mkdir()
    draft_file.write_bytes(b"# the draft\n\nits body\n")
    with Store.in_reports(reports) as store:
        store.claim_draft("a" * 16, str(draft_file))
        store.set_upstream("c" * 16, "filed", ISSUE)  # filed: not searched
    env = {upstream.TOKEN_ENV: "planted-token", upstream.API_ENV: api}
    shown = cli("--reports", str(reports), "--upstream", env=env)
    assert shown.exit_code == 0, shown.output
    queries = [r["q"] for r in served.requests]
    assert queries == ["repo:pytorch/pytorch is:issue expm1 reciprocal nan cpu",
                       "repo:pytorch/pytorch is:issue expm1 reciprocal"], queries
    assert all(r["auth"] == "Bearer planted-token" and r["path"] == "/search/issues"
               and r["per_page"] == [str(upstream.PER_CAUSE)] for r in served.requests)
    assert f"{'b' * 16}: no torch op names to search upstream for" in shown.output
    assert "upstream: searched GitHub's issues for 1 open root causes" in shown.output
    assert ("  #189803 Inductor produces large numerical discrepancy in reciprocal(elu + "
            "exp(elu)) due to catastrophic cancellation near zero (closed (completed)): "
            "https://github.com/pytorch/pytorch/issues/189803") in shown.output
    assert "#189804 " in shown.output and "closed (not_planned)" in shown.output
    assert "an item without a number" not in shown.output  # malformed: skipped
    text = draft_file.read_text()
    assert text.startswith("# the draft\n\nits body\n\n" + upstream.SECTION)
    assert [line for line in text.splitlines() if line.startswith("- #")] == [
        "- #189803 Inductor produces large numerical discrepancy in reciprocal(elu + exp(elu)) "
        "due to catastrophic cancellation near zero (closed (completed)): "
        "https://github.com/pytorch/pytorch/issues/189803",
        "- #189801 inductor rounds slightly negative F.elu outputs to exactly 0.0, causing "
        "div-by-zero to produce nan instead of -inf (open): "
        "https://github.com/pytorch/pytorch/issues/189801",
        "- #189804 Inductor vectorized GELU kernel produces tiny negative value (~-1.65e-7) "
        "where eager produces -0.0, causing sign() mismatch (closed (not_planned)): "
        "https://github.com/pytorch/pytorch/issues/189804"]
    data = json.loads(cli("--reports", str(reports), "--upstream", "--json", env=env).stdout)
    rows = {r["signature"]: r for r in data["findings"]}
    assert [d["number"] for d in rows["a" * 16]["duplicates"]] == [189803, 189801, 189804]
    assert rows["c" * 16]["duplicates"] is None
    assert draft_file.read_text().count(upstream.SECTION) == 1  # replaced, not appended twice


def test_upstream_without_a_token_says_so_and_goes_on(reports: Path, github) -> None:
    api, served = github
    shown = cli("--reports", str(reports), "--upstream",
                env={upstream.TOKEN_ENV: None, upstream.API_ENV: api})
    assert shown.exit_code == 0, shown.output
    said = [line for line in shown.output.splitlines() if line.startswith("upstream:")]
    assert said == ["upstream: no GITHUB_TOKEN set: not searching upstream for duplicates (each "
                    "draft has a ready `gh search issues` command)"]
    assert "3 findings" in shown.output and not served.requests


def test_upstream_unreachable_or_refused_says_so_and_goes_on(reports: Path, github) -> None:
    with socket.socket() as probe:  # a loopback port nothing listens on
        probe.bind(("127.0.0.1", 0))
        closed = f"http://127.0.0.1:{probe.getsockname()[1]}"
    env = {upstream.TOKEN_ENV: "planted-token", upstream.API_ENV: closed}
    shown = cli("--reports", str(reports), "--upstream", env=env)
    assert shown.exit_code == 0, shown.output
    said = [line for line in shown.output.splitlines() if line.startswith("upstream:")]
    assert len(said) == 1 and f"GitHub's API at {closed} cannot be reached" in said[0], said
    api, served = github
    served.status = 403
    refused = cli("--reports", str(reports), "--upstream",
                  env={**env, upstream.API_ENV: api})
    said = [line for line in refused.output.splitlines() if line.startswith("upstream:")]
    assert refused.exit_code == 0 and len(said) == 1 and "HTTP 403" in said[0] and \
        "rate limit" in said[0], refused.output
    assert len(served.requests) == 1  # the search stopped at the first refusal
    with Store.in_reports(reports) as store:
        assert all(store.upstream_search(f.signature) is None for f in store.findings())

"""A root cause upstream: its issue, a ready comment once it is fixed, and likely duplicates.

``issue_ref`` and ``close_comment``: what recheck proposes to post on a filed issue whose cause
no longer reproduces (numfuzz posts nothing). ``find_duplicates``: for each open root cause not
yet filed, GitHub's issue search API (``GET /search/issues``) with ``repo:pytorch/pytorch
is:issue``, the torch names of the ops in the cause's core, a word for its kind and its device;
when that strict query finds fewer than ``PER_CAUSE`` issues, the op names alone. Only the
standard library (``urllib``), with a timeout; ``GITHUB_TOKEN`` authenticates and
``NUMFUZZ_GITHUB_API`` overrides the API's base URL (the tests point it at a server on the
loopback). Without a token, or when GitHub cannot be reached or refuses, ``Unavailable`` says so
in one line and the caller goes on. The results are recorded in the store and appended to the
cause's draft as a "Possible duplicates upstream" section (``appendix`` renders it for a draft
written later), with, for a cause matching a known entry fixed in an older torch than this one,
a note that the fix came back.
"""

from __future__ import annotations

import json
import os
import re
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass
from pathlib import Path

from fuzzer.corpus.files import atomic_write
from fuzzer.judge.kinds import Kind
from fuzzer.report.draft import REPO, op_names
from fuzzer.report.ranking import ranked
from fuzzer.report.store import Finding, Store
from fuzzer.triage import known

TOKEN_ENV = "GITHUB_TOKEN"
API_ENV = "NUMFUZZ_GITHUB_API"
DEFAULT_API = "https://api.github.com"
TIMEOUT = 10.0  # seconds per request
PER_CAUSE = 5  # likely duplicates kept per cause
SECTION = "#### Possible duplicates upstream"
# One word a report of each kind tends to hold; flips and accuracy have none that helps.
# Keyed by str: a Kind is one, and a finding holds its kind as the store's plain str.
KIND_WORDS: dict[str, str] = {Kind.NONFINITE: "nan", Kind.HIDDEN_NONFINITE: "inf",
                              Kind.META: "dtype", Kind.CRASH: "error", Kind.TIMEOUT: "hang"}
Log = Callable[[str], None]


class Unavailable(Exception):
    """No token, no network, or GitHub refused: one line for the user, and the search stops."""


# ------------------------------------------------------------------ the issue of a cause


def issue_ref(url: str) -> str | None:
    """``#N`` for an issue or PR of pytorch/pytorch, ``owner/repo#N`` for another GitHub
    repository, None for any other address."""
    found = re.match(r"https?://github\.com/([^/]+/[^/]+)/(?:issues|pull)/(\d+)", url)
    if found is None:
        return None
    repo, number = found.groups()
    return f"#{number}" if repo.lower() == REPO else f"{repo}#{number}"


def close_comment(url: str, torch_version: str, clean: int, k: int) -> str:
    """What to post on a filed issue whose cause no longer reproduces."""
    ref = issue_ref(url)
    return (f"numfuzz: no longer reproduces on torch {torch_version} ({clean}/{k} clean runs of "
            f"the minimized repro); close {ref or 'this issue'}?")


# ------------------------------------------------------------------ search


@dataclass
class Duplicate:
    number: int
    title: str
    state: str  # open / closed, with GitHub's reason when it gives one: "closed (not_planned)"
    url: str

    def line(self) -> str:
        return f"#{self.number} {self.title} ({self.state}): {self.url}"


def queries(finding: Finding, cause: dict | None) -> list[str]:
    """The strict query (ops, kind, device), then the loose one (ops); none without ops."""
    core = cause["core"] if cause else re.findall(r"([A-Za-z_][\w.]*)\(", finding.op_chain)
    ops = op_names(core)
    if not ops:
        return []
    loose = f"repo:{REPO} is:issue {' '.join(ops)}"
    strict = " ".join([loose, *filter(None, [KIND_WORDS.get(finding.kind), finding.device])])
    return [strict, loose] if strict != loose else [loose]


def search(query: str, token: str, api: str, timeout: float = TIMEOUT) -> list[Duplicate]:
    """One request to GitHub's issue search; ``Unavailable`` when it cannot be had."""
    url = f"{api.rstrip('/')}/search/issues?" + urllib.parse.urlencode(
        {"q": query, "per_page": PER_CAUSE})
    request = urllib.request.Request(url, headers={
        "Accept": "application/vnd.github+json", "Authorization": f"Bearer {token}",
        "X-GitHub-Api-Version": "2022-11-28", "User-Agent": "numfuzz"})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            data = json.load(response)
    except urllib.error.HTTPError as err:
        if err.code == 422:  # GitHub cannot parse this query: nothing found, go on
            return []
        raise Unavailable(f"GitHub refused the issue search (HTTP {err.code} {err.reason}"
                          f"{'; rate limit or token' if err.code in (401, 403, 429) else ''})"
                          ) from None
    except (urllib.error.URLError, OSError) as err:  # no route, DNS, refused, timed out
        reason = getattr(err, "reason", err)
        raise Unavailable(f"GitHub's API at {api} cannot be reached ({reason})") from None
    except ValueError:
        raise Unavailable(f"GitHub's API at {api} did not answer JSON") from None
    items = data.get("items") if isinstance(data, dict) else None
    return [d for d in map(_duplicate, items if isinstance(items, list) else []) if d]


def _duplicate(item: object) -> Duplicate | None:
    """One search result, or None when it lacks what a person needs to look at it."""
    if not isinstance(item, dict):
        return None
    number, title, state, url = (item.get(k) for k in ("number", "title", "state", "html_url"))
    if not (isinstance(number, int) and isinstance(title, str) and isinstance(state, str)
            and isinstance(url, str)):
        return None
    reason = item.get("state_reason")
    if state == "closed" and isinstance(reason, str) and reason:
        state = f"closed ({reason})"
    return Duplicate(number, title, state, url)


def searchable(findings: list[Finding]) -> list[Finding]:
    """Open causes not yet recorded upstream, strongest first."""
    return ranked([f for f in findings if f.status != "fixed" and f.upstream_state is None])


def find_duplicates(store: Store, *, log: Log, env: Mapping[str, str] | None = None,
                    timeout: float = TIMEOUT) -> int:
    """Search upstream for each open cause; record the results and append them to its draft.
    Returns how many causes were searched; ``Unavailable`` (one line) when no search can be
    made, after recording the causes searched before it."""
    env = os.environ if env is None else env
    token = env.get(TOKEN_ENV, "").strip()
    if not token:
        raise Unavailable(f"no {TOKEN_ENV} set: not searching upstream for duplicates (each "
                          "draft has a ready `gh search issues` command)")
    api = env.get(API_ENV, "").strip() or DEFAULT_API
    searched = 0
    for finding in searchable(store.findings()):
        tried = queries(finding, store.cause(finding.signature))
        if not tried:
            log(f"{finding.signature}: no torch op names to search upstream for")
            continue
        found: dict[int, Duplicate] = {}
        for query in tried:
            for duplicate in search(query, token, api, timeout):
                found.setdefault(duplicate.number, duplicate)
            if len(found) >= PER_CAUSE:
                break
        results = [asdict(d) for d in list(found.values())[:PER_CAUSE]]
        store.record_search(finding.signature, tried[0], results)
        searched += 1
        if finding.draft_path and Path(finding.draft_path).is_file():
            row = store.upstream_search(finding.signature)
            assert row is not None  # recorded just above
            add_to_draft(Path(finding.draft_path), row)
    return searched


# ------------------------------------------------------------------ drafts


def duplicates_section(search_row: dict) -> str:
    """The "Possible duplicates upstream" section of a draft, from a recorded search."""
    results = [Duplicate(**r) for r in search_row["results"]]
    lines = [SECTION, "", f"GitHub's issue search on {search_row['at']} "
             f"(`{search_row['query']}`, then the op names alone), best match first; read them "
             "before filing:", ""]
    lines += [f"- {d.line()}" for d in results] or ["- none found"]
    return "\n".join(lines)


def add_to_draft(path: Path, search_row: dict) -> Path:
    """Append (or replace) the draft's duplicates section, atomically."""
    head = path.read_text().split("\n" + SECTION, 1)[0].rstrip("\n")
    return atomic_write(path, f"{head}\n\n{duplicates_section(search_row)}\n")


def regression_note(entry: known.Known, torch_version: str) -> str:
    """For a cause that matches a known entry whose fix this torch already holds."""
    return "\n".join([
        "#### Fixed upstream before", "",
        f"This cause matches `{entry.id}` in numfuzz's list of known causes, fixed upstream in "
        f"torch {entry.fixed_in} ({', '.join(entry.urls) or 'no link recorded'}), yet it "
        f"reproduces on torch {torch_version}: the fix regressed, or does not cover this case.",
        "", f"> {entry.what}"])


def appendix(store: Store, finding: Finding, known_file: Path, torch_version: str) -> str:
    """What a draft gets after its body: the regression note, the duplicates found so far."""
    parts = []
    cause = store.cause(finding.signature)
    entry = known.match(cause, known.entries(known_file), torch_version) if cause else None
    if entry is not None and entry.reappeared(torch_version):
        parts.append(regression_note(entry, torch_version))
    found = store.upstream_search(finding.signature)
    if found is not None:
        parts.append(duplicates_section(found))
    return "".join(f"\n{part}\n" for part in parts)

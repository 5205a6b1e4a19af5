"""Nights at a glance: one static HTML page over a reports folder, viewable offline.

What syzbot's dashboard and ClusterFuzz's testcase pages show a team, from numfuzz's own
records: every cause in the findings store (value class, kind, surface, first and last seen,
hits per night, upstream state, links to its draft and repro), the latest night's queue (its
buckets of raw findings and what is left), and plots over nights (cases, raw findings, new
causes by value class, yield per arm, time per stage). The plots are matplotlib's SVG, inlined:
the page loads nothing, runs no script, and needs no network. Reading is split from drawing
(``read`` → ``Board``; ``page`` → HTML), so a test checks the numbers without a browser.
"""

from __future__ import annotations

import html
import io
import json
import os
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path

from fuzzer.report.store import Finding, Store

PAGE = "dashboard.html"
TOP_ARMS = 15  # arms in the yield plot, the most productive first


@dataclass
class Night:
    """One night's numbers, from its ``night.json``."""

    name: str  # the folder: its date (and run)
    cases: int = 0
    raw: int = 0
    stage_seconds: dict[str, float] = field(default_factory=dict)
    buckets: list[dict] = field(default_factory=list)
    unfinished: list[str] = field(default_factory=list)
    status: str = ""
    backlog: int = 0  # case files left for the next night (SUMMARY.md's count)

    @classmethod
    def load(cls, path: Path) -> Night | None:
        try:
            data = json.loads(path.read_text())
        except (OSError, ValueError):
            return None  # a night being written, or not a night: left out, not guessed
        if not isinstance(data, dict):
            return None
        try:  # a file of another shape is left out whole: no number on the page is guessed
            raw = data.get("raw_findings") or {}
            night = cls(path.parent.name, int(data.get("cases") or 0),
                        sum(int(v) for v in raw.values()) if isinstance(raw, dict) else 0,
                        {str(k): float(v) for k, v in (data.get("stage_seconds") or {}).items()},
                        [b for b in data.get("buckets") or [] if isinstance(b, dict)],
                        [str(u) for u in data.get("unfinished") or []],
                        str(data.get("status") or ""), int(data.get("backlog") or 0))
        except (TypeError, ValueError, AttributeError, OverflowError):
            return None
        return night


@dataclass
class Board:
    """Everything the page shows, read from a reports folder."""

    reports: Path
    causes: list[Finding]
    hits: dict[str, dict[str, int]]  # signature -> night -> raw cases that hit it
    nights: list[Night]
    arms: list[dict]  # the store's arm_nights rows
    # Per night of the store, its causes by what they are (``Store.tally``).
    tallies: dict[str, dict[str, int]] = field(default_factory=dict)

    def new_causes(self) -> dict[str, Counter[int]]:
        """Per night: new mechanisms first seen then, by value class (0: not classed); a
        re-find of numfuzz's own ledger cause is not one."""
        by_night: dict[str, Counter[int]] = defaultdict(Counter)
        for f in self.causes:
            if not f.ledger:
                by_night[f.first_seen[:10]][f.value_class or 0] += 1
        return by_night

    def arm_yield(self) -> list[tuple[str, float, int]]:
        """Per arm over every night: new causes per CPU-hour and causes, best first."""
        seconds: defaultdict[str, float] = defaultdict(float)
        causes: Counter[str] = Counter()
        for row in self.arms:
            seconds[row["arm"]] += float(row["seconds"] or 0)
            causes[row["arm"]] += int(row["causes"] or 0)
        rows = [(arm, causes[arm] / (seconds[arm] / 3600), causes[arm])
                for arm in seconds if seconds[arm] > 0]
        return sorted(rows, key=lambda r: (-r[1], r[0]))[:TOP_ARMS]


def read(reports: Path) -> Board:
    """The store and every night under ``reports``."""
    with Store.in_reports(reports) as store:
        causes = store.findings()
        hits: dict[str, dict[str, int]] = defaultdict(dict)
        for signature, night, n in store.db.execute(
                "SELECT signature, night, count(*) FROM processed WHERE signature IS NOT NULL "
                "GROUP BY signature, night"):
            hits[signature][night] = n
        arms = store.arm_nights()
        tallies = {night: store.tally(night) for night in store.nights()}
    nights = [n for n in (Night.load(p) for p in sorted(reports.glob("*/night.json"))) if n]
    return Board(reports, causes, dict(hits), nights, arms, tallies)


# ------------------------------------------------------------------ plots


def _svg(figure) -> str:  # noqa: ANN001 (a matplotlib Figure: typed where matplotlib is)
    buf = io.StringIO()
    figure.savefig(buf, format="svg", bbox_inches="tight")
    import matplotlib.pyplot as plt

    plt.close(figure)
    text = buf.getvalue()
    return text[text.index("<svg"):]  # inline: no XML prolog inside HTML


def _figure(title: str):  # noqa: ANN202
    import matplotlib

    matplotlib.use("Agg")  # no display: files only
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(figsize=(6.4, 2.8))
    axes.set_title(title, fontsize=10)
    axes.tick_params(labelsize=8)
    return figure, axes


def plots(board: Board) -> list[str]:
    """The plots over nights, as inline SVG."""
    names = [n.name for n in board.nights]
    made = []
    for title, values in (("Cases fuzzed per night", [n.cases for n in board.nights]),
                          ("Raw findings per night", [n.raw for n in board.nights])):
        figure, axes = _figure(title)
        axes.bar(names, values, color="#4c72b0")
        axes.tick_params(axis="x", rotation=45)
        made.append(_svg(figure))
    made.append(_classes_plot(board))
    made.append(_tally_plot(board))
    made.append(_yield_plot(board))
    made.append(_stages_plot(board))
    return made


def _classes_plot(board: Board) -> str:
    by_night = board.new_causes()
    nights = sorted(by_night)
    figure, axes = _figure("New mechanisms per night, by value class (1 most valuable)")
    bottom = [0] * len(nights)
    for value_class in range(0, 6):
        counts = [by_night[n][value_class] for n in nights]
        if any(counts):
            axes.bar(nights, counts, bottom=bottom, label=f"class {value_class or '?'}")
            bottom = [b + c for b, c in zip(bottom, counts)]
    if nights:
        axes.legend(fontsize=7)
    axes.tick_params(axis="x", rotation=45)
    return _svg(figure)


# What a night's causes are, as the tally plot stacks them.
TALLIED = (("new", "new mechanisms"), ("refind", "re-finds (numfuzz's ledger)"),
           ("known", "known upstream"),
           ("by-design", "not a bug (by design, not Inductor's, noise)"))


def _tally_plot(board: Board) -> str:
    nights = list(board.tallies)
    figure, axes = _figure("Causes per night: new mechanisms, re-finds, known, not a bug")
    bottom = [0] * len(nights)
    for key, label in TALLIED:
        counts = [board.tallies[n][key] for n in nights]
        axes.bar(nights, counts, bottom=bottom, label=label)
        bottom = [b + c for b, c in zip(bottom, counts)]
    if nights:
        axes.legend(fontsize=7)
    axes.tick_params(axis="x", rotation=45)
    return _svg(figure)


def _yield_plot(board: Board) -> str:
    rows = board.arm_yield()
    figure, axes = _figure("New causes per CPU-hour, by arm (all nights)")
    axes.barh([r[0] for r in rows][::-1], [r[1] for r in rows][::-1], color="#55a868")
    return _svg(figure)


def _stages_plot(board: Board) -> str:
    figure, axes = _figure("Wall seconds per stage, per night")
    stages = sorted({s for n in board.nights for s in n.stage_seconds})
    bottom = [0.0] * len(board.nights)
    for stage in stages:
        values = [n.stage_seconds.get(stage, 0.0) for n in board.nights]
        axes.bar([n.name for n in board.nights], values, bottom=bottom, label=stage)
        bottom = [b + v for b, v in zip(bottom, values)]
    if stages:
        axes.legend(fontsize=7)
    axes.tick_params(axis="x", rotation=45)
    return _svg(figure)


# ------------------------------------------------------------------ the page


def _link(path: str | None, out: Path, text: str) -> str:
    if not path or not Path(path).exists():
        return "—"
    target = os.path.relpath(path, out.parent)
    return f'<a href="{html.escape(target)}">{html.escape(text)}</a>'


def _upstream(f: Finding) -> str:
    state = f.upstream_state or ("fixed upstream in " + f.fixed_upstream if f.fixed_upstream
                                 else "not filed")
    if f.upstream_url:
        return f'<a href="{html.escape(f.upstream_url)}">{html.escape(state)}</a>'
    return html.escape(state)


def cause_rows(board: Board, out: Path) -> list[str]:
    """One row per cause, most valuable class first, then most hits."""
    rows = []
    order = sorted(board.causes, key=lambda f: (f.value_class or 9, -f.hits, f.signature))
    for f in order:
        per_night = board.hits.get(f.signature, {})
        nightly = " ".join(f"{night}: {n}" for night, n in sorted(per_night.items())) or "—"
        surface = (f.arm or "").split("/")[0] or "—"
        title = f.title or f.summary or f.signature
        if f.ledger:  # one of numfuzz's own causes, found again: not drafted as new
            title = f"re-find of {f.ledger}: {title}"
        cells = [str(f.value_class or "?"), html.escape(f.kind), html.escape(surface),
                 html.escape(title), f.first_seen[:10],
                 f.last_seen[:10], str(f.hits), html.escape(nightly), _upstream(f),
                 html.escape(f.status), _link(f.draft_path, out, "draft"),
                 _link(f.repro_path, out, "repro")]
        rows.append("<tr>" + "".join(f"<td>{c}</td>" for c in cells) + "</tr>")
    return rows


def queue_rows(board: Board) -> list[str]:
    """The latest night's buckets: what each holds, settled and waiting."""
    if not board.nights:
        return []
    rows = []
    for b in board.nights[-1].buckets:
        members, waiting = b.get("members") or {}, b.get("waiting") or []
        settled = b.get("cause") or (b.get("counted_as") or "known" if b.get("known") else "")
        cells = [html.escape(str(b.get("id", ""))), html.escape(str(b.get("what", ""))),
                 html.escape(str(b.get("representative", "") or "—")),
                 html.escape(str(settled or "—")), str(len(members)), str(len(waiting))]
        rows.append("<tr>" + "".join(f"<td>{c}</td>" for c in cells) + "</tr>")
    return rows


STYLE = """
body { font-family: sans-serif; margin: 1.5em; color: #222; }
table { border-collapse: collapse; font-size: 0.85em; margin-bottom: 1.5em; }
th, td { border: 1px solid #ccc; padding: 0.25em 0.5em; text-align: left; vertical-align: top; }
th { background: #f0f0f0; }
.plots { display: flex; flex-wrap: wrap; gap: 1em; }
.plots svg { max-width: 640px; height: auto; }
"""


def _table(head: list[str], rows: list[str], empty: str) -> str:
    if not rows:
        return f"<p>{html.escape(empty)}</p>"
    top = "".join(f"<th>{html.escape(h)}</th>" for h in head)
    return f"<table><thead><tr>{top}</tr></thead><tbody>{''.join(rows)}</tbody></table>"


def page(board: Board, out: Path) -> str:
    """The whole page."""
    latest = board.nights[-1] if board.nights else None
    causes = _table(["class", "kind", "surface", "cause", "first seen", "last seen", "hits",
                     "hits per night", "upstream", "status", "draft", "repro"],
                    cause_rows(board, out), "No cause recorded yet.")
    queue = _table(["bucket", "what", "representative", "settled as", "members settled",
                    "waiting"], queue_rows(board), "No queue recorded.")
    left = "" if latest is None else (
        f" Left for the next night: {latest.backlog} case files"
        + (f", {len(latest.unfinished)} of them started tonight and carried on from where they "
           "stopped." if latest.unfinished else "."))
    return "\n".join([
        "<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
        "<title>numfuzz: nights at a glance</title>", f"<style>{STYLE}</style></head><body>",
        "<h1>numfuzz: nights at a glance</h1>",
        f"<p>{len(board.causes)} causes in the store, {len(board.nights)} nights under "
        f"<code>{html.escape(str(board.reports))}</code>.</p>",
        "<h2>Causes</h2>", causes,
        f"<h2>Queue of the latest night ({html.escape(latest.name if latest else '—')})</h2>",
        f"<p>Buckets of raw findings, one representative each.{html.escape(left)}</p>", queue,
        "<h2>Over nights</h2>", '<div class="plots">', *plots(board), "</div>",
        "</body></html>"])


def write(reports: Path, out: Path | None = None) -> Path:
    """Read ``reports`` and write its page (``reports/dashboard.html`` unless ``out``)."""
    from fuzzer.corpus.files import atomic_write

    out = out or reports / PAGE
    return atomic_write(out, page(read(reports), out))

"""``kseg stats --html``: a self-contained HTML page (plotly.js inlined once, no network) with
the figures of a stats report: sizes and record rates over time, codec and magic mix, the
batch size histogram and per-partition skew, and the summary tables.

plotly is an optional dependency (the ``report`` extra): imported when a page is written.
"""

from __future__ import annotations

import html
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from kseg.errors import InputError
from kseg.log.atomic import write_atomic
from kseg.printable import printable
from kseg.render.tools import partition_name

__all__ = ["html_report", "label", "write_html_report"]


def _plotly() -> Any:
    try:
        import plotly.graph_objects as go  # the report extra: pip install 'kseg[report]'
    except ImportError:
        raise InputError("--html needs plotly: pip install 'kseg[report]'") from None
    return go


def label(text: object) -> str:
    """Text from the data as a plot label: plotly.js reads labels as its own HTML subset
    (``<br>``, ``<a href>``, ``<b>``, entities), so a topic named ``<a href=...>`` would be a
    link; escaped, it reads as itself (plotly turns the entities back into the characters)."""
    return html.escape(printable(text), quote=False)


def _iso(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, timezone.utc).strftime("%Y-%m-%dT%H:%M:%S")


def _figures(report: Any) -> list[tuple[str, Any]]:
    go = _plotly()
    acc = report.acc
    figs = []
    points = acc.timeline.points()
    times = [_iso(p["start"]) for p in points]
    fig = go.Figure()
    fig.add_trace(go.Scatter(x=times, y=[p["records_per_second"] for p in points], name="records/s",
                             mode="lines+markers"))
    fig.add_trace(go.Bar(x=times, y=[p["bytes"] for p in points], name="bytes", yaxis="y2", opacity=0.4,
                         width=acc.timeline.width * 0.9, offset=0))
    fig.update_layout(title=f"Records per second and bytes over time ({acc.timeline.width // 1000} s buckets, "
                            "by batch max timestamp)",
                      yaxis=dict(title="records/s"), yaxis2=dict(title="bytes", overlaying="y", side="right"))
    figs.append(("timeline", fig))
    fig = go.Figure()
    fig.add_trace(go.Pie(labels=[label(c) for c in acc.bytes_by_codec], values=list(acc.bytes_by_codec.values()), name="codec",
                         domain=dict(x=[0, 0.45]), title="bytes by codec"))
    fig.add_trace(go.Pie(labels=[f"magic {m}" for m in acc.bytes_by_magic], values=list(acc.bytes_by_magic.values()),
                         name="magic", domain=dict(x=[0.55, 1]), title="bytes by magic"))
    fig.update_layout(title="Codec and message format mix")
    figs.append(("mix", fig))
    sizes = sorted(acc.batch_sizes.items())
    fig = go.Figure(go.Bar(x=[label(f"<= {k}") for k, _ in sizes], y=[v for _, v in sizes], name="batches"))
    fig.update_layout(title="Batch size histogram (bytes, power-of-two buckets)", yaxis=dict(title="batches"))
    figs.append(("batch-sizes", fig))
    parts = [p for t in report.topics for p in t.partitions]
    names = [label(partition_name(p)) for p in parts]
    fig = go.Figure()
    fig.add_trace(go.Bar(x=names, y=[p.acc.bytes for p in parts], name="bytes", offsetgroup=1))
    fig.add_trace(go.Bar(x=names, y=[p.acc.records for p in parts], name="records", yaxis="y2", offsetgroup=2))
    fig.update_layout(title="Per-partition skew", barmode="group", yaxis=dict(title="bytes"),
                      yaxis2=dict(title="records", overlaying="y", side="right"))
    figs.append(("skew", fig))
    return figs


def _table(rows: list[list[Any]], head: list[str]) -> str:
    out = ["<table><tr>" + "".join(f"<th>{html.escape(h)}</th>" for h in head) + "</tr>"]
    for r in rows:
        out.append("<tr>" + "".join(f"<td>{html.escape(str(c))}</td>" for c in r) + "</tr>")
    out.append("</table>")
    return "\n".join(out)


def html_report(report: Any, title: str = "kseg stats") -> str:
    """The page as text."""
    figs = _figures(report)
    divs = []
    for i, (name, fig) in enumerate(figs):
        divs.append(f'<section class="plot" id="plot-{name}">'
                    + fig.to_html(full_html=False, include_plotlyjs=(i == 0), div_id=f"fig-{name}")
                    + "</section>")
    head = ["partition", "records", "batches", "bytes", "compression", "distinct keys (est.)", "tombstones",
            "producers", "txn committed/aborted/open", "compactable (est.)", "problems"]
    rows = []
    for t in report.topics:
        for p in t.partitions:
            a = p.acc
            rows.append([printable(partition_name(p)), a.records, a.batches, a.bytes,
                         f"{a.compression_ratio:.2f}x" if a.compression_ratio else "-",
                         min(a.keys.count(), a.keyed), a.tombstones, len(a.producers),
                         f"{a.committed}/{a.aborted}/{a.open_transactions}",
                         a.compactable()["records_removable_estimate"], a.problem_count])
    problems = [pr for t in report.topics for p in t.partitions for pr in p.acc.problems]
    a = report.acc
    renamed = len(report.replicas)  # rows of renamed replicas, after the live topics and not in the total
    live = report.topics[:len(report.topics) - renamed]
    aside = f" ({renamed} rows of renamed replicas not counted)" if renamed else ""
    summary = (f"{a.records} records, {a.batches} batches, {a.bytes} bytes in "
               f"{sum(len(t.partitions) for t in live)} partitions of {len(live)} topics{aside}; "
               f"{a.problem_count} problem(s)")
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{html.escape(printable(title))}</title>
<style>body{{font-family:sans-serif;margin:1.5em}} table{{border-collapse:collapse}}
td,th{{border:1px solid #ccc;padding:2px 6px;text-align:right}} section.plot{{margin:1em 0}}</style>
</head><body>
<h1>{html.escape(printable(title))}</h1>
<p id="summary">{html.escape(summary)}</p>
{''.join(divs)}
<h2>Partitions</h2>
{_table(rows, head)}
<h2>Problems</h2>
<ul id="problems">{''.join(f'<li>{html.escape(printable(p))}</li>' for p in problems) or '<li>none</li>'}</ul>
</body></html>
"""


def write_html_report(report: Any, path: Path, title: str = "kseg stats") -> None:
    """Write the page atomically."""
    write_atomic(Path(path), html_report(report, title).encode())

"""The zoomable timeline of one step: an inline SVG of every rank's host and GPU rows with the
script that zooms it (no library, nothing fetched)."""

from __future__ import annotations

import re
from itertools import groupby
from typing import Any

from dnabert_scaling.phases import STEP_PHASES
from dnabert_scaling.report.results import ResultSet

ZOOM_COLORS = {
    "compute": "#3b6fb6",
    "nccl": "#d1495b",
    "memory": "#2e9e6a",
    "launch": "#111827",
    "forward": "#fde68a",
    "backward": "#bfdbfe",
    "optimizer": "#ddd6fe",
}
ZOOM_JS = """<script>(function(){var svg=document.getElementById('%(id)s'),out=document.getElementById('%(id)s-range');
var T0=%(t0)s,T1=%(t1)s,H=%(h)s,a=T0,b=T1,drag=null;
function show(){svg.setAttribute('viewBox',a+' 0 '+(b-a)+' '+H);out.textContent=(a/1000).toFixed(3)+' to '+(b/1000).toFixed(3)+' ms';}
function fit(){var w=b-a;if(w>T1-T0){a=T0;b=T1;}if(a<T0){b+=T0-a;a=T0;}if(b>T1){a-=b-T1;b=T1;}}
svg.addEventListener('wheel',function(e){e.preventDefault();var r=svg.getBoundingClientRect(),x=a+(e.clientX-r.left)/r.width*(b-a),
k=e.deltaY<0?0.8:1.25;a=x-(x-a)*k;b=x+(b-x)*k;if(b-a<0.05){b=a+0.05;}fit();show();},{passive:false});
svg.addEventListener('mousedown',function(e){drag={x:e.clientX,a:a,b:b};});
window.addEventListener('mouseup',function(){drag=null;});
svg.addEventListener('mousemove',function(e){if(!drag)return;var r=svg.getBoundingClientRect(),d=(e.clientX-drag.x)/r.width*(drag.b-drag.a);
a=drag.a-d;b=drag.b-d;fit();show();});
svg.addEventListener('dblclick',function(){a=T0;b=T1;show();});show();})();</script>"""


def _own_script() -> "re.Pattern":
    """ZOOM_JS as it is written into the page: any id of ours, any numbers, nothing else."""
    text = re.escape(ZOOM_JS[len("<script>") : -len("</script>")])
    for key, rx in (("id", r"ds-zoom-\d+"), ("t0", NUMBER), ("t1", NUMBER), ("h", NUMBER)):
        text = text.replace(re.escape(f"%({key})s"), rx)
    return re.compile(text, re.S)


NUMBER = r"-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?"
OWN_SCRIPT = _own_script()  # what front.show lets through as the report's own script


def _zoom_rows(tl, host) -> list[tuple[str, Any]]:
    """(label, frame of bars with start_s, end_s, color, title) per row: each rank's host threads
    (step phases and launch calls), then its GPU streams."""
    rows: list[tuple[str, Any]] = []
    for rank in sorted(int(r) for r in tl["rank"].unique()):
        if host is not None:
            mine = host[host["rank"] == rank]
            for thread, g in mine.groupby("thread", sort=False):
                color = [
                    ZOOM_COLORS.get(n, "#d1d5db") if k == "phase" else ZOOM_COLORS["launch"] for k, n in zip(g["kind"], g["name"])
                ]
                bars = g.assign(color=color, title=g["name"].astype(str))
                bars = bars[(bars["kind"] == "launch") | bars["name"].isin(STEP_PHASES)]
                rows.append((f"rank {rank} · host {thread}", bars))
        for stream, g in tl[tl["rank"] == rank].groupby("stream", sort=True):
            bars = g.assign(
                color=[ZOOM_COLORS.get(c, "#888888") for c in g["category"]],
                title=[f"{n} [{p}]" for n, p in zip(g["name"].astype(str), g["phase"].astype(str))],
            )
            rows.append((f"rank {rank} · stream {stream}", bars))
    return rows


def zoom_timeline_html(rs: ResultSet) -> str:
    """The timeline figure's step as inline SVG that zooms (wheel), pans (drag) and resets (double
    click); every bar names itself on hover. Self-contained: no file or network at view time."""
    from dnabert_scaling.report.html import Markup, render

    tl = rs.table("timeline")
    if tl is None or tl.empty:
        return ""
    ws = int(tl["world_size"].max())
    tl = tl[tl["world_size"] == ws]
    host = rs.table("timeline_host")
    host = host[host["world_size"] == ws] if host is not None and not host.empty else None
    rows = _zoom_rows(tl, host)
    row_h = 18
    t0 = min(float(min(b["start_s"].min() for _, b in rows if len(b))), 0.0) * 1e6
    t1 = float(max(b["end_s"].max() for _, b in rows if len(b))) * 1e6
    height, uid = len(rows) * row_h, f"ds-zoom-{rs.index}"
    script = Markup(ZOOM_JS % {"id": uid, "t0": _num(t0), "t1": _num(t1), "h": height})  # the module's own code
    return str(
        render(
            "zoom_timeline.html.j2",
            ws=ws,
            uid=uid,
            tracer=rs.traced(ws).get("tracer"),
            shown=f"{t0 / 1e3:.3f} to {t1 / 1e3:.3f} ms",  # what the script shows first; said without it too
            labels=[label for label, _ in rows],
            row_h=row_h,
            bar_h=row_h - 4,
            t0=_num(t0),
            width=_num(t1 - t0),
            height=height,
            rows=[{"y": i * row_h + 2, "runs": _runs(frame)} for i, (_, frame) in enumerate(rows) if len(frame)],
            script=script,
        )
    )


def _num(us: float) -> str:
    """A time in µs to the ns (the traces' resolution at best; the zoom's narrowest window, 0.05 µs,
    still shows 1 ns as 1/50 of its width), without trailing zeros: 12.5, not 12.500."""
    text = f"{us:.3f}".rstrip("0").rstrip(".")
    return "0" if text == "-0" else text


def _runs(frame) -> list[dict[str, Any]]:
    """A row's bars as runs of one colour ({fill, bars: [{x, w, title}]}), in the frame's order: the
    <g> of each run carries the fill, a bar its x and width (and the height: a <rect> takes none
    from its <g>). The order is the drawing order (where bars overlap, the later one is on top and
    answers the hover), so runs are kept in it rather than merged by colour."""
    bars = zip(frame["start_s"] * 1e6, frame["end_s"] * 1e6, frame["color"], frame["title"])
    return [
        {
            "fill": color,
            "bars": [{"x": _num(a), "w": _num(max(b - a, 0.3)), "title": f"{t} ({(b - a):.1f} µs)"} for a, b, _, t in run],
        }
        for color, run in groupby(bars, key=lambda bar: bar[2])
    ]

"""The zoomable timeline (report/timeline.py): every bar of the tables is drawn where it belongs, in
its colour, in the tables' order, naming itself on hover; the shared attributes are written once
per row and per run of one colour; names from the traces stay text."""

from __future__ import annotations

import re
from html.parser import HTMLParser

import pandas as pd
import pytest

from dnabert_scaling.report import html as H, results, timeline
from reportfixtures import gpu_results, write_results

SCRIPT = "<script>alert(1)</script>"
IMG = '<img src=x onerror="alert(2)">'
GEMM = "ampere_bf16_s16816gemm_bf16_128x128_ldg8_f2f_stages_32x5_tn"
NUMBER = re.compile(r"-?\d+(?:\.\d{0,2}[1-9])?")  # to the ns, no trailing zeros


def _tables() -> dict[str, pd.DataFrame]:
    """Two ranks: a host thread whose phases hold launches (bars that overlap: the order matters),
    a GPU stream of kernels and a copy, an NCCL stream; hostile names on a kernel and a thread."""
    host, gpu = [], []
    for rank in (0, 1):
        thread = "Master thread" if rank == 0 else IMG
        for kind, name, a, b in (
            ("phase", "step", 0.0, 400e-6),  # not a step phase: not drawn
            ("phase", "forward", 0.0, 100e-6),
            ("launch", "cudaLaunchKernel", 10.25e-6, 15.25e-6),
            ("launch", "cudaLaunchKernel", 20.001e-6, 23.0e-6),
            ("phase", "backward", 110e-6, 300e-6),
            ("launch", "cudaLaunchKernelExC", 120e-6, 120.0001e-6),  # shorter than the narrowest bar
            ("launch", "cudaMemcpyAsync", 150.5e-6, 160e-6),
            ("phase", "optimizer", 300e-6, 350e-6),
        ):
            host.append({"world_size": 2, "rank": rank, "thread": thread, "kind": kind, "name": name, "start_s": a, "end_s": b})
        for stream, category, phase, name, a, b in (
            (7, "compute", "forward", GEMM, 12.345e-6, 40.0e-6),
            (7, "compute", "forward", SCRIPT, 41e-6, 42e-6),
            (7, "memory", "forward", "Memcpy HtoD", 43e-6, 45.5e-6),
            (7, "compute", "backward", "a<b>&c", 130e-6, 290.125e-6),
            (20, "nccl", "backward", "ncclDevKernel_AllReduce_Sum_bf16_RING_LL", 200e-6, 310e-6),
        ):
            kind = "memcpy" if category == "memory" else "kernel"
            gpu.append(
                {
                    "world_size": 2,
                    "rank": rank,
                    "stream": stream,
                    "kind": kind,
                    "category": category,
                    "phase": phase,
                    "name": name,
                    "start_s": a,
                    "end_s": b,
                }
            )
    return {"timeline": pd.DataFrame(gpu), "timeline_host": pd.DataFrame(host)}


def _expected(tables: dict[str, pd.DataFrame]) -> list[tuple[float, str, float, float, str]]:
    """(y, fill, x, width, title) of every bar, row after row, in the tables' order: per rank its
    host thread (step phases and launches), then its streams by number."""
    colors = {"forward": "#fde68a", "backward": "#bfdbfe", "optimizer": "#ddd6fe"}
    categories = {"compute": "#3b6fb6", "nccl": "#d1495b", "memory": "#2e9e6a"}
    bars, row = [], 0
    for rank in (0, 1):
        host = tables["timeline_host"]
        drawn = host[(host["rank"] == rank) & ((host["kind"] == "launch") | host["name"].isin(list(colors)))]
        rows = [[(colors.get(r.name, "#111827"), r.start_s, r.end_s, r.name) for r in drawn.itertuples()]]
        gpu = tables["timeline"][tables["timeline"]["rank"] == rank]
        for stream in sorted(gpu["stream"].unique()):
            mine = gpu[gpu["stream"] == stream]
            rows.append([(categories[r.category], r.start_s, r.end_s, f"{r.name} [{r.phase}]") for r in mine.itertuples()])
        for bars_of_row in rows:
            for fill, a, b, name in bars_of_row:
                us = b * 1e6 - a * 1e6
                bars.append((row * 18 + 2, fill, round(a * 1e6, 3), round(max(us, 0.3), 3), f"{name} ({us:.1f} µs)"))
            row += 1
    return bars


class _Bars(HTMLParser):
    """Each <rect> of the SVG as drawn (y from its rows' translate, fill from the nearest fill, its
    own attributes and its title's text) and each <g> (its attributes, the rects right inside it)."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.stack: list[tuple[str, dict]] = []
        self.rects: list[dict] = []
        self.groups: list[dict] = []
        self.title: list[str] | None = None

    def handle_starttag(self, tag, attrs):
        node = {"attrs": dict(attrs), "rects": 0}
        if tag == "g":
            self.groups.append(node)
        if tag == "rect":
            moves = [re.fullmatch(r"translate\(0 (\S+)\)", n["attrs"].get("transform", "")) for _, n in self.stack]
            fills = [n["attrs"]["fill"] for _, n in self.stack if "fill" in n["attrs"]]
            node["y"] = sum(float(m.group(1)) for m in moves if m) + float(node["attrs"].get("y", 0))
            node["fill"] = node["attrs"].get("fill") or fills[-1]
            self.rects.append(node)
            self.stack[-1][1]["rects"] += 1
        if tag == "title":
            self.title = []
        self.stack.append((tag, node))

    def handle_endtag(self, tag):
        if tag == "title" and self.title is not None:
            self.rects[-1]["title"] = "".join(self.title)
            self.title = None
        while self.stack and self.stack.pop()[0] != tag:
            pass

    def handle_data(self, data):
        if self.title is not None:
            self.title.append(data)


@pytest.fixture(scope="module")
def zoom(tmp_path_factory):
    metrics, tables = gpu_results((1, 2))
    tables.update(_tables())
    folder = write_results(tmp_path_factory.mktemp("timeline"), metrics, tables)
    html = timeline.zoom_timeline_html(results.load_set(0, folder))
    svg = html[html.index("<svg") : html.index("</svg>") + len("</svg>")]
    parsed = _Bars()
    parsed.feed(svg)
    return {"html": html, "svg": svg, "bars": parsed.rects, "groups": parsed.groups, "tables": tables}


def test_every_bar_is_drawn_in_place_in_order_and_names_itself(zoom):
    want = _expected(zoom["tables"])
    got = [(b["y"], b["fill"], float(b["attrs"]["x"]), float(b["attrs"]["width"]), b.get("title")) for b in zoom["bars"]]
    assert len(zoom["bars"]) == len(want) == 2 * (7 + 5)
    assert got == want
    assert {b["attrs"]["height"] for b in zoom["bars"]} == {"14"}


def test_a_bar_carries_only_its_own_attributes_the_rest_is_grouped(zoom):
    assert {tuple(sorted(b["attrs"])) for b in zoom["bars"]} == {("height", "width", "x")}
    fills = [g for g in zoom["groups"] if "fill" in g["attrs"]]
    rows = [g for g in zoom["groups"] if "transform" in g["attrs"]]
    assert len(rows) == 2 * 3 and all(g["rects"] == 0 for g in rows)  # a row holds its colour groups
    assert all(g["rects"] > 0 for g in fills) and sum(g["rects"] for g in fills) == len(zoom["bars"])
    # one group per run of one colour: the host row's forward, its 2 launches, backward, 2 launches,
    # optimizer; stream 7: 2 compute kernels, the copy, a compute kernel; stream 20: one NCCL kernel
    assert [g["rects"] for g in fills] == [1, 2, 1, 2, 1, 2, 1, 1, 1] * 2
    numbers = [b["attrs"][k] for b in zoom["bars"] for k in ("x", "width")]
    assert all(NUMBER.fullmatch(n) for n in numbers), [n for n in numbers if not NUMBER.fullmatch(n)]


def test_names_from_the_traces_stay_text(zoom):
    html = zoom["html"]
    H.assert_inert(html, (timeline.OWN_SCRIPT,))  # the one script is the module's own
    assert html.count("<script>") == 1 and SCRIPT not in html and IMG not in html
    titles = [b["title"] for b in zoom["bars"]]
    assert f"{SCRIPT} [forward] (1.0 µs)" in titles and "a<b>&c [backward] (160.1 µs)" in titles
    assert "rank 1 · host &lt;img src=x onerror=&#34;alert(2)&#34;&gt;" in html


def test_the_report_size_benchmark_refuses_what_is_not_a_report(tmp_path):
    import subprocess

    from conftest import PYTHON, ROOT

    (tmp_path / "bad.html").write_bytes(b"\xff\xfe")
    for given, why in (
        (tmp_path / "none.html", "no such file"),
        (tmp_path, "not a file"),
        (tmp_path / "bad.html", "not UTF-8 text"),
    ):
        proc = subprocess.run(
            [PYTHON, str(ROOT / "scripts" / "bench_report_size.py"), str(given)], capture_output=True, text=True
        )
        assert proc.returncode == 2 and "Traceback" not in proc.stderr
        assert proc.stderr.strip() == f"bench-report-size: {given}: cannot be read as a report ({why})"

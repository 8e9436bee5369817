"""The report escapes by construction: values from a results folder (GPU name, batch size, label,
claim id, run name, fallback text, deviation, predictions) holding HTML reach report.html as text,
never as live markup. The built page is parsed and searched for what would run."""

from __future__ import annotations

import json
from html.parser import HTMLParser
from pathlib import Path

import pytest

from dnabert_scaling import checker
from dnabert_scaling.report import build
from reportfixtures import gpu_results, write_results

ROOT = Path(__file__).resolve().parents[1]
CLAIMS_FILE = ROOT / "expected" / "claims.toml"
SCRIPT = "<script>alert(1)</script>"
IMG = '<img src=x onerror="alert(2)">'
LINK = '<a href="javascript:alert(3)">x</a>'
PAYLOAD = f"{SCRIPT}{IMG}{LINK}"


class LiveMarkup(HTMLParser):
    """What would run in a browser: script elements (with their text), event-handler attributes,
    javascript: URLs."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.scripts: list[str] = []
        self.handlers: list[tuple[str, str]] = []
        self.js_urls: list[str] = []
        self._in_script = False

    def handle_starttag(self, tag, attrs):
        if tag == "script":
            self._in_script = True
            self.scripts.append("")
        for name, value in attrs:
            if name.lower().startswith("on"):
                self.handlers.append((tag, name))
            if value and value.strip().lower().startswith("javascript:"):
                self.js_urls.append(value)

    def handle_endtag(self, tag):
        if tag == "script":
            self._in_script = False

    def handle_data(self, data):
        if self._in_script:
            self.scripts[-1] += data


def live(html: str) -> LiveMarkup:
    p = LiveMarkup()
    p.feed(html)
    return p


def _poisoned(folder: Path) -> Path:
    m, t = gpu_results((1, 4, 8), tracer="torch")
    prov = m["provenance"]
    prov["gpu_name"] = f"H200 {PAYLOAD}"
    prov["gpus"] = [dict(g, name=PAYLOAD, memory=PAYLOAD) for g in prov["gpus"]]
    prov["batch_size_per_rank"] = PAYLOAD
    prov["host"] = PAYLOAD
    prov["model"] = PAYLOAD
    prov["platform"] = prov["cpu"] = prov["nccl"] = prov["driver"] = PAYLOAD
    prov["task"] = {"name": PAYLOAD, "synthetic": True}
    prov["packages"] = {PAYLOAD: PAYLOAD}
    prov["weights"] = {"source": PAYLOAD}
    prov["ddp_options"] = {PAYLOAD: PAYLOAD, "find_unused_parameters": PAYLOAD}
    prov["training_loop"] = prov["optimizer_impl"] = prov["seq_len_tokens"] = PAYLOAD
    m["world_sizes"]["4"]["traced"]["run"] = f"ws4-{PAYLOAD}"
    gpu8 = m["world_sizes"]["8"]["traced"]["gpu"]
    gpu8["ranking"][1]["activity"] = PAYLOAD  # a kernel name comes from the trace
    gpu8["kernel_classes"][0]["example"] = PAYLOAD
    m["fallbacks"] = [
        {"what": PAYLOAD, "used": PAYLOAD, "reason": PAYLOAD, "runs": [PAYLOAD]},
        {"kind": "rehearsal", "what": "placement", "used": PAYLOAD, "reason": PAYLOAD},
    ]
    m["deviations"] = [PAYLOAD]
    m["notes"] = [PAYLOAD]
    pred = json.loads((ROOT / "expected" / "reference-results" / "h200-buckets-b8" / "predictions.json").read_text())
    # the set names the trace the forecast replays: the forecast is shown as this set's
    m["world_sizes"]["1"]["traced"]["inputs"] = [{"rank": 0, "path": PAYLOAD, "sha256": pred["source"]["sha256"]}]
    folder = write_results(folder, m, t)
    pred["source"]["source"] = pred["source"]["readiness_method"] = PAYLOAD
    pred["model"]["node"]["name"] = pred["model"]["all_reduce"] = PAYLOAD
    pred["fallbacks"] = [{"what": PAYLOAD, "used": PAYLOAD, "why": PAYLOAD}]
    pred["world_sizes"]["8"]["busbw"] = PAYLOAD
    (folder / "predictions.json").write_text(json.dumps(pred))
    checker.write_verdicts(checker.check_results(folder, CLAIMS_FILE), folder)
    verdicts = json.loads((folder / "verdicts.json").read_text())
    verdicts["claims"][0]["id"] = f"C1{PAYLOAD}"  # verdicts.json is tied to metrics.json, not its own text
    verdicts["claims"][0]["title"] = PAYLOAD
    verdicts["claims"][0]["checks"][0]["reason"] = PAYLOAD
    verdicts["claims"][0]["checks"][0]["world_size"] = PAYLOAD
    verdicts["claims"][0]["statement"] = PAYLOAD
    verdicts["claims"][1]["indicative"] = [
        {"world_size": PAYLOAD, "instead_of": [PAYLOAD], "within_bounds": True, "why": PAYLOAD, "reason": PAYLOAD}
    ]
    verdicts["sanity"][0]["world_size"] = PAYLOAD
    verdicts["sanity"][0]["run"] = PAYLOAD
    (folder / "verdicts.json").write_text(json.dumps(verdicts))
    return folder


@pytest.fixture(scope="module")
def pages(tmp_path_factory):
    base = tmp_path_factory.mktemp("escaping")
    clean = write_results(base / "clean", *gpu_results((1, 4, 8), tracer="torch"))
    checker.write_verdicts(checker.check_results(clean, CLAIMS_FILE), clean)
    poisoned = _poisoned(base / "poisoned")
    out = {}
    for name, folder, label in (("clean", clean, "clean set"), ("poisoned", poisoned, f"label {PAYLOAD}")):
        res = build.build_report([folder], base / f"report-{name}", labels=[label], claims=CLAIMS_FILE)
        out[name] = res["html"].read_text(encoding="utf-8")
    return out


def test_no_live_markup_from_the_data(pages):
    clean, poisoned = live(pages["clean"]), live(pages["poisoned"])
    assert len(poisoned.scripts) == len(clean.scripts), "no script element beyond the report's own"
    assert not [s for s in poisoned.scripts if "alert(" in s]
    assert poisoned.handlers == clean.handlers == []
    assert poisoned.js_urls == []


def test_the_values_are_shown_as_text(pages):
    html = pages["poisoned"]
    assert html.count("&lt;script&gt;alert(1)&lt;/script&gt;") >= 5
    assert "&lt;img src=x onerror=" in html
    assert SCRIPT not in html and IMG not in html and LINK not in html
    assert "Prediction, not a verdict." in html, "the poisoned predictions.json was shown"
    # the first screen says rehearsal for a set whose ranks share GPUs
    summary = html.split('id="ds-summary"')[1].split("</table>")[0]
    assert ">rehearsal<" in summary and "never scaling evidence" in summary


def test_first_screen_placement_and_rehearsal_are_escaped(tmp_path):
    """The placement contract (``traced.placement``, read with .get: not in every schema yet) on the
    first screen: shown, escaped, and a set whose ranks share GPUs is marked rehearsal."""
    from dnabert_scaling.report import results, summary

    m, _ = gpu_results((1, 4), tracer="torch", placement=False)
    m["world_sizes"]["4"]["traced"]["placement"] = {
        "ranks": 4,
        "hosts": 1,
        "gpus": 2,
        "ranks_per_gpu": 2,
        "shared_gpu": True,
        "identity": "unknown",
        "transports": [PAYLOAD, "SHM"],
        "rehearsal": True,
    }
    verdicts = checker.evaluate(m, checker.load_claims(CLAIMS_FILE))
    rs = results.ResultSet(0, tmp_path, f"set {PAYLOAD}", "gpu", m, verdicts, "test")
    report = results.Report([rs], {"claims": str(CLAIMS_FILE), "written_by": PAYLOAD})
    html = str(summary.summary_html(report, [1, 4, 8]))
    page = live(html)
    assert page.scripts == [] and page.handlers == [] and page.js_urls == []
    assert "4 ranks on 2 GPUs of 1 host; ranks share a GPU at 4; via &lt;script&gt;" in html
    assert ">rehearsal<" in html
    from dnabert_scaling.report import front

    setup = front.setup_html(rs)
    assert "4: 4 ranks on 2 GPUs of 1 host (ranks share a GPU), via &lt;script&gt;" in setup
    assert live(setup).scripts == [] and live(setup).handlers == []


def test_show_refuses_live_markup_and_lets_the_reports_own_script_through(tmp_path):
    from dnabert_scaling.report import front, html as H, results, timeline

    for bad in (SCRIPT, IMG, LINK, "<svg onload=alert(1)>", '<a href=" JaVaScRiPt:alert(1)">', "<iframe src=x>"):
        with pytest.raises(H.LiveMarkup):
            front.show(bad)
    front.show(f"<p>{H.escape(PAYLOAD)}</p>")  # the same values as text: shown
    # the zoomable timeline's script is the report's own: it passes, and a changed copy does not
    folder = write_results(tmp_path / "g", *gpu_results((1, 4), tracer="torch"))
    zoom = timeline.zoom_timeline_html(results.load_set(0, folder))
    assert "<script>" in zoom
    H.assert_inert(zoom, (timeline.OWN_SCRIPT,))
    with pytest.raises(H.LiveMarkup):
        H.assert_inert(zoom.replace("show();})();", "show();alert(1);})();"), (timeline.OWN_SCRIPT,))

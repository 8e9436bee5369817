"""``dnabert-scaling report``: the paper-style HTML report of one or more results folders.

    dnabert-scaling report results/reference results/smoke --out report/ [--label TEXT ...]

The report is a notebook (``report.template``) executed with nbclient on a kernel that runs this
very interpreter, then converted with nbconvert's HTML exporter with the code cells hidden.
Figures are PNG data inside the page, and the page loads nothing from the network, so
``DIR/report.html`` alone is the report; the executed ``DIR/report.ipynb`` is written next to it.
Each results folder becomes a labelled section (label: ``--label``, in order, else derived from
``metrics.json``). A folder without a current ``verdicts.json`` (none, or one written for other
metrics) is checked first, by the function ``check`` runs, against the claims file (``--expected``),
writing its verdicts.json and verdicts.txt and saying so; the notebook only reads them.
"""

from __future__ import annotations

import argparse
import copy
import hashlib
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from dnabert_scaling.errors import MISSING, ArtifactError, Stopped, hidden_character, path_kind, regular_file, stop_on_signals
from dnabert_scaling.options import positive_int
from dnabert_scaling.outputs import output_path, write_text_atomic, write_texts_atomic

# The lab template minus everything it would fetch from a CDN (require.js, MathJax, mermaid,
# widget manager): the report renders offline, from one file.
OFFLINE_TEMPLATE = """{%- extends 'index.html.j2' -%}
{%- block html_head_js_requirejs -%}{%- endblock html_head_js_requirejs -%}
{%- block html_head_js_mathjax -%}{%- endblock html_head_js_mathjax -%}
{%- block html_head_js_mermaidjs -%}{%- endblock html_head_js_mermaidjs -%}
{%- block jupyter_widgets -%}{%- endblock jupyter_widgets -%}
"""


def _kernel_manager_class():
    """An AsyncKernelManager whose "python3" kernel is ``sys.executable``, whatever kernel specs
    the user's Jupyter paths hold (a ``python3`` spec there could point at another environment)."""
    from jupyter_client.kernelspec import KernelSpec, KernelSpecManager
    from jupyter_client.manager import AsyncKernelManager
    from traitlets import default

    class ThisPythonSpecs(KernelSpecManager):
        def get_kernel_spec(self, kernel_name: str) -> KernelSpec:
            if kernel_name == "python3":
                return KernelSpec(
                    argv=[sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
                    display_name=f"Python {sys.version.split()[0]} ({sys.executable})",
                    language="python",
                    resource_dir="",
                    metadata={"debugger": False},
                )
            return super().get_kernel_spec(kernel_name)

    class ThisPythonKernelManager(AsyncKernelManager):
        @default("kernel_spec_manager")
        def _this_python_specs(self):
            return ThisPythonSpecs(data_dir=self.data_dir)

    return ThisPythonKernelManager


def _package_root() -> Path:
    import dnabert_scaling

    return Path(dnabert_scaling.__file__).resolve().parents[1]


def _kernel_env(scratch: Path) -> dict[str, str]:
    env = dict(os.environ)
    root = str(_package_root())
    env["PYTHONPATH"] = root + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    env["MPLBACKEND"] = "Agg"
    env["IPYTHONDIR"] = str(scratch / "ipython")  # no user startup files or profiles in the report
    env["PYDEVD_DISABLE_FILE_VALIDATION"] = "1"
    env.setdefault("PYTHONHASHSEED", "0")
    if not env.get("SOURCE_DATE_EPOCH"):  # set but empty is unset (build_time); IPython's banner reads it as a number
        env.pop("SOURCE_DATE_EPOCH", None)
    return env


def build_report(
    results: list[Path],
    out: Path,
    labels: list[str] | None = None,
    claims: Path | None = None,
    timeout: int = 300,
    show_code: bool = False,
    written_by: str | None = None,
) -> dict[str, Any]:
    """Execute the report notebook for ``results`` and write ``out/report.html`` + ``out/report.ipynb``."""
    import nbformat

    from dnabert_scaling import checker
    from dnabert_scaling.outputs import refuse_overlap, writable_dir
    from dnabert_scaling.report import template

    t0 = time.monotonic()
    claims_path = Path(claims) if claims else checker.default_claims_path()
    if path_kind(claims_path) != MISSING:  # none is shown as claims not checked; a folder or a FIFO is refused
        regular_file(claims_path, "a claims file (--expected)")
    params = _params(claims_path, written_by)  # first: a malformed SOURCE_DATE_EPOCH stops the build before it starts
    loaded = _load_metrics(results, list(labels or []))
    titles = section_titles(loaded, list(labels or []))  # before anything is written: a refused label changes nothing
    # before anything is written (verdicts by check_where_needed, the --out folder): an output over an input
    refuse_overlap([("--out", Path(out) / name) for name in REPORT_FILES], report_inputs([f for _, f in loaded], claims_path))
    writable_dir(out, "--out")  # checked, not yet made: a refused --out leaves every results folder as it was
    check_where_needed(loaded, claims_path)
    sets = [{"path": str(folder), "label": title} for (_, folder), title in zip(loaded, titles)]
    out = writable_dir(out, "--out", create=True)
    nb = template.notebook(sets, params["claims"], params, titles)
    execute_notebook(nb, out, timeout)
    body = notebook_html(nb, show_code)
    write_report(out, nbformat.writes(nb), body)
    return {"html": out / "report.html", "notebook": out / "report.ipynb", "sets": titles, "seconds": time.monotonic() - t0}


def _load_metrics(results: list[Path], labels: list[str]) -> list[tuple[dict, Path]]:
    """Each results folder's metrics and folder (a clear error for one without metrics.json, or with a
    metrics.json or predictions.json that is not valid); writes nothing."""
    from dnabert_scaling import checker
    from dnabert_scaling.report.predictions import check_file

    if not results:
        raise ArtifactError("give at least one results folder")
    if len(labels) > len(results):
        raise ArtifactError(f"{len(labels)} --label given for {len(results)} results folder(s)")
    loaded: list[tuple[dict, Path]] = []
    digests: dict[str, Path] = {}
    for r in results:
        metrics, mpath = checker.load_metrics(r)
        folder = mpath.parent.resolve()
        check_file(folder)
        if any(folder == f for _, f in loaded):
            raise ArtifactError("given twice: the report would show one result set as two", r)
        digest = _measurements_digest(metrics)
        if digest in digests:  # a copy of a results folder, or the same runs analysed again: shown as two sets
            raise ArtifactError(
                f"holds the same measurements as {digests[digest]} (their metrics.json differ at most in when and "
                "from which path they were written): one result set given twice would show as two",
                r,
            )
        digests[digest] = Path(r)
        loaded.append((metrics, folder))
    return loaded


# what a metrics.json records about its writing rather than about the runs: left out when two sets are compared
WRITING_KEYS = ("created", "sources", "label")


def _measurements_digest(metrics: dict) -> str:
    """sha256 of a metrics.json's content without ``WRITING_KEYS`` and without the paths of the traces read
    (each trace stays known by its sha256): equal for a copy of a results folder and for the same runs
    analysed again (at another time, or from a copy of their folders)."""
    kept = copy.deepcopy({k: v for k, v in metrics.items() if k not in WRITING_KEYS})  # the caller's metrics stay whole
    for entry in (kept.get("world_sizes") or {}).values():
        traced = entry.get("traced") if isinstance(entry, dict) else None
        if isinstance(traced, dict) and isinstance(traced.get("inputs"), list):
            traced["inputs"] = [
                {k: v for k, v in i.items() if k != "path"} if isinstance(i, dict) else i for i in traced["inputs"]
            ]
    return hashlib.sha256(json.dumps(kept, sort_keys=True, allow_nan=True).encode()).hexdigest()


LABEL_MAX = 120  # characters of a section's label: a heading, not a paragraph


def check_label(label: str, n: int) -> None:
    """The ``n``-th ``--label``: visible (not empty, not only spaces), at most ``LABEL_MAX`` characters,
    and no character of ``errors.HIDDEN_CATEGORIES`` (the label is echoed to the terminal and heads a section); the error
    never echoes the label itself."""
    if not label.strip():
        raise ArtifactError(f"--label {n} is {'empty' if not label else 'only white space'}: a section needs a visible name")
    hidden = hidden_character(label)
    if hidden is not None:
        raise ArtifactError(f"--label {n} holds {hidden}: a label is plain visible text")
    if len(label) > LABEL_MAX:
        raise ArtifactError(f"--label {n} has {len(label):,} characters; a label has at most {LABEL_MAX}")


def section_titles(loaded: list[tuple[dict, Path]], labels: list[str]) -> list[str]:
    """Each results folder's section label: the ``--label`` given (checked by :func:`check_label`), else
    derived from its metrics and made distinct; two sections named alike are refused, naming both folders."""
    from dnabert_scaling.report.results import distinct_labels

    for n, label in enumerate(labels, 1):
        check_label(label, n)
    titles = [labels[i] if i < len(labels) else auto for i, auto in enumerate(distinct_labels(loaded))]
    for i, title in enumerate(titles):
        j = titles.index(title)
        if j < i:
            given = " (given by --label)" if i < len(labels) else ""
            raise ArtifactError(
                f"two sections would be named {title!r}{given}: {loaded[j][1]} and {loaded[i][1]}; give each its own --label"
            )
    return titles


def build_time() -> str | None:
    """The report's creation time where ``SOURCE_DATE_EPOCH`` fixes it (the reproducible-builds
    convention: seconds since 1970, UTC), so that two builds of the same results can be compared byte
    for byte; None where it is not set. A value that is not such a number is an error, not ignored."""
    from datetime import datetime, timezone

    raw = os.environ.get("SOURCE_DATE_EPOCH")
    if not raw:  # unset, or set but empty (as some CI systems leave it): the build's own time
        return None
    bad = f"SOURCE_DATE_EPOCH={raw[:40]!r} is not a count of seconds since 1970 (digits only, at most the year 9999)"
    if not raw.isascii() or not raw.isdigit() or len(raw) > 12:
        raise ArtifactError(bad)
    try:
        return datetime.fromtimestamp(int(raw), tz=timezone.utc).isoformat(timespec="seconds")
    except (ValueError, OverflowError, OSError):  # past the year 9999
        raise ArtifactError(bad) from None


def _params(claims_path: Path, written_by: str | None) -> dict[str, Any]:
    """The build's facts, injected into the notebook's parameters cell."""
    from dnabert_scaling import __version__
    from dnabert_scaling.provenance import now_iso

    return {
        "created": build_time() or now_iso(),
        "version": __version__,
        "prefix": sys.prefix,
        "python": sys.executable,
        "cwd": str(Path.cwd().resolve()),
        "strict_kernel": True,
        "claims": str(claims_path.resolve()) if claims_path.is_file() else None,
        "written_by": written_by or invocation(),
    }


def execute_notebook(nb, out: Path, timeout: int) -> None:
    """Run every cell of ``nb`` on a kernel of this interpreter (in place). A failing cell: the
    partly executed notebook is written beside the last report, which stays as it was, and an
    ``ArtifactError`` says so. SIGINT/SIGTERM: nbclient's own handlers shut the kernel down; the
    signal is recorded and raised as ``Stopped`` once nbclient has unwound."""

    import nbformat
    from nbclient import NotebookClient
    from nbclient.exceptions import CellExecutionError, CellTimeoutError, DeadKernelError

    received: list[int] = []
    with tempfile.TemporaryDirectory(prefix="dnabert-report-") as scratch:
        scratch_path = Path(scratch)
        saved = os.environ.get("JUPYTER_RUNTIME_DIR")
        os.environ["JUPYTER_RUNTIME_DIR"] = str(scratch_path / "runtime")  # connection files: never in $HOME
        loop = _signal_recording_loop(received)
        try:
            client = NotebookClient(
                nb,
                timeout=timeout,
                kernel_name="python3",
                startup_timeout=120,
                kernel_manager_class=_kernel_manager_class(),
                allow_errors=False,
                record_timing=False,
                resources={"metadata": {"path": str(out.resolve())}},
                # the kernel's own start-up warnings (TCP on localhost) are noise here
                extra_arguments=["--IPKernelApp.log_level=ERROR"],
            )
            # the kernel's stderr goes to a file: a kernel shut down by a signal prints a traceback
            with open(scratch_path / "kernel-stderr.log", "w") as kernel_stderr:
                loop.run_until_complete(client.async_execute(env=_kernel_env(scratch_path), stderr=kernel_stderr))
        except BaseException as exc:
            if received:  # what nbclient raised while unwinding from the signal is not the news
                raise Stopped(received[0]) from None
            if isinstance(exc, (CellExecutionError, CellTimeoutError, DeadKernelError)):
                write_text_atomic(out / FAILED_NOTEBOOK, nbformat.writes(nb))  # beside, not over, the last report
                raise ArtifactError(
                    f"the report notebook failed (partly executed notebook: {out / FAILED_NOTEBOOK}; "
                    f"report.html and report.ipynb there are as they were): {_first_lines(str(exc))}"
                ) from None
            if isinstance(exc, RuntimeError):  # e.g. "Kernel didn't respond in 120 seconds"
                said = _first_lines((scratch_path / "kernel-stderr.log").read_text(errors="replace"), 10)
                raise ArtifactError(
                    f"the notebook kernel ({sys.executable} -m ipykernel_launcher) did not start: {exc}"
                    + (f"; it said:\n{said}" if said else "")
                ) from None
            raise
        finally:
            loop.close()
            stop_on_signals()  # nbclient's clean-up reset both signals to their defaults
            if saved is None:
                os.environ.pop("JUPYTER_RUNTIME_DIR", None)
            else:
                os.environ["JUPYTER_RUNTIME_DIR"] = saved
    if received:
        raise Stopped(received[0])


def _signal_recording_loop(received: list[int]):
    """An event loop whose signal handlers (nbclient adds some for SIGINT and SIGTERM) first record
    the signal in ``received``: nbclient handles it by shutting the kernel down, and says nothing."""
    import asyncio

    class RecordingLoop(asyncio.SelectorEventLoop):
        def add_signal_handler(self, sig, callback, *args):
            def record_then(*cb_args):
                received.append(sig)
                callback(*cb_args)

            super().add_signal_handler(sig, record_then, *args)

    return RecordingLoop()


def notebook_html(nb, show_code: bool) -> str:
    """The executed notebook as one offline HTML page (code cells hidden unless ``show_code``)."""
    from nbconvert import HTMLExporter

    exporter = HTMLExporter(
        template_name="lab",
        exclude_input=not show_code,
        exclude_input_prompt=True,
        exclude_output_prompt=True,
        exclude_anchor_links=True,
    )
    exporter.raw_template = OFFLINE_TEMPLATE
    body, _ = exporter.from_notebook_node(nb, resources={"metadata": {"name": nb.metadata["title"]}})
    return body


REPORT_FILES = ("report.html", "report.ipynb")
FAILED_NOTEBOOK = "report.failed.ipynb"


def report_inputs(folders: list[Path], claims_path: Path) -> list[Path]:
    """What the report reads from each results folder (and the claims file): no output may be one."""
    names = ("metrics.json", "tables", "verdicts.json", "verdicts.txt", "predictions.json")
    return [*(folder / name for folder in folders for name in names), claims_path]


def write_report(out: Path, notebook: str, html: str) -> None:
    """``out/report.ipynb`` and ``out/report.html``, both staged before either replaces the last
    report: a failure, an interrupt or a full disk leaves the old pair and no temporary file; a
    stale ``report.failed.ipynb`` of an earlier failed build is removed once a build succeeds."""
    write_texts_atomic({out / "report.ipynb": notebook, out / "report.html": html})
    (out / FAILED_NOTEBOOK).unlink(missing_ok=True)


def invocation() -> str:
    """The command line that is building this report, as the reader would type it."""
    program = Path(sys.argv[0]).name if sys.argv else ""
    if program in ("__main__.py", "dnabert-scaling", ""):
        program = "dnabert-scaling"
    return " ".join([program, *sys.argv[1:]])


def check_where_needed(folders: list[tuple[dict, Path]], claims_path: Path) -> list[Path]:
    """Run ``check`` (the same function as the command) on every results folder whose verdicts.json
    is missing or was written for other metrics, saying so, one line per folder; the notebook then
    only reads verdicts.json. Every folder to check is verified writable before any is written, so a
    refusal leaves all of them as they were. Without a claims file nothing is checked: those folders'
    claims show as not checked, with the reason. Returns the folders checked."""
    from dnabert_scaling import checker
    from dnabert_scaling.outputs import writable_dir

    todo = []
    for metrics, folder in folders:
        verdicts, why = checker.read_verdicts(folder, metrics, claims_path)
        if verdicts is not None:
            why = _edited(verdicts, metrics, claims_path)
            if not why:
                continue
        if not claims_path.is_file():
            print(f"report: {folder}: {why} and no claims file {claims_path}: its claims show as not checked", file=sys.stderr)
            continue
        try:
            writable_dir(folder, "results folder")
        except ArtifactError as exc:
            raise ArtifactError(
                f"{why}, and the report cannot write the verdicts there ({exc}); "
                f"run `dnabert-scaling check {folder} --expected {claims_path}` where it can be written, "
                "or make the folder writable, then build the report again",
                folder,
            ) from None
        todo.append((folder, why))
    for folder, why in todo:
        checker.check_folder(folder, claims_path, folder)
        print(
            f"report: {folder}: {why}: ran `dnabert-scaling check` against {claims_path} (wrote verdicts.json and verdicts.txt)",
            file=sys.stderr,
        )
    return [folder for folder, _ in todo]


def _edited(verdicts: dict, metrics: dict, claims_path: Path) -> str:
    """Why a verdicts.json tied to its files by digest still cannot be shown: its verdicts are not
    the ones its metrics give against the claims file (edited by hand); "" when they are."""
    from dnabert_scaling import checker

    if not claims_path.is_file():
        return ""
    fresh = checker.evaluate(metrics, checker.load_claims(claims_path), checker.load_sanity_bounds(claims_path))

    def words(v: dict) -> list | None:
        """Each claim's id, verdict and its checks' verdicts; None for a document not of that shape
        (a claim or a check that is not an object, checks that are not a list: edited too)."""
        claims = v.get("claims")
        if not isinstance(claims, list) or not all(isinstance(c, dict) for c in claims):
            return None
        out = []
        for c in claims:
            checks = c.get("checks") or []
            if not isinstance(checks, list) or not all(isinstance(ch, dict) for ch in checks):
                return None
            out.append((c.get("id"), c.get("verdict"), [ch.get("verdict") for ch in checks]))
        return out

    if words(verdicts) != words(fresh):
        return "verdicts.json does not hold the verdicts its metrics.json gives against the claims file (edited?)"
    return ""


def _first_lines(text: str, n: int = 25) -> str:
    lines = [ln for ln in text.strip().splitlines() if ln.strip()]
    return "\n".join(lines[-n:])


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("results", nargs="+", type=Path, help="results folders written by `analyze` (each a section)")
    p.add_argument("--out", type=output_path, required=True, help="folder for report.html and report.ipynb")
    p.add_argument(
        "--label",
        action="append",
        default=[],
        metavar="TEXT",
        help="section label of the i-th results folder (repeat in order; default: from metrics.json)",
    )
    p.add_argument(
        "--expected",
        type=Path,
        default=None,
        help="claims file to check folders without a current verdicts.json against (default: expected/claims.toml)",
    )
    p.add_argument("--timeout", type=positive_int, default=300, help="seconds per notebook cell (default 300)")
    p.add_argument("--show-code", action="store_true", help="keep the code cells in the HTML")
    p.add_argument(
        "--written-by",
        metavar="TEXT",
        default=None,
        help="the command to name as this report's author (default: this command line; make kick-tires passes its own)",
    )


def run(args: argparse.Namespace) -> int:
    res = build_report(args.results, args.out, args.label, args.expected, args.timeout, args.show_code, args.written_by)
    print(
        f"report: wrote {res['html']} and {res['notebook']} ({len(res['sets'])} result set(s), {res['seconds']:.1f} s)",
        file=sys.stderr,
    )
    for i, t in enumerate(res["sets"], 1):
        print(f"  section {i + 1}: {t}", file=sys.stderr)
    return 0

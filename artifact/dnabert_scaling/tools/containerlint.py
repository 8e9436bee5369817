"""Static checks of an Apptainer definition file (``make lint-container``).

Apptainer cannot be installed where this project is built and tested, and it has no
validate-only mode, so this reads a definition the way Apptainer's own code does and then applies
the project's rules:

Apptainer's rules (``internal/pkg/build/args`` and ``pkg/build/types/parser/deffile.go``):
- templating first: every ``{{ VAR }}`` must be defined in ``%arguments`` (``KEY=value`` lines)
  or by ``--build-arg``; a ``{{ VAR }}`` on a line where ``#`` (not ``#!``) comes before it is
  left unreplaced by Apptainer, which is reported too;
- the header is every line before the first line whose first word starts with ``%``: each line is
  ``key: value`` (``#`` starts a comment, ``\\`` continues a line), with a known header keyword;
- a section starts at every line whose first word starts with ``%`` (also inside a script!); only
  the known sections and SCIF app sections (``%apprun NAME`` ...) are accepted, app sections need
  an app name.

Project rules: ``Bootstrap:`` is the first header keyword, the base (``From:``) is pinned by
digest (``name@sha256:<64 hex>``; a tag next to the digest is rejected by Apptainer's registry
code, so the tag goes into ``%labels``), the labels ``BaseImage`` (equal to ``From``), ``BaseTag``
and the version labels are there, ``%help``, ``%test`` and a ``%runscript`` that ``exec``s exist, ``SCOREP_VERSION`` is 8.4 with a
complete patch series in the build directory's ``containers/scorep-patches/`` or 9.x
(``tools/scorep_series.py``),
every ``%apprun`` ``exec``s, no ``%setup`` or ``%pre`` (they run on the build host), the version
``%arguments`` are declared, every ``%files`` source exists in the build directory.

Every shell section (``%post``, ``%test``, ``%runscript``, ``%environment``, ``%startscript`` and
the app scripts) is checked with ``bash -n`` (or ``sh -n`` where Apptainer runs it with
``/bin/sh``) and, when installed, ``shellcheck`` (``-s bash`` for ``-c /bin/bash`` sections,
else ``-s sh``). Problems are printed as ``FILE:LINE: message``; the exit status is 1 when there
are any, 2 for a usage error.

  python -m dnabert_scaling.tools lint-container [--build-arg K=V]... [--context DIR] [--extract DIR]
                                                 [--no-shellcheck] [--shell FILE]... [--no-scripts] DEF

(``add_arguments`` and ``run`` are that subcommand, in the shape of ``dnabert_scaling.cli``'s.)
"""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from dnabert_scaling.errors import ArtifactError
from dnabert_scaling.tools import scorep_series

from dnabert_scaling.tools.apptainer_rules import (  # noqa: F401 (re-exported for the tests)
    VALID_SECTIONS,
    APP_SECTIONS,
    VALID_HEADERS,
    BOOTSTRAP_AGENTS,
    REGISTRY_AGENTS,
    BUILD_ARG_RE,
    COMMENT_BEFORE_RE,
    SHELL_SECTIONS,
    REQUIRED_SECTIONS,
    FORBIDDEN_SECTIONS,
    REQUIRED_LABELS,
    REQUIRED_ARGUMENTS,
    DIGEST_RE,
)


@dataclass
class Section:
    name: str  # "post", or "apprun sweep" for app sections
    kind: str  # "post", "apprun", ...
    app: str | None
    args: str
    line: int  # line of the %section header (1-based)
    body: list[str] = field(default_factory=list)  # lines after the header

    @property
    def interpreter(self) -> str:
        m = re.search(r"-c\s+(\S+)", self.args)
        return Path(m.group(1)).name if m else "sh"


@dataclass
class Definition:
    path: Path
    raw_lines: list[str]
    lines: list[str]  # after templating
    header: dict[str, tuple[str, int]]  # key -> (value, line)
    header_order: list[str]
    sections: list[Section]
    arguments: dict[str, tuple[str, int]]


class Linter:
    def __init__(self, path: Path, build_args: dict[str, str], context: Path, use_shellcheck: bool):
        self.path = path
        self.build_args = build_args
        self.context = context
        self.use_shellcheck = use_shellcheck and shutil.which("shellcheck") is not None
        self.problems: list[tuple[int, str]] = []
        self.notes: list[str] = []

    def error(self, line: int, message: str) -> None:
        self.problems.append((line, message))

    # --- parsing, as Apptainer does ---------------------------------------------------------------
    @staticmethod
    def split(lines: list[str]) -> tuple[list[tuple[int, str]], list[tuple[int, list[str]]]]:
        """(header lines, [(header line index, section lines)]) using Apptainer's section rule."""
        header: list[tuple[int, str]] = []
        sections: list[tuple[int, list[str]]] = []
        for i, line in enumerate(lines):
            words = line.split()
            if words and words[0].startswith("%"):
                sections.append((i, [line]))
            elif sections:
                sections[-1][1].append(line)
            else:
                header.append((i, line))
        return header, sections

    def read_arguments(self, raw: list[str]) -> dict[str, tuple[str, int]]:
        _, sections = self.split(raw)
        args: dict[str, tuple[str, int]] = {}
        for start, block in sections:
            if block[0].split()[0].lstrip("%").lower() != "arguments":
                continue
            for k, text in enumerate(block[1:], start + 2):
                s = text.strip()
                if not s or s.startswith("#"):
                    continue
                if "=" not in s:
                    self.error(k, f"%arguments: {s!r} is not a KEY=value pair (Apptainer skips it with a warning)")
                    continue
                key, value = s.split("=", 1)
                key = key.strip()
                if not re.fullmatch(r"\w+", key):
                    self.error(k, f"%arguments: {key!r} is not a valid build variable name")
                    continue
                args[key] = (value, k)
        return args

    def template(self, raw_text: str, arguments: dict[str, tuple[str, int]]) -> str:
        """Replace ``{{ VAR }}`` the way Apptainer's args.NewReader does, reporting problems."""
        used: set[str] = set()
        out: list[str] = []
        pos = 0
        for m in BUILD_ARG_RE.finditer(raw_text):
            line_no = raw_text.count("\n", 0, m.start()) + 1
            # Apptainer looks at the text from the last newline (or the previous replacement)
            # up to the match: a '#' followed by anything but '!' there makes it a "comment".
            nl = raw_text.rfind("\n", pos, m.start())
            segment = raw_text[nl if nl >= 0 else pos : m.start()]
            name = m.group(1)
            if COMMENT_BEFORE_RE.search(segment):
                line_start = raw_text.rfind("\n", 0, m.start()) + 1
                if not raw_text[line_start : m.start()].lstrip().startswith("#"):
                    self.error(
                        line_no,
                        f"{{{{ {name} }}}} comes after '#' on its line: Apptainer treats that as a "
                        "comment and leaves the variable unreplaced",
                    )
                continue
            if name in self.build_args:
                value = self.build_args[name]
            elif name in arguments:
                value = arguments[name][0]
            else:
                self.error(
                    line_no,
                    f"build variable {name} is not defined in %arguments (nor by --build-arg): "
                    "Apptainer stops with 'build var ... is not defined'",
                )
                value = m.group(0)
            used.add(name)
            out.append(raw_text[pos : m.start()])
            out.append(value)
            pos = m.end()
        out.append(raw_text[pos:])
        for name, (_, line) in arguments.items():
            if name not in used:
                self.notes.append(f"{self.path}:{line}: note: argument {name} is not used")
        for name in self.build_args:
            if name not in used:
                self.notes.append(f"{self.path}: note: --build-arg {name} is not used by the definition")
        return "".join(out)

    def parse(self) -> Definition | None:
        try:
            raw_text = self.path.read_text()
        except (OSError, UnicodeDecodeError) as exc:
            self.error(0, f"cannot read the definition: {exc}")
            return None
        raw = raw_text.splitlines()
        if not raw_text.strip():
            self.error(1, "empty definition file")
            return None
        arguments = self.read_arguments(raw)
        text = self.template(raw_text, arguments)
        lines = text.splitlines()
        if len(lines) != len(raw):
            self.error(0, "a build variable's value contains a line break")
        header_lines, blocks = self.split(lines)

        header, order = self._parse_header(header_lines)
        sections = self._parse_sections(blocks)
        return Definition(self.path, raw, lines, header, order, sections, arguments)

    def _parse_header(self, header_lines: list[tuple[int, str]]) -> tuple[dict[str, tuple[str, int]], list[str]]:
        """The header keywords (``key: value``, ``\\`` continuations) as Apptainer reads them."""
        header: dict[str, tuple[str, int]] = {}
        order: list[str] = []
        cont_key, cont_val, cont_line = "", "", 0
        for i, line in header_lines:
            s = line.strip()
            if not s or s.startswith("#"):
                if cont_key:
                    header[cont_key] = (cont_val, cont_line)
                    cont_key = ""
                continue
            trimmed = s.split("#")[0]
            if cont_key:
                key, val, ln = cont_key, cont_val + trimmed.strip(), cont_line
                cont_key = ""
            else:
                if ":" not in trimmed:
                    self.error(
                        i + 1, f"header line {s!r}: 'header key {trimmed.strip()} had no val' (header lines are 'Key: value')"
                    )
                    continue
                k, v = trimmed.split(":", 1)
                key, val, ln = k.strip().lower(), v.strip(), i + 1
            if val.endswith("\\"):
                cont_key, cont_val, cont_line = key, val[:-1], ln
                continue
            probe = re.sub(r"\d+$", "&n", key)
            if key not in VALID_HEADERS and probe not in VALID_HEADERS:
                self.error(ln, f"invalid header keyword {key!r} (known: {', '.join(sorted(VALID_HEADERS))})")
                continue
            if key in header:
                self.error(ln, f"header keyword {key!r} given twice (line {header[key][1]})")
            header[key] = (val, ln)
            order.append(key)
        if cont_key:
            header[cont_key] = (cont_val, cont_line)
            order.append(cont_key)
        return header, order

    def _parse_sections(self, blocks: list[tuple[int, list[str]]]) -> list[Section]:
        """The known sections and SCIF app sections; an unknown one is an error."""
        sections: list[Section] = []
        for start, block in blocks:
            first = block[0].strip()
            head = first[1:]
            parts = head.split(None, 2)
            kind = head.split(" ", 1)[0].lower() if head else ""
            kind = kind.split("\t")[0]
            if kind in APP_SECTIONS:
                if len(parts) < 2:
                    self.error(start + 1, f"app section %{kind} has no app name (write '%{kind} NAME')")
                    continue
                sections.append(
                    Section(f"{kind} {parts[1]}", kind, parts[1], parts[2] if len(parts) > 2 else "", start + 1, block[1:])
                )
            elif kind in VALID_SECTIONS:
                sections.append(
                    Section(
                        kind, kind, None, head.split(None, 1)[1] if len(head.split(None, 1)) > 1 else "", start + 1, block[1:]
                    )
                )
            else:
                self.error(
                    start + 1,
                    f"invalid section %{kind or '?'} (Apptainer: 'invalid section(s) specified'); "
                    f"a line whose first word starts with '%' begins a section, even inside a script",
                )
        return sections

    # --- project rules -----------------------------------------------------------------------------
    def check_header(self, d: Definition) -> None:
        if not d.header:
            self.error(1, "no header: the file must start with 'Bootstrap: docker' and 'From: ...'")
            return
        if d.header_order and d.header_order[0] != "bootstrap":
            key = d.header_order[0]
            self.error(d.header[key][1], f"the first header keyword must be 'Bootstrap:', not {key!r}")
        if "bootstrap" not in d.header:
            self.error(1, "no 'Bootstrap:' header")
            return
        agent, line = d.header["bootstrap"]
        agent = agent.strip().lower()
        if agent not in BOOTSTRAP_AGENTS:
            self.error(line, f"unknown bootstrap agent {agent!r}")
            return
        if agent not in REGISTRY_AGENTS:
            self.error(line, f"Bootstrap: {agent}: the project's base must come from a registry (docker), pinned by digest")
            return
        if "from" not in d.header:
            self.error(line, f"Bootstrap: {agent} needs a 'From:' line")
            return
        ref, fline = d.header["from"]
        m = DIGEST_RE.match(ref.strip())
        if not m:
            if "@sha256:" in ref:
                self.error(fline, f"From: {ref!r}: the digest must be sha256: followed by 64 lowercase hex digits")
            else:
                self.error(
                    fline, f"From: {ref!r} is not pinned by digest: write name@sha256:<digest> and put the tag in %labels BaseTag"
                )
            return
        if m.group("tag"):
            self.error(
                fline,
                f"From: {ref!r} has a tag and a digest: Apptainer's registry code rejects "
                "'references with both a tag and digest'; keep the digest, move the tag to %labels BaseTag",
            )

    def check_sections(self, d: Definition) -> None:
        kinds = {s.kind for s in d.sections}
        for name in REQUIRED_SECTIONS:
            if name not in kinds:
                self.error(
                    len(d.lines), f"no %{name} section (the project requires %help, %test, %runscript, %labels, %arguments)"
                )
        for s in d.sections:
            if s.kind in FORBIDDEN_SECTIONS:
                self.error(s.line, f"%{s.kind} {FORBIDDEN_SECTIONS[s.kind]}: not allowed (do the work in %post)")
        seen: dict[str, int] = {}
        for s in d.sections:
            if s.kind not in ("files",) and s.name in seen:
                self.error(s.line, f"%{s.name} appears twice (also line {seen[s.name]}): Apptainer concatenates them; keep one")
            seen.setdefault(s.name, s.line)
        for s in d.sections:
            if s.kind in ("runscript", "apprun"):
                code = [ln.strip() for ln in s.body if ln.strip() and not ln.strip().startswith("#")]
                if not any(re.match(r"^exec\s+\S", ln) for ln in code):
                    self.error(s.line, f"%{s.name} does not 'exec' its command (signals and exit status must reach it)")
                elif code and not re.match(r"^exec\s+\S", code[-1]):
                    self.error(s.line, f"%{s.name}: the 'exec' must be the last command")
                if code and not any('"$@"' in ln for ln in code):
                    self.error(s.line, f'%{s.name} does not pass "$@" (the user\'s arguments) to its command')
            if s.kind == "help" and not any(ln.strip() for ln in s.body):
                self.error(s.line, "%help is empty")
            if s.kind == "test" and not any(ln.strip() and not ln.strip().startswith("#") for ln in s.body):
                self.error(s.line, "%test has no commands")

    def check_arguments(self, d: Definition) -> None:
        for name in REQUIRED_ARGUMENTS:
            if name not in d.arguments:
                self.error(self._line_of(d, "arguments"), f"%arguments does not declare {name}")
        self.check_scorep_version(d)
        sha = self.build_args.get("SCOREP_SHA256", d.arguments.get("SCOREP_SHA256", ("", 0))[0]).strip()
        if sha and not re.fullmatch(r"[0-9a-f]{64}", sha):
            self.error(d.arguments.get("SCOREP_SHA256", ("", 0))[1], f"SCOREP_SHA256={sha!r} is not a sha256 (64 hex digits)")
        rev = self.build_args.get("DNABERT2_REVISION", d.arguments.get("DNABERT2_REVISION", ("", 0))[0]).strip()
        if rev and not re.fullmatch(r"[0-9a-f]{40}", rev):
            self.error(d.arguments.get("DNABERT2_REVISION", ("", 0))[1], f"DNABERT2_REVISION={rev!r} is not a full 40-hex commit")

    def check_scorep_version(self, d: Definition) -> None:
        """SCOREP_VERSION: 8.4 with its patch series (verified), or 9.x (opt-in, built as released);
        the series' patches exist and every patch of the version is in it."""
        version = self.build_args.get("SCOREP_VERSION", d.arguments.get("SCOREP_VERSION", ("", 0))[0]).strip()
        line = d.arguments.get("SCOREP_VERSION", ("", 0))[1]
        if not version:
            return
        folder = self.context / "containers" / "scorep-patches"  # what the build copies to $SRC
        for msg in scorep_series.version_problems(folder, version):
            self.error(line, f"SCOREP_VERSION={version}: {msg}")

    def check_labels(self, d: Definition) -> None:
        kinds = {s.kind for s in d.sections}
        labels: dict[str, tuple[str, int]] = {}
        for s in d.sections:
            if s.kind != "labels":
                continue
            for k, ln in enumerate(s.body, s.line + 1):
                t = ln.strip()
                if not t or t.startswith("#"):
                    continue
                key, _, value = t.partition(" ")
                labels[key] = (value.strip(), k)
        if "labels" in kinds:
            for name in REQUIRED_LABELS:
                if name not in labels:
                    self.error(self._line_of(d, "labels"), f"%labels has no {name}")
            if "BaseImage" in labels and "from" in d.header and labels["BaseImage"][0] != d.header["from"][0].strip():
                self.error(
                    labels["BaseImage"][1],
                    f"label BaseImage {labels['BaseImage'][0]!r} differs from From: {d.header['from'][0]!r}",
                )
            if "BaseTag" in labels and ":" not in labels["BaseTag"][0]:
                self.error(labels["BaseTag"][1], f"label BaseTag {labels['BaseTag'][0]!r} should be name:tag")

    def check_files(self, d: Definition) -> None:
        for s in d.sections:
            if s.kind not in ("files", "appfiles"):
                continue
            for k, ln in enumerate(s.body, s.line + 1):
                t = ln.strip()
                if not t or t.startswith("#"):
                    continue
                src = t.split()[0].strip('"')
                if "*" in src or "?" in src:
                    matches = list(self.context.glob(src))
                    ok = bool(matches)
                else:
                    ok = (self.context / src).exists()
                if not ok:
                    self.error(k, f"%{s.name}: source {src!r} does not exist in the build directory {self.context}")
                if len(t.split()) > 1 and not t.split()[1].startswith("/"):
                    self.error(k, f"%{s.name}: destination {t.split()[1]!r} should be an absolute path in the image")

    @staticmethod
    def _line_of(d: Definition, kind: str) -> int:
        for s in d.sections:
            if s.kind == kind:
                return s.line
        return 1

    # --- shell checks -------------------------------------------------------------------------------
    def check_shell(self, d: Definition) -> None:
        for s in d.sections:
            if s.kind not in SHELL_SECTIONS or not any(ln.strip() for ln in s.body):
                continue
            shell = "bash" if s.interpreter in ("bash",) else "sh"
            if s.interpreter not in ("bash", "sh"):
                self.error(s.line, f"%{s.name} -c {s.interpreter}: only /bin/sh and /bin/bash are checked")
                continue
            if s.kind in ("runscript", "apprun", "environment", "appenv", "test", "apptest") and shell != "sh":
                # Apptainer only honours -c for the build-time scriptlets.
                self.error(s.line, f"%{s.name}: '-c' is only honoured for %post/%setup; this section runs with /bin/sh")
            self.check_script(s.body, s.line, f"%{s.name}", shell, sourced=s.kind in ("environment", "appenv"))

    def check_script(self, body: list[str], first_line: int, what: str, shell: str, sourced: bool = False) -> None:
        with tempfile.TemporaryDirectory() as tmp:
            script = Path(tmp) / "section.sh"
            script.write_text("\n".join(body) + "\n")
            syntax = [shell, "-n", str(script)]
            if shell == "sh" and shutil.which("dash"):
                syntax = ["dash", "-n", str(script)]
            proc = subprocess.run(syntax, capture_output=True, text=True)
            if proc.returncode != 0:
                for msg in (proc.stderr or proc.stdout).strip().splitlines():
                    m = re.search(r"line (\d+)", msg) or re.search(r":(\d+):", msg)
                    line = first_line + int(m.group(1)) if m else first_line
                    self.error(line, f"{what}: {syntax[0]} -n: {msg.split(str(script))[-1].lstrip(':').strip()}")
                return
            if not self.use_shellcheck:
                return
            cmd = ["shellcheck", "-s", shell, "-f", "gcc", "-S", "warning"]
            if sourced:
                cmd += ["-e", "SC2034"]
            proc = subprocess.run([*cmd, str(script)], capture_output=True, text=True)
            for msg in proc.stdout.splitlines():
                m = re.match(r"^.*?:(\d+):(\d+): (\w+): (.*)$", msg)
                if m:
                    self.error(first_line + int(m.group(1)), f"{what}: shellcheck {m.group(3)}: {m.group(4)}")

    def check_file_script(self, path: Path) -> list[str]:
        """bash -n and shellcheck of a shell script file; problems as 'FILE:LINE: ...' strings."""
        out: list[str] = []
        first = path.read_text().splitlines()[:1]
        shell = "sh" if first and re.match(r"^#!\s*/bin/sh\b|^#!.*env sh\b", first[0]) else "bash"
        proc = subprocess.run([shell, "-n", str(path)], capture_output=True, text=True)
        for msg in proc.stderr.strip().splitlines():
            out.append(f"{path}: {shell} -n: {msg}")
        if self.use_shellcheck and proc.returncode == 0:
            proc = subprocess.run(
                ["shellcheck", "-x", "-s", shell, "-f", "gcc", "-S", "warning", str(path)], capture_output=True, text=True
            )
            out += [ln for ln in proc.stdout.splitlines() if ln.strip()]
        return out

    def run(self) -> Definition | None:
        d = self.parse()
        if d is None:
            return None
        self.check_header(d)
        self.check_sections(d)
        self.check_arguments(d)
        self.check_labels(d)
        self.check_files(d)
        self.check_shell(d)
        return d


def extract(d: Definition, dest: Path) -> list[Path]:
    """Write each section's body (after templating) to DEST/<section>[-<app>].sh; returns the files."""
    dest.mkdir(parents=True, exist_ok=True)
    written = []
    for s in d.sections:
        name = s.kind + (f"-{s.app}" if s.app else "")
        path = dest / f"{name}.sh"
        mode = "a" if path in written else "w"
        with open(path, mode) as fh:
            fh.write("\n".join(s.body) + "\n")
        if path not in written:
            written.append(path)
    return written


def project_scripts(def_path: Path) -> list[Path]:
    """The project's shell scripts, when DEF is the project's containers/<name>.def."""
    root = def_path.resolve().parent.parent
    if def_path.resolve().parent.name != "containers" or not (root / "scripts" / "slurm").is_dir():
        return []
    found = (
        sorted(root.glob("containers/*.sh"))
        + sorted(root.glob("containers/scorep-patches/check/*.sh"))
        + sorted(root.glob("scripts/slurm/*.sh"))
        + sorted(root.glob("scripts/slurm/*.sbatch"))
        + sorted(root.glob("scripts/ci/*.sh"))
    )
    if (root / ".ci" / "run").is_file():
        found.append(root / ".ci" / "run")
    return found


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("definition", type=Path, metavar="DEF", help="the Apptainer definition file")
    p.add_argument("--build-arg", action="append", default=[], metavar="KEY=VALUE", help="as apptainer build --build-arg")
    p.add_argument(
        "--context",
        type=Path,
        default=None,
        help="the build directory %%files paths are relative to (default: the parent of containers/, else the current directory)",
    )
    p.add_argument("--no-shellcheck", action="store_true", help="bash -n / sh -n only")
    p.add_argument(
        "--shell",
        action="append",
        type=Path,
        default=None,
        metavar="FILE",
        help="shell script to check as well (default: the project's scripts when DEF is containers/*.def)",
    )
    p.add_argument("--no-scripts", action="store_true", help="check the definition only, not the project's shell scripts")
    p.add_argument("--extract", type=Path, default=None, metavar="DIR", help="write every section (templated) to DIR")


def run(args: argparse.Namespace) -> int:
    """Lint ``args.definition``: 0 when clean, 1 with problems (printed as FILE:LINE: message)."""
    build_args = {}
    for item in args.build_arg:
        if "=" not in item:
            raise ArtifactError(f"--build-arg {item!r}: expected KEY=VALUE")
        k, v = item.split("=", 1)
        build_args[k.strip()] = v
    path = args.definition
    if not path.is_file():
        raise ArtifactError("no such file", path)
    context = args.context
    if context is None:
        context = path.resolve().parent.parent if path.resolve().parent.name == "containers" else Path.cwd()
    linter = Linter(path, build_args, context, use_shellcheck=not args.no_shellcheck)
    d = linter.run()
    problems = [f"{path}:{line}: {msg}" if line else f"{path}: {msg}" for line, msg in sorted(linter.problems)]
    scripts = args.shell if args.shell is not None else ([] if args.no_scripts else project_scripts(path))
    for script in scripts:
        if not script.is_file():
            problems.append(f"{script}: no such file")
            continue
        problems += linter.check_file_script(script)
    for note in linter.notes:
        print(note, file=sys.stderr)
    for msg in problems:
        print(msg)
    if args.extract and d is not None:
        for f in extract(d, args.extract):
            print(f"containerlint: wrote {f}", file=sys.stderr)
    checker = "bash -n/sh -n and shellcheck" if linter.use_shellcheck else "bash -n/sh -n (shellcheck not installed)"
    if problems:
        print(f"containerlint: {len(problems)} problem(s) ({checker})", file=sys.stderr)
        return 1
    n_sections = len(d.sections) if d else 0
    print(f"containerlint: {path}: ok ({n_sections} sections, {len(scripts)} shell script(s); {checker})")
    return 0

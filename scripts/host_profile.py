#!/usr/bin/env python3
"""Where the sampled host CPU time went: the stacks host_sampler.c wrote, named and counted.

Reads every ``samples-PID.bin`` (with its ``maps-PID.txt``) in a folder, names each address's
library from the maps and its function from the library's symbol table (``nm``: the full table
where the library has one, else its exported symbols, whose nearest name below an address of a
static function is not that function's), and prints per process:

- the samples kept, and per library the share of samples with that library anywhere on the stack
  (inclusive) and at the innermost frame (self);
- the functions with the largest inclusive shares, and the largest self shares.

The sampler's own frames (its signal handler and the kernel's signal trampoline) are left out.
``--focus REGEX`` (library file names, e.g. ``scorep|otf2``) adds, over the samples with a frame in
such a library, their number and its innermost, inclusive and outermost functions there: what
a tracer's own code costs and through which entry. ``--label PID=NAME`` (or ``--bench JSON``: the pids that bench_trace.py records per mode and round)
names processes; ``--json OUT`` writes the same figures.

    scripts/host_profile.py DIR [--bench bench.json] [--top 25] [--json OUT]
"""

from __future__ import annotations

import argparse
import bisect
import json
import os
import re
import shutil
import struct
import subprocess
import sys
from collections import Counter
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "artifact"))

from dnabert_scaling.errors import ArtifactError  # noqa: E402
from dnabert_scaling.outputs import writable_file, write_text_atomic  # noqa: E402

MAGIC = b"HSMPLv2\n"
SKIP_FRAMES = 2  # the handler and the signal trampoline


class Maps:
    """The file-backed executable mappings of one process: address -> (library, address in its file)."""

    def __init__(self, text: str, where: Path | str = "maps"):
        self.starts: list[int] = []
        self.rows: list[tuple[int, int, str, int]] = []  # start, end, path, load base
        bases: dict[str, int] = {}
        parsed = []
        for number, line in enumerate(text.splitlines(), 1):
            parts = line.split(maxsplit=5)
            if len(parts) < 6 or not parts[5].startswith("/"):
                continue
            try:
                lo, hi = (int(x, 16) for x in parts[0].split("-"))
                offset = int(parts[2], 16)
            except ValueError:
                raise ArtifactError(f"{where}: line {number} is not a /proc/self/maps line: {line[:80]!r}") from None
            path = parts[5].strip()
            parsed.append((lo, hi, parts[1], path))
            bases[path] = min(bases.get(path, lo - offset), lo - offset)
        for lo, hi, perms, path in sorted(parsed):
            if "x" in perms:
                self.rows.append((lo, hi, path, 0 if _is_fixed_executable(path) else bases[path]))
                self.starts.append(lo)

    def find(self, addr: int) -> tuple[str, int] | None:
        i = bisect.bisect_right(self.starts, addr) - 1
        if i < 0:
            return None
        lo, hi, path, base = self.rows[i]
        return (path, addr - base) if addr < hi else None


def _is_fixed_executable(path: str) -> bool:
    """An ELF file of type ET_EXEC (not position-independent): its symbols are absolute addresses."""
    try:
        with open(path, "rb") as f:
            head = f.read(18)
    except OSError:
        return False
    return len(head) == 18 and head[:4] == b"\x7fELF" and struct.unpack_from("<H", head, 16)[0] == 2


class Symbols:
    """Function symbols of the libraries met, from ``nm`` (cached per library)."""

    def __init__(self):
        self.tables: dict[str, tuple[list[int], list[str], str]] = {}
        self.nm = shutil.which("nm")

    def table(self, path: str) -> tuple[list[int], list[str], str]:
        if path not in self.tables:
            addrs, names, kind = [], [], "none"
            for flags, what in ((["-n", "--defined-only"], "full"), (["-D", "-n", "--defined-only"], "exported")):
                rows = self._nm(flags, path)
                if rows:
                    addrs, names, kind = [a for a, _ in rows], [n for _, n in rows], what
                    break
            self.tables[path] = (addrs, names, kind)
        return self.tables[path]

    def _nm(self, flags: list[str], path: str) -> list[tuple[int, str]]:
        if self.nm is None or not os.path.isfile(path):
            return []
        try:
            out = subprocess.run([self.nm, *flags, path], capture_output=True, text=True, timeout=120).stdout
        except (OSError, subprocess.SubprocessError):
            return []
        rows = []
        for line in out.splitlines():
            parts = line.split()
            if len(parts) >= 3 and parts[1] in "TtWwiI":
                try:
                    rows.append((int(parts[0], 16), parts[2]))
                except ValueError:
                    continue
        return sorted(rows)

    def name(self, path: str, offset: int) -> str:
        addrs, names, _ = self.table(path)
        i = bisect.bisect_right(addrs, offset) - 1
        return names[i] if i >= 0 else f"0x{offset:x}"


HEADER = struct.Struct("<IIIIQQ")  # pid, hz, clock (0 CPU, 1 wall), 0, samples kept, samples not kept


def read_samples(path: Path) -> tuple[int, int, str, int, list[tuple[int, list[int]]]]:
    """(pid, hz, clock ("cpu" or "wall"), samples not kept, [(thread id, addresses innermost first), ...])."""
    data = path.read_bytes()
    if not data.startswith(MAGIC) or len(data) < len(MAGIC) + HEADER.size:
        raise ArtifactError(f"{path}: not a host_sampler.c sample file (no HSMPLv2 header)")
    pid, hz, clock, _, n, lost = HEADER.unpack_from(data, len(MAGIC))
    if clock not in (0, 1):
        raise ArtifactError(f"{path}: unknown sampling clock {clock} in the header")
    pos, out = len(MAGIC) + HEADER.size, []
    for _ in range(n):
        if pos + 8 > len(data):
            raise ArtifactError(f"{path}: cut short after {len(out)} of {n} samples")
        tid, depth = struct.unpack_from("<II", data, pos)
        pos += 8
        if depth > 4096 or pos + 8 * depth > len(data):
            raise ArtifactError(f"{path}: sample {len(out)} is damaged (depth {depth})")
        out.append((tid, list(struct.unpack_from(f"<{depth}Q", data, pos))))
        pos += 8 * depth
    return pid, hz, ("cpu", "wall")[clock], lost, out


def profile(folder: Path, top: int = 25, focus: re.Pattern | None = None) -> list[dict]:
    """Per sample file in ``folder`` its figures (see the module's docstring); with ``focus`` (a
    pattern of library file names) also those of the samples with a frame in a matching library."""
    symbols = Symbols()
    docs = []
    files = [p for p in folder.glob("samples-*.bin") if p.stem.split("-", 1)[1].isdigit()]
    for path in sorted(files, key=lambda p: int(p.stem.split("-")[1])):
        pid, hz, clock, lost, samples = read_samples(path)
        if f"samples-{pid}.bin" != path.name:
            raise ArtifactError(f"{path}: its header says process {pid}, its name another (renamed, or not the sampler's)")
        maps_path = folder / f"maps-{pid}.txt"
        if not maps_path.is_file():
            raise ArtifactError(f"{maps_path}: missing (written with {path.name} by the sampler)")
        maps = Maps(maps_path.read_text(errors="replace"), maps_path)
        lib_incl, lib_self, fn_incl, fn_self, threads = Counter(), Counter(), Counter(), Counter(), Counter()
        in_focus, focus_inner, focus_incl, focus_outer = 0, Counter(), Counter(), Counter()
        for tid, frames in samples:
            threads[tid] += 1
            named = []
            for k, addr in enumerate(frames[SKIP_FRAMES:]):
                hit = maps.find(addr - 1 if k else addr)  # a return address points past its call
                if hit is None:
                    named.append(("[unknown]", "[unknown]"))
                    continue
                lib, off = hit
                named.append((os.path.basename(lib), f"{symbols.name(lib, off)} ({os.path.basename(lib)})"))
            if not named:
                continue
            lib_self[named[0][0]] += 1
            fn_self[named[0][1]] += 1
            for lib in {lib for lib, _ in named}:
                lib_incl[lib] += 1
            for fn in {fn for _, fn in named}:
                fn_incl[fn] += 1
            mine = [fn for lib, fn in named if focus is not None and focus.search(lib)]
            if mine:  # innermost first: the focus's own innermost function, and where the stack entered it
                in_focus += 1
                focus_inner[mine[0]] += 1
                focus_outer[mine[-1]] += 1
                for fn in set(mine):
                    focus_incl[fn] += 1
        total = len(samples)

        def share(c: Counter, total: int = total) -> list:
            return [[k, v, round(v / total, 4)] for k, v in c.most_common(top)]

        docs.append(
            {
                "pid": pid,
                "hz": hz,
                "clock": clock,
                "samples": total,
                "samples_not_kept": lost,
                "threads": len(threads),
                # the threads with the most samples: [thread id, samples, whether it is the process's main thread]
                "by_thread": [[tid, n, tid == pid] for tid, n in threads.most_common(8)],
                "library_inclusive": share(lib_incl),
                "library_self": share(lib_self),
                "function_inclusive": share(fn_incl),
                "function_self": share(fn_self),
                "symbol_tables": {os.path.basename(p): t[2] for p, t in symbols.tables.items()},
            }
        )
        if focus is not None:
            docs[-1]["focus"] = {
                "libraries": focus.pattern,
                "samples": in_focus,  # with a frame in a matching library
                "innermost": share(focus_inner),  # the innermost matching frame's function
                "inclusive": share(focus_incl),
                "entered_at": share(focus_outer),  # the outermost matching frame's function
            }
    if not docs:
        raise ArtifactError(f"{folder}: no samples-PID.bin files (was HOST_SAMPLER_OUT set and the sampler preloaded?)")
    return docs


def labels_from_bench(path: Path) -> dict[int, str]:
    """pid -> "MODE (round N)" from a bench_trace.py JSON (``rounds[*].processes[MODE].pid``)."""
    try:
        doc = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise ArtifactError(f"{path}: cannot read the bench_trace.py JSON ({exc})") from None
    rounds = doc.get("rounds") if isinstance(doc, dict) else None
    if not isinstance(rounds, list) or not all(
        isinstance(r, dict)
        and isinstance(r.get("processes", {}), dict)
        and all(isinstance(p, dict) for p in r.get("processes", {}).values())
        for r in rounds
    ):
        raise ArtifactError(f"{path}: not a bench_trace.py JSON (no list of rounds, each with its processes by mode)")
    out = {}
    for r in rounds:
        for mode, p in (r.get("processes") or {}).items():
            if isinstance(p.get("pid"), int):
                out[p["pid"]] = f"{mode} (round {r.get('round')})"
    return out


def show(docs: list[dict], labels: dict[int, str], top: int) -> None:
    for d in docs:
        name = labels.get(d["pid"], "")
        what = "wall-clock time" if d["clock"] == "wall" else "CPU time"
        print(f"## pid {d['pid']} {name}: {d['samples']} samples of {what} at {d['hz']} Hz ({d['samples_not_kept']} not kept)")
        print("  threads: " + ", ".join(f"{tid}{' (main)' if main else ''} {n}" for tid, n, main in d["by_thread"]))
        for key in ("library_inclusive", "library_self", "function_inclusive", "function_self"):
            print(f"  {key.replace('_', ' ')}:")
            for k, v, s in d[key][:top]:
                print(f"    {100 * s:5.1f}%  {v:6d}  {k}")
        if "focus" in d:
            f = d["focus"]
            print(f"  samples with a frame in /{f['libraries']}/: {f['samples']}")
            for key in ("innermost", "inclusive", "entered_at"):
                print(f"  {key.replace('_', ' ')} there:")
                for k, v, s in f[key][:top]:
                    print(f"    {100 * s:5.1f}%  {v:6d}  {k}")


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("folder")
    p.add_argument("--bench", default=None, help="bench_trace.py JSON whose processes name the pids")
    p.add_argument("--label", action="append", default=[], metavar="PID=NAME")
    p.add_argument("--top", type=int, default=25)
    p.add_argument(
        "--focus", default=None, metavar="REGEX", help="also count the samples with a frame in a library matching this"
    )
    p.add_argument("--json", default=None)
    args = p.parse_args(argv)
    try:
        folder = Path(args.folder)
        if not folder.is_dir():
            raise ArtifactError(f"{folder}: no such folder")
        labels = labels_from_bench(Path(args.bench)) if args.bench else {}
        for item in args.label:
            pid, _, name = item.partition("=")
            if not pid.isdigit() or not name:
                raise ArtifactError(f"--label {item!r}: expected PID=NAME")
            labels[int(pid)] = name
        out = writable_file(args.json, "--json") if args.json else None
        try:
            focus = re.compile(args.focus) if args.focus else None
        except re.error as exc:
            raise ArtifactError(f"--focus {args.focus!r}: not a regular expression ({exc})") from None
        docs = profile(folder, args.top, focus)
        for d in docs:
            d["label"] = labels.get(d["pid"])
        show(docs, labels, args.top)
        if out:
            write_text_atomic(out, json.dumps({"processes": docs}, indent=1) + "\n")
    except ArtifactError as exc:
        print(f"host-profile: {exc}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # the reader (head, less) stopped early: not an error of this script
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""GUE task data: validated CSV folders, the recipe's sequence lengths, and a synthetic stand-in.

A GUE task folder holds ``train.csv``, ``dev.csv`` and ``test.csv`` with a header row and either
``sequence,label`` or a sequence pair ``sequence1,sequence2,label``. As in the official fine-tuning
recipe, a whole split is tokenized up front, padded to its longest sequence and truncated at the
task's ``model_max_length``, so every training step has the same shape.

Machines without GUE get a synthetic task in the same layout (``synth-data``): random DNA in
which a planted class-specific motif decides the label, so a smoke run can show that the model
learns. Such a folder carries ``synthetic.json``, and runs on it record the fallback.
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import random
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dnabert_scaling.errors import ArtifactError
from dnabert_scaling.options import positive_int
from dnabert_scaling.outputs import output_path, staged_files, writable_dir

SPLITS = ("train", "dev", "test")
DNA_CHARS = frozenset("ACGTN")

# (bp, classes, model_max_length) per GUE task, from the official recipe (run_dnabert2.sh).
GUE_TASKS: dict[str, tuple[int, int, int]] = {}
for _name in ("H3", "H3K14ac", "H3K36me3", "H3K4me1", "H3K4me2", "H3K4me3", "H3K79me3", "H3K9ac", "H4", "H4ac"):
    GUE_TASKS[_name] = (500, 2, 128)
for _name in ("prom_core_all", "prom_core_notata", "prom_core_tata"):
    GUE_TASKS[_name] = (70, 2, 20)
for _name in ("prom_300_all", "prom_300_notata", "prom_300_tata"):
    GUE_TASKS[_name] = (300, 2, 70)
GUE_TASKS["reconstructed"] = (400, 3, 80)
GUE_TASKS["covid"] = (1000, 9, 256)
for _i in range(5):
    GUE_TASKS[f"mouse_{_i}"] = (100, 2, 30)
    GUE_TASKS[f"tf_{_i}"] = (100, 2, 30)
    GUE_TASKS[str(_i)] = (100, 2, 30)  # GUE names the mouse/tf folders 0..4
DEFAULT_TASK = "prom_300_all"  # the study's task shape: 300 bp, 70 tokens
SYNTHETIC_ROWS = (2000, 400, 400)  # train, dev, test rows of a synthetic task unless told otherwise


def model_max_length_for(task: str, max_bp: int) -> tuple[int, str]:
    """The recipe's ``model_max_length`` for a task, and where the number came from."""
    if task in GUE_TASKS:
        return GUE_TASKS[task][2], f"GUE recipe table ({task})"
    return max(8, int(math.ceil(0.25 * max_bp))), f"0.25 x {max_bp} bp rule (task {task!r} not in the GUE table)"


@dataclass
class Split:
    path: Path
    layout: str  # "single" or "pair"
    sequences: list[Any]  # str, or (str, str) for pairs
    labels: list[int]
    lines: list[int] = field(default_factory=list)  # the file's line of each row (for errors)


def _check_dna(seq: str, path: Path, line: int, column: str) -> None:
    if not seq:
        raise ArtifactError(f"line {line}: empty {column}", path)
    bad = set(seq) - DNA_CHARS
    if bad:
        pos = next(i for i, ch in enumerate(seq) if ch in bad)
        raise ArtifactError(
            f"line {line}: {column} has character {seq[pos]!r} at position {pos + 1}; only A, C, G, T and N are allowed",
            path,
        )


def read_split(path: str | Path, expect_layout: str | None = None) -> Split:
    """Read and validate one GUE CSV file; errors name the file and the line."""
    path = Path(path)
    if not path.is_file():
        raise ArtifactError("split file does not exist", path)
    try:
        with path.open(newline="") as fh:
            reader = csv.reader(fh)
            header = next(reader, None)
            if header is None:
                raise ArtifactError("empty file: expected a header 'sequence,label' and data rows", path)
            names = [h.strip().lower() for h in header]
            if len(names) == 2 and names[1] == "label":
                layout = "single"
            elif len(names) == 3 and names[2] == "label":
                layout = "pair"
            else:
                raise ArtifactError(
                    f"line 1: missing columns: header is {','.join(header)!r}; expected 'sequence,label' "
                    "(or 'sequence1,sequence2,label' for a sequence pair)",
                    path,
                )
            if expect_layout is not None and layout != expect_layout:
                raise ArtifactError(
                    f"line 1: this split holds {'a sequence pair' if layout == 'pair' else 'single sequences'} "
                    f"but the task's train split holds {'pairs' if expect_layout == 'pair' else 'single sequences'}",
                    path,
                )
            sequences: list[Any] = []
            labels: list[int] = []
            lines: list[int] = []
            width = len(names)
            for row in reader:
                line = reader.line_num
                if not row or all(not c.strip() for c in row):
                    continue
                if len(row) != width:
                    if layout == "single" and len(row) == 3:
                        raise ArtifactError(f"line {line}: a sequence pair (3 fields) where a single sequence is expected", path)
                    raise ArtifactError(f"line {line}: {len(row)} fields, the header has {width}", path)
                label_text = row[-1].strip()
                try:
                    label = int(label_text)
                except ValueError:
                    raise ArtifactError(f"line {line}: label {label_text!r} is not an integer", path) from None
                if label < 0:
                    raise ArtifactError(f"line {line}: label {label} is negative", path)
                if layout == "single":
                    seq = row[0].strip()
                    _check_dna(seq, path, line, "sequence")
                    sequences.append(seq)
                else:
                    a, b = row[0].strip(), row[1].strip()
                    _check_dna(a, path, line, "sequence1")
                    _check_dna(b, path, line, "sequence2")
                    sequences.append((a, b))
                labels.append(label)
                lines.append(line)
    except UnicodeDecodeError as exc:
        raise ArtifactError(f"not a text CSV file: {exc}", path) from None
    except csv.Error as exc:
        raise ArtifactError(f"malformed CSV: {exc}", path) from None
    if not labels:
        raise ArtifactError("empty split: the file has a header but no data rows", path)
    return Split(path=path, layout=layout, sequences=sequences, labels=labels, lines=lines)


def task_classes(splits: list[Split], task: str) -> int:
    """The task's class count K, with every label checked to be one of 0..K-1: K from the GUE table for
    a GUE task, else the number of distinct labels (which must then be exactly 0..K-1). Refuses (naming
    the file, the line and the label) a label out of range and a task of fewer than 2 classes (a single
    class would make the classifier a one-output regression)."""
    distinct = sorted({label for s in splits for label in s.labels})
    known = task in GUE_TASKS
    classes = GUE_TASKS[task][1] if known else len(distinct)
    if len(distinct) < 2:
        shown = " and ".join(s.path.name for s in splits)
        raise ArtifactError(
            f"every row of {shown} has label {distinct[0]}: a classification task needs at least 2 classes",
            splits[0].path,
        )
    for split in splits:
        for label, line in zip(split.labels, split.lines):
            if label >= classes:
                why = (
                    f"GUE task {task} has {classes} classes"
                    if known
                    else f"task {task!r} is not in the GUE table, so its labels must be 0..K-1 with K the number of "
                    f"distinct labels ({classes}: {', '.join(map(str, distinct[:10]))}{' ...' if len(distinct) > 10 else ''})"
                )
                raise ArtifactError(f"line {line}: label {label} is out of range: {why}, labels 0..{classes - 1}", split.path)
    return classes


@dataclass
class Task:
    """A tokenized task: fixed-length ``input_ids`` per split, labels, and where it came from."""

    name: str
    folder: Path
    layout: str
    num_labels: int
    seq_len: int  # tokens per sequence after padding/truncation
    model_max_length: int
    model_max_length_source: str
    synthetic: bool
    splits: dict[str, Any] = field(default_factory=dict)  # split name -> datasets.Dataset
    rows: dict[str, int] = field(default_factory=dict)

    def describe(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "folder": str(self.folder),
            "synthetic": self.synthetic,
            "layout": self.layout,
            "num_labels": self.num_labels,
            "seq_len_tokens": self.seq_len,
            "model_max_length": self.model_max_length,
            "model_max_length_source": self.model_max_length_source,
            "rows": dict(self.rows),
        }


def _synthetic_meta_of(folder: Path) -> dict[str, Any] | None:
    """The folder's ``synthetic.json`` (a synthetic task's description); None when there is none."""
    from dnabert_scaling.errors import read_json_object

    path = folder / "synthetic.json"
    if not path.is_file():
        return None
    meta = read_json_object(path, "a JSON object (the synthetic task's description)")
    like = meta.get("like")
    if like is not None and not (isinstance(like, str) and like.strip()):
        raise ArtifactError(f"'like' must name a GUE task, not {like!r}", path)
    return meta


def _tokenize(split: Split, tokenizer, max_length: int) -> tuple[list[list[int]], int]:
    if split.layout == "single":
        enc = tokenizer(split.sequences, padding="longest", truncation=True, max_length=max_length)
    else:
        first = [a for a, _ in split.sequences]
        second = [b for _, b in split.sequences]
        enc = tokenizer(first, second, padding="longest", truncation=True, max_length=max_length)
    ids = enc["input_ids"]
    return ids, len(ids[0])


def read_task(
    folder: Path, splits: tuple[str, ...] = ("train", "dev"), task_name: str | None = None
) -> tuple[str, dict | None, dict[str, Split], int]:
    """Read and validate a GUE-format task folder without tokenizing it: its name, its synthetic
    metadata (None for real data), each split and the class count. ``train`` runs this before it
    claims its run folder, so that a bad CSV is refused before anything is written."""
    if not folder.is_dir():
        raise ArtifactError("GUE task folder does not exist", folder)
    meta = _synthetic_meta_of(folder)
    name = task_name or (meta or {}).get("like") or folder.name
    raw: dict[str, Split] = {}
    layout = None
    for split_name in splits:
        raw[split_name] = read_split(folder / f"{split_name}.csv", expect_layout=layout)
        layout = layout or raw[split_name].layout
    return name, meta, raw, task_classes(list(raw.values()), name)


def load_task(
    folder: str | Path,
    tokenizer=None,
    model_max_length: int | None = None,
    splits: tuple[str, ...] = ("train", "dev"),
    task_name: str | None = None,
) -> Task:
    """Load a GUE-format task folder into fixed-length tokenized ``datasets.Dataset`` splits."""
    import datasets

    from dnabert_scaling.run.workload.tokenizer import load_tokenizer

    folder = Path(folder)
    name, meta, raw, num_labels = read_task(folder, splits, task_name)
    layout = next(iter(raw.values())).layout
    tokenizer = tokenizer or load_tokenizer()
    first = next(iter(raw.values()))
    max_bp = max(len(s if isinstance(s, str) else s[0]) for s in first.sequences)
    if model_max_length is None:
        mml, mml_source = model_max_length_for(name, max_bp)
    else:
        mml, mml_source = model_max_length, "set by --seq-len"
    task = Task(
        name=name,
        folder=folder,
        layout=layout or "single",
        num_labels=num_labels,
        seq_len=0,
        model_max_length=mml,
        model_max_length_source=mml_source,
        synthetic=meta is not None,
    )
    for split_name, split in raw.items():
        ids, length = _tokenize(split, tokenizer, mml)
        task.splits[split_name] = datasets.Dataset.from_dict({"input_ids": ids, "labels": split.labels})
        task.rows[split_name] = len(split.labels)
        if split_name == splits[0]:
            task.seq_len = length
    return task


# --- synthetic GUE-format data -------------------------------------------------------------------


def _random_dna(rng: random.Random, n: int) -> str:
    return "".join(rng.choice("ACGT") for _ in range(n))


def check_motif_length(like: str, motif_length: int) -> None:
    """Refuse a motif length the task shape cannot take: longer than its sequences, or too short to
    give each class a motif of its own (4**length distinct motifs of that length)."""
    bp, num_labels, _ = GUE_TASKS[like]
    if motif_length < 1 or motif_length > bp:
        raise ArtifactError(f"--motif-length {motif_length}: must be within 1..{bp}, the length of a {like} sequence (bp)")
    if 4**motif_length < num_labels:
        shortest = next(n for n in range(1, num_labels + 1) if 4**n >= num_labels)
        raise ArtifactError(
            f"--motif-length {motif_length}: only {4**motif_length} distinct motifs of that length, fewer than the "
            f"{num_labels} classes of {like}; give at least {shortest}"
        )


def synthetic_motifs(num_labels: int, length: int, seed: int) -> list[str]:
    if length < 1 or 4**length < num_labels:  # the loop below would never end
        raise ArtifactError(f"no {num_labels} distinct DNA motifs of length {length} exist")
    rng = random.Random(seed * 7919 + 13)
    motifs: list[str] = []
    while len(motifs) < num_labels:
        m = _random_dna(rng, length)
        if m not in motifs:
            motifs.append(m)
    return motifs


def write_synthetic_task(
    folder: str | Path,
    like: str = DEFAULT_TASK,
    rows: tuple[int, int, int] = SYNTHETIC_ROWS,
    motif_length: int = 12,
    seed: int = 42,
    overwrite: bool = False,
) -> Path:
    """Write ``train/dev/test.csv`` shaped like GUE task ``like``: the label is the index of the
    class motif planted at a random position of otherwise random DNA."""
    if like not in GUE_TASKS:
        raise ArtifactError(f"unknown GUE task shape {like!r}; known: {', '.join(sorted(GUE_TASKS))}")
    bp, num_labels, _ = GUE_TASKS[like]
    folder = Path(folder)
    names = [*(f"{s}.csv" for s in SPLITS), "synthetic.json"]  # all four are replaced: none is taken over unasked
    existing = [folder / n for n in names if (folder / n).exists() or (folder / n).is_symlink()]
    if existing and not overwrite:
        raise ArtifactError("already holds a task (pass --force to overwrite)", existing[0].parent)
    check_motif_length(like, motif_length)
    check_synthetic_size(folder, bp, rows)
    motifs = synthetic_motifs(num_labels, motif_length, seed)  # the folder is made when the files are written
    rng = random.Random(seed)
    splits = [folder / f"{s}.csv" for s in SPLITS]
    with staged_files([*splits, folder / "synthetic.json"]) as staged:  # all four swapped in at the end
        for path, n in zip(splits, rows):
            with staged[path].open("w", newline="") as fh:
                writer = csv.writer(fh)
                writer.writerow(["sequence", "label"])
                for i in range(n):
                    label = i % num_labels
                    pos = rng.randrange(0, bp - motif_length + 1)
                    seq = _random_dna(rng, bp)
                    writer.writerow([seq[:pos] + motifs[label] + seq[pos + motif_length :], label])
        staged[folder / "synthetic.json"].write_text(json.dumps(_synthetic_meta(like, motifs, rows, seed), indent=2) + "\n")
    return folder


MAX_SYNTHETIC_ROWS = 10_000_000  # rows of all three splits together (100 times GUE's largest task)
MAX_SYNTHETIC_BYTES = 4 * 2**30


def check_synthetic_size(folder: Path, bp: int, rows: tuple[int, ...]) -> None:
    """Refuse (before writing anything) a task over ``MAX_SYNTHETIC_ROWS`` rows or
    ``MAX_SYNTHETIC_BYTES``, or larger than the free space where it goes."""
    import shutil

    total = sum(rows)
    size = total * (bp + 4)  # sequence, comma, label digit(s), newline
    if total > MAX_SYNTHETIC_ROWS or size > MAX_SYNTHETIC_BYTES:
        raise ArtifactError(
            f"--rows {','.join(map(str, rows))}: {total:,} rows of {bp} bp would be about {size / 2**30:.1f} GiB; "
            f"a synthetic task has at most {MAX_SYNTHETIC_ROWS:,} rows and {MAX_SYNTHETIC_BYTES // 2**30} GiB"
        )
    parent = folder
    while not parent.exists() and parent != parent.parent:
        parent = parent.parent
    free = shutil.disk_usage(parent).free
    if size > free:
        raise ArtifactError(f"the task needs about {size / 2**20:.0f} MiB; only {free / 2**20:.0f} MiB are free there", folder)


def _synthetic_meta(like: str, motifs: list[str], rows: tuple[int, int, int], seed: int) -> dict[str, Any]:
    bp, num_labels, _ = GUE_TASKS[like]
    return {
        "synthetic": True,
        "like": like,
        "bp": bp,
        "num_labels": num_labels,
        "motifs": motifs,
        "rows": dict(zip(SPLITS, rows)),
        "seed": seed,
        "generator": "dnabert_scaling.run.workload.data.write_synthetic_task",
    }


# --- CLI: dnabert-scaling synth-data --------------------------------------------------------------


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--out", required=True, type=output_path, help="folder to write train/dev/test.csv into")
    parser.add_argument("--like", default=DEFAULT_TASK, help=f"GUE task whose shape to copy (default {DEFAULT_TASK})")
    parser.add_argument("--rows", default="2000,400,400", help="rows in train,dev,test (default 2000,400,400)")
    parser.add_argument("--motif-length", type=positive_int, default=12, help="length of the planted motif (bases)")
    parser.add_argument("--seed", type=int, default=42, help="seed of sequences and labels")
    parser.add_argument("--force", action="store_true", help="overwrite an existing task in --out")


def run(args: argparse.Namespace) -> int:
    writable_dir(args.out, "--out")  # checked, not created: a refused command leaves no folder
    try:
        rows = tuple(int(x) for x in args.rows.split(","))
    except ValueError:
        raise ArtifactError(f"--rows must be three integers like 2000,400,400, not {args.rows!r}") from None
    if len(rows) != 3 or min(rows) < 1:
        raise ArtifactError(f"--rows must be three positive integers, not {args.rows!r}")
    if args.like not in GUE_TASKS:
        raise ArtifactError(f"--like: unknown GUE task shape {args.like!r}; known: {', '.join(sorted(GUE_TASKS))}")
    classes = GUE_TASKS[args.like][1]
    if min(rows[:2]) < classes:  # labels go round the classes: fewer rows leave a class out, which train refuses
        raise ArtifactError(f"--rows {args.rows}: train and dev need at least {classes} rows each, one per class of {args.like}")
    check_motif_length(args.like, args.motif_length)
    folder = write_synthetic_task(args.out, args.like, rows, args.motif_length, args.seed, args.force)
    print(f"wrote synthetic task shaped like {args.like} to {folder}")
    return 0

"""Tokenizer ids and GUE data validation (every bad-data case names file and line)."""

import json

import pytest

from dnabert_scaling.run.workload.data import load_task, model_max_length_for, read_split, write_synthetic_task
from dnabert_scaling.errors import ArtifactError
from dnabert_scaling.run.workload.tokenizer import load_tokenizer

MODEL_CARD_SEQ = "ACGTAGCATCGGATCTATCTATCGACACTTGGTTATCGATCTACGAGCATCTCGTTAGC"
MODEL_CARD_IDS = [1, 5, 194, 32, 757, 1239, 2092, 294, 24, 359, 88, 93, 32, 75, 77, 19, 2]


def test_model_card_example():
    tok = load_tokenizer()
    assert tok(MODEL_CARD_SEQ)["input_ids"] == MODEL_CARD_IDS
    assert tok.pad_token_id == 3
    padded = tok(["ACGT", MODEL_CARD_SEQ], padding="longest")["input_ids"]
    assert padded[0][-1] == 3 and len(padded[0]) == 17
    assert tok("N")["input_ids"] == [1, 0, 2]  # N maps to [UNK]


def _write(path, text):
    path.write_text(text)
    return path


@pytest.mark.parametrize(
    "content, message",
    [
        ("sequence,class\nACGT,0\n", "line 1: missing columns"),
        ("sequence\nACGT\n", "line 1: missing columns"),
        ("sequence,label\n", "empty split"),
        ("", "empty file"),
        ("sequence,label\nACGT,0\nACGT,yes\n", "line 3: label 'yes' is not an integer"),
        ("sequence,label\nACGT,0\nACXT,1\n", "line 3: sequence has character 'X' at position 3"),
        ("sequence,label\nacgt,1\n", "line 2: sequence has character 'a' at position 1"),
        ("sequence,label\nACGT,ACGT,1\n", "line 2: a sequence pair (3 fields) where a single sequence is expected"),
        ("sequence,label\nACGT,-1\n", "line 2: label -1 is negative"),
        ("sequence,label\n,1\n", "line 2: empty sequence"),
    ],
)
def test_bad_split_errors_name_file_and_line(tmp_path, content, message):
    path = _write(tmp_path / "train.csv", content)
    with pytest.raises(ArtifactError) as err:
        read_split(path)
    assert str(path) in str(err.value)
    assert message in str(err.value)


def test_pair_layout_and_mismatch(tmp_path):
    pair = read_split(_write(tmp_path / "train.csv", "sequence1,sequence2,label\nACGT,GGCC,1\n"))
    assert pair.layout == "pair" and pair.sequences == [("ACGT", "GGCC")]
    single = _write(tmp_path / "dev.csv", "sequence,label\nACGT,1\n")
    with pytest.raises(ArtifactError, match="train split holds pairs"):
        read_split(single, expect_layout="pair")


def test_missing_split_file(tmp_path):
    _write(tmp_path / "train.csv", "sequence,label\nACGT,0\n")
    with pytest.raises(ArtifactError, match="dev.csv: split file does not exist"):
        load_task(tmp_path)


def test_model_max_length_rule():
    assert model_max_length_for("prom_300_all", 300) == (70, "GUE recipe table (prom_300_all)")
    assert model_max_length_for("H3K4me3", 500)[0] == 128
    assert model_max_length_for("covid", 1000)[0] == 256
    length, source = model_max_length_for("my_task", 400)
    assert length == 100 and "0.25" in source


def test_synthetic_task_loads_with_fixed_shape(tmp_path):
    folder = write_synthetic_task(tmp_path / "syn", like="prom_300_all", rows=(40, 10, 10), seed=3)
    meta = json.loads((folder / "synthetic.json").read_text())
    assert meta["synthetic"] and meta["bp"] == 300 and len(meta["motifs"]) == 2
    task = load_task(folder)
    assert task.synthetic and task.name == "prom_300_all"
    assert task.model_max_length == 70 and task.seq_len <= 70
    lengths = {len(x) for x in task.splits["train"]["input_ids"]}
    assert lengths == {task.seq_len}
    labels = task.splits["train"]["labels"]
    assert sorted(set(labels)) == [0, 1]
    rows = (folder / "train.csv").read_text().splitlines()[1:]
    for row in rows:
        seq, label = row.split(",")
        assert meta["motifs"][int(label)] in seq
    with pytest.raises(ArtifactError, match="already holds a task"):
        write_synthetic_task(folder, like="prom_300_all")

"""The DNABERT-2 port against golden vectors produced by the released modelling code."""

import shutil

import pytest
import torch
from safetensors.torch import load_file

from dnabert_scaling.errors import ArtifactError
from dnabert_scaling.run.workload.model import alibi_slopes, build_model, count_parameters, load_pretrained

from conftest import DATA

GOLDEN = DATA / "golden"


@pytest.mark.parametrize("attention", ["sdpa", "eager", "unpad"])
def test_golden_classifier_outputs(attention):
    io = load_file(GOLDEN / "tiny-6head/io.safetensors")
    model = build_model(GOLDEN / "tiny-6head/config.json", attention=attention)
    model.load_state_dict(load_file(GOLDEN / "tiny-6head/state_dict.safetensors"))
    model.eval()
    with torch.no_grad():
        out = model(io["input_ids"], io["attention_mask"])
        hidden, pooled = model.bert(io["input_ids"], io["attention_mask"])
    torch.testing.assert_close(out.logits, io["logits"], atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(hidden, io["last_hidden_state"], atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(pooled, io["pooled"], atol=1e-5, rtol=1e-5)
    # padded positions are exact zeros, as in the released (unpadding) code
    pad = io["attention_mask"] == 0
    assert pad.any()
    assert torch.count_nonzero(hidden[pad]) == 0


def test_slopes_non_power_of_two_heads():
    # 12 heads: 2^-1..2^-8, then 2^-0.5, 2^-1.5, 2^-2.5, 2^-3.5
    expected = [2.0**-i for i in range(1, 9)] + [2.0**-0.5, 2.0**-1.5, 2.0**-2.5, 2.0**-3.5]
    assert alibi_slopes(12) == pytest.approx(expected)
    assert len(alibi_slopes(6)) == 6


def test_base_config_shapes():
    model = build_model("base", num_labels=2)
    state = model.state_dict()
    assert len(state) == 140
    assert count_parameters(model) == 117_070_082
    assert tuple(state["bert.encoder.layer.11.attention.self.Wqkv.weight"].shape) == (2304, 768)
    assert tuple(state["bert.encoder.layer.0.mlp.gated_layers.weight"].shape) == (6144, 768)
    assert "bert.encoder.layer.0.mlp.gated_layers.bias" not in state
    # as released: one non-persistent buffer (DDP broadcasts it each forward), no ALiBi buffer
    assert [n for n, _ in model.named_buffers()] == ["bert.embeddings.token_type_ids"]


def test_mlm_checkpoint_loading_report():
    model, report = load_pretrained(GOLDEN / "tiny-mlm-checkpoint", num_labels=2)
    assert sorted(report.missing) == sorted(
        ["bert.pooler.dense.weight", "bert.pooler.dense.bias", "classifier.weight", "classifier.bias"]
    )
    assert report.unused and all(k.startswith("cls.predictions.") for k in report.unused)
    assert len(report.unused) == 6
    expected = load_file(GOLDEN / "tiny-mlm-checkpoint/expected_encoder_io.safetensors")
    model.eval()
    with torch.no_grad():
        hidden, _ = model.bert(expected["input_ids"], expected["attention_mask"])
    torch.testing.assert_close(hidden, expected["last_hidden_state"], atol=1e-5, rtol=1e-5)


def _checkpoint_copy(tmp_path, mutate):
    folder = tmp_path / "ckpt"
    shutil.copytree(GOLDEN / "tiny-mlm-checkpoint", folder)
    state = torch.load(folder / "pytorch_model.bin", weights_only=True)
    mutate(state)
    torch.save(state, folder / "pytorch_model.bin")
    return folder


def test_missing_encoder_key_is_an_error(tmp_path):
    folder = _checkpoint_copy(tmp_path, lambda s: s.pop("bert.encoder.layer.1.mlp.wo.weight"))
    with pytest.raises(ArtifactError, match=r"lacks required tensor 'bert.encoder.layer.1.mlp.wo.weight'"):
        load_pretrained(folder, num_labels=2)


def test_unexpected_key_is_an_error(tmp_path):
    folder = _checkpoint_copy(tmp_path, lambda s: s.__setitem__("bert.encoder.extra.weight", torch.zeros(1)))
    with pytest.raises(ArtifactError, match=r"unexpected tensor 'bert.encoder.extra.weight'"):
        load_pretrained(folder, num_labels=2)


def test_misshaped_key_is_an_error(tmp_path):
    folder = _checkpoint_copy(tmp_path, lambda s: s.__setitem__("bert.embeddings.LayerNorm.weight", torch.ones(5)))
    with pytest.raises(ArtifactError, match=r"'bert.embeddings.LayerNorm.weight' has shape \(5,\)"):
        load_pretrained(folder, num_labels=2)


def test_safetensors_checkpoint_and_missing_weights(tmp_path):
    folder = tmp_path / "st"
    folder.mkdir()
    shutil.copy(GOLDEN / "tiny-6head/config.json", folder / "config.json")
    with pytest.raises(ArtifactError, match="no weights"):
        load_pretrained(folder, num_labels=2)
    shutil.copy(GOLDEN / "tiny-6head/state_dict.safetensors", folder / "model.safetensors")
    model, report = load_pretrained(folder, num_labels=2)
    assert report.missing == [] and report.unused == []
    (folder / "model.safetensors").write_bytes(b"not a safetensors file")
    with pytest.raises(ArtifactError, match="model.safetensors"):
        load_pretrained(folder, num_labels=2)


def test_bad_config(tmp_path):
    bad = tmp_path / "config.json"
    bad.write_text("{not json")
    with pytest.raises(ArtifactError, match="not valid JSON"):
        build_model(bad)
    bad.write_text('{"hidden_size": 10}')
    with pytest.raises(ArtifactError, match="lacks vocab_size"):
        build_model(bad)
    with pytest.raises(ArtifactError, match="attention must be one of"):
        build_model("tiny", attention="flash")

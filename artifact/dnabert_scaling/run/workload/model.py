"""A faithful DNABERT-2 port in plain PyTorch.

The released model (``zhihan1996/DNABERT-2-117M``) is a MosaicBERT-style encoder: post-LayerNorm
blocks, ALiBi attention bias instead of position embeddings, a gated-GELU MLP without bias on its
input projection, and a BERT pooler + classifier for sequence classification. Its modelling code
unpads tokens and can use a Triton flash-attention kernel that no longer builds on current stacks;
this port keeps the padded layout and uses ``scaled_dot_product_attention`` with the ALiBi +
padding bias as ``attn_mask`` (or the explicit softmax math with ``attention="eager"``). On real
tokens both give the released outputs (checked against golden vectors to about 1e-5 in fp32);
padded positions of the last hidden state are exact zeros, as in the released code.

Parameter names and shapes are the released ones, so the released checkpoint loads unchanged.
"""

from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any, Mapping

import torch
import torch.nn.functional as F
from torch import nn

from dnabert_scaling.errors import ArtifactError, read_json_object
from dnabert_scaling.run.workload.model_config import ARCHITECTURE_KEYS, check_config, with_defaults
from dnabert_scaling.run.workload.tokenizer import PAD_ID

# sdpa: padded layout, scaled_dot_product_attention (the port's default).
# eager: padded layout, the released attention math spelled out (matmul, + bias, softmax, matmul).
# unpad: the released code's own PyTorch path: tokens unpadded between layers, re-padded around the
#        eager attention math in every layer (the baseline the port is benchmarked against).
ATTENTION_IMPLS = ("sdpa", "eager", "unpad")
PAD_TOKEN_ID = PAD_ID  # "[PAD]" in the released tokenizer (config.json does not carry it)
PADDING_BIAS = -10000.0  # what the released code adds on masked keys

# The released config, shipped as package data; "tiny" keeps the architecture at toy size for
# CPU tests and smoke runs (hidden 128 = 4 heads x 32, 2 layers).
TINY_OVERRIDES = {
    "hidden_size": 128,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "intermediate_size": 256,
}
CONFIG_NAMES = ("base", "tiny")


def base_config() -> dict[str, Any]:
    """The released DNABERT-2-117M ``config.json`` (revision d064dece)."""
    text = resources.files("dnabert_scaling").joinpath("resources/dnabert2/config.json").read_text()
    return json.loads(text)


def resolve_config(config: str | os.PathLike | Mapping[str, Any]) -> dict[str, Any]:
    """A config dict from a dict, a name (``base`` / ``tiny``), a ``config.json`` or its folder."""
    path: Path | None = None
    if isinstance(config, Mapping):
        cfg = dict(config)
        source = "dict"
    elif str(config) in CONFIG_NAMES:
        cfg = base_config()
        if str(config) == "tiny":
            cfg.update(TINY_OVERRIDES)
        source = str(config)
    else:
        path = Path(config)
        if path.is_dir():
            path = path / "config.json"
        if not path.is_file():
            raise ArtifactError("no model config: expected 'base', 'tiny', a config.json or a folder holding one", path)
        cfg = read_json_object(path, "a JSON object (a model config)")
        source = str(path)
    check_config(cfg, source, path)
    return with_defaults(cfg)


def config_name(cfg: Mapping[str, Any]) -> str | None:
    """``base`` or ``tiny`` when ``cfg`` has that named config's architecture, else None."""
    for name in CONFIG_NAMES:
        named = resolve_config(name)
        if all(cfg.get(key) == named.get(key) for key in ARCHITECTURE_KEYS):
            return name
    return None


def alibi_slopes(n_heads: int) -> list[float]:
    """ALiBi head slopes as the released code computes them (also for non-powers of two)."""

    def power_of_two(n: int) -> list[float]:
        start = 2.0 ** (-(2.0 ** -(math.log2(n) - 3)))
        return [start * start**i for i in range(n)]

    if math.log2(n_heads).is_integer():
        return power_of_two(n_heads)
    closest = 2 ** math.floor(math.log2(n_heads))
    return power_of_two(closest) + alibi_slopes(2 * closest)[0::2][: n_heads - closest]


class BertEmbeddings(nn.Module):
    """Token + token-type embeddings, LayerNorm, dropout (no position embeddings)."""

    def __init__(self, cfg: Mapping[str, Any]):
        super().__init__()
        # The released code passes config.pad_token_id, which its config lacks, so transformers'
        # BertConfig default (0) applies: row 0 ([UNK]) is the padding row. Kept for fidelity.
        self.word_embeddings = nn.Embedding(cfg["vocab_size"], cfg["hidden_size"], padding_idx=cfg.get("pad_token_id", 0))
        self.token_type_embeddings = nn.Embedding(cfg["type_vocab_size"], cfg["hidden_size"])
        self.LayerNorm = nn.LayerNorm(cfg["hidden_size"], eps=cfg["layer_norm_eps"])
        self.dropout = nn.Dropout(cfg["hidden_dropout_prob"])
        # As released: an all-zero, non-persistent buffer (not in the state dict). Under DDP with
        # broadcast_buffers=True (the default the recipe runs with) it is broadcast every forward.
        self.register_buffer(
            "token_type_ids", torch.zeros(cfg.get("max_position_embeddings", 512), dtype=torch.long), persistent=False
        )

    def forward(self, input_ids: torch.Tensor) -> torch.Tensor:
        batch, seq = input_ids.shape
        if seq <= self.token_type_ids.numel():
            token_types = self.token_type_ids[:seq].expand(batch, seq)
        else:
            token_types = torch.zeros_like(input_ids)
        embeddings = self.word_embeddings(input_ids) + self.token_type_embeddings(token_types)
        return self.dropout(self.LayerNorm(embeddings))


class BertSelfAttention(nn.Module):
    """Fused QKV projection and attention with an additive (ALiBi + padding) bias."""

    def __init__(self, cfg: Mapping[str, Any], attention: str):
        super().__init__()
        self.num_heads = cfg["num_attention_heads"]
        self.head_dim = cfg["hidden_size"] // self.num_heads
        self.attention = attention
        self.p_dropout = cfg["attention_probs_dropout_prob"]
        self.Wqkv = nn.Linear(cfg["hidden_size"], 3 * cfg["hidden_size"])

    def forward(self, hidden: torch.Tensor, bias: torch.Tensor, unpadded: "Unpadded | None" = None) -> torch.Tensor:
        qkv = self.Wqkv(hidden)
        if unpadded is not None:  # (nnz, 3w) -> (batch, seq, 3w) with zeros on padding
            qkv = unpadded.pad(qkv)
        batch, seq, width3 = qkv.shape
        width = width3 // 3
        qkv = qkv.view(batch, seq, 3, self.num_heads, self.head_dim)
        q, k, v = qkv.permute(2, 0, 3, 1, 4).unbind(0)  # each (batch, heads, seq, head_dim)
        p = self.p_dropout if self.training else 0.0
        if self.attention == "sdpa":
            ctx = F.scaled_dot_product_attention(q, k, v, attn_mask=bias.to(q.dtype), dropout_p=p)
        else:  # the released math, spelled out
            scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(self.head_dim) + bias
            probs = F.dropout(torch.softmax(scores, dim=-1), p=p, training=self.training)
            ctx = torch.matmul(probs.to(v.dtype), v)
        ctx = ctx.transpose(1, 2).reshape(batch, seq, width)
        return unpadded.unpad(ctx) if unpadded is not None else ctx


@dataclass
class Unpadded:
    """Where the real tokens of a padded (batch, seq) layout are, for the ``unpad`` path."""

    indices: torch.Tensor  # flat positions of real tokens in batch * seq
    batch: int
    seq: int

    @classmethod
    def from_mask(cls, attention_mask: torch.Tensor) -> "Unpadded":
        batch, seq = attention_mask.shape
        return cls(torch.nonzero(attention_mask.flatten(), as_tuple=False).flatten(), batch, seq)

    def unpad(self, padded: torch.Tensor) -> torch.Tensor:
        return padded.reshape(self.batch * self.seq, *padded.shape[2:]).index_select(0, self.indices)

    def pad(self, rows: torch.Tensor) -> torch.Tensor:
        out = rows.new_zeros(self.batch * self.seq, *rows.shape[1:])
        out.index_copy_(0, self.indices, rows)
        return out.view(self.batch, self.seq, *rows.shape[1:])


class BertSelfOutput(nn.Module):
    def __init__(self, cfg: Mapping[str, Any]):
        super().__init__()
        self.dense = nn.Linear(cfg["hidden_size"], cfg["hidden_size"])
        self.LayerNorm = nn.LayerNorm(cfg["hidden_size"], eps=cfg["layer_norm_eps"])
        self.dropout = nn.Dropout(cfg["hidden_dropout_prob"])

    def forward(self, hidden: torch.Tensor, residual: torch.Tensor) -> torch.Tensor:
        return self.LayerNorm(self.dropout(self.dense(hidden)) + residual)


class BertAttention(nn.Module):
    def __init__(self, cfg: Mapping[str, Any], attention: str):
        super().__init__()
        self.self = BertSelfAttention(cfg, attention)
        self.output = BertSelfOutput(cfg)

    def forward(self, hidden: torch.Tensor, bias: torch.Tensor, unpadded: Unpadded | None = None) -> torch.Tensor:
        return self.output(self.self(hidden, bias, unpadded), hidden)


class BertGatedMLP(nn.Module):
    """``wo(dropout(gelu(g) * u))`` with ``[g | u] = gated_layers(x)`` (no bias), then post-LN."""

    def __init__(self, cfg: Mapping[str, Any]):
        super().__init__()
        self.intermediate = cfg["intermediate_size"]
        self.gated_layers = nn.Linear(cfg["hidden_size"], 2 * self.intermediate, bias=False)
        self.wo = nn.Linear(self.intermediate, cfg["hidden_size"])
        self.dropout = nn.Dropout(cfg["hidden_dropout_prob"])
        self.layernorm = nn.LayerNorm(cfg["hidden_size"], eps=cfg["layer_norm_eps"])

    def forward(self, hidden: torch.Tensor) -> torch.Tensor:
        # Same math as ``gelu(g[..., :I]) * g[..., I:]`` with ``g = gated_layers(x)``, computed as two
        # GEMMs on the two row blocks of the (released) weight: both halves come out contiguous,
        # so the GELU, the product and their backward run vectorised and the backward needs no
        # concatenation (measured on an H200 at 128 x 128 tokens: the block's forward + backward
        # 1.47 ms -> 1.23 ms).
        weight = self.gated_layers.weight
        gated = F.linear(hidden, weight[: self.intermediate])
        plain = F.linear(hidden, weight[self.intermediate :])
        out = self.wo(self.dropout(F.gelu(gated) * plain))
        return self.layernorm(out + hidden)


class BertLayer(nn.Module):
    def __init__(self, cfg: Mapping[str, Any], attention: str):
        super().__init__()
        self.attention = BertAttention(cfg, attention)
        self.mlp = BertGatedMLP(cfg)

    def forward(self, hidden: torch.Tensor, bias: torch.Tensor, unpadded: Unpadded | None = None) -> torch.Tensor:
        return self.mlp(self.attention(hidden, bias, unpadded))


class BertEncoder(nn.Module):
    """The layer stack; adds the cached ALiBi tensor to the padding bias once per forward pass.

    Like the released code, the ALiBi tensor is a plain cached tensor, not a module buffer: a
    buffer would make DDP broadcast it before every forward pass (an extra NCCL kernel per step
    that the released model does not have).
    """

    def __init__(self, cfg: Mapping[str, Any], attention: str):
        super().__init__()
        self.num_heads = cfg["num_attention_heads"]
        self.attention = attention
        self.layer = nn.ModuleList(BertLayer(cfg, attention) for _ in range(cfg["num_hidden_layers"]))
        self._slopes = alibi_slopes(self.num_heads)
        self._alibi_cache: dict[tuple[int, str], torch.Tensor] = {}

    def alibi(self, seq: int, device: torch.device) -> torch.Tensor:
        """(heads, seq, seq) fp32 ``-slope_h * |i - j|``, built once per (length, device)."""
        key = (seq, str(device))
        cached = self._alibi_cache.get(key)
        if cached is None:
            pos = torch.arange(seq, device=device)
            distance = (pos[None, :] - pos[:, None]).abs().to(torch.float32)
            slopes = torch.tensor(self._slopes, dtype=torch.float32, device=device)
            cached = self._alibi_cache[key] = -slopes[:, None, None] * distance
        return cached

    def attention_bias(self, attention_mask: torch.Tensor) -> torch.Tensor:
        """(batch, heads, seq, seq) fp32: ALiBi plus -10000 on masked keys."""
        alibi = self.alibi(attention_mask.shape[-1], attention_mask.device)
        padding = (1.0 - attention_mask[:, None, None, :].to(torch.float32)) * PADDING_BIAS
        return alibi[None] + padding

    def forward(self, hidden: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        bias = self.attention_bias(attention_mask)
        device_type = hidden.device.type
        if self.attention == "sdpa" and torch.is_autocast_enabled(device_type):
            # SDPA wants the mask in the query dtype: cast once here, not in every layer.
            bias = bias.to(torch.get_autocast_dtype(device_type))
        if self.attention == "unpad":
            unpadded = Unpadded.from_mask(attention_mask)
            hidden = unpadded.unpad(hidden)
            for layer in self.layer:
                hidden = layer(hidden, bias, unpadded)
            return unpadded.pad(hidden)
        for layer in self.layer:
            hidden = layer(hidden, bias)
        # The released code computes real tokens only and pads the output with zeros.
        return hidden * attention_mask[..., None].to(hidden.dtype)


class BertPooler(nn.Module):
    def __init__(self, cfg: Mapping[str, Any]):
        super().__init__()
        self.dense = nn.Linear(cfg["hidden_size"], cfg["hidden_size"])

    def forward(self, hidden: torch.Tensor) -> torch.Tensor:
        return torch.tanh(self.dense(hidden[:, 0]))


class BertModel(nn.Module):
    """The encoder: ``bert(input_ids, attention_mask) -> (last_hidden_state, pooled)``."""

    def __init__(self, cfg: Mapping[str, Any], attention: str):
        super().__init__()
        self.embeddings = BertEmbeddings(cfg)
        self.encoder = BertEncoder(cfg, attention)
        self.pooler = BertPooler(cfg)

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor]:
        if attention_mask is None:
            attention_mask = (input_ids != PAD_TOKEN_ID).long()
        hidden = self.encoder(self.embeddings(input_ids), attention_mask)
        return hidden, self.pooler(hidden)


@dataclass
class ClassifierOutput:
    logits: torch.Tensor
    loss: torch.Tensor | None = None
    last_hidden_state: torch.Tensor | None = None
    pooled: torch.Tensor | None = None


class DNABERT2ForSequenceClassification(nn.Module):
    """Encoder + pooler + dropout + linear classifier; CE loss (L > 1) or MSE (L == 1)."""

    def __init__(self, cfg: Mapping[str, Any], num_labels: int, attention: str = "sdpa"):
        super().__init__()
        if attention not in ATTENTION_IMPLS:
            raise ArtifactError(f"attention must be one of {', '.join(ATTENTION_IMPLS)}, not {attention!r}")
        if num_labels < 1:
            raise ArtifactError(f"num_labels must be at least 1, not {num_labels}")
        self.config = dict(cfg, num_labels=num_labels)
        self.num_labels = num_labels
        self.attention_impl = attention
        self.bert = BertModel(cfg, attention)
        drop = cfg["classifier_dropout"] if cfg.get("classifier_dropout") is not None else cfg["hidden_dropout_prob"]
        self.dropout = nn.Dropout(drop)
        self.classifier = nn.Linear(cfg["hidden_size"], num_labels)
        self.apply(self._init_weights)

    def _init_weights(self, module: nn.Module) -> None:
        std = self.config["initializer_range"]
        if isinstance(module, nn.Linear):
            nn.init.normal_(module.weight, std=std)
            if module.bias is not None:
                nn.init.zeros_(module.bias)
        elif isinstance(module, nn.Embedding):
            nn.init.normal_(module.weight, std=std)
            if module.padding_idx is not None:
                with torch.no_grad():
                    module.weight[module.padding_idx].zero_()
        elif isinstance(module, nn.LayerNorm):
            nn.init.ones_(module.weight)
            nn.init.zeros_(module.bias)

    def forward(
        self,
        input_ids: torch.Tensor,
        attention_mask: torch.Tensor | None = None,
        labels: torch.Tensor | None = None,
    ) -> ClassifierOutput:
        hidden, pooled = self.bert(input_ids, attention_mask)
        logits = self.classifier(self.dropout(pooled))
        loss = None
        if labels is not None:
            if self.num_labels == 1:
                loss = F.mse_loss(logits.squeeze(-1).float(), labels.float())
            else:
                loss = F.cross_entropy(logits.float(), labels)
        return ClassifierOutput(logits=logits, loss=loss, last_hidden_state=hidden, pooled=pooled)


def build_model(
    config: str | os.PathLike | Mapping[str, Any], num_labels: int | None = None, attention: str = "sdpa"
) -> DNABERT2ForSequenceClassification:
    """A randomly initialised classifier with the released key names (``num_labels`` defaults to
    the config's ``num_labels``, else 2)."""
    cfg = resolve_config(config)
    labels = num_labels if num_labels is not None else int(cfg.get("num_labels") or 2)
    return DNABERT2ForSequenceClassification(cfg, labels, attention)


def count_parameters(model: nn.Module) -> int:
    return sum(p.numel() for p in model.parameters())


# --- loading checkpoints -----------------------------------------------------------------------

# Keys a fine-tune from the masked-LM checkpoint initialises itself, and keys it ignores.
ALLOWED_MISSING_PREFIXES = ("bert.pooler.", "classifier.")
ALLOWED_UNUSED_PREFIXES = ("cls.predictions.",)


@dataclass
class LoadReport:
    """What loading a checkpoint did: the keys loaded, left missing (initialised) and not used."""

    folder: str
    weights_file: str
    loaded: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)
    unused: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {
            "folder": self.folder,
            "weights_file": self.weights_file,
            "loaded": len(self.loaded),
            "missing": list(self.missing),
            "unused": list(self.unused),
        }

    def describe(self) -> str:
        return (
            f"loaded {len(self.loaded)} tensors from {self.weights_file}; "
            f"initialised (missing): {', '.join(self.missing) or 'none'}; "
            f"not used: {', '.join(self.unused) or 'none'}"
        )


def _read_state_dict(folder: Path) -> tuple[dict[str, torch.Tensor], Path]:
    st_path, bin_path = folder / "model.safetensors", folder / "pytorch_model.bin"
    if st_path.is_file():
        from safetensors import SafetensorError
        from safetensors.torch import load_file

        try:
            return load_file(str(st_path)), st_path
        except (SafetensorError, OSError, ValueError) as exc:
            raise ArtifactError(f"cannot read safetensors weights: {exc}", st_path) from None
    if bin_path.is_file():
        try:
            state = torch.load(bin_path, map_location="cpu", weights_only=True)
        except Exception as exc:  # torch raises several types for corrupt or unsafe files
            raise ArtifactError(f"cannot read weights (weights_only=True): {exc}", bin_path) from None
        if not isinstance(state, dict):
            raise ArtifactError("weights file does not hold a state dict", bin_path)
        return state, bin_path
    raise ArtifactError("no weights: expected model.safetensors or pytorch_model.bin", folder)


def load_pretrained(
    folder: str | os.PathLike, num_labels: int | None = None, attention: str = "sdpa"
) -> tuple[DNABERT2ForSequenceClassification, LoadReport]:
    """Build the classifier from a Hugging Face-style folder and load its weights.

    The released masked-LM checkpoint leaves exactly ``bert.pooler.*`` and ``classifier.*``
    missing (kept at their random initialisation) and ``cls.predictions.*`` unused; both are
    reported. Any other missing, unexpected or mis-shaped key is an error naming the key.
    """
    folder = Path(folder)
    if not folder.is_dir():
        raise ArtifactError("weights folder does not exist", folder)
    model = build_model(folder, num_labels=num_labels, attention=attention)
    state, weights_path = _read_state_dict(folder)
    own = model.state_dict()
    report = LoadReport(folder=str(folder), weights_file=str(weights_path))
    for key in own:
        if key not in state:
            if not key.startswith(ALLOWED_MISSING_PREFIXES):
                raise ArtifactError(f"checkpoint lacks required tensor {key!r}", weights_path)
            report.missing.append(key)
    for key, tensor in state.items():
        if key not in own:
            if not key.startswith(ALLOWED_UNUSED_PREFIXES):
                raise ArtifactError(f"checkpoint holds unexpected tensor {key!r}", weights_path)
            report.unused.append(key)
            continue
        if not isinstance(tensor, torch.Tensor):
            raise ArtifactError(f"checkpoint entry {key!r} is not a tensor", weights_path)
        if tuple(tensor.shape) != tuple(own[key].shape):
            raise ArtifactError(
                f"tensor {key!r} has shape {tuple(tensor.shape)}, the model expects {tuple(own[key].shape)}",
                weights_path,
            )
        report.loaded.append(key)
    model.load_state_dict({k: state[k] for k in report.loaded}, strict=False)
    return model, report

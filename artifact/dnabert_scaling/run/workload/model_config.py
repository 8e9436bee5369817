"""The checks of a model config (``--model cfg.json``, a weights folder's ``config.json``).

Every key the model reads is checked for its type and range before a tensor is allocated, so an
impossible config (zero heads, -1 layers, ``"128"`` where a number belongs, a hidden size the
heads do not divide) is an :class:`ArtifactError` naming the file and the key, never a
``ZeroDivisionError`` or a model that silently has no layers.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from dnabert_scaling.errors import ArtifactError

REQUIRED_CONFIG_KEYS = (
    "vocab_size",
    "hidden_size",
    "num_hidden_layers",
    "num_attention_heads",
    "intermediate_size",
)
# what decides the shapes of the model's tensors (two configs that agree on them build the same model)
ARCHITECTURE_KEYS = (*REQUIRED_CONFIG_KEYS, "type_vocab_size")
# whole numbers of at least 1 (the optional ones checked when present)
POSITIVE_INT_KEYS = (*REQUIRED_CONFIG_KEYS, "type_vocab_size", "alibi_starting_size", "max_position_embeddings")
PROBABILITY_KEYS = ("hidden_dropout_prob", "attention_probs_dropout_prob", "classifier_dropout")  # in [0, 1]
# A config beyond this many parameters fits no accelerator (4e11 bytes of fp32 weights alone).
MAX_PARAMETERS = 10**11

CONFIG_DEFAULTS: dict[str, Any] = {
    "hidden_dropout_prob": 0.1,
    "attention_probs_dropout_prob": 0.0,
    "layer_norm_eps": 1e-12,
    "type_vocab_size": 2,
    "alibi_starting_size": 512,
    "initializer_range": 0.02,
    "classifier_dropout": None,
}


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def estimated_parameters(cfg: Mapping[str, Any]) -> int:
    """Parameters of the classifier a (checked) config builds, to within the biases and LayerNorms."""
    h, inter, layers = cfg["hidden_size"], cfg["intermediate_size"], cfg["num_hidden_layers"]
    per_layer = 4 * h * h + 3 * h * inter
    return (cfg["vocab_size"] + cfg.get("type_vocab_size", 2)) * h + layers * per_layer + h * h


def check_config(cfg: Mapping[str, Any], source: str, path: Path | None = None) -> None:
    """Refuse (``ArtifactError`` naming ``path`` or ``source`` and the key) a config the model cannot be
    built from. ``source``: how the config was named (``tiny``, ``dict``, the file)."""

    def bad(key: str, problem: str) -> ArtifactError:
        where = "" if path is not None else f"model config ({source}): "
        return ArtifactError(f"{where}key {key!r}: {problem}", path)

    missing = [k for k in REQUIRED_CONFIG_KEYS if k not in cfg]
    if missing:
        where = "" if path is not None else f"({source}) "
        raise ArtifactError(f"model config {where}lacks {', '.join(missing)}", path)
    for key in POSITIVE_INT_KEYS:
        if key in cfg and not (_is_int(cfg[key]) and cfg[key] >= 1):
            raise bad(key, f"must be a whole number of at least 1, not {cfg[key]!r}")
    for key in PROBABILITY_KEYS:
        value = cfg.get(key)
        if value is None and key == "classifier_dropout":
            continue
        if key in cfg and not (_is_number(value) and 0 <= value <= 1):
            raise bad(key, f"must be a dropout probability within 0..1, not {value!r}")
    if "layer_norm_eps" in cfg and not (_is_number(cfg["layer_norm_eps"]) and cfg["layer_norm_eps"] > 0):
        raise bad("layer_norm_eps", f"must be a number greater than 0, not {cfg['layer_norm_eps']!r}")
    if "initializer_range" in cfg and not (_is_number(cfg["initializer_range"]) and cfg["initializer_range"] >= 0):
        raise bad("initializer_range", f"must be a number of 0 or more, not {cfg['initializer_range']!r}")
    if cfg.get("num_labels") is not None and not (_is_int(cfg["num_labels"]) and cfg["num_labels"] >= 1):
        raise bad("num_labels", f"must be a whole number of at least 1, not {cfg['num_labels']!r}")
    pad = cfg.get("pad_token_id")
    if pad is not None and not (_is_int(pad) and 0 <= pad < cfg["vocab_size"]):
        raise bad("pad_token_id", f"must be a token id within 0..{cfg['vocab_size'] - 1} (vocab_size), not {pad!r}")
    if cfg["hidden_size"] % cfg["num_attention_heads"]:
        raise bad(
            "hidden_size",
            f"{cfg['hidden_size']} is not a multiple of num_attention_heads {cfg['num_attention_heads']}",
        )
    params = estimated_parameters(cfg)
    if params > MAX_PARAMETERS:
        where = "" if path is not None else f"({source}) "
        raise ArtifactError(
            f"model config {where}is too large: vocab_size, hidden_size, num_hidden_layers and intermediate_size "
            f"give about {params:.3g} parameters, more than the {MAX_PARAMETERS:.0e} any device holds",
            path,
        )


def with_defaults(cfg: dict[str, Any]) -> dict[str, Any]:
    for key, value in CONFIG_DEFAULTS.items():
        cfg.setdefault(key, value)
    return cfg

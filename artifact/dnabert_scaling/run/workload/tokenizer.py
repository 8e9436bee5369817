"""The released DNABERT-2 tokenizer (BPE, 4096 tokens), shipped with the package.

Loaded with ``transformers.PreTrainedTokenizerFast`` from the unchanged ``tokenizer.json`` of
revision d064dece; ``[PAD]`` is id 3 and the attention mask is ``input_ids != 3``.
"""

from __future__ import annotations

from functools import lru_cache
from importlib import resources
from pathlib import Path

PAD_ID = 3
SPECIAL_TOKENS = {
    "unk_token": "[UNK]",
    "cls_token": "[CLS]",
    "sep_token": "[SEP]",
    "pad_token": "[PAD]",
    "mask_token": "[MASK]",
}


def tokenizer_path() -> Path:
    return Path(str(resources.files("dnabert_scaling").joinpath("resources/dnabert2/tokenizer.json")))


@lru_cache(maxsize=4)
def load_tokenizer(path: str | None = None, model_max_length: int = 512):
    """A ``PreTrainedTokenizerFast`` for the DNABERT-2 vocabulary (the shipped file by default)."""
    from transformers import PreTrainedTokenizerFast

    tok = PreTrainedTokenizerFast(
        tokenizer_file=str(path or tokenizer_path()), model_max_length=model_max_length, **SPECIAL_TOKENS
    )
    if tok.pad_token_id != PAD_ID:
        raise RuntimeError(f"tokenizer {path or tokenizer_path()}: [PAD] is id {tok.pad_token_id}, expected {PAD_ID}")
    return tok

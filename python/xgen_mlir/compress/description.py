"""A JSON-serialisable description of a pruned model's sparsity structure.

This is the "layerwise representation" the paper's code generator starts from (patterns per
layer, the pattern of every kernel, filter groups), in a form other tools and people can read
without PyTorch. It is derived from the structure buffers, never stored separately on the model.
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass, field
from typing import cast

import torch
from torch import nn

from .structure import buffer_of, mask_of, pruned_layers, weight_of

__all__ = ["LayerSparsity", "SparsityDescription", "describe"]


@dataclass
class LayerSparsity:
    """One pruned layer. Patterns are flat row-major kernel positions (``r * K + c``)."""

    name: str
    kind: str  # "conv" | "depthwise" | "pointwise" | "linear"
    weight_shape: list[int]
    kernel_size: int
    pattern_size: int
    patterns: list[list[int]]
    pattern_ids: list[list[int]]  # [F][C]: pattern of each kernel, -1 = removed
    groups: list[list[int]]  # filter indices of each group
    group_size: int
    weights: int
    nonzeros: int
    # block scheme (compress.blocks): (rows, cols) of a block, and per block (row-major over
    # the block grid) the kept local row / column indices; empty for pattern layers
    scheme: str = "pattern"
    block_shape: list[int] = field(default_factory=list)
    block_rows: list[list[int]] = field(default_factory=list)
    block_cols: list[list[int]] = field(default_factory=list)

    @property
    def density(self) -> float:
        return self.nonzeros / self.weights

    @property
    def kernels_removed(self) -> float:
        """Fraction of kernels removed by connectivity pruning (0 for block layers)."""
        if not self.pattern_ids:
            return 0.0
        ids = torch.tensor(self.pattern_ids)
        return float((ids < 0).float().mean())


@dataclass
class SparsityDescription:
    """Per-layer structure plus totals over all Conv2d weights of the model."""

    layers: dict[str, LayerSparsity] = field(default_factory=dict)
    conv_weights_before: int = 0
    conv_weights_after: int = 0
    block_weights_before: int = 0  # weights of the block-pruned layers, before / after
    block_weights_after: int = 0

    @property
    def compression_rate(self) -> float:
        """Conv weights before / after (dense convs count fully)."""
        return self.conv_weights_before / max(self.conv_weights_after, 1)

    def to_dict(self) -> dict:
        d = asdict(self)
        d["compression_rate"] = self.compression_rate
        for name, layer in self.layers.items():
            d["layers"][name]["density"] = layer.density
        return d

    @classmethod
    def from_dict(cls, d: dict) -> SparsityDescription:
        keys = LayerSparsity.__dataclass_fields__
        layers = {
            n: LayerSparsity(**{k: v for k, v in ld.items() if k in keys})
            for n, ld in d["layers"].items()
        }
        return cls(
            layers,
            d["conv_weights_before"],
            d["conv_weights_after"],
            d.get("block_weights_before", 0),
            d.get("block_weights_after", 0),
        )

    def to_json(self, path: str | os.PathLike[str] | None = None) -> str:
        """The description as JSON text; also written to ``path`` when given."""
        text = json.dumps(self.to_dict(), separators=(",", ":"))
        if path is not None:
            with open(path, "w", encoding="utf-8") as f:
                f.write(text)
        return text

    @classmethod
    def from_json(cls, text_or_path: str | os.PathLike[str]) -> SparsityDescription:
        """Parse JSON text, or read it from a file path."""
        text = os.fspath(text_or_path)
        if not text.lstrip().startswith("{"):
            with open(text, encoding="utf-8") as f:
                text = f.read()
        return cls.from_dict(json.loads(text))

    def summary(self) -> str:
        """A readable per-layer table and the totals."""
        head = f"{'layer':<28} {'kind':<9} {'weight':<16} {'P':>2} {'n':>3} {'G':>3} "
        head += f"{'groups':>6} {'removed':>8} {'density':>8}"
        lines = [head, "-" * len(head)]
        for name, ly in self.layers.items():
            shape = "x".join(map(str, ly.weight_shape))
            lines.append(
                f"{name:<28} {ly.kind:<9} {shape:<16} {len(ly.patterns):>2} "
                f"{ly.pattern_size:>3} {ly.group_size:>3} {len(ly.groups):>6} "
                f"{ly.kernels_removed:>8.1%} {ly.density:>8.3f}"
            )
        if self.block_weights_before:
            lines.append(
                f"block-pruned weights: {self.block_weights_before} -> "
                f"{self.block_weights_after} "
                f"({self.block_weights_before / max(self.block_weights_after, 1):.2f}x fewer)"
            )
        lines.append(
            f"conv weights: {self.conv_weights_before} -> {self.conv_weights_after} "
            f"({self.compression_rate:.2f}x fewer)"
        )
        return "\n".join(lines)


def _kind(m: nn.Module) -> str:
    if isinstance(m, nn.Linear):
        return "linear"
    if cast(int, m.groups) > 1:
        return "depthwise"
    return "pointwise" if weight_of(m).shape[-1] == 1 else "conv"


def describe(model: nn.Module) -> SparsityDescription:
    """Describe every pruned layer of ``model`` and count its conv weights."""
    desc = SparsityDescription()
    for name, m in pruned_layers(model).items():
        if "xgen_block_rows" in m._buffers:
            desc.layers[name] = _describe_blocks(name, m)
            desc.block_weights_before += desc.layers[name].weights
            desc.block_weights_after += desc.layers[name].nonzeros
            continue
        lib = buffer_of(m, "xgen_patterns").cpu()  # one copy, not a device sync per item
        flat = lib.reshape(len(lib), -1)
        groups = buffer_of(m, "xgen_groups").long().cpu()
        members = [torch.nonzero(groups == g).flatten().tolist() for g in groups.unique()]
        desc.layers[name] = LayerSparsity(
            name=name,
            kind=_kind(m),
            weight_shape=list(weight_of(m).shape),
            kernel_size=int(lib.shape[-1]),
            pattern_size=int(flat[0].sum()),
            patterns=[torch.nonzero(r).flatten().tolist() for r in flat],
            pattern_ids=buffer_of(m, "xgen_pattern_ids").long().tolist(),
            groups=members,
            group_size=max(len(g) for g in members),
            weights=weight_of(m).numel(),
            nonzeros=int(mask_of(m).sum()),
        )
    pruned = {id(m): n for n, m in pruned_layers(model).items()}
    for m in model.modules():
        if isinstance(m, nn.Conv2d):
            desc.conv_weights_before += m.weight.numel()
            layer = pruned.get(id(m))
            after = desc.layers[layer].nonzeros if layer else m.weight.numel()
            desc.conv_weights_after += after
    return desc


def _describe_blocks(name: str, m: nn.Module) -> LayerSparsity:
    w = weight_of(m)
    rows = buffer_of(m, "xgen_block_rows").cpu()  # one copy, not a device sync per block
    cols = buffer_of(m, "xgen_block_cols").cpu()
    kind = "linear" if isinstance(m, nn.Linear) else f"conv{w.dim() - 2}d"
    if kind == "conv2d" and w.shape[-1] == w.shape[-2] == 1:
        kind = "pointwise"
    return LayerSparsity(
        name=name,
        kind=kind,
        weight_shape=list(w.shape),
        kernel_size=int(w.shape[-1]) if w.dim() > 2 else 1,
        pattern_size=0,
        patterns=[],
        pattern_ids=[],
        groups=[],
        group_size=0,
        weights=w.numel(),
        nonzeros=int(mask_of(m).sum()),
        scheme="block",
        block_shape=buffer_of(m, "xgen_block_shape").tolist(),
        block_rows=[torch.nonzero(r).flatten().tolist() for r in rows.reshape(-1, rows.shape[-1])],
        block_cols=[torch.nonzero(c).flatten().tolist() for c in cols.reshape(-1, cols.shape[-1])],
    )

"""The VNNI int8 pattern kernel (xgen-int8-pattern-kernels) on compiled models: the same
numbers as ONNX Runtime on the same quantized file, at stride 1 and 2, with biases, groups of
fewer than 16 filters, a filter count that is no multiple of 16, and a batch of 3. Where the
host has no VNNI the same compiles run the convs another way (the pass must not fire), same
numbers."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
import torch
from conftest import check_close, int8_reference, vnni_pattern_kernels
from onnx import numpy_helper

import xgen_mlir
from xgen_mlir import compress


class _Net(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.c1 = torch.nn.Conv2d(3, 16, 3, padding=1, bias=False)
        self.c2 = torch.nn.Conv2d(16, 24, 3, stride=2, padding=1)
        self.c3 = torch.nn.Conv2d(24, 40, 3, padding=1)
        self.c4 = torch.nn.Conv2d(40, 16, 3, stride=2, padding=0)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = torch.relu(self.c1(x))
        x = torch.relu(self.c2(x))
        x = self.c3(x)  # no activation: the next conv's input zero point is not -128
        return self.c4(x)


def _step(proto: onnx.ModelProto) -> float:
    inits = {t.name: numpy_helper.to_array(t) for t in proto.graph.initializer}
    node = next(n for n in proto.graph.node if proto.graph.output[0].name in n.output)
    return float(inits[node.input[1]])


def pruned_quantized(batch: int) -> tuple[torch.Tensor, onnx.ModelProto]:
    """An input of ``batch`` images and ``_Net`` pattern-pruned, quantized static on 3 samples."""
    gen = torch.Generator().manual_seed(0)
    x = torch.randn(batch, 3, 23, 21, generator=gen)
    cal = [torch.randn(batch, 3, 23, 21, generator=gen) for _ in range(3)]
    pruned = compress.prune(_Net().eval(), (x[:1],), group_size=8, connectivity=0.5).eval()
    return x, compress.quantize(pruned, x, calibration=cal)


@pytest.mark.parametrize(("offload", "batch"), [("none", 1), ("tuned", 1), ("none", 3)])
def test_pruned_int8_convs_in_the_vnni_kernel_equal_onnx_runtime(offload: str, batch: int) -> None:
    x, quantized = pruned_quantized(batch)
    compiled = xgen_mlir.compile(
        quantized,
        None,
        precision="int8",
        precision_check=False,
        target_options={"offload": offload, "integer_contractions": "convs"},
    )
    got = np.asarray(compiled(x.numpy()))
    want = int8_reference(quantized, {quantized.graph.input[0].name: x.numpy()})
    # the integer sums are exact: any difference is a rounding tie of the requantize
    check_close(got, want, atol=_step(quantized) * 1.001, rtol=0, what="int8 vs ORT")
    assert np.mean(got == want) > 0.99
    done = compiled.report.rewrites.get("xgen-int8-pattern-kernels", {})
    if vnni_pattern_kernels():
        assert done == {"int8 pattern kernels": 4, "of them with their requantize": 4}, done
    else:
        assert not done, done


def test_kernel_or_dense_measured_in_the_model_and_applied(tmp_path) -> None:
    """Under int8_pattern_kernels=tuned (the default) the model's pruned int8 convs the kernel
    takes are one group: before a tune the rule decides (the kernel on VNNI without AMX) and
    the report says so; tune() compiles the model the other way, times both in the model and
    records the verdict; compile() then follows it, with the same numbers either way. A host
    without the units has no such group and nothing is recorded."""
    from xgen_mlir.passes.int8_pattern_kernels import (
        GROUP_ALGORITHM,
        GROUP_PREFIX,
        Int8PatternOptions,
        target_units,
    )
    from xgen_mlir.tunedb import HostIdentity, TuningDB

    gen = torch.Generator().manual_seed(0)
    x = torch.randn(1, 3, 23, 21, generator=gen)
    cal = [torch.randn(1, 3, 23, 21, generator=gen) for _ in range(3)]
    pruned = compress.prune(_Net().eval(), (x,), group_size=8, connectivity=0.5).eval()
    db = tmp_path / "t.db"
    TuningDB(db).close()
    common = dict(
        precision="int8",
        calibration=cal,
        precision_check=False,
        target_options={"threads": "2", "integer_contractions": "convs"},
    )
    before = xgen_mlir.compile(pruned, (x,), tuning_db=db, **common)
    lines = [c for c in before.report.tuning.choices if c[0].startswith(GROUP_PREFIX)]
    if target_units(Int8PatternOptions()) is None:
        assert lines == [], lines
        return
    ((signature, decision, why),) = lines
    assert signature.startswith(f"{GROUP_PREFIX} 4 convs int8 "), signature
    prior = "kernel" if vnni_pattern_kernels() else "dense"
    assert decision == f"{prior} (4 convs)" and why.startswith("unmeasured: the rule"), lines
    xgen_mlir.tune(pruned, (x,), db=db, budget_minutes=0.1, progress=False, **common)
    with TuningDB(db) as tdb:
        (record,) = tdb.choices(HostIdentity.current(threads=2)).get(signature, [])
    other = "dense" if prior == "kernel" else "kernel"
    assert record.config == {"kind": "algorithm", "algorithm": GROUP_ALGORITHM, "use": other}
    assert record.status == "ok" and record.seconds > 0 and record.baseline_seconds > 0
    after = xgen_mlir.compile(pruned, (x,), tuning_db=db, **common)
    decided = {c[0]: c[1:] for c in after.report.tuning.choices}
    done = after.report.rewrites.get("xgen-int8-pattern-kernels", {})
    if record.detail.startswith("confirmed alone, slower in the model"):  # rejected
        assert decided[signature][0] == f"{prior} (4 convs)", decided[signature]
        assert decided[signature][1].startswith("the rule, the other measured in the model")
        applied = prior
    else:
        assert decided[signature] == (f"{other} (4 convs)", decided[signature][1])
        assert decided[signature][1].startswith("measured in the model: ")
        applied = other
    assert bool(done.get("int8 pattern kernels")) == (applied == "kernel"), done
    got, want = np.asarray(after(x.numpy())), np.asarray(before(x.numpy()))
    # the same integer sums either way: a difference is a requantize's rounding tie
    assert np.mean(got == want) > 0.99

"""Per-conv algorithm choices (tuning/choices.py, xgen-winograd-convs' ``tuned`` mode): a real
measurement of one small conv direct and as Winograd, recorded for this host and applied by
compile(); a wrong transform is rejected; the tuned model against PyTorch."""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pytest
import torch
from conftest import int8_exact_in_ort
from torch import nn

import xgen_mlir
from xgen_mlir.byoc.onednn import IMPL_FAMILIES
from xgen_mlir.models import small_cnn
from xgen_mlir.passes import winograd_convs as wc
from xgen_mlir.passes.nhwc_convs import GROUP_PREFIX as NHWC_GROUP_PREFIX
from xgen_mlir.tunedb import HostIdentity, Record, TuningDB
from xgen_mlir.tuning.choices import measure_choices
from xgen_mlir.tuning.measure import MeasureSettings

FAST = MeasureSettings(threads=2, rounds=3, min_block_s=0.002)
# An unmeasured f32 conv's prior depends on the vector width (oneDNN on a target narrower than
# the one xgen_mlir's tiles were made for): tests of what happens around an IREE prior plan
# for that width on any host.
WIDE = {"target_options": {"vector_bits": str(wc.TILED_FOR_VECTOR_BITS)}}


class _ConvBnRelu(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(16, 16, 3, padding=1, bias=False)
        self.bn = nn.BatchNorm2d(16)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(self.bn(self.conv(x)))


def _model() -> tuple[nn.Module, torch.Tensor]:
    torch.manual_seed(0)
    model = _ConvBnRelu().eval()
    with torch.no_grad():
        model.bn.running_mean.uniform_(-0.5, 0.5)
        model.bn.running_var.uniform_(0.5, 2.0)
    return model, torch.randn(1, 16, 20, 20)


def test_one_conv_measured_both_ways_recorded_and_applied(tmp_path):
    model, x = _model()
    db = tmp_path / "t.db"
    (choice,) = measure_choices(model, (x,), db=db, settings=FAST, progress=False)
    assert choice.count == 1 and choice.new
    assert "conv3x3 16->16 20x20 nchw pad" in choice.description
    by_m = {
        (r.config["m"], r.config.get("gemm")): r
        for r in choice.measured
        if r.config["algorithm"] == "winograd"
    }
    # 25 tiles of 4x4, 100 of 2x2: both tiles measured, each with its batched GEMM in IREE's
    # code and in the generated kernel
    assert set(by_m) == {(4, None), (4, "gemm"), (2, None), (2, "gemm")}
    # and the conv offloaded to oneDNN (BYOC: CI installs it), in the precision compiled for:
    # with oneDNN's first choice, then each other implementation family it has for the conv
    offload = [r for r in choice.measured if r.config["algorithm"] == "onednn"]
    assert offload and all(r.config["compute"] == "f32" for r in offload)
    impls = [r.config.get("impl", "") for r in offload]
    assert impls[0] == "" and len(set(impls)) == len(impls), impls
    assert set(impls[1:]) <= set(IMPL_FAMILIES), impls
    for r in [*by_m.values(), *offload]:  # each timed beside the direct conv, numbers first
        assert r.status == "ok", r.detail
        assert r.seconds > 0 and r.baseline_seconds > 0
        assert r.host_key == HostIdentity.current(threads=2).key
    # measured again only when asked
    (again,) = measure_choices(model, (x,), db=db, settings=FAST, progress=False)
    assert not again.new and again.algorithm == choice.algorithm

    compiled = xgen_mlir.compile(model, (x,), tuning_db=db, tuning_threads=2)
    # (a conv left a conv, direct or the library's, is also in the model's NHWC group)
    ((conv, algorithm, why),) = [
        c for c in compiled.report.tuning.choices if not c[0].startswith(NHWC_GROUP_PREFIX)
    ]
    assert conv == choice.description and why == choice.why
    rewrites = compiled.report.rewrites.get("xgen-winograd-convs", {})
    if choice.algorithm == "direct":
        assert algorithm == "direct" and not any("F(" in k for k in rewrites)
        assert not compiled.report.offload
    elif choice.algorithm.startswith("onednn"):  # "onednn (f32)", "onednn[jit] (f32)"
        assert algorithm == choice.algorithm.replace("(f32)", "f32"), algorithm
        assert not any("F(" in k for k in rewrites)
        assert any("-> onednn" in k for k in compiled.report.offload)
    else:
        m = int(choice.algorithm.split("F(")[1][0])
        kernel = " (GEMM kernel)" if choice.algorithm.endswith("in the GEMM kernel") else ""
        assert algorithm == f"Winograd F({m}x{m}, 3x3){kernel}"
        assert rewrites == {f"linalg.conv_2d_nchw_fchw as F({m}x{m}, 3x3){kernel}": 1}
    with torch.no_grad():
        want = model(x).numpy()
    got = np.asarray(compiled(x))
    assert np.abs(got - want).max() <= 1e-4 * np.abs(want).max()

    # winograd=false / offload=none forbid them whatever the database says
    off = xgen_mlir.compile(
        model,
        (x,),
        tuning_db=db,
        tuning_threads=2,
        target_options={"winograd": "false", "offload": "none"},
    )
    assert "xgen-winograd-convs" not in off.report.rewrites and not off.report.offload


def test_the_prior_is_what_a_tune_compares_against_and_falls_back_to(tmp_path):
    """Under bf16 an unmeasured KxK conv starts in oneDNN (the prior). A tune that measures
    the same choice does not count it as a change (the model compiled before had it), and a
    record rejected in the model gives the conv back to its prior, not to IREE's direct conv
    (a bf16 ResNet-18 went 5.8 -> 15.0 ms that way on a Zen 5 host). A real measurement that
    the direct conv is faster still overrides the prior."""
    from xgen_mlir.tuning import choices as ch

    model, x = _model()
    db = tmp_path / "t.db"
    (choice,) = measure_choices(
        model, (x,), db=db, settings=FAST, progress=False, max_convs=0, precision="bf16"
    )
    assert not choice.new and not choice.measured
    prior = "onednn (bf16)" if wc._bf16_primitives() else "direct"
    assert choice.prior == prior and choice.algorithm == prior
    (fp32,) = measure_choices(
        model, (x,), db=db, settings=FAST, progress=False, max_convs=0, **WIDE
    )
    assert fp32.prior == "direct"  # 16 channels on 20-pixel rows: IREE's tiles fit
    allowed = wc.allowed_variants("tuned", "tuned", "bf16")
    faster = Record(choice.signature, wc.offload_config("onednn", "bf16"), "ok", 0.5e-3, 1e-3)
    assert ch._decision(replace(choice, measured=[faster]), allowed)[0] == "onednn (bf16)"
    rejected = replace(faster, detail=f"{wc.REJECTED_IN_MODEL} (6.6 -> 6.9 ms)")
    assert ch._decision(replace(choice, measured=[rejected]), allowed)[0] == prior
    slower = replace(faster, seconds=2e-3)
    assert ch._decision(replace(choice, measured=[slower]), allowed)[0] == "direct"
    # a measurement of another oneDNN (or from before records named the library) is no
    # measurement of the one built here: the conv keeps its prior
    for library in ("oneDNN 2.6.3", None):
        config = {**faster.config, "library": library}
        if library is None:
            del config["library"]
        other = replace(faster, config=config)
        assert not wc.library_matches(other.config)
        assert ch._decision(replace(choice, measured=[other]), allowed)[0] == prior


def test_a_named_implementation_family_needs_a_real_margin_over_the_librarys_own():
    """decide_algorithm: an implementation family asked for by name (oneDNN's "jit") replaces
    the library's own choice only where it measured MIN_GAIN faster than that; within the
    noise (0.335 against 0.337 ms, both 2.7x the direct conv) the library's own stays."""
    own = {"kind": "algorithm", "algorithm": "onednn", "compute": "bf16", "library": "v"}
    jit = {**own, "impl": "jit"}

    def records(jit_ms: float) -> list[Record]:
        return [
            Record("s", own, "ok", 0.337e-3, 0.904e-3),
            Record("s", jit, "ok", jit_ms * 1e-3, 0.904e-3),
        ]

    def anything(config):
        return True

    config, why = wc.decide_algorithm(records(0.335), anything)
    assert config == own and "own choice" in why, why
    config, _ = wc.decide_algorithm(records(0.25), anything)  # 1.35x the library's own
    assert config == jit
    rejected = records(0.25)
    rejected[0] = replace(rejected[0], detail=f"{wc.REJECTED_IN_MODEL} (1.0 -> 1.1 ms)")
    config, _ = wc.decide_algorithm(rejected, anything)
    assert config == jit  # (the library's own lost in the model: no default to fall back to)


def test_an_offload_measured_with_another_library_is_measured_again(tmp_path):
    """A signature whose oneDNN records all name another oneDNN than the plugin's is not
    "measured" for the tuner: a tune measures it again, with the library built here."""
    model, x = _model()
    db = tmp_path / "t.db"
    (choice,) = measure_choices(model, (x,), db=db, settings=FAST, progress=False, max_convs=0)
    stale = {**wc.offload_config("onednn", "f32"), "library": "oneDNN 2.6.3"}
    with TuningDB(db) as tdb:
        tdb.add(Record(choice.signature, stale, "ok", 0.5e-3, 1e-3), HostIdentity.current(2))
    (again,) = measure_choices(model, (x,), db=db, settings=FAST, progress=False)
    assert again.new
    current = [r for r in again.measured if r.config.get("algorithm") == "onednn"]
    assert any(wc.library_matches(r.config) for r in current), again.measured
    # measured with the library built here: not again
    (third,) = measure_choices(model, (x,), db=db, settings=FAST, progress=False)
    assert not third.new


def test_tuned_winograd_model_matches_pytorch(tmp_path):
    """A record that says F(4x4) wins makes compile() rewrite the conv; the model still
    matches PyTorch (Winograd's rounding: within 1e-4 of the output's scale here)."""
    model, x = _model()
    module = xgen_mlir.frontend.import_model(model, (x,))
    (cand,) = wc.candidates(module.operation)
    db = tmp_path / "t.db"
    host = HostIdentity.current(threads=2)
    with TuningDB(db) as tdb:
        tdb.add(Record(cand.signature, wc.winograd_config(4), "ok", 1e-4, 2e-4), host)
    compiled = xgen_mlir.compile(model, (x,), tuning_db=db, tuning_threads=2)
    assert compiled.report.rewrites["xgen-winograd-convs"] == {
        "linalg.conv_2d_nchw_fchw as F(4x4, 3x3)": 1
    }
    assert compiled.report.tuning.choices[0][1] == "Winograd F(4x4, 3x3)"
    with torch.no_grad():
        want = model(x).numpy()
    got = np.asarray(compiled(x))
    assert np.abs(got - want).max() <= 1e-4 * np.abs(want).max()


def test_a_wrong_transform_is_recorded_as_wrong_numbers_and_never_chosen(tmp_path, monkeypatch):
    """F(4x4) with a corrupted output transform computes wrong numbers: the measurement
    compares it with the direct conv before timing and records it as such."""
    bad_at = wc.F4.at.copy()
    bad_at[1, 1] += 0.5
    monkeypatch.setattr(wc, "TRANSFORMS", (replace(wc.F4, at=bad_at), wc.F2))
    model, x = _model()
    db = tmp_path / "t.db"
    no_offload = {"offload": "none"}  # Winograd's variants only (offload=none: nothing else)
    (choice,) = measure_choices(
        model, (x,), db=db, settings=FAST, progress=False, target_options=no_offload
    )
    assert all(r.config["algorithm"] == "winograd" for r in choice.measured)
    # each tile with its batched GEMM in IREE's code and in the generated kernel
    by_m: dict[int, list] = {}
    for r in choice.measured:
        by_m.setdefault(r.config["m"], []).append(r)
    assert len(by_m[4]) == len(by_m[2]) == 2
    assert all(r.status == "wrong_numbers" and "relative error" in r.detail for r in by_m[4])
    assert all(r.status == "ok" for r in by_m[2])
    f2 = "winograd F(2x2)"
    assert choice.algorithm in ("direct", f2, f"{f2} in the GEMM kernel")


def test_a_linear_layer_measured_against_its_offload_and_its_gemm_kernel(tmp_path):
    """A Linear (+ GELU) is measured as IREE compiles it, offloaded to oneDNN and as the
    generated GEMM kernel (numbers first, then interleaved timing), recorded for this host,
    and compile() follows the records: the fastest variant where it wins, else IREE."""
    torch.manual_seed(1)
    model = nn.Sequential(nn.Linear(32, 48), nn.GELU()).eval()
    x = torch.randn(8, 32)
    db = tmp_path / "t.db"
    (choice,) = measure_choices(model, (x,), db=db, settings=FAST, progress=False)
    assert choice.description.startswith("matmul 8x32 * 32x48"), choice.description
    configs = [r.config for r in choice.measured]
    assert wc.offload_config("onednn", "f32") in configs
    assert [c for c in configs if c["algorithm"] == "xgen_gemm"] == [
        wc.gemm_config(1),
        wc.gemm_config(2),
    ]  # the kernel with one and two panels per workgroup
    for record in choice.measured:
        assert record.status == "ok" and record.seconds > 0 and record.baseline_seconds > 0
    compiled = xgen_mlir.compile(model, (x,), tuning_db=db, tuning_threads=2)
    offloaded = sum(n for k, n in compiled.report.offload.items() if "-> onednn" in k)
    assert offloaded == (1 if choice.algorithm == "onednn (f32)" else 0), choice.why
    kernels = compiled.report.rewrites.get("xgen-gemm-kernels", {}).get("gemm kernels", 0)
    assert kernels == (1 if choice.algorithm.startswith("xgen_gemm") else 0), choice.why
    with torch.no_grad():
        want = model(x).numpy()
    assert np.abs(np.asarray(compiled(x)) - want).max() <= 1e-4 * np.abs(want).max()


def test_int8_convs_measured_against_their_offload(tmp_path):
    """precision="int8": the quantized model's integer convs and Linear are measured as IREE
    compiles them against oneDNN's s8 primitives (on random int8 inputs: numbers first), and
    compile() offloads exactly the ones whose record says oneDNN won."""
    torch.manual_seed(0)
    model, x = small_cnn(), torch.randn(1, 3, 32, 32)
    cal = [torch.randn(1, 3, 32, 32) for _ in range(4)]
    db = tmp_path / "t.db"
    # the integer ops as such (integer_contractions=auto makes them f32 on a CPU without VNNI)
    common = dict(
        precision="int8", calibration=cal, target_options={"integer_contractions": "integer"}
    )
    choices = measure_choices(model, (x,), db=db, settings=FAST, progress=False, **common)
    assert sorted(c.description.split(" ")[0] for c in choices) == ["conv3x3", "conv3x3", "matmul"]
    if not int8_exact_in_ort():
        # no VNNI: oneDNN's s8 sums saturate, so there is no oneDNN variant to measure and
        # nothing is offloaded
        assert all(not c.measured for c in choices), choices
        compiled = xgen_mlir.compile(model, (x,), tuning_db=db, precision_check=False, **common)
        assert not any("-> onednn" in k for k in compiled.report.offload), compiled.report.offload
        return
    s8 = wc.offload_config("onednn", "s8")
    for c in choices:
        assert c.description.endswith("int8"), c.description
        # the library's first choice, and where this CPU has others (AMX: brgemm and jit
        # families) each other implementation family, the same primitive with its "impl"
        (record,) = [r for r in c.measured if r.config == s8]
        assert record.status == "ok" and record.seconds > 0, record
        others = [r.config for r in c.measured if r.config != s8]
        assert all({k: v for k, v in o.items() if k != "impl"} == s8 for o in others), others
    compiled = xgen_mlir.compile(
        model, (x,), tuning_db=db, tuning_threads=2, precision_check=False, **common
    )
    # a winner of another family reads "onednn[brgemm] (s8)"
    won = [c.algorithm.startswith("onednn") for c in choices]
    offloaded = sum(n for k, n in compiled.report.offload.items() if "-> onednn (int8" in k)
    assert offloaded == sum(won)
    # (the Linear layers' split, decided as one group, has a line of its own)
    decisions = [d for op, d, _ in compiled.report.tuning.choices if not op.startswith("split of")]
    assert sorted(decisions) == sorted(
        c.algorithm.replace(" (s8)", " s8")
        if w
        else ("direct" if "conv" in c.description else "IREE")
        for c, w in zip(choices, won, strict=True)
    )


def test_integer_convs_in_f32_are_tuned_as_f32_convs(tmp_path):
    """integer_contractions=float (auto's choice for convs without VNNI): the tuner sees the int8
    model's convs as the compile will, f32 convs of the same integers, and measures their f32
    variants (Winograd, oneDNN's f32 primitive); the tuned compile applies what won, and its
    output stays within one output step of IREE's integer code (the f32 routes' rounding is
    undone by rounding back to integers; Winograd's may move a value by one unit)."""
    torch.manual_seed(0)
    model, x = small_cnn(), torch.randn(1, 3, 32, 32)
    cal = [torch.randn(1, 3, 32, 32) for _ in range(4)]
    db = tmp_path / "t.db"
    common = dict(
        precision="int8",
        calibration=cal,
        precision_check=False,
        target_options={"integer_contractions": "float"},
    )
    choices = measure_choices(model, (x,), db=db, settings=FAST, progress=False, **common)
    convs = [c for c in choices if c.description.startswith("conv")]
    assert len(convs) == 2, choices
    for c in convs:
        assert not c.description.endswith("int8"), c.description  # f32 convs
        algorithms = {r.config.get("algorithm") for r in c.measured}
        assert "winograd" in algorithms, c.measured
        assert all(r.status == "ok" for r in c.measured), c.measured
    tuned = xgen_mlir.compile(model, (x,), tuning_db=db, tuning_threads=2, **common)
    # the two convs and the classifier (one row: the pointwise matrix-vector kernel's)
    assert tuned.report.quantization["computed_in_f32"] == 3
    integer = {"integer_contractions": "integer", "offload": "none"}
    reference = xgen_mlir.compile(model, (x,), **{**common, "target_options": integer})
    got, want = np.asarray(tuned(x.numpy())), np.asarray(reference(x.numpy()))
    from xgen_mlir import compress

    quantized = compress.quantize(model, x, calibration=cal)
    inits = {t.name: t for t in quantized.graph.initializer}
    last = next(n for n in quantized.graph.node if quantized.graph.output[0].name in n.output)
    from onnx import numpy_helper

    step = float(numpy_helper.to_array(inits[last.input[1]]))
    assert np.abs(got - want).max() <= step * 1.001


def test_dynamic_int8_linear_measured_with_its_runtime_zero_point(tmp_path):
    """A dynamically quantized Linear reads its source zero point, a scalar the model computes
    at run time: the measured slice takes it as an argument (a 0-d tensor, random in int8's
    range) and the oneDNN variant's numbers are checked against IREE's before it is timed."""
    from xgen_mlir.models.transformers_zoo import bert_tiny

    model, example = bert_tiny()
    common = dict(
        precision="int8",
        quantization={"mode": "dynamic"},
        target_options={"integer_contractions": "integer"},
    )
    choices = measure_choices(
        model, example, db=tmp_path / "t.db", settings=FAST, progress=False, max_convs=1, **common
    )
    assert all(c.description.endswith("int8") for c in choices), choices
    if not int8_exact_in_ort():  # no VNNI: no oneDNN s8 variant to measure (see above)
        assert all(not c.measured for c in choices), choices
        return
    (measured,) = [c for c in choices if c.new]
    (record,) = measured.measured
    assert record.config == wc.offload_config("onednn", "s8")
    assert record.status == "ok" and record.seconds > 0, record


def test_a_slice_after_a_deep_model_is_cut_without_recursion():
    """The slice of a layer deep in a model (GPT-2's 12 layers overflowed Python's recursion
    limit when it walked the activation's producers) is cut, with the activation an
    argument and the weights inside."""
    from xgen_mlir.tuning.choices import _graph_module, _Slice

    class Deep(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.fc = nn.Linear(8, 8)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            for i in range(700):
                x = torch.tanh(x) * (1.0 + i * 1e-4)
            return self.fc(x)

    module = _graph_module(Deep().eval(), (torch.randn(4, 8),), "cpu", {})
    (cand,) = wc.candidates(module.operation, offload=True)
    cut = _Slice(cand)
    assert len(cut.args) == 1 and str(cut.args[0].type) == "tensor<4x8xf32>"


def test_measurement_order_weighs_the_layer_by_its_measuring_cost():
    """GPT-2's one 768 x 50257 head (9.9 GFLOP, 154 MB of weights) goes after its twelve
    768 -> 3072 layers (7.2 GFLOP together, 9 MB each); a detector's big 3x3 conv still goes
    before two small 1x1 convs."""
    from xgen_mlir.tuning.choices import ConvChoice, measure_priority

    head = ConvChoice("h", "head", 1, 2 * 128 * 768 * 50257, 768 * 50257 * 4)
    ffn = ConvChoice("f", "ffn", 12, 2 * 128 * 768 * 3072, 768 * 3072 * 4)
    assert measure_priority(ffn) > measure_priority(head)
    conv3 = ConvChoice("c", "3x3", 1, 224_000_000, 3 * 3 * 128 * 128 * 4)
    small = ConvChoice("p", "1x1", 2, 2_000_000, 16 * 32 * 4)
    assert measure_priority(conv3) > measure_priority(small)


def _two_convs_faster_in_onednn_alone(tmp_path, monkeypatch):
    """Two convs whose measurement (stubbed) records oneDNN 2x faster alone for each new
    signature, and a model timer (stubbed) under which the first conv's offload makes the
    model slower: (the choices module, model, input, database)."""
    from xgen_mlir.tuning import choices as ch
    from xgen_mlir.tuning import search

    torch.manual_seed(0)
    model = nn.Sequential(
        nn.Conv2d(3, 16, 3, padding=1), nn.ReLU(), nn.Conv2d(16, 32, 3, padding=1)
    ).eval()
    x = torch.randn(1, 3, 12, 12)
    db = tmp_path / "t.db"
    host = HostIdentity.current(threads=FAST.threads)
    measure = ch.measure_choices
    onednn = wc.offload_config("onednn", "f32")

    def fake_measure(model, example_inputs, target="cpu", *, db, **kw):
        kw = {k: v for k, v in kw.items() if k == "target_options"}
        found = measure(model, example_inputs, target, db=db, max_convs=0, progress=False, **kw)
        fresh = {c.signature for c in found if not c.measured}
        with TuningDB(db) as tdb:
            for c in found:
                if c.signature in fresh:
                    tdb.add(Record(c.signature, onednn, "ok", 0.5e-3, 1e-3, c.description), host)
        found = measure(model, example_inputs, target, db=db, max_convs=0, progress=False, **kw)
        return [replace(c, new=c.signature in fresh) for c in found]

    def fake_time(current, candidate, xs):
        slower = any("3->16" in d and "onednn" in a for d, a, _ in candidate.report.tuning.choices)
        ratio = 1.5 if slower else 0.5
        return search.ModelTiming(1.0, ratio, [math.log(ratio)] * 10)

    monkeypatch.setattr(ch, "measure_choices", fake_measure)
    monkeypatch.setattr(search, "_default_timer", fake_time)
    return ch, model, x, db


def test_a_choice_slower_in_the_model_does_not_sink_the_others(tmp_path, monkeypatch):
    """Two convs each measured 2x faster in oneDNN alone; in the model (a stubbed timer) the
    first one's offload makes it slower, the second's faster. The set is split: the second
    is kept, the first rejected and back to its prior (the direct conv)."""
    import time

    ch, model, x, db = _two_convs_faster_in_onednn_alone(tmp_path, monkeypatch)

    def offloaded(module) -> set[str]:
        return {
            d.split(" 8")[0]
            for d, algorithm, _ in module.report.tuning.choices
            if "onednn" in algorithm
        }

    untuned = xgen_mlir.compile(model, (x,), tuning_db=False, **WIDE)
    choices, best = ch.tune_choices(
        untuned, model, (x,), (x,), "cpu", db, FAST, time.perf_counter() + 600, False, WIDE
    )
    by_conv = {c.description.split(" 12x12")[0]: c for c in choices}
    assert by_conv["conv3x3 3->16"].algorithm == "direct", by_conv
    assert "slower in the model" in by_conv["conv3x3 3->16"].why
    assert by_conv["conv3x3 16->32"].algorithm == "onednn (f32)"
    final = xgen_mlir.compile(model, (x,), tuning_db=db, tuning_threads=FAST.threads, **WIDE)
    assert offloaded(final) == offloaded(best) and len(offloaded(final)) == 1
    with torch.no_grad():
        want = model(x).numpy()
    assert np.abs(np.asarray(final(x)) - want).max() <= 1e-4 * np.abs(want).max()


def test_a_choice_the_budget_left_unchecked_is_checked_by_the_next_tune(tmp_path, monkeypatch):
    """Two convs each measured 2x faster in oneDNN alone, checked together in the model (a
    stubbed timer) where the first one's offload makes it slower. With the budget spent
    after that first check, neither is applied, and neither is rejected for good: the next
    tune (measuring nothing new) checks them again, keeps the second and rejects the first."""
    import time

    from xgen_mlir.tunedb import UNCHECKED_IN_MODEL

    ch, model, x, db = _two_convs_faster_in_onednn_alone(tmp_path, monkeypatch)
    host = HostIdentity.current(threads=FAST.threads)
    untuned = xgen_mlir.compile(model, (x,), tuning_db=False, **WIDE)
    args = (model, (x,), (x,), "cpu", db, FAST)
    spent = time.perf_counter() - 1.0
    choices, _ = ch.tune_choices(untuned, *args, spent, False, WIDE)
    assert all(c.algorithm == "direct" and "budget ran out" in c.why for c in choices), choices
    # the report says it was not checked, not that it lost there
    assert not any("slower in the model" in c.why for c in choices), choices
    with TuningDB(db) as tdb:
        details = {r.detail for c in choices for r in tdb.records(host.key, c.signature)}
    assert details == {UNCHECKED_IN_MODEL}, details

    choices, _ = ch.tune_choices(untuned, *args, time.perf_counter() + 600, False, WIDE)
    by_conv = {c.description.split(" 12x12")[0]: c for c in choices}
    assert by_conv["conv3x3 3->16"].algorithm == "direct", by_conv
    assert "slower in the model" in by_conv["conv3x3 3->16"].why
    assert by_conv["conv3x3 16->32"].algorithm == "onednn (f32)"
    final = xgen_mlir.compile(model, (x,), tuning_db=db, tuning_threads=FAST.threads, **WIDE)
    offloaded = [d for d, a, _ in final.report.tuning.choices if a.startswith("onednn")]
    assert len(offloaded) == 1 and "16->32" in offloaded[0], final.report.tuning.choices


def test_block_pruned_layers_measured_as_block_kernels_against_dense(tmp_path):
    """A block-pruned Linear is also measured as the block-sparse kernel, keyed by its block
    and density; before any measurement the rule decides (4x: the kernel; 1.5x: dense), after
    it the records do, and compile() raises exactly the layers whose kernel won. A model of
    the same shapes pruned at another rate is measured again (its structure is new); a dense
    layer of a known signature is not."""
    from xgen_mlir import compress
    from xgen_mlir.passes.block_sparse import block_records

    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(128, 256), nn.ReLU(), nn.Linear(256, 128)).eval()
    x = torch.randn(32, 128)
    pruned = compress.prune(model, (x,), scheme="block", rate={"0": 4.0, "2": 1.5})
    db = tmp_path / "t.db"
    unmeasured = measure_choices(pruned, (x,), db=db, settings=FAST, progress=False, max_convs=0)
    by_rows = {c.description.split(" *")[0]: c for c in unmeasured}
    first, second = by_rows["matmul 32x128"], by_rows["matmul 32x256"]
    assert first.density == pytest.approx(0.25, abs=0.02) and second.density > 0.6
    assert first.algorithm.startswith("xgen_block") and first.algorithm == first.prior
    assert not second.algorithm.startswith("xgen_block")

    choices = measure_choices(pruned, (x,), db=db, settings=FAST, progress=False)
    raised = 0
    for c in choices:
        (block,) = block_records(c.measured, c.block, c.density)
        assert block.status == "ok" and block.seconds > 0, block  # numbers checked first
        assert any(r.config["algorithm"] == "xgen_gemm" for r in c.measured)
        raised += c.algorithm.startswith("xgen_block")
    compiled = xgen_mlir.compile(pruned, (x,), tuning_db=db, tuning_threads=FAST.threads)
    assert compiled.report.rewrites.get("xgen-raise-block-linear", {}).get("raised", 0) == raised
    logged = [d for d, algorithm, _ in compiled.report.tuning.choices if "blocks keeping" in d]
    assert len(logged) == 2
    with torch.no_grad():
        want = pruned(x).numpy()
    assert np.abs(np.asarray(compiled(x)) - want).max() <= 1e-4 * np.abs(want).max()

    again = compress.prune(model, (x,), scheme="block", rate={"0": 2.0})
    later = measure_choices(again, (x,), db=db, settings=FAST, progress=False)
    by_rows = {c.description.split(" *")[0]: c for c in later}
    assert by_rows["matmul 32x128"].new
    assert by_rows["matmul 32x128"].density == pytest.approx(0.5, abs=0.02)
    assert by_rows["matmul 32x256"].block is None and not by_rows["matmul 32x256"].new


def test_the_base_every_variant_is_timed_against_is_iree_code(tmp_path, monkeypatch):
    """``base`` is the op in IREE's code, the "direct" of every record: no prior may turn it
    into a variant (on an AVX2 target the GEMM kernel's prior once made it the kernel, and a
    layer where nothing won by MIN_GAIN then went to IREE's code, never measured)."""
    from xgen_mlir.tuning import choices as ch

    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(64, 64)).eval()
    x = torch.randn(32, 64)
    seen: list[dict] = []
    real = ch.compile_model

    def spy(module, inputs, target, **options):
        seen.append(dict(options["target_options"]))
        return real(module, inputs, target, **options)

    monkeypatch.setattr(ch, "compile_model", spy)
    avx2 = {"target_options": {"vector_bits": "256"}}
    (choice,) = measure_choices(
        model, (x,), db=tmp_path / "t.db", settings=FAST, progress=False, **avx2
    )
    assert seen and all(
        o["gemm_kernels"] == "false" and o["block_kernels"] == "false" for o in seen
    )
    assert choice.prior.startswith("xgen_gemm")  # the prior on a 256-bit target, not the base


def test_a_library_family_that_won_is_named_in_the_report(tmp_path):
    """A record that says oneDNN's JIT family wins: the conv is offloaded asking for it, and
    the report's choice names the family ("onednn[jit] f32", as the tune's decision does)."""
    model, x = _model()
    module = xgen_mlir.frontend.import_model(model, (x,))
    (cand,) = wc.candidates(module.operation)
    db = tmp_path / "t.db"
    host = HostIdentity.current(threads=2)
    config = wc.offload_config("onednn", "f32", "jit")
    with TuningDB(db) as tdb:
        tdb.add(Record(cand.signature, config, "ok", 1e-4, 2e-4), host)
    compiled = xgen_mlir.compile(model, (x,), tuning_db=db, tuning_threads=2)
    assert compiled.report.tuning.choices[0][1] == "onednn[jit] f32"
    assert any("-> onednn" in k for k in compiled.report.offload), compiled.report.offload
    with torch.no_grad():
        want = model(x).numpy()
    got = np.asarray(compiled(x))
    assert np.abs(got - want).max() <= 1e-4 * np.abs(want).max()


@pytest.mark.parametrize("precision", ["fp32", "bf16"])
def test_matmul_split_measured_in_the_model_and_applied(precision, tmp_path):
    """tune() checks the other split of the model's offloaded Linear layers (the rows in
    fp32, where the count takes the columns; the columns in bf16) in the model, as one
    group, and records the verdict under the group's signature; compile() then follows the
    record (applied, or rejected and so the count), reports the decision, and computes the
    same numbers either way."""
    from xgen_mlir.passes.byoc_offload import SPLIT_ALGORITHM, SPLIT_PREFIX
    from xgen_mlir.target import NATIVE_BF16_FLAGS, has_any

    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(256, 512), nn.GELU(), nn.Linear(512, 256)).eval()
    x = torch.randn(32, 256)
    db = tmp_path / "t.db"
    TuningDB(db).close()
    common = dict(precision=precision, target_options={"offload": "onednn", "threads": "2"})
    before = xgen_mlir.compile(model, (x,), tuning_db=db, precision_check=False, **common)
    (group,) = [c for c in before.report.tuning.choices if c[0].startswith(SPLIT_PREFIX)]
    signature, counted, why = group
    bf16 = precision == "bf16" and has_any(NATIVE_BF16_FLAGS)
    # (bf16 falls back to fp32 on a CPU without a native bf16 GEMM)
    assert signature.startswith(f"{SPLIT_PREFIX} 2 matmuls {'bf16' if bf16 else 'fp32'} ")
    # f32: both layers (N > M) on columns by the count; bf16: on rows
    assert counted == ("count (0 of 2 on columns)" if bf16 else "count (2 of 2 on columns)")
    assert why.startswith("unmeasured")
    xgen_mlir.tune(model, (x,), db=db, budget_minutes=0.3, progress=False, **common)
    with TuningDB(db) as tdb:
        host = HostIdentity.current(threads=2)
        records = tdb.choices(host).get(signature, [])
    if precision == "bf16" and not bf16:
        assert records == []  # (bf16 fell back to f32 here: the columns change nothing)
        return
    (record,) = records
    other = "columns" if bf16 else "rows"
    assert record.config == {"kind": "algorithm", "algorithm": SPLIT_ALGORITHM, "split": other}
    assert record.status == "ok" and record.seconds > 0 and record.baseline_seconds > 0
    rejected = record.detail.startswith("confirmed alone, slower in the model")
    after = xgen_mlir.compile(model, (x,), tuning_db=db, precision_check=False, **common)
    (decided,) = [c for c in after.report.tuning.choices if c[0] == signature]
    if rejected:  # (the report says what the other direction measured)
        assert decided[1] == counted, decided
        assert decided[2].startswith("the rows or columns by count, the other measured"), decided
        assert record.detail in decided[2], decided
    else:
        assert decided[1].startswith(other) and decided[2].startswith("measured in the model")
    np.testing.assert_allclose(np.asarray(after(x)), np.asarray(before(x)), rtol=0, atol=1e-5)


def test_a_split_with_other_numbers_is_never_applied(tmp_path, monkeypatch):
    """The same sums either way: where the other split's outputs differed from the count's
    beyond the checks' bound (forced here), the tune records it as wrong numbers, does not
    time it, and compile() keeps the count, saying why."""
    from xgen_mlir.passes.byoc_offload import SPLIT_PREFIX
    from xgen_mlir.tuning import search

    monkeypatch.setattr(search, "_relative_error", lambda *a: 1.0)
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(256, 512), nn.ReLU(), nn.Linear(512, 256)).eval()
    x = torch.randn(32, 256)
    db = tmp_path / "t.db"
    common = dict(target_options={"offload": "onednn", "threads": "2"})
    xgen_mlir.tune(model, (x,), db=db, budget_minutes=0.2, progress=False, **common)
    with TuningDB(db) as tdb:
        found = tdb.choices(HostIdentity.current(threads=2))
    ((signature, records),) = [(s, r) for s, r in found.items() if s.startswith(SPLIT_PREFIX)]
    assert [(r.status, r.seconds) for r in records] == [("wrong_numbers", None)], records
    # a second tune does not check the recorded direction again (two compiles of the model)
    xgen_mlir.tune(model, (x,), db=db, budget_minutes=0.2, progress=False, **common)
    with TuningDB(db) as tdb:
        again = tdb.choices(HostIdentity.current(threads=2))[signature]
    assert [(r.status, r.created) for r in again] == [(r.status, r.created) for r in records]
    after = xgen_mlir.compile(model, (x,), tuning_db=db, precision_check=False, **common)
    (decided,) = [c for c in after.report.tuning.choices if c[0] == signature]
    assert decided[1] == "count (2 of 2 on columns)", decided
    # the report says why: the other direction measured, and what it got
    assert decided[2].startswith("the rows or columns by count, the other measured"), decided
    assert "rows: relative error" in decided[2], decided


def test_conv_group_measured_in_the_model_and_applied(tmp_path):
    """tune() checks the model's float convs all in oneDNN against each by its own choice,
    in the model, as one group, and records the verdict under the group's signature;
    compile() then follows the record (every conv of the group in oneDNN where it won, each
    its own choice where it lost), says so per conv and for the group, and computes what
    PyTorch does either way. Where each conv is in the library already (an AVX2 host: the
    priors put every f32 KxK conv there) there is nothing to check and nothing recorded."""
    from xgen_mlir.passes.winograd_convs import CONV_GROUP_ALGORITHM, CONV_GROUP_PREFIX

    torch.manual_seed(0)
    model = nn.Sequential(
        nn.Conv2d(32, 64, 3, padding=1), nn.ReLU(), nn.Conv2d(64, 64, 3, padding=1), nn.ReLU()
    ).eval()
    x = torch.randn(1, 32, 14, 14)
    with torch.no_grad():
        want = model(x).numpy()
    db = tmp_path / "t.db"
    TuningDB(db).close()
    common = dict(target_options={"threads": "2"})
    before = xgen_mlir.compile(model, (x,), tuning_db=db, **common)
    (group,) = [c for c in before.report.tuning.choices if c[0].startswith(CONV_GROUP_PREFIX)]
    signature, decision, why = group
    assert signature.startswith(f"{CONV_GROUP_PREFIX} 2 convs fp32 ")
    assert decision.startswith("each (") and decision.endswith(" of 2 in the library)"), decision
    assert why.startswith("each by its own measurement")
    xgen_mlir.tune(model, (x,), db=db, budget_minutes=0.2, progress=False, **common)
    with TuningDB(db) as tdb:
        records = tdb.choices(HostIdentity.current(threads=2)).get(signature, [])
    if decision == "each (2 of 2 in the library)":
        assert records == []
        return
    (record,) = records
    assert record.config["algorithm"] == CONV_GROUP_ALGORITHM
    assert record.config["backend"] == "onednn" and record.config["compute"] == "f32"
    assert record.status == "ok" and record.seconds > 0 and record.baseline_seconds > 0
    rejected = record.detail.startswith("confirmed alone, slower in the model")
    after = xgen_mlir.compile(model, (x,), tuning_db=db, **common)
    decided = dict((c[0], c[1:]) for c in after.report.tuning.choices)
    if rejected:
        assert decided[signature][0].startswith("each"), decided
    else:
        assert decided[signature] == ("all (2 of 2 in the library)", decided[signature][1])
        assert decided[signature][1].startswith("all in the library: measured in the model")
        convs = [d for s, d in decided.items() if s.startswith("conv")]
        assert convs and all(d[0] == "onednn f32" for d in convs), decided
    got = np.asarray(after(x))
    assert np.abs(got - want).max() <= 1e-4 * np.abs(want).max()


def test_convs_of_a_channels_last_model_are_measured_channels_last(tmp_path):
    """In a model with a depthwise conv the cpu target runs every conv NHWC
    (xgen-nhwc-convs), so a 1x1 conv's direct conv is measured so: each function of its
    variants module takes and returns NHWC, and the base is the named NHWC conv (its
    transposes cancel against the function's, as between convs in the model), not the NCHW
    conv IREE computes 5-10x slower than the model's data-tiled matmul. The variants are
    checked against that base (same numbers) and measured beside it. A model without a
    depthwise conv is measured so too, unless nhwc_convs=depthwise leaves its convs NCHW."""
    from xgen_mlir.tuning import choices

    torch.manual_seed(0)
    model = nn.Sequential(
        nn.Conv2d(16, 16, 3, padding=1, groups=16), nn.ReLU(), nn.Conv2d(16, 64, 1)
    ).eval()
    x = torch.randn(1, 16, 14, 14)
    module = choices._graph_module(model, (x,), "cpu", {})
    (cand,) = [
        c for c in wc.candidates(module.operation, offload=True) if "conv1x1" in c.description
    ]
    assert choices._runs_nhwc(cand, "cpu", {})
    order = {}

    def number(op):
        order[op] = len(order)
        return wc.ir.WalkResult.ADVANCE

    module.operation.walk(number)
    variants, configs = choices.variants_module(cand, order, offload="onednn", nhwc=True)
    text = str(variants)
    assert "func.func @base(%arg0: tensor<1x14x14x16xf32>) -> tensor<1x14x14x64xf32>" in text
    assert "linalg.conv_2d_nhwc_hwcf" in text.split("func.func @c0")[0]
    assert configs and all(
        "tensor<1x14x14x16xf32>) -> tensor<1x14x14x64xf32>" in text.split(f"@c{i}(")[1][:200]
        for i in range(len(configs))
    )
    (choice,) = [
        c
        for c in measure_choices(model, (x,), db=tmp_path / "t.db", settings=FAST, progress=False)
        if "conv1x1" in c.description
    ]
    assert choice.measured and all(r.status == "ok" for r in choice.measured), choice.measured
    plain = nn.Sequential(nn.Conv2d(16, 16, 3, padding=1), nn.ReLU(), nn.Conv2d(16, 64, 1)).eval()
    module = choices._graph_module(plain, (x,), "cpu", {})
    found = wc.candidates(module.operation, offload=True)
    assert found and all(choices._runs_nhwc(c, "cpu", {}) for c in found)
    nchw = {"target_options": {"nhwc_convs": "depthwise"}}
    assert not any(choices._runs_nhwc(c, "cpu", nchw) for c in found)


def test_nhwc_convs_of_a_model_measured_in_the_model_and_applied(tmp_path):
    """Under nhwc_convs=tuned (the default) the convs of a model without depthwise convs are
    one group: before a tune they become named NHWC convs (the prior) and the report says
    so; tune() compiles the model with them left to IREE's channels-last rewrite, times both
    in the model and records the verdict; compile() then follows it, with PyTorch's numbers
    either way. nhwc_convs=depthwise leaves them NCHW without a record."""
    from xgen_mlir.passes.nhwc_convs import GROUP_ALGORITHM, GROUP_PREFIX

    torch.manual_seed(0)
    model = nn.Sequential(
        nn.Conv2d(16, 32, 1), nn.ReLU(), nn.Conv2d(32, 32, 3, padding=1), nn.ReLU()
    ).eval()
    x = torch.randn(1, 16, 13, 13)
    with torch.no_grad():
        want = model(x).numpy()
    db = tmp_path / "t.db"
    TuningDB(db).close()
    common = dict(target_options={"threads": "2", "winograd": "false", "offload": "none"})
    before = xgen_mlir.compile(model, (x,), tuning_db=db, **common)
    assert before.report.rewrites["xgen-nhwc-convs"] == {"linalg.conv_2d_nchw_fchw": 2}
    ((signature, decision, why),) = [
        c for c in before.report.tuning.choices if c[0].startswith(GROUP_PREFIX)
    ]
    assert signature.startswith(f"{GROUP_PREFIX} 2 convs fp32 "), signature
    assert decision == "NHWC (2 convs)" and why.startswith("unmeasured: the rule"), why
    nchw = xgen_mlir.compile(
        model,
        (x,),
        tuning_db=db,
        target_options={**common["target_options"], "nhwc_convs": "depthwise"},
    )
    assert "xgen-nhwc-convs" not in nchw.report.rewrites
    xgen_mlir.tune(model, (x,), db=db, budget_minutes=0.1, progress=False, **common)
    with TuningDB(db) as tdb:
        (record,) = tdb.choices(HostIdentity.current(threads=2)).get(signature, [])
    assert record.config == {"kind": "algorithm", "algorithm": GROUP_ALGORITHM, "use": "depthwise"}
    assert record.status == "ok" and record.seconds > 0 and record.baseline_seconds > 0
    after = xgen_mlir.compile(model, (x,), tuning_db=db, **common)
    decided = {c[0]: c[1:] for c in after.report.tuning.choices}
    converted = after.report.rewrites.get("xgen-nhwc-convs", {})
    if record.detail.startswith("confirmed alone, slower in the model"):  # rejected
        assert decided[signature][0] == "NHWC (2 convs)", decided[signature]
        assert decided[signature][1].startswith("the rule, the other measured in the model")
        assert converted == {"linalg.conv_2d_nchw_fchw": 2}
    else:
        assert decided[signature][0] == "NCHW, IREE's channels-last rewrite (2 convs)"
        assert decided[signature][1].startswith("measured in the model: ")
        assert converted == {}
    for m in (before, nchw, after):
        got = np.asarray(m(x.numpy()))
        assert np.abs(got - want).max() <= 1e-4 * np.abs(want).max()

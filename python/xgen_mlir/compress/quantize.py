"""Post-training int8 quantization: ONNX Runtime's quantization tools on the model's ONNX form.

Why ONNX Runtime's tools (``onnxruntime.quantization``) and not torch.ao's PT2E flow: the
quantized model they write (QDQ format) is what the ONNX frontend already imports into integer
contractions (i8 x i8 -> i32 ``linalg.quantized_matmul`` / ``conv_2d_nchw_fchw_q`` /
``depthwise_conv_2d_nhwc_hwc_q``, per-channel weights included: ``frontend/onnx_quant.py``),
and the same file runs in ONNX Runtime, so every int8 model has a peer on identical numbers
(docs/precision.md has the comparison with PT2E).

* ``mode="static"``: activations quantized with ranges calibrated on the user's samples by an
  observer (``OBSERVERS``: min-max, a percentile of a histogram, a fitted distribution), weights
  int8 symmetric, per output channel by default; QDQ format, int8 activations.
* ``mode="dynamic"``: MatMul weights int8 (per output column by default), activations quantized
  at run time from their own min/max (ONNX Runtime's ``quantize_dynamic``): transformers, no
  calibration data. Gemm nodes (``nn.Linear`` on 2-D inputs) are first written as MatMul + Add,
  which the tool quantizes (it leaves Gemm alone in dynamic mode).

Pruned models: weights are quantized symmetrically (zero point 0), so a zero weight stays an
exact zero; the structure is recorded in the model's metadata (``METADATA_KEY``).
"""

from __future__ import annotations

import contextlib
import io
import json
import logging
import tempfile
import warnings
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import UnknownNameError, XGenError

#: observer name -> onnxruntime.quantization.CalibrationMethod member name
OBSERVERS = {
    "minmax": "MinMax",
    "percentile": "Percentile",  # a histogram of each activation, clipped at a percentile
    "distribution": "Distribution",  # ranges from the fitted mean/std of each activation
}
# Not "entropy": quantize_static builds ONNX Runtime's entropy calibrator with its defaults,
# 128 histogram bins for 128 quantized bins, which leaves one candidate threshold, the full
# range: it equals min-max exactly (checked on small_cnn), and the bin counts cannot be passed.
MODES = ("static", "dynamic")
METADATA_KEY = "xgen.quantization"
OPSET = 17


class QuantizationError(XGenError):
    """A model or calibration set that cannot be quantized as asked."""


def _to_array(x: Any) -> np.ndarray:
    if type(x).__module__.startswith("torch"):
        return np.ascontiguousarray(x.detach().cpu().numpy())
    return np.ascontiguousarray(np.asarray(x))


def _export(model: Any, example_inputs: Sequence[Any]) -> Any:
    """An ``nn.Module``'s static-shape ONNX form (TorchScript exporter, opset 17)."""
    import onnx
    import torch

    names = [f"input{i}" for i in range(len(example_inputs))]
    with tempfile.TemporaryDirectory(prefix="xgen-export-") as tmp, torch.no_grad():
        path = Path(tmp) / "model.onnx"
        _export_to(model, example_inputs, names, path)
        return onnx.load(str(path))


def _export_to(model: Any, example_inputs: Sequence[Any], names: list[str], path: Path) -> None:
    import torch

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            torch.onnx.export(
                model.eval(),
                tuple(example_inputs),
                str(path),
                input_names=names,
                opset_version=OPSET,
                dynamo=False,
            )
        except Exception as e:
            raise QuantizationError(
                f"quantize: exporting the {type(model).__name__} to ONNX failed: "
                f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"
            ) from None


def _zeros(module: Any) -> int:
    return int((module.weight == 0).sum())


def _load(model: Any, example_inputs: Sequence[Any] | None) -> tuple[Any, dict[str, int]]:
    """The float ONNX model and, for a pruned ``nn.Module``, {layer: zero weights}."""
    import onnx

    if isinstance(model, onnx.ModelProto):
        proto = onnx.ModelProto()
        proto.CopyFrom(model)
        return proto, {}
    if isinstance(model, (str, Path)):
        if Path(model).suffix != ".onnx":
            raise QuantizationError(
                f"quantize: {model}: int8 quantization takes an nn.Module (with example_inputs) "
                "or an ONNX model (.onnx); export this model to ONNX first"
            )
        try:
            return onnx.load(str(model)), {}
        except Exception as e:
            raise QuantizationError(f"quantize: cannot read ONNX model {model}: {e}") from None
    import torch

    if not isinstance(model, torch.nn.Module):
        raise QuantizationError(
            f"quantize: a {type(model).__name__} is not a model it can quantize (an nn.Module "
            "with example_inputs, an ONNX ModelProto or an .onnx path)"
        )
    if example_inputs is None:
        raise QuantizationError(
            "quantize: an nn.Module needs example_inputs (it is exported to ONNX at their shapes)"
        )
    from .structure import pruned_layers

    pruned = {name: _zeros(m) for name, m in pruned_layers(model).items()}
    return _export(model, example_inputs), pruned


def _inputs(proto: Any) -> list[tuple[str, list[int | None]]]:
    inits = {t.name for t in proto.graph.initializer}
    out = []
    for v in proto.graph.input:
        if v.name in inits:
            continue
        dims = [
            d.dim_value if d.HasField("dim_value") else None for d in v.type.tensor_type.shape.dim
        ]
        out.append((v.name, dims))
    return out


def _samples(calibration: Iterable[Any], inputs: list[tuple[str, list[int | None]]]) -> list[dict]:
    """Each calibration sample (an array / tensor for a one-input model, or a sequence with
    one per input, or a {name: array} dict) as ONNX Runtime's feed dict; a sample of the wrong
    arity or shape is an error naming it."""
    feeds = []
    for i, sample in enumerate(calibration):
        if isinstance(sample, dict):
            arrays = [sample.get(name) for name, _ in inputs]
            if any(a is None for a in arrays):
                raise QuantizationError(
                    f"calibration sample {i}: has keys {sorted(sample)}, the model's inputs are "
                    f"{[n for n, _ in inputs]}"
                )
        elif isinstance(sample, (tuple, list)):
            arrays = list(sample)
        else:
            arrays = [sample]
        if len(arrays) != len(inputs):
            raise QuantizationError(
                f"calibration sample {i}: {len(arrays)} array(s), the model has {len(inputs)} "
                "input(s)"
            )
        feed = {}
        for (name, dims), a in zip(inputs, arrays, strict=True):
            arr = _to_array(a)
            if arr.dtype == np.float64:
                arr = arr.astype(np.float32)
            if len(dims) != arr.ndim or any(
                d not in (None, s) for d, s in zip(dims, arr.shape, strict=True)
            ):
                raise QuantizationError(
                    f"calibration sample {i}, input '{name}': shape {list(arr.shape)}, the model "
                    f"expects {['?' if d is None else d for d in dims]}"
                )
            feed[name] = arr
        feeds.append(feed)
    return feeds


def _gemm_as_matmul(proto: Any) -> int:
    """Plain Gemm nodes (transA 0, alpha = beta = 1, constant B) as MatMul (+ Add), in place,
    so that quantize_dynamic quantizes them; returns how many."""
    import onnx
    from onnx import helper, numpy_helper

    inits = {t.name: t for t in proto.graph.initializer}
    nodes, n = [], 0
    for node in proto.graph.node:
        attrs = {a.name: helper.get_attribute_value(a) for a in node.attribute}
        if (
            node.op_type != "Gemm"
            or node.domain not in ("", "ai.onnx")
            or attrs.get("transA", 0)
            or attrs.get("alpha", 1.0) != 1.0
            or attrs.get("beta", 1.0) != 1.0
            or node.input[1] not in inits
        ):
            nodes.append(node)
            continue
        n += 1
        b_name = node.input[1]
        if attrs.get("transB", 0):
            b = numpy_helper.to_array(inits[b_name]).T
            b_name = f"{node.input[1]}__xgen_t{n}"
            proto.graph.initializer.append(numpy_helper.from_array(np.ascontiguousarray(b), b_name))
        has_c = len(node.input) > 2 and node.input[2]
        mm_out = f"{node.output[0]}__xgen_mm{n}" if has_c else node.output[0]
        nodes.append(helper.make_node("MatMul", [node.input[0], b_name], [mm_out], node.name))
        if has_c:
            nodes.append(
                helper.make_node("Add", [mm_out, node.input[2]], [node.output[0]], node.name + "_b")
            )
    if n:
        kept = [onnx.NodeProto() for _ in nodes]
        for dst, src in zip(kept, nodes, strict=True):
            dst.CopyFrom(src)
        del proto.graph.node[:]
        proto.graph.node.extend(kept)
    return n


def quantize(
    model: Any,
    example_inputs: Sequence[Any] | Any | None = None,
    *,
    calibration: Iterable[Any] | None = None,
    mode: str = "static",
    per_channel: bool = True,
    observer: str = "minmax",
    exclude: Sequence[str] = (),
) -> Any:
    """``model`` (an ``nn.Module`` with ``example_inputs``, an ONNX ``ModelProto`` or ``.onnx``
    path) quantized to int8; returns the quantized ONNX ``ModelProto`` (QDQ format), which
    ``xgen_mlir.compile`` compiles to integer contractions and ONNX Runtime runs as is.

    ``calibration``: samples like ``example_inputs`` (each an array/tensor, a tuple of them,
    or {input name: array}) that the static mode's ``observer`` records activation ranges on;
    ``exclude``: ONNX node names left in float. The settings and, for a pruned model, its
    pruned layers are in ``metadata_props`` under ``METADATA_KEY``.
    """
    if mode not in MODES:
        raise UnknownNameError("quantization mode", str(mode), list(MODES))
    if observer not in OBSERVERS:
        raise UnknownNameError("observer", str(observer), list(OBSERVERS))
    if example_inputs is not None and not isinstance(example_inputs, (tuple, list)):
        example_inputs = (example_inputs,)
    if mode == "dynamic" and calibration is not None:
        raise QuantizationError(
            "quantize: mode='dynamic' quantizes activations at run time and takes no "
            "calibration data; use mode='static' to calibrate on it"
        )
    samples: list[dict] = []
    if mode == "static":
        if calibration is None:
            raise QuantizationError(
                "quantize: static int8 quantization needs calibration data: pass "
                "calibration=[sample, ...] (inputs like example_inputs, a few to a few hundred "
                "representative ones), or mode='dynamic' (no calibration; transformers; in "
                "compile(): quantization={'mode': 'dynamic'})"
            )
    proto, pruned = _load(model, example_inputs)
    if mode == "static":
        assert calibration is not None
        samples = _samples(calibration, _inputs(proto))
        if not samples:
            raise QuantizationError("quantize: the calibration data has no samples")
    from onnxruntime.quantization import (  # type: ignore[import-untyped]
        CalibrationDataReader,
        CalibrationMethod,
        QuantFormat,
        QuantType,
        quantize_dynamic,
        quantize_static,
    )

    settings: dict[str, Any] = {"mode": mode, "per_channel": per_channel, "tool": "onnxruntime"}
    with tempfile.TemporaryDirectory(prefix="xgen-quant-") as tmp:
        src, dst = Path(tmp) / "float.onnx", Path(tmp) / "int8.onnx"
        root = logging.getLogger()
        level = root.level
        root.setLevel(logging.ERROR)  # the tool's "consider pre-processing" advice
        try:
            with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()):
                warnings.simplefilter("ignore")  # and the calibrators' progress prints
                if mode == "static":
                    import onnx

                    onnx.save(proto, str(src))

                    class _Reader(CalibrationDataReader):  # type: ignore[misc]
                        def __init__(self) -> None:
                            self.it = iter(samples)

                        def get_next(self) -> dict | None:
                            return next(self.it, None)

                    quantize_static(
                        str(src),
                        str(dst),
                        _Reader(),
                        quant_format=QuantFormat.QDQ,
                        per_channel=per_channel,
                        activation_type=QuantType.QInt8,
                        weight_type=QuantType.QInt8,
                        calibrate_method=getattr(CalibrationMethod, OBSERVERS[observer]),
                        nodes_to_exclude=list(exclude) or None,
                        extra_options={"WeightSymmetric": True, "ActivationSymmetric": False},
                    )
                    settings.update(observer=observer, calibration_samples=len(samples))
                else:
                    import onnx

                    settings["gemm_as_matmul"] = _gemm_as_matmul(proto)
                    onnx.save(proto, str(src))
                    quantize_dynamic(
                        str(src),
                        str(dst),
                        op_types_to_quantize=["MatMul"],
                        per_channel=per_channel,
                        weight_type=QuantType.QInt8,
                        nodes_to_exclude=list(exclude) or None,
                        extra_options={"WeightSymmetric": True},
                    )
        except XGenError:
            raise
        except Exception as e:
            raise QuantizationError(
                f"quantize ({mode}): ONNX Runtime's quantization tool failed: "
                f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"
            ) from None
        finally:
            root.setLevel(level)
        import onnx

        out = onnx.load(str(dst))
    if pruned:
        settings["pruned_layers"] = pruned
    entry = out.metadata_props.add()
    entry.key, entry.value = METADATA_KEY, json.dumps(settings, sort_keys=True)
    return out


def quantization_settings(proto: Any) -> dict[str, Any] | None:
    """What ``quantize`` recorded in a model it wrote (None: not one of its models)."""
    for p in getattr(proto, "metadata_props", ()):
        if p.key == METADATA_KEY:
            return dict(json.loads(p.value))
    return None


def is_quantized_onnx(proto: Any) -> bool:
    """Whether an ONNX model already carries int8 quantization (QDQ, QOperator or dynamic)."""
    ops = {
        "QuantizeLinear",
        "DequantizeLinear",
        "DynamicQuantizeLinear",
        "MatMulInteger",
        "ConvInteger",
        "QLinearConv",
        "QLinearMatMul",
    }
    return any(n.op_type in ops or n.op_type.startswith("QLinear") for n in proto.graph.node)


__all__ = [
    "METADATA_KEY",
    "MODES",
    "OBSERVERS",
    "QuantizationError",
    "is_quantized_onnx",
    "quantization_settings",
    "quantize",
]

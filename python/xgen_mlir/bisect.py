"""``xgen_mlir.bisect``: find the first dispatch whose numbers go wrong, and write a reproducer.

The model is compiled twice from the same imported IR: for the target under test, and for a
reference (IREE's ``llvm-cpu`` on the IR the target's graph steps produced; or the target
itself with some of our steps left out, to test a pass). Both are compiled with IREE's own
instrumentation, ``--iree-flow-trace-dispatch-tensors``, which prints every dispatch's input
and output tensors at run time; both run under stock ``iree-run-module`` on the same inputs.
The dispatches are aligned by kind and shape (``main_dispatch_7_conv_8x8x16x3x3_f32`` ->
``conv_8x8x16x3x3_f32``; numbering differs when a target adds dispatches) in execution order,
and the first one whose outputs differ beyond the tolerance while its inputs agree is the
culprit. The report names it, its source locations, writes its IR, its traced inputs and both
outputs as ``.npy``, and a standalone ``repro.mlir`` of just that dispatch's ops (IREE's
flow-level dispatch region as a plain function of the traced inputs).
"""

from __future__ import annotations

import dataclasses
import difflib
import json
import re
import shutil
import subprocess
import tempfile
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ._paths import iree_tool
from .dtypes import from_torch, is_float, numpy_dtype
from .errors import XGenError
from .fileio import atomic_write_bytes
from .frontend import import_model
from .passes.runner import run_steps, snapshot
from .pipelines import load_pipeline

TRACE_FLAG = "--iree-flow-trace-dispatch-tensors"
_REFERENCE_CPU = [
    "--iree-hal-target-backends=llvm-cpu",
    "--iree-llvmcpu-target-cpu=host",
    "--iree-opt-data-tiling=false",  # dispatches formed as on GPU targets, so names align
]
_DEVICES = {"vulkan-spirv": "vulkan", "llvm-cpu": "local-task", "cuda": "cuda", "rocm": "hip"}


class BisectError(XGenError):
    """The bisector could not compile or run one side (the message says which and why)."""


@dataclass
class Traced:
    """One dispatch as it ran: its name and the tensors it read and wrote."""

    name: str  # "main_dispatch_3::main_dispatch_3_conv_8x8x16x3x3_f32"
    inputs: list[np.ndarray] = field(default_factory=list)
    outputs: list[np.ndarray] = field(default_factory=list)

    @property
    def kind(self) -> str:
        """The part of the name both sides agree on: ``conv_8x8x16x3x3_f32``."""
        return re.sub(r"^.*?_dispatch_\d+_", "", self.name.split("::")[-1])

    @property
    def symbol(self) -> str:
        return self.name.split("::")[0]


@dataclass
class DispatchDiff:
    target: str  # the dispatch's name on the target
    reference: str
    max_abs_err: float
    max_rel_err: float  # max abs error / max |reference|
    inputs_agree: bool


@dataclass
class BisectReport:
    """What ``bisect`` found. ``first``: the first dispatch that diverges with agreeing inputs
    (None: none does); ``compared``: every aligned dispatch in execution order."""

    target: str
    reference: str
    tolerance: float
    output_max_abs_err: float
    compared: list[DispatchDiff] = field(default_factory=list)
    unmatched_target: list[str] = field(default_factory=list)  # no counterpart by kind/shape
    first: DispatchDiff | None = None
    suspects: list[str] = field(default_factory=list)  # unmatched dispatches just before it
    culprit: str = ""  # the dispatch the reproducer is of ("" when numbers agree)
    locations: list[str] = field(default_factory=list)  # source lines of the culprit's ops
    out_dir: str = ""

    def describe(self) -> str:
        head = (
            f"bisect {self.target} against {self.reference}: model output max |err| "
            f"{self.output_max_abs_err:.3g}; {len(self.compared)} dispatches compared"
        )
        if self.first is None:
            verdict = f"no dispatch diverges beyond {self.tolerance:g}"
            if self.suspects:
                verdict += f"; dispatches without a counterpart: {', '.join(self.suspects)}"
            if self.culprit:
                verdict += f"\n  culprit: {self.culprit}; reproducer: {self.out_dir}"
            return f"{head}\n  {verdict}"
        f = self.first
        lines = [
            head,
            f"  first diverging dispatch: {f.target} (max abs err {f.max_abs_err:.3g}, "
            f"relative {f.max_rel_err:.3g}; its inputs "
            f"{'agree' if f.inputs_agree else 'already differ'})",
        ]
        if self.suspects:
            lines.append(f"  dispatches before it with no counterpart: {', '.join(self.suspects)}")
        if self.locations:
            lines.append(f"  source: {'; '.join(self.locations)}")
        if self.culprit:
            lines.append(
                f"  culprit: {self.culprit}; reproducer: {self.out_dir} (repro.mlir, .npy, README)"
            )
        return "\n".join(lines)


def parse_trace(text: str) -> list[Traced]:
    """IREE's dispatch trace (``=== NAME inputs ===`` + one ``SHAPExTYPE=[...]`` per tensor)."""
    traced: list[Traced] = []
    current: list[np.ndarray] | None = None
    for line in text.splitlines():
        m = re.match(r"=== (\S+) (inputs|outputs) ===$", line.strip())
        if m:
            if m.group(2) == "inputs" or not traced or traced[-1].name != m.group(1):
                traced.append(Traced(m.group(1)))
            current = traced[-1].inputs if m.group(2) == "inputs" else traced[-1].outputs
            continue
        m = re.match(r"^((?:\d+x)*)([a-z]+\d+)=(.*)$", line.strip())
        if current is not None and m:
            shape = [int(d) for d in m.group(1).split("x") if d]
            values = [v for v in re.split(r"[\[\]\s]+", m.group(3)) if v]
            dtype = numpy_dtype(m.group(2)) or np.dtype(np.float64)
            array = np.array([float(v) for v in values], dtype=np.float64)
            if array.size == int(np.prod(shape)):
                current.append(array.reshape(shape).astype(dtype))
        elif line.startswith("result["):
            current = None
    return traced


def _max_err(a: np.ndarray, b: np.ndarray) -> tuple[float, float]:
    """Max abs and relative error; NaN where the two cannot be compared (different sizes).
    Same size, other shape (one side wrote a padded or reshaped buffer): compared flat."""
    if a.size != b.size:
        return float("nan"), float("nan")
    a64, b64 = a.astype(np.float64).ravel(), b.astype(np.float64).ravel()
    both_nan = np.isnan(a64) & np.isnan(b64)
    diff = np.where(both_nan, 0.0, np.abs(a64 - b64))
    diff = np.where(np.isnan(diff), np.inf, diff)
    err = float(diff.max()) if diff.size else 0.0
    finite = np.abs(b64[np.isfinite(b64)])
    scale = float(finite.max()) if finite.size else 0.0
    return err, err / max(scale, 1e-30)


def _worst(xs: list[np.ndarray], ys: list[np.ndarray]) -> tuple[float, float]:
    """The worst error over the pairs that can be compared (NaN: none can)."""
    errs = [e for e in (_max_err(x, y) for x, y in zip(xs, ys, strict=False)) if e[0] == e[0]]
    if not errs:
        return float("nan"), float("nan")
    return max(e[0] for e in errs), max(e[1] for e in errs)


def _activations_agree(t: Traced, r: Traced, reference: list[Traced], j: int, tol: float) -> bool:
    """Whether the inputs this dispatch got from earlier dispatches agree. An input that
    differs but is no earlier dispatch's output is a constant of this dispatch (its weights):
    a pass that changed them makes this dispatch the culprit, not an earlier one."""
    earlier = [o for d in reference[:j] for o in d.outputs]
    for x_t, x_r in zip(t.inputs, r.inputs, strict=False):
        if not _max_err(x_t, x_r)[1] > tol:
            continue
        if any(o.size == x_r.size and np.array_equal(o.ravel(), x_r.ravel()) for o in earlier):
            return False
    return True


def compare(
    target: list[Traced], reference: list[Traced], tol: float
) -> tuple[list[DispatchDiff], list[str], DispatchDiff | None, list[str]]:
    """Align by kind in order; the first aligned dispatch whose outputs diverge (relative
    error above ``tol``) with agreeing inputs is the culprit; unmatched target dispatches
    just before the first divergence are suspects (e.g. a kernel a pass put there)."""
    matcher = difflib.SequenceMatcher(
        a=[t.kind for t in target], b=[r.kind for r in reference], autojunk=False
    )
    pairs = [(i + k, j + k) for i, j, n in matcher.get_matching_blocks() for k in range(n)]
    matched = {i for i, _ in pairs}
    compared: list[DispatchDiff] = []
    first: DispatchDiff | None = None
    suspects: list[str] = []
    last = -1
    for i, j in pairs:
        t, r = target[i], reference[j]
        abs_err, rel = _worst(t.outputs, r.outputs)
        diff = DispatchDiff(
            t.name, r.name, abs_err, rel, _activations_agree(t, r, reference, j, tol)
        )
        compared.append(diff)
        if first is None and rel > tol:  # NaN (not comparable) is never above
            first = diff
            suspects = [target[k].name for k in range(last + 1, i) if k not in matched]
            if diff.inputs_agree:
                suspects = []
        last = i
    if first is None:
        suspects = [t.name for k, t in enumerate(target) if k not in matched]
    unmatched = [t.name for k, t in enumerate(target) if k not in matched]
    return compared, unmatched, first, suspects


def _run(cmd: list[str], what: str, timeout: float = 900) -> str:
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        raise BisectError(f"{what} did not finish in {timeout:.0f} s") from None
    if proc.returncode != 0:
        tail = "\n".join((proc.stderr or proc.stdout).strip().splitlines()[-15:])
        raise BisectError(f"{what} failed (exit {proc.returncode}):\n{tail}")
    return proc.stdout + "\n" + proc.stderr  # IREE's tensor trace goes to stderr


def random_inputs(model: Any, seed: int = 0) -> list[np.ndarray]:
    """N(0, 1) floats (zeros for integers) shaped like the public function's arguments of a
    model file, so a bisection needs no inputs from the user."""
    from .irutil import np_dtype

    module = import_model(model, None)
    rng = np.random.default_rng(seed)
    for op in module.body.operations:
        op = op.operation
        if op.name != "func.func" or "sym_visibility" in op.attributes:
            continue
        arrays = []
        for arg in op.regions[0].blocks[0].arguments:
            ty = arg.type
            shape = [int(d) for d in ty.shape]
            if any(d < 0 for d in shape):
                raise BisectError(f"{model}: dynamic input shape {ty}; give inputs (--input)")
            dtype = np_dtype(ty.element_type)
            arrays.append(
                rng.standard_normal(shape).astype(dtype)
                if is_float(dtype)
                else np.zeros(shape, dtype)
            )
        return arrays
    raise BisectError(f"{model}: no public function to feed")


def _save_inputs(inputs: Sequence[Any], work: Path) -> list[Path]:
    paths = []
    for k, x in enumerate(inputs):
        arr = from_torch(x) if hasattr(x, "detach") else np.asarray(x)
        paths.append(work / f"input{k}.npy")
        np.save(paths[-1], arr)
    return paths


def _runner(pipeline: Any) -> list[str]:
    """iree-run-module for where the pipeline's modules run: this machine's, or a foreign
    arch's stock build under its user-mode emulator (arm64, riscv64 under qemu)."""
    from .runtime.targets import emulator, foreign_tool, host_arch, normalize_arch

    arch = pipeline.runtime.arch
    if arch in ("host", "none") or normalize_arch(arch) == host_arch():
        return [iree_tool("iree-run-module")]
    return [*emulator(arch), str(foreign_tool(arch, "iree-run-module"))]


def _plugin_flags(module: Any, what: str) -> list[str]:
    """``--executable_plugin=`` for each BYOC plugin the compiled module's kernels call (a
    conv offloaded to oneDNN), so stock iree-run-module can load it."""
    from .compiler import plugins_used
    from .errors import ModuleLoadError
    from .runtime.plugins import plugin_paths

    try:
        paths = plugin_paths(",".join(plugins_used(module)), None, what)
    except ModuleLoadError as e:
        raise BisectError(str(e)) from None
    return [f"--executable_plugin={p}" for p in paths]


def _run_traced(
    runner: list[str],
    vmfb: Path,
    device: str,
    inputs: list[Path],
    work: Path,
    tag: str,
    plugins: list[str] | None = None,
) -> tuple[list[Traced], np.ndarray]:
    out = work / f"{tag}-output.npy"
    args = [*(plugins or []), *(f"--input=@{p}" for p in inputs)]
    text = _run(
        [*runner, f"--device={device}", f"--module={vmfb}", "--function=main", *args,
         f"--output=@{out}"],
        f"iree-run-module ({tag}, device {device})",
    )  # fmt: skip
    return parse_trace(text), np.load(out)


def _device(flags: list[str]) -> str:
    for f in flags:
        if f.startswith("--iree-hal-target-backends="):
            return _DEVICES.get(f.split("=", 1)[1].split(",")[0], "local-task")
    return "local-task"


def _graph_ir(
    model: Any,
    inputs: Sequence[Any] | None,
    target: str,
    options: dict,
    leave_out: Sequence[str],
    work: Path,
    tag: str,
) -> tuple[Any, Path, list[str], Any]:
    """The model after ``target``'s graph steps (minus ``leave_out``): the module, its
    bytecode, the IREE flags of that target, and the pipeline (its dispatch steps minus
    ``leave_out`` too)."""
    pipeline = load_pipeline(target).with_options(options)
    if leave_out:
        keep = [s for s in pipeline.dispatch_steps if not s.pass_text.startswith(tuple(leave_out))]
        pipeline = dataclasses.replace(pipeline, dispatch_steps=tuple(keep))
    module = import_model(model, inputs)
    steps = [s for s in pipeline.pass_steps("main") if not s.startswith(tuple(leave_out))]
    run_steps(module, steps, what=f"pipeline '{target}'")
    path = work / f"{tag}.mlirbc"
    path.write_bytes(snapshot(module))
    backends = ",".join(pipeline.backends)
    return module, path, [f"--iree-hal-target-backends={backends}", *pipeline.flags], pipeline


def _backend_compile(module: Any, pipeline: Any, vmfb: Path, what: str) -> None:
    """Through our backend, as compile() does (dispatch steps, generated kernels), traced."""
    from .backend import compile_outputs

    try:
        vmfb.write_bytes(compile_outputs(module, pipeline, extra_flags=[TRACE_FLAG]).vmfb)
    except XGenError as e:
        raise BisectError(f"{what} does not compile: {e}") from None


_LOAD = re.compile(
    r"(%[\w.]+) = iree_tensor_ext\.dispatch\.tensor\.load (%[\w]+), offsets = \[([^\]]*)\], "
    r"sizes = \[([^\]]*)\], strides = \[([^\]]*)\] : !iree_tensor_ext\.dispatch\.tensor<"
    r"(readonly|readwrite):(tensor<[^>]*>)> -> (tensor<[^>]*>)"
)
_STORE = re.compile(
    r"iree_tensor_ext\.dispatch\.tensor\.store (%[\w.]+), (%[\w]+), offsets = \[([^\]]*)\], "
    r"sizes = \[([^\]]*)\], strides = \[([^\]]*)\] : (tensor<[^>]*>) -> "
    r"!iree_tensor_ext\.dispatch\.tensor<(writeonly|readwrite):(tensor<[^>]*>)>"
)


def standalone_dispatch(flow_ir: str, symbol: str) -> str | None:
    """IREE's flow-level dispatch region ``symbol`` as a plain ``func.func @main`` of tensors
    (its operands, in the dispatch's operand order = the traced inputs), returning what it
    stores. None if the region uses what a plain function cannot (dynamic dims, workloads)."""
    start = flow_ir.find(f"flow.executable private @{symbol} ")
    if start < 0:
        return None
    body_start = flow_ir.find("func.func @", start)
    open_at = flow_ir.find("{", flow_ir.find(")", body_start))
    depth, k = 0, open_at
    while k < len(flow_ir):
        depth += {"{": 1, "}": -1}.get(flow_ir[k], 0)
        if depth == 0:
            break
        k += 1
    header, body = flow_ir[body_start:open_at], flow_ir[open_at + 1 : k]
    args = re.findall(
        r"(%[\w]+): !iree_tensor_ext\.dispatch\.tensor<(\w+):(tensor<[^>]*>)>", header
    )
    if not args or "?" in header or "index" in header:
        return None
    kinds = {name: (mode, ty) for name, mode, ty in args}
    lines, results, types = [], [], []
    current = {name: name for name, _, _ in args}  # readwrite args: their latest value
    for line in body.splitlines():
        if "iree_tensor_ext.dispatch.tensor.load" in line:
            m = _LOAD.search(line)
            if m is None:
                return None
            res, arg, off, sizes, strides, _, full, ty = m.groups()
            if full == ty and set(off.replace(" ", "").split(",")) <= {"0"}:
                lines.append(f"    {res} = tensor.cast {current[arg]} : {full} to {ty}")
            else:
                lines.append(
                    f"    {res} = tensor.extract_slice {current[arg]}[{off}] [{sizes}] "
                    f"[{strides}] : {full} to {ty}"
                )
        elif "iree_tensor_ext.dispatch.tensor.store" in line:
            m = _STORE.search(line)
            if m is None:
                return None
            val, arg, off, sizes, strides, ty, mode, full = m.groups()
            if mode == "writeonly" and full == ty:
                results.append(val)
                types.append(ty)
            else:
                new = f"{arg}_stored{len(lines)}"
                lines.append(
                    f"    {new} = tensor.insert_slice {val} into {current[arg]}[{off}] "
                    f"[{sizes}] [{strides}] : {ty} into {full}"
                )
                current[arg] = new
        elif re.match(r"\s*return(\s+loc\(.*)?$", line):
            continue
        else:
            lines.append(line)
    for name, (mode, ty) in kinds.items():
        if mode == "readwrite":
            results.append(current[name])
            types.append(ty)
    inputs = [(n, ty) for n, (mode, ty) in kinds.items() if mode != "writeonly"]
    sig = ", ".join(f"{n}: {ty}" for n, ty in inputs)
    lines.append(f"    return {', '.join(results)} : {', '.join(types)}")
    text = f"func.func @main({sig}) -> ({', '.join(types)}) {{\n" + "\n".join(lines) + "\n}\n"
    from ._mlir import iree_binding

    binding = iree_binding()
    try:  # IREE's parser checks it and prints it without the locations
        module = binding.ir.Module.parse(text, binding.ir.Context())
    except binding.ir.MLIRError:
        return None
    note = f"// The flow-level dispatch region {symbol}, as a plain function of its operands."
    return f"{note}\n{module}"


def _locations(ir_text: str) -> list[str]:
    """Source lines the culprit's ops came from (``file:line``), user files first."""
    found: dict[str, int] = {}
    for path, line in re.findall(r'"([^"]+\.(?:py|onnx|mlir))":(\d+)', ir_text):
        found[f"{path}:{line}"] = found.get(f"{path}:{line}", 0) + 1
    ranked = sorted(found, key=lambda k: ("site-packages" in k, -found[k]))
    return ranked[:5]


def bisect(
    model: Any,
    example_inputs: Sequence[Any] | Any | None = None,
    *,
    target: str = "vulkan",
    reference: str = "cpu",
    leave_out: Sequence[str] = (),
    tolerance: float = 1e-4,
    target_options: dict[str, str] | None = None,
    out_dir: str | Path | None = None,
) -> BisectReport:
    """Run ``model`` on ``target`` and on a reference, dispatch by dispatch, and report the
    first dispatch that diverges (relative error above ``tolerance``).

    ``reference``: ``"cpu"`` (IREE's llvm-cpu on the IR ``target``'s graph steps produced) or
    ``"pipeline"`` (``target`` itself without the steps named in ``leave_out``: does a pass
    break numerics?). ``out_dir``: where the reproducer goes (default: a new temp folder).
    """
    if example_inputs is not None and not isinstance(example_inputs, (tuple, list)):
        example_inputs = (example_inputs,)
    if example_inputs is None and isinstance(model, (str, Path)):
        example_inputs = random_inputs(model)
    if reference not in ("cpu", "pipeline"):
        raise BisectError(f"unknown reference '{reference}'; references are: cpu, pipeline")
    if reference == "pipeline" and not leave_out:
        raise BisectError("reference 'pipeline' needs the steps to leave out (leave_out=...)")
    options = dict(target_options or {})
    out = Path(out_dir) if out_dir else Path(tempfile.mkdtemp(prefix="xgen-bisect-"))
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="xgen-bisect-work-") as tmp:
        work = Path(tmp)
        inputs = _save_inputs(example_inputs or (), work)
        tgt_mod, tgt_ir, tgt_flags, tgt_pipe = _graph_ir(
            model, example_inputs, target, options, (), work, "t"
        )
        tgt_vmfb, ref_vmfb = work / "target.vmfb", work / "reference.vmfb"
        # read before the backend compile, which moves the kernels into executables
        tgt_plugins = _plugin_flags(tgt_mod, f"the model for '{target}'")
        _backend_compile(tgt_mod, tgt_pipe, tgt_vmfb, f"the model for '{target}'")
        if reference == "cpu":  # IREE's llvm-cpu on the same graph IR, none of our IREE steps
            ref_name, ref_flags = "llvm-cpu (same graph IR)", list(_REFERENCE_CPU)
            ref_pipe = dataclasses.replace(
                load_pipeline("cpu").with_options({}),
                flags=tuple(_REFERENCE_CPU[1:]),
                dispatch_steps=(),
                fallbacks=(),
            )
            ref_mod = import_model(tgt_ir, None)
        else:
            ref_mod, _, ref_flags, ref_pipe = _graph_ir(
                model, example_inputs, target, options, leave_out, work, "r"
            )
            ref_name = f"{target} without {', '.join(leave_out)}"
        ref_plugins = _plugin_flags(ref_mod, f"the reference ({ref_name})")
        _backend_compile(ref_mod, ref_pipe, ref_vmfb, f"the reference ({ref_name})")
        got_trace, got = _run_traced(
            _runner(tgt_pipe),
            tgt_vmfb,
            _device(tgt_flags),
            inputs,
            work,
            "target",
            tgt_plugins,
        )
        want_trace, want = _run_traced(
            _runner(ref_pipe),
            ref_vmfb,
            _device(ref_flags),
            inputs,
            work,
            "reference",
            ref_plugins,
        )
        compared, unmatched, first, suspects = compare(got_trace, want_trace, tolerance)
        report = BisectReport(
            target,
            ref_name,
            tolerance,
            _max_err(got, want)[0],
            compared,
            unmatched,
            first,
            suspects,
            out_dir=str(out),
        )
        culprit = first.target if first is not None and first.inputs_agree else None
        if culprit is None and report.suspects and report.output_max_abs_err > tolerance:
            culprit = report.suspects[-1]  # no counterpart: e.g. a kernel one of our passes made
        if culprit is not None:
            report.culprit = culprit
            _write_reproducer(report, culprit, got_trace, want_trace, tgt_ir, tgt_flags, work, out)
    atomic_write_bytes(out / "report.json", json.dumps(asdict(report), indent=1).encode())
    return report


def _write_reproducer(
    report: BisectReport,
    culprit: str,
    got: list[Traced],
    want: list[Traced],
    ir_path: Path,
    flags: list[str],
    work: Path,
    out: Path,
) -> None:
    t = next(x for x in got if x.name == culprit)
    ref_name = report.first.reference if report.first and report.first.target == culprit else ""
    r = next((x for x in want if x.name == ref_name), None)
    for k, a in enumerate(t.inputs):
        np.save(out / f"input{k}.npy", a)
    for k, a in enumerate(t.outputs):
        np.save(out / f"target_output{k}.npy", a)
    for k, a in enumerate(r.outputs if r is not None else []):
        np.save(out / f"reference_output{k}.npy", a)
    flow = work / "flow.mlir"
    _run(
        [iree_tool("iree-compile"), str(ir_path), *flags, "--compile-to=flow",
         "--mlir-print-debuginfo", "-o", str(flow)],
        "iree-compile --compile-to=flow",
    )  # fmt: skip
    flow_ir = flow.read_text()
    region = standalone_dispatch(flow_ir, t.symbol)
    start = flow_ir.find(f"flow.executable private @{t.symbol} ")
    report.locations = _locations(flow_ir[start : flow_ir.find("flow.executable", start + 1)])
    if start >= 0:
        end = flow_ir.find("flow.executable", start + 1)
        (out / "dispatch.mlir").write_text(flow_ir[start : end if end > 0 else None])
    runs = " ".join(f"--input=@input{k}.npy" for k in range(len(t.inputs)))
    if region is not None:  # an offloaded op's dispatch calls its library's plugin
        from .byoc.onednn import BACKENDS

        for backend in BACKENDS.values():
            if backend.prefix in region and backend.unavailable() is None:
                runs = f"--executable_plugin={backend.plugin()} {runs}"
    why = (
        f"max abs err {report.first.max_abs_err:.3g}, relative {report.first.max_rel_err:.3g}"
        if r is not None and report.first is not None
        else "no counterpart in the reference; the dispatches after it read different inputs"
    )
    how = [
        f"Culprit dispatch: {t.name}",
        f"  {why}",
        "dispatch.mlir: IREE's flow-level region; input*.npy: its traced inputs;",
        "target_output*.npy / reference_output*.npy: what each side computed.",
    ]
    if region is not None:
        (out / "repro.mlir").write_text(region)
        how += [
            "Reproduce with stock IREE tools:",
            f"  iree-compile repro.mlir {' '.join(flags)} -o repro.vmfb",
            f"  iree-run-module --device={_device(flags)} --module=repro.vmfb --function=main "
            f"{runs} --output=@got.npy",
            "  and compare got.npy with reference_output0.npy (when there is one)",
        ]
    else:
        how.append("(no standalone repro.mlir: the region has dynamic shapes or workloads)")
    (out / "README.txt").write_text("\n".join(how) + "\n")
    shutil.copy(ir_path, out / "model.mlirbc")

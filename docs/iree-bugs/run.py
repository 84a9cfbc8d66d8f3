"""Compile each reproducer here for vulkan-spirv (the portable profile) and for llvm-cpu with
stock iree-compile, run both on the same random inputs with stock iree-run-module (Vulkan on
whatever device the loader finds, e.g. Mesa's llvmpipe), and print the largest difference.

    python docs/iree-bugs/run.py [FILE.mlir ...]

Exit status 1 if any reproducer still gives different numbers on Vulkan (the bug is there).
"""

from __future__ import annotations

import re
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

HERE = Path(__file__).parent
VULKAN = ["--iree-hal-target-backends=vulkan-spirv", "--iree-vulkan-target=vp_android_baseline_2022"]
CPU = ["--iree-hal-target-backends=llvm-cpu", "--iree-llvmcpu-target-cpu=generic"]


def tool(name: str) -> str:
    return str(Path(sys.executable).with_name(name))


def run(mlir: Path, flags: list[str], device: str, inputs: list[Path], work: Path) -> np.ndarray:
    vmfb, out = work / f"{device}.vmfb", work / f"{device}.npy"
    subprocess.run([tool("iree-compile"), str(mlir), *flags, "-o", str(vmfb)], check=True)
    args = [f"--input=@{p}" for p in inputs]
    subprocess.run(
        [tool("iree-run-module"), f"--device={device}", f"--module={vmfb}", "--function=main",
         *args, f"--output=@{out}"],
        check=True, stdout=subprocess.DEVNULL,
    )  # fmt: skip
    return np.load(out)


def check(mlir: Path) -> float:
    sig = re.search(r"func\.func @main\((.*?)\) ->", mlir.read_text()).group(1)
    shapes = [[int(d) for d in s.split("x")[:-1]] for s in re.findall(r"tensor<([^>]*)>", sig)]
    rng = np.random.default_rng(0)
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        inputs = []
        for i, shape in enumerate(shapes):
            inputs.append(work / f"in{i}.npy")
            np.save(inputs[-1], rng.standard_normal(shape).astype(np.float32))
        want = run(mlir, CPU, "local-task", inputs, work)
        got = run(mlir, VULKAN, "vulkan", inputs, work)
    return float(np.abs(got - want).max())


def main(argv: list[str]) -> int:
    files = [Path(a) for a in argv] or sorted(HERE.glob("*.mlir"))
    wrong = 0
    for f in files:
        err = check(f)
        wrong += err > 1e-4
        print(f"{f.name}: max |vulkan - llvm-cpu| = {err:.3g}{'  (WRONG)' if err > 1e-4 else ''}")
    return 1 if wrong else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

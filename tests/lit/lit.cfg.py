# lit configuration for xgen_mlir's pass tests (run by `make lit` / `make check`).
import os
import shutil

import lit.formats

from xgen_mlir.byoc import onednn

config.name = "xgen_mlir"
config.test_format = lit.formats.ShTest(execute_external=False)
config.suffixes = [".mlir"]
config.excludes = ["Inputs", "lit.cfg.py"]
config.test_source_root = os.path.dirname(__file__)
config.environment["PATH"] = os.environ.get("PATH", "")
config.environment["PYTHONWARNINGS"] = "ignore"
# xgen-opt uses no BLAS: without numpy's BLAS server thread it is one thread when it checks
# its input, and then forks for the parse check instead of starting an interpreter (~0.6 s
# less per RUN line; frontend/mlir_import.py: _forked_check)
config.environment["OPENBLAS_NUM_THREADS"] = "1"
# A git worktree runs its own sources through the shared .venv by setting PYTHONPATH.
if os.environ.get("PYTHONPATH"):
    config.environment["PYTHONPATH"] = os.environ["PYTHONPATH"]
# Passes that build code at compile time (xgen-byoc-offload's oneDNN plugin, asked through
# ctypes whether it can make a primitive) use the kernel cache: the user's, not a new one.
for var in ("HOME", "XGEN_CACHE_DIR", onednn.ROOT_VARIABLE):
    if os.environ.get(var):
        config.environment[var] = os.environ[var]

# The Python FileCheck port installs as `filecheck`; tests are written with `FileCheck`.
filecheck = shutil.which("filecheck") or shutil.which("FileCheck")
if filecheck is None:
    lit_config.fatal("FileCheck not found: run `make lit` (it installs the test extras)")
config.substitutions.append(("FileCheck", filecheck))
# byoc-offload.mlir builds that plugin: g++ and oneDNN's headers (.ci/run installs them).
if shutil.which("g++") is None or onednn.installation() is None:
    lit_config.fatal(f"xgen-byoc-offload needs g++ and oneDNN: {onednn.INSTALL_HINT}")
if shutil.which("xgen-opt") is None:
    lit_config.fatal("xgen-opt not on PATH: run `make lit` (it installs the package)")

# bf16 primitives exist only on CPUs oneDNN builds them for (AVX-512 with BF16, AMX); on the
# others (an AVX2-only host) the offload must keep those ops with IREE. The plugin itself is
# asked, as the pass asks it; bf16 RUN lines check the answer this host should give.
from xgen_mlir.byoc.onednn import ONEDNN  # noqa: E402

if ONEDNN.can_build("xgen_dnnl_matmul_bf16_none_b_4_2_3_p1"):
    config.available_features.add("onednn-bf16")
# s8 primitives: only on a CPU with VNNI (without it oneDNN's u8 x s8 sums saturate, and
# can_build refuses them); the int8 offload tests need them, no-vnni ones check the refusal.
if ONEDNN.can_build("xgen_dnnl_matmul_s8_none_nb_4_2_3_7_p1"):
    config.available_features.add("onednn-s8")

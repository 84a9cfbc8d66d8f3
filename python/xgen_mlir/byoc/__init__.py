"""Bring your own codegen: ops offloaded to external kernel libraries (docs/byoc.md).

A backend here is a kernel library reached through an IREE executable plugin: the offload
pass (``passes/byoc_offload.py``) replaces an op by a dispatch whose body calls an import
named after the op (``xgen_dnnl_conv_...``); the plugin, loaded by the runtime
(``--executable_plugin``), resolves that name to the library's primitive when the module is
loaded. So the saved module runs in stock ``iree-run-module`` given the plugin file.
"""

from .onednn import ONEDNN, Backend, backend_named

# The attribute a conv carries when the tuning database says a library runs it fastest on this
# host (set by xgen-winograd-convs, the pass that weighs a conv's algorithms; its value is the
# backend's name); xgen-byoc-offload with backend=tuned offloads exactly those convs.
OFFLOAD_ATTR = "xgen.offload"

__all__ = ["OFFLOAD_ATTR", "ONEDNN", "Backend", "backend_named"]

"""Code generation for what IREE's own codegen cannot do well (pattern-sparse kernels)."""

"""Reports people read: one HTML page per compiled model (fusion_report)."""

from .fusion_report import mapping_counts, render

__all__ = ["mapping_counts", "render"]

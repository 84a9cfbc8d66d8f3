"""Analyses over linalg-on-tensors used by passes, the fusion planner and reports."""

from .mapping_types import Mapping, MappingType, classify

__all__ = ["Mapping", "MappingType", "classify"]

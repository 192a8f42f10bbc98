"""Numerical metrics: element-wise comparison, model-level and parity metrics."""

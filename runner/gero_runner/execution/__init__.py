"""Running cases: evaluation of one case, extra check families, and the worker pool."""

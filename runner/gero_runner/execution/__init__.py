"""Running cases: evaluation of one case, plans of parts and their executors (inline, the
worker pool, a Dask cluster); the check families and the plans come from the layer above."""

"""Querying observations through DuckDB, without a UI.

Headless by contract (import-linter): nothing here imports textual or onnxruntime.
"""

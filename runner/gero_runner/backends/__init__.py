"""Execution paths: ONNX Runtime at each optimisation level and the onnx ReferenceEvaluator."""

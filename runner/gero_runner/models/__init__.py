"""Model-level mode: seeded inputs for a model's signature, the float64 shadow, int8/fp16
variants, ONNX Runtime's noise floor, and the ``model`` check family that gates them."""

"""Case sources: the synthetic operator suite, onnx backend node cases, shipped and user models."""

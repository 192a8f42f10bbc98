"""PyTorch parity: a PyTorch module against its ONNX export under ONNX Runtime.

``module`` builds the user's module and seeded inputs, ``export`` turns it into ONNX,
``evaluate`` runs both sides and classifies each output with the task-aware metrics of
``gero_runner.metrics.parity``, ``run`` stores the observations as a gero run (suite
``parity``) and ``report`` writes the Markdown summary. PyTorch is an optional extra
(``pip install 'gero[torch]'``); it is imported only through ``torch_support``.
"""

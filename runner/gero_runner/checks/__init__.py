"""Check families run after the path comparisons of a case: numerical contracts
(``contracts/``), algebraic graph variants (``variants/``) and model-level checks of a user's
model (``model.py``). ``families`` names them; each is imported only when a case asks for
it. ``task`` hands a case's checks and a model case's plan of parts (``model_parts``) to the
executors of the execution layer below."""

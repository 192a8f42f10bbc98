"""Check families run after the path comparisons of a case: numerical contracts
(``contracts/``), algebraic graph variants (``variants/``) and model-level checks of a user's
model (``model.py``). ``execution.families`` names them; each is imported only when a case
asks for it."""

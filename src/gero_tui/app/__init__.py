"""The Textual explorer: overview, evaluations table, and the screens around them."""

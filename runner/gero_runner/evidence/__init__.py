"""Evidence tools of the runner layer: replay an artifact directory, build a shareable bundle.

Replay re-executes graphs, so it lives here (beside the backends) rather than in the
headless query layer; the CLI and the explorer call these functions.
"""

"""Algebraic graph variants: other graphs that must compute the same function."""

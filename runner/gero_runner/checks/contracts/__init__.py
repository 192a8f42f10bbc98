"""Numerical contracts: laws an operator must obey beyond agreement between backends."""

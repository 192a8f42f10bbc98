"""The synthetic operator suite: one declarative ``OpCase`` entry per operator case.

Each module holds a family and exports ``CASES``; ``registry`` joins them by unique name.
Adding an operator is adding one entry to the module of its family.
"""

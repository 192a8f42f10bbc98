"""How gero starts child processes, bounds one call in a child, and ties a child's lifetime
to the process it works for: the plumbing every executor and isolated call stands on."""

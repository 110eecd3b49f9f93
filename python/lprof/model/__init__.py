"""aggregate (Python side): the one stack model every collector's stacks go
through, and the one attribution rule (stacks.py)."""

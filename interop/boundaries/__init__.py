"""Boundaries: what crosses a region edge (the records), how it moves (Triton's conversion or a
shared-memory handoff) and the planner that chooses per value."""

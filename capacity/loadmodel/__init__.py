"""The two load models over one engine's step costs: the closed forms (workload: lockstep waves, the steady state of
continuous batching, queueing) and the step simulator (simulate: the scheduler step by step). Which load a point is
comes from its load shape (capacity.loads)."""

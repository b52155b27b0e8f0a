"""The physics of one deployment: a model's architecture (from its config.json), its parameters and weight bytes
per precision, KV bytes per token, the engine's memory rule, the formulas, one step's cost (operator rooflines,
overheads, host and launch floors), the bounds no engine beats, and power. Pure functions and frozen data; nothing
here knows about loads."""

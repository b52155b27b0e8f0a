"""llm-capacity: how many users, how fast, at what cost: an analytical model of LLM serving.

The model needs sympy (formulas) and pandas; where they are missing (a machine that only runs `validate`),
`import capacity` still works and gives the light parts (capacity.engines, capacity.errors, capacity.load), not the model.
"""

import importlib.util

from capacity.errors import CapacityError


def _model_importable() -> bool:
    try:
        return all(importlib.util.find_spec(dep) is not None for dep in ("sympy", "pandas"))
    except ImportError:  # an import hook that refuses them
        return False


if _model_importable():
    from capacity.estimate import Estimate, Scenario, estimate
    from capacity.simulate import EngineContext, SimResult, Traffic, simulate

__all__ = ["CapacityError", "EngineContext", "Estimate", "Scenario", "SimResult", "Traffic", "estimate", "simulate"]
__version__ = "0.1.0"

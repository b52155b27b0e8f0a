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


from capacity.load import Load, parse_load, parse_loads
from capacity.loads import LoadShape

if _model_importable():
    from capacity.calibration import Calibration
    from capacity.estimate import Estimate, Scenario, estimate, plan_for, predict
    from capacity.loadmodel.simulate import EngineContext, SimResult, Traffic, simulate
    from capacity.plan import Plan
    from capacity.sizing import size

# The public API. Light (every install): errors and the load grammar. Model (with sympy and pandas): a Scenario is
# planned once (plan_for: weights, memory, limits, step costs) and predicted under a calibration (predict), or both
# at once (estimate); simulate steps the scheduler; size finds the GPUs for a target.
__all__ = ["Calibration", "CapacityError", "EngineContext", "Estimate", "Load", "LoadShape", "Plan", "Scenario",
           "SimResult", "Traffic", "estimate", "parse_load", "parse_loads", "plan_for", "predict", "simulate", "size"]
__version__ = "0.1.0"

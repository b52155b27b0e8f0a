"""llm-capacity: how many users, how fast, at what cost: an analytical model of LLM serving."""

from capacity.errors import CapacityError
from capacity.estimate import Estimate, Scenario, estimate

__all__ = ["CapacityError", "Estimate", "Scenario", "estimate"]
__version__ = "0.1.0"

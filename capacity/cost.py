"""Cost per million tokens: the whole GPU cost is charged to each token class (InferenceX's convention),
so input, output and total costs are three views of one bill, not parts that add up."""

from __future__ import annotations

from capacity.formulas import compiled


def usd_per_million_tokens(usd_per_hour: float | None, tokens_per_s: float) -> float | None:
    if usd_per_hour is None or tokens_per_s <= 0:
        return None
    return float(compiled("usd_per_million_tokens")(usd_per_hour, tokens_per_s))

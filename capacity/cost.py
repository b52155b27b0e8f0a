"""Cost per million tokens: the whole GPU cost is charged to each token class (InferenceX's convention),
so input, output and total costs are three views of one bill, not parts that add up."""

from __future__ import annotations

from capacity.formulas import compiled


def usd_per_million_tokens(usd_per_hour: float | None, tokens_per_s: float) -> float | None:
    if usd_per_hour is None or tokens_per_s <= 0:
        return None
    return float(compiled("usd_per_million_tokens")(usd_per_hour, tokens_per_s))


J_PER_KWH = 3.6e6


def energy_fields(power_w: float, output_tokens_per_s: float, usd_per_kwh: float | None) -> dict:
    """Energy at the GPUs' board power limit (TDP): joules per output token, and its electricity per million output
    tokens when a price per kWh is given. An upper bound, not a prediction: GPUs draw less than TDP (measured on an
    H200 in sitting 9: 190-630 W of 700 W), and power measured with random dummy weights is itself low."""
    j = power_w / output_tokens_per_s if output_tokens_per_s > 0 else None
    usd = j * 1e6 / J_PER_KWH * usd_per_kwh if (j is not None and usd_per_kwh is not None) else None
    return {"power_w_at_tdp": float(power_w), "joules_per_output_token_at_most": j,
            "usd_per_million_output_tokens_energy": usd}

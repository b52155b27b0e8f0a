"""Cost per million tokens: the whole GPU cost is charged to each token class (InferenceX's convention),
so input, output and total costs are three views of one bill, not parts that add up."""

from __future__ import annotations

from capacity.model.formulas import compiled


def usd_per_million_tokens(usd_per_hour: float | None, tokens_per_s: float) -> float | None:
    if usd_per_hour is None or tokens_per_s <= 0:
        return None
    return float(compiled("usd_per_million_tokens")(usd_per_hour, tokens_per_s))


J_PER_KWH = 3.6e6


def energy_fields(tdp_w: float, power_w: float | None, output_tokens_per_s: float, usd_per_kwh: float | None) -> dict:
    """Energy of the deployment: the TDP bound (joules per output token if every GPU drew its board limit) and the
    predicted mean power (capacity/model/power.py) with its joules per output token and, given a price per kWh, the
    electricity per million output tokens (from the predicted power; None when there is no power model)."""
    ok = output_tokens_per_s > 0
    j_max = tdp_w / output_tokens_per_s if ok else None
    j = power_w / output_tokens_per_s if (ok and power_w is not None) else None
    usd = j * 1e6 / J_PER_KWH * usd_per_kwh if (j is not None and usd_per_kwh is not None) else None
    return {"power_w_at_tdp": float(tdp_w), "joules_per_output_token_at_most": j_max,
            "power_w": None if power_w is None else float(power_w), "joules_per_output_token": j,
            "usd_per_million_output_tokens_energy": usd}

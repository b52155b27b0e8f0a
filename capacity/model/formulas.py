"""Every closed-form formula of the model, written once in sympy and compiled to vectorized numpy.

`FORMULAS[name]` holds the expression, its argument order and a one-line meaning; `compiled(name)`
returns a numpy function (broadcasting over arrays); `latex(name)` renders it for the app.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Callable

import numpy as np
import sympy as sp

S = sp.symbols
# architecture
n_kv, d_head, b_kv, n_h, r_kv, d_rope = S("n_kv d b_kv n_h r_kv d_rope", positive=True)
N_params, T_tok, F_flops, B_bytes = S("N T F B", positive=True)
P_peak, BW, eta_c, eta_m = S("P_peak BW eta_c eta_m", positive=True)
E_exp, k_exp = S("E k", positive=True)
t_par, link_bw, eta_link, alpha_s, msg_bytes = S("t_p BW_link eta_link alpha msg", positive=True)
price, tok_rate = S("price_h tokens_per_s", positive=True)
ttft, itl, O_len = S("TTFT ITL O", positive=True)
a_acc, k_draft = S("a k_d", positive=True)
mem_avail, bytes_tok, block = S("M_kv b_tok blk", positive=True)
ctx_keys = S("S", positive=True)
rho, t_step = S("rho t_step", positive=True)


@dataclass(frozen=True)
class Formula:
    expr: sp.Expr
    args: tuple[sp.Symbol, ...]
    meaning: str


FORMULAS: dict[str, Formula] = {
    "kv_bytes_per_token_layer": Formula(2 * n_kv * d_head * b_kv, (n_kv, d_head, b_kv),
                                        "K and V: 2 × KV heads × head dim × bytes, per token per layer"),
    "mla_kv_bytes_per_token_layer": Formula((r_kv + d_rope) * b_kv, (r_kv, d_rope, b_kv),
                                            "MLA latent: (KV rank + RoPE dims) × bytes, per token per layer"),
    "kv_capacity_tokens": Formula(sp.floor(mem_avail / (bytes_tok * block)) * block, (mem_avail, bytes_tok, block),
                                  "KV memory ÷ bytes per token, rounded down to whole blocks"),
    "linear_flops": Formula(2 * N_params * T_tok, (N_params, T_tok), "2 FLOPs per parameter per token"),
    "attention_flops": Formula(4 * n_h * d_head * T_tok * ctx_keys, (n_h, d_head, T_tok, ctx_keys),
                               "QKᵀ and PV: 4 × heads × head dim × queries × keys attended (summed over layers)"),
    "roofline_time_s": Formula(sp.Max(F_flops / (P_peak * eta_c), B_bytes / (BW * eta_m)),
                               (F_flops, P_peak, eta_c, B_bytes, BW, eta_m),
                               "time = max(FLOPs ÷ achieved FLOP/s, bytes ÷ achieved bandwidth)"),
    "ridge_point_flops_per_byte": Formula(P_peak / BW, (P_peak, BW), "arithmetic intensity where compute and memory take equal time"),
    "experts_touched": Formula(E_exp * (1 - (1 - k_exp / E_exp) ** T_tok), (E_exp, k_exp, T_tok),
                               "expected distinct experts loaded when T tokens each pick k of E uniformly"),
    "allreduce_time_s": Formula(alpha_s + 2 * (t_par - 1) / t_par * msg_bytes / (link_bw * eta_link),
                                (alpha_s, t_par, msg_bytes, link_bw, eta_link),
                                "ring all-reduce: latency + 2(t−1)/t × message ÷ link bandwidth"),
    "e2e_latency_s": Formula(ttft + (O_len - 1) * itl, (ttft, O_len, itl), "TTFT plus (output − 1) inter-token gaps"),
    "usd_per_million_tokens": Formula(price / (tok_rate * 3600) * 10**6, (price, tok_rate),
                                      "$/GPU-hour ÷ tokens per GPU-hour × 10⁶"),
    "spec_tokens_per_step": Formula((1 - a_acc ** (k_draft + 1)) / (1 - a_acc), (a_acc, k_draft),
                                    "expected tokens per verification step with k drafts, acceptance a"),
    "queue_wait_s": Formula(rho / (1 - rho) * t_step / 2, (rho, t_step),
                            "M/D/1-style wait for a step-paced server at utilization ρ"),
}


@functools.cache
def compiled(name: str) -> Callable[..., np.ndarray]:
    f = FORMULAS[name]
    return sp.lambdify(f.args, f.expr, modules="numpy")


def latex(name: str) -> str:
    return sp.latex(FORMULAS[name].expr)

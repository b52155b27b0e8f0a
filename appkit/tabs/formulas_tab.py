"""Formulas tab: every closed-form formula of the model, rendered from sympy."""

from __future__ import annotations

import streamlit as st

from appkit import cached
from appkit.compute import Headline
from capacity import Scenario
from capacity.model.formulas import FORMULAS, latex


def formulas_tab(s: Scenario, h: Headline, ttft_slo: float, itl_slo: float, target: float) -> None:
    st.markdown("Every closed-form formula of the model, written once in sympy (`capacity/model/formulas.py`), compiled "
                "to numpy for the numbers above and rendered here. With this scenario's values where they apply.")
    values = cached.formula_values(s.model_dump_json())
    cols = st.columns(2)
    for i, (name, f) in enumerate(FORMULAS.items()):
        with cols[i % 2].container(border=True):
            st.markdown(f"**{name.replace('_', ' ')}** — {f.meaning}")
            st.latex(latex(name))
            if name in values:
                st.caption(f"Here: {values[name]}")


"""The page's sections, one module per tab (Streamlit calls; numbers from appkit.cached): the headline above the
tabs, then Charts, Compare GPUs, Measured vs predicted, Explorer, Formulas and Launch."""

from appkit.tabs.charts_tab import charts_tab
from appkit.tabs.compare_tab import compare_tab
from appkit.tabs.explorer_tab import explorer_tab
from appkit.tabs.format import layout_text, ms, num, usd, version
from appkit.tabs.formulas_tab import formulas_tab
from appkit.tabs.headline import headline_metrics, what_fits
from appkit.tabs.launch_tab import launch_tab
from appkit.tabs.measured_tab import measured_tab

# in the order the page shows them
TABS = (charts_tab, compare_tab, measured_tab, explorer_tab, formulas_tab, launch_tab)

__all__ = ["TABS", "charts_tab", "compare_tab", "explorer_tab", "formulas_tab", "headline_metrics", "launch_tab",
           "layout_text", "measured_tab", "ms", "num", "usd", "version", "what_fits"]

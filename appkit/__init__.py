"""Helpers of the Streamlit calculator (`app.py`): inputs, cached model calls, charts, measured results,
launch snippets. Everything numeric comes from the `capacity` package's public API."""

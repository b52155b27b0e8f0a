"""The validator: launch real engines, sweep load with an own async client, store points.

Imports only the standard library, numpy, pydantic, httpx and rich (tokenizers lazily), so that
``PYTHONPATH=. python3 -m validate.cli run ...`` works on a machine where this project is not
installed.
"""

__version__ = "0.1.0"

"""Unit constants. Everything inside the package is in SI base units; these are for display only."""

KB = 1e3
MB = 1e6
GB = 1e9
TB = 1e12
KiB = 2**10
MiB = 2**20
GiB = 2**30
TiB = 2**40
HOUR_S = 3600.0
MILLION = 1e6

"""Where work runs: process set-up, runners, calls with time limits, Dask clusters, provenance."""

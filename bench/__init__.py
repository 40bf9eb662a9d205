"""Benchmarks: run with `make bench` or `python -m bench`."""

"""ttreport's benchmarks (issue 5): `python -m bench` runs them all; `--quick` runs tiny sizes."""

"""Coarse-grained analytical models (TPDS §2.1, §3.1) and baselines."""

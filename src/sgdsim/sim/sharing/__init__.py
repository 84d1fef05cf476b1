"""Bandwidth sharing policies of a link: one small module each.

A policy sets ``rate[l]`` (bytes/s per unit weight) and the weight of each flow when flows
arrive (``admit``) or leave (``release``). Policies must keep the total served rate
``rate * sum(weights)`` at or below the link bandwidth and every flow at or below the cap.
"""

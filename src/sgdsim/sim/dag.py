"""Walking a step's op DAG given as successor lists (plan building and chain folding)."""
from __future__ import annotations

import numpy as np


def topological(npred: np.ndarray, succ: list[list[int]]) -> list[int]:
    """The ops in an order where every op comes after its predecessors."""
    left = np.array(npred, copy=True)
    order = [i for i in range(len(left)) if left[i] == 0]
    for i in order:  # the list grows while it is walked
        for j in succ[i]:
            left[j] -= 1
            if left[j] == 0:
                order.append(j)
    return order

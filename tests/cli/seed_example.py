"""The contract's worked example (the seed problem) and its results derived by hand: the
scores are [[2, 1, 1], [1, 1, 2]] without scaling, so each weights row is a softmax with one
e and two 1s. Shared by the CLI tests that check it.
"""
import numpy as np

SEED = {"query": [[1, 0, 1], [0, 1, 1]], "key": [[1, 0, 1], [1, 1, 0], [0, 1, 1]],
        "value": [[10, 0], [0, 10], [5, 5]]}
W = np.array([[np.e, 1, 1], [1, 1, np.e]]) / (np.e + 2)
CTX = W @ np.array(SEED["value"], dtype=float)

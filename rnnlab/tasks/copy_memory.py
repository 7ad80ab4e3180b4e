"""The copying-memory task (Hochreiter & Schmidhuber 1997; Arjovsky, Shah & Bengio 2016).

A sequence of length T + 20 over the tokens 0..9::

    inputs : a_1 .. a_10 | 0 (T−1 times) | 9 | 0 (10 times)
    targets: 0 (T + 10 times)               | a_1 .. a_10

``a_i`` are drawn uniformly from the alphabet {1, .., 8}, 0 is the blank and 9
the "go" marker. After the marker the network must output the 10 symbols in
order; everywhere else the answer is blank. Symbol ``a_i`` is read at step
``i`` and must be written at step ``T + 10 + i``: every symbol is recalled
``T + 10`` steps after it was seen (``T + 1`` steps separate the last symbol
from the first recall). A memoryless
predictor that outputs blank until the end and then guesses uniformly among
the 8 symbols reaches the baseline cross-entropy (averaged over all T + 20
steps) ``10 ln 8 / (T + 20)``.

This follows the public code of Kaul 2020 and Arjovsky et al.: the inputs are
token ids (one-hot encode them for the model), there are 10 output classes
(the go marker is never a target), and the cross-entropy is the mean over
every time step.
"""
import math

import torch
import torch.nn.functional as F

from .._validate import check_int

__all__ = [
    "copy_memory",
    "copy_memory_baseline",
    "copy_memory_loss",
    "recall_accuracy",
    "BLANK",
    "GO",
    "NUM_TOKENS",
    "ALPHABET_SIZE",
    "NUM_RECALL",
]

BLANK = 0
GO = 9
NUM_TOKENS = 10  # blank, 8 symbols, go
ALPHABET_SIZE = 8
NUM_RECALL = 10


def copy_memory(T, n, seed=0):
    """``n`` copying-memory sequences with delay ``T``: ``(inputs, targets)``.

    Both are int64 tensors of shape ``(n, T + 20)`` of token ids (see the
    module docstring for the layout); the same ``seed`` gives the same data.
    ``T`` ≥ 1 is the delay as Arjovsky et al. define it: T − 1 blanks, then
    the marker, then 10 blanks while the answer is written. Each symbol is
    recalled ``T + 10`` steps after it was read (``T + 1`` steps from the last
    symbol to the first recall).
    """
    check_int("T", T, minimum=1, fn="copy_memory")
    check_int("n", n, minimum=1, fn="copy_memory")
    check_int("seed", seed, minimum=0, fn="copy_memory")
    g = torch.Generator().manual_seed(seed)
    symbols = torch.randint(1, ALPHABET_SIZE + 1, (n, NUM_RECALL), generator=g)
    L = T + 2 * NUM_RECALL
    inputs = torch.zeros(n, L, dtype=torch.int64)
    targets = torch.zeros(n, L, dtype=torch.int64)
    inputs[:, :NUM_RECALL] = symbols
    inputs[:, T + NUM_RECALL - 1] = GO
    targets[:, -NUM_RECALL:] = symbols
    return inputs, targets


def copy_memory_baseline(T):
    """Cross-entropy of the memoryless strategy: ``10 ln 8 / (T + 20)`` nats per step."""
    check_int("T", T, minimum=1, fn="copy_memory")
    return NUM_RECALL * math.log(ALPHABET_SIZE) / (T + 2 * NUM_RECALL)


def copy_memory_loss(logits, targets):
    """Mean cross-entropy over every step: logits ``(B, L, classes)``, targets ``(B, L)``."""
    return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1))


def recall_accuracy(logits, targets):
    """Fraction of the 10 recalled symbols (the last 10 steps) predicted correctly."""
    pred = logits[:, -NUM_RECALL:].argmax(-1)
    return (pred == targets[:, -NUM_RECALL:]).float().mean()

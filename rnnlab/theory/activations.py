"""Slope-restricted activations for the theory code (NumPy).

The RNN of the paper, equation (1), is ``tau dx/dt = -x + W phi(x) + u`` with
``0 <= phi' <= g``. Each activation here carries ``phi``, ``phi'``, ``phi''``
and its slope bound ``g``; Theorem 6 needs ``phi''`` and a strictly positive
``phi'``.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

__all__ = ["Activation", "get_activation", "ACTIVATIONS"]


@dataclass(frozen=True)
class Activation:
    """An activation ``phi`` with ``0 <= phi' <= g``."""

    name: str
    phi: Callable[[np.ndarray], np.ndarray]
    dphi: Callable[[np.ndarray], np.ndarray]
    d2phi: Callable[[np.ndarray], np.ndarray]
    g: float
    strictly_increasing: bool


def _sigmoid(x):
    return 0.5 * (1.0 + np.tanh(0.5 * x))


def _tanh_d1(x):
    t = np.tanh(x)
    return 1.0 - t * t


def _tanh_d2(x):
    t = np.tanh(x)
    return -2.0 * t * (1.0 - t * t)


ACTIVATIONS = {
    "relu": Activation("relu", lambda x: np.maximum(x, 0.0), lambda x: (x > 0).astype(float),
                       lambda x: np.zeros_like(x, dtype=float), 1.0, False),
    "tanh": Activation("tanh", np.tanh, _tanh_d1, _tanh_d2, 1.0, True),
    "softplus": Activation("softplus", lambda x: np.logaddexp(0.0, x), _sigmoid,
                           lambda x: _sigmoid(x) * (1.0 - _sigmoid(x)), 1.0, True),
    "sigmoid": Activation("sigmoid", _sigmoid, lambda x: _sigmoid(x) * (1.0 - _sigmoid(x)),
                          lambda x: _sigmoid(x) * (1.0 - _sigmoid(x)) * (1.0 - 2.0 * _sigmoid(x)), 0.25, True),
    "linear": Activation("linear", lambda x: np.asarray(x, dtype=float), lambda x: np.ones_like(x, dtype=float),
                         lambda x: np.zeros_like(x, dtype=float), 1.0, True),
}


def get_activation(activation) -> Activation:
    """Look an activation up by name, or pass an :class:`Activation` through."""
    if isinstance(activation, Activation):
        return activation
    if isinstance(activation, str) and activation in ACTIVATIONS:
        return ACTIVATIONS[activation]
    raise ValueError(f"activation must be one of {sorted(ACTIVATIONS)} or an Activation, got {activation!r}")

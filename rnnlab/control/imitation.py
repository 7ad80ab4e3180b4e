"""Imitation: the paper's MuJoCo network around the four cells, its data, and the closed-loop policy.

:class:`~rnnlab.models.policy.ImitationNet` (a model, in :mod:`rnnlab.models`; re-exported here) is
Table 8 of the seed (A.11.2): ``FC(256) ReLU → FC(256) ReLU → recurrent(64) → FC(actions) tanh``, the
recurrent layer any of the four cells of part 1
(:mod:`rnnlab.models.cells`) with rank ``r`` and sparsity ``s``; trained with MSE on the
expert's actions scaled into [-1, 1]. Observations are standardised with the training
rollouts' mean and standard deviation (buffers of the model, so a saved model carries them).

:class:`RecurrentPolicy` runs it closed loop one step at a time and can record, per step,
the three trajectories of A.1 (the recurrent drive ``W_rec h_{t−1}``, the input drive
``W_inp x_t``, the state ``h_t``) and the CfC's interpolation weights ``w_t = σ(F)`` (A.2).
:func:`effective_dimensionality` is A.11.5's measure: the fraction of variance explained
by the top 5 principal components (scikit-learn's PCA).
"""
import numpy as np
import torch

from ..kernels import cell_step_ref
from ..models.policy import PAPER_NET, ImitationNet

__all__ = ["PAPER_NET", "ImitationNet", "RecurrentPolicy", "windows", "effective_dimensionality",
           "numerical_rank"]


class RecurrentPolicy:
    """A trained :class:`ImitationNet` as a closed-loop policy (``reset()``, ``act(obs)``).

    ``record=True`` keeps, per step, ``rec`` (``W_rec h_{t−1}``, all gates side by
    side, ``G·H``), ``inp`` (``W_inp x_t``, ``G·H``, without the bias), ``h`` (``H``) and,
    for the CfC, ``w`` (``σ(F)``, ``H``); :meth:`trajectories` stacks them.
    """

    def __init__(self, net, action_scale=1.0, *, record=False):
        self.net, self.scale, self.record = net.eval(), float(action_scale), bool(record)
        self.trace = {"rec": [], "inp": [], "h": [], "w": []}
        self.reset()

    def reset(self):
        cell = self.net.cell
        H = cell.hidden_size
        self.h = torch.zeros(1, H)
        self.c = torch.zeros(1, H) if cell.kind == "lstm" else None
        with torch.no_grad():
            self.W = cell.recurrent_weights().detach()

    @torch.no_grad()
    def act(self, obs):
        net, cell = self.net, self.net.cell
        x = net.features(torch.as_tensor(np.asarray(obs), dtype=torch.float32)[None])
        xp = cell.input_drive(x)
        if self.record:
            G, H = cell.gates, cell.hidden_size
            rec = torch.einsum("gij,bj->bgi", self.W, self.h)
            self.trace["rec"].append(rec.reshape(G * H).numpy().copy())
            inp = (x @ cell.weight_ih.T).reshape(G * H)
            self.trace["inp"].append(inp.numpy().copy())
            if cell.kind == "cfc":
                self.trace["w"].append(torch.sigmoid(xp[0, 0] + rec[0, 0]).numpy().copy())
        self.h, self.c = cell_step_ref(cell.kind, xp, self.W, self.h, self.c)
        if self.record:
            self.trace["h"].append(self.h[0].numpy().copy())
        return (torch.tanh(net.out(self.h))[0] * self.scale).numpy()

    def trajectories(self):
        return {k: np.stack(v) for k, v in self.trace.items() if v}


def windows(obs, actions, lengths, window):
    """Cut episodes ``(E, T, ·)`` into non-overlapping windows of ``window`` steps inside ``lengths``."""
    xs, ys = [], []
    for e in range(obs.shape[0]):
        for start in range(0, int(lengths[e]) - window + 1, window):
            xs.append(obs[e, start:start + window])
            ys.append(actions[e, start:start + window])
    if not xs:
        raise ValueError(f"window={window} is longer than every episode (lengths {sorted(set(lengths))})")
    return torch.as_tensor(np.stack(xs)), torch.as_tensor(np.stack(ys))


def effective_dimensionality(X, k=5):
    """Explained variance of the top ``k`` principal components of ``X`` ``(steps, dims)`` (A.11.5).

    1 means the trajectory lies in ``k`` dimensions; lower means it spreads over more.
    """
    from sklearn.decomposition import PCA
    X = np.asarray(X, dtype=np.float64)
    if X.ndim != 2 or X.shape[0] < 2:
        raise ValueError(f"X must be (steps >= 2, dims), got shape {X.shape}")
    k = min(k, X.shape[0], X.shape[1])
    pca = PCA(n_components=k).fit(X)
    return float(pca.explained_variance_ratio_.sum())


def numerical_rank(M, rtol=1e-3):
    """The number of singular values above ``rtol`` times the largest (the rank of a weight change)."""
    s = np.linalg.svd(np.asarray(M, dtype=np.float64), compute_uv=False)
    return int((s > rtol * s[0]).sum()) if s.size and s[0] > 0 else 0

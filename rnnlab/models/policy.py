"""The paper's MuJoCo imitation network (Table 8 of Tumma et al. 2024) around any of the four cells.

:class:`ImitationNet`: ``FC(256) ReLU → FC(256) ReLU → recurrent(64) → FC(actions) tanh`` with the
recurrent layer a :mod:`rnnlab.models.cells` cell of rank ``r`` and sparsity ``s``. The closed-loop side
(a policy running it step by step, its trajectories) is :mod:`rnnlab.control.imitation`.
"""
import torch
from torch import nn

from .._validate import check_int
from .cells import CELLS
from .common import resolve_generator, seeded_init

__all__ = ["PAPER_NET", "ImitationNet"]

PAPER_NET = {"head": 256, "hidden": 64}
"""Table 8 / Table 9: two dense layers of 256 (ReLU), a recurrent layer of 64 units."""


class ImitationNet(nn.Module):
    """``ImitationNet(obs_dim, act_dim, cell="cfc", rank=None, sparsity=0.0, *, obs_mean, obs_std, seed=0,
    generator=None, device=None)``: ``seed`` seeds torch's global RNG (as the committed runs were made);
    ``generator`` draws every weight from a generator instead and leaves the global RNG alone.

    ``forward(obs, state=None)``: ``obs`` ``(B, T, obs_dim)`` (raw) → ``(actions in [-1, 1]
    (B, T, act_dim), state)``.
    """

    def __init__(self, obs_dim, act_dim, cell="cfc", rank=None, sparsity=0.0, *, obs_mean=None, obs_std=None,
                 head=PAPER_NET["head"], hidden=PAPER_NET["hidden"], seed=None, generator=None, device=None):
        super().__init__()
        if cell not in CELLS:
            raise ValueError(f"cell must be one of {sorted(CELLS)}, got {cell!r}")
        for arg, v in (("obs_dim", obs_dim), ("act_dim", act_dim), ("head", head), ("hidden", hidden)):
            check_int(arg, v, minimum=1, fn="ImitationNet")
        self.kind = cell
        if generator is None:
            # seed= (default 0), as the committed runs were made: it seeds torch's global RNG
            seed = 0 if seed is None else check_int("seed", seed, minimum=0, fn="ImitationNet")
            torch.manual_seed(seed)
            self.fc1, self.fc2 = nn.Linear(obs_dim, head), nn.Linear(head, head)
            self.cell = CELLS[cell](head, hidden, rank=rank, sparsity=sparsity, seed=seed)
            self.out = nn.Linear(hidden, act_dim)
        else:   # the models' convention: every draw from generator, the global RNG untouched
            generator = resolve_generator(generator, seed, fn="ImitationNet")
            with seeded_init(generator):
                self.fc1, self.fc2 = nn.Linear(obs_dim, head), nn.Linear(head, head)
                self.cell = CELLS[cell](head, hidden, rank=rank, sparsity=sparsity, generator=generator)
                self.out = nn.Linear(hidden, act_dim)
        mean = torch.zeros(obs_dim) if obs_mean is None else torch.as_tensor(obs_mean, dtype=torch.float32)
        std = torch.ones(obs_dim) if obs_std is None else torch.as_tensor(obs_std, dtype=torch.float32)
        if mean.shape != (obs_dim,) or std.shape != (obs_dim,):
            raise ValueError(f"ImitationNet: obs_mean and obs_std must have shape ({obs_dim},)")
        self.register_buffer("obs_mean", mean)
        self.register_buffer("obs_std", torch.clamp(std, min=1e-6))
        if device is not None:
            self.to(device)

    def features(self, obs):
        z = (obs - self.obs_mean) / self.obs_std
        return torch.relu(self.fc2(torch.relu(self.fc1(z))))

    def forward(self, obs, state=None):
        hs, state = self.cell(self.features(obs), state)
        return torch.tanh(self.out(hs)), state

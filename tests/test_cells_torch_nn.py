"""rnnlab's RNN, LSTM and GRU against an independent implementation of the same equations.

The kernels are held to the readable reference (``rnnlab.kernels.cells_torch``)
elsewhere; here the reference and every CPU backend are held to something that
did not come from rnnlab, so that a gate-order swap made in the reference and
the kernels alike fails:

* the RNN and the LSTM to ``torch.nn.RNN`` / ``torch.nn.LSTM`` with the weights
  copied (same gate order i, f, g, o; torch's second bias set to zero);
* the GRU to ``torch.nn.GRU`` only where the two GRUs coincide: torch applies
  the reset gate *after* the candidate's recurrent matrix
  (``n = tanh(W_in x + b_in + r * (W_hn h + b_hn))``) while rnnlab, like the
  book's table (lowrank/01) and Cho et al. 2014, applies it before
  (``n = tanh(W_in x + W_n (r * h) + b_n)``); with ``W_n = 0`` and ``b_hn = 0``
  both give ``tanh(W_in x + b_in)``, which pins the gate order r, z, n and the
  update ``h' = (1 - z) n + z h``. With ``W_n`` nonzero the GRU is compared
  with a NumPy step written from the book's equations, and shown to differ
  from torch's.
"""
import numpy as np
import pytest
import torch

from rnnlab.kernels.cells_torch import cell_step_ref, recurrent_cell_ref
from rnnlab.models.cells import GRU, LSTM, RNN

I, H, B, T = 3, 4, 2, 5
BACKENDS = ("torch", "cpu")


def _model(cls, backend, seed=0, **kw):
    model = cls(I, H, seed=seed, backend=backend, dtype=torch.float64, **kw)
    with torch.no_grad():                 # biases that differ per gate, so that their order matters too
        model.bias.copy_(torch.randn(model.bias.shape, generator=torch.Generator().manual_seed(seed + 1),
                                     dtype=torch.float64))
    return model


def _inputs(seed=2):
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(B, T, I, generator=gen, dtype=torch.float64)
    h0 = 0.5 * torch.randn(B, H, generator=gen, dtype=torch.float64)
    c0 = 0.5 * torch.randn(B, H, generator=gen, dtype=torch.float64)
    return x, h0, c0


def _torch_nn(cls, model, W_hh):
    """``cls`` (torch.nn.RNN/LSTM/GRU) carrying ``model``'s weights; torch's ``bias_hh`` zero."""
    G = model.gates
    net = cls(I, H, batch_first=True, dtype=torch.float64)
    with torch.no_grad():
        net.weight_ih_l0.copy_(model.weight_ih)
        net.weight_hh_l0.copy_(W_hh.reshape(G * H, H))
        net.bias_ih_l0.copy_(model.bias)
        net.bias_hh_l0.zero_()
    return net


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("rank, sparsity", [(None, 0.0), (2, 0.3)])
def test_rnn_is_torch_nn_rnn(backend, rank, sparsity):
    model = _model(RNN, backend, rank=rank, sparsity=sparsity)
    x, h0, _ = _inputs()
    net = _torch_nn(torch.nn.RNN, model, model.recurrent_weights().detach())
    out, hT = model(x, h0)
    want, want_hT = net(x, h0[None])
    torch.testing.assert_close(out, want, rtol=1e-12, atol=1e-12)
    torch.testing.assert_close(hT, want_hT[0], rtol=1e-12, atol=1e-12)
    # the gradient of the input weights too (the kernels' backward is written by hand)
    out.square().sum().backward()
    want.square().sum().backward()
    torch.testing.assert_close(model.weight_ih.grad, net.weight_ih_l0.grad, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("rank, sparsity", [(None, 0.0), (2, 0.3)])
def test_lstm_is_torch_nn_lstm(backend, rank, sparsity):
    model = _model(LSTM, backend, rank=rank, sparsity=sparsity)
    x, h0, c0 = _inputs()
    net = _torch_nn(torch.nn.LSTM, model, model.recurrent_weights().detach())
    out, (hT, cT) = model(x, (h0, c0))
    want, (want_hT, want_cT) = net(x, (h0[None], c0[None]))
    torch.testing.assert_close(out, want, rtol=1e-12, atol=1e-12)
    torch.testing.assert_close(hT, want_hT[0], rtol=1e-12, atol=1e-12)
    torch.testing.assert_close(cT, want_cT[0], rtol=1e-12, atol=1e-12)
    (out.square().sum() + cT.sum()).backward()
    (want.square().sum() + want_cT.sum()).backward()
    torch.testing.assert_close(model.weight_ih.grad, net.weight_ih_l0.grad, rtol=1e-10, atol=1e-12)
    torch.testing.assert_close(model.bias.grad, net.bias_ih_l0.grad, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("backend", BACKENDS)
def test_gru_is_torch_nn_gru_where_the_two_coincide(backend):
    model = _model(GRU, backend)
    with torch.no_grad():
        model.weight_hh[2].zero_()        # W_n = 0: where the reset gate acts no longer matters
    x, h0, _ = _inputs()
    net = _torch_nn(torch.nn.GRU, model, model.recurrent_weights().detach())
    out, hT = model(x, h0)
    want, want_hT = net(x, h0[None])
    torch.testing.assert_close(out, want, rtol=1e-12, atol=1e-12)
    torch.testing.assert_close(hT, want_hT[0], rtol=1e-12, atol=1e-12)
    out.square().sum().backward()
    want.square().sum().backward()
    torch.testing.assert_close(model.weight_ih.grad, net.weight_ih_l0.grad, rtol=1e-10, atol=1e-12)
    # the r and z blocks of the recurrent gradient too (n's differs: torch's W_hn sees h, rnnlab's W_n r * h)
    torch.testing.assert_close(model.weight_hh.grad[:2].reshape(2 * H, H), net.weight_hh_l0.grad[:2 * H],
                               rtol=1e-10, atol=1e-12)


def _sigmoid(a):
    return 1.0 / (1.0 + np.exp(-a))


def _gru_step_by_hand(x, h, W_i, b, W):
    """The book's GRU step (lowrank/01's table), in NumPy: gates r, z, n in this order."""
    W_ir, W_iz, W_in = np.split(W_i, 3)
    b_r, b_z, b_n = np.split(b, 3)
    W_r, W_z, W_n = W
    r = _sigmoid(x @ W_ir.T + h @ W_r.T + b_r)
    z = _sigmoid(x @ W_iz.T + h @ W_z.T + b_z)
    n = np.tanh(x @ W_in.T + (r * h) @ W_n.T + b_n)
    return (1 - z) * n + z * h


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("rank, sparsity", [(None, 0.0), (2, 0.3)])
def test_gru_is_the_books_step_written_by_hand(backend, rank, sparsity):
    model = _model(GRU, backend, rank=rank, sparsity=sparsity)
    x, h0, _ = _inputs()
    W_i, b = model.weight_ih.detach().numpy(), model.bias.detach().numpy()
    W = model.recurrent_weights().detach().numpy()
    h, want = h0.numpy(), []
    for t in range(T):
        h = _gru_step_by_hand(x[:, t].numpy(), h, W_i, b, W)
        want.append(h)
    out, _ = model(x, h0)
    np.testing.assert_allclose(out.detach().numpy(), np.stack(want, 1), rtol=1e-12, atol=1e-12)
    # and it is not torch's GRU: with W_n nonzero, where the reset gate acts matters
    net = _torch_nn(torch.nn.GRU, model, torch.from_numpy(W))
    assert (net(x, h0[None])[0] - out).abs().max() > 1e-3


def test_one_step_by_hand_with_numbers():
    """H = 1, one input: every gate's value worked out by hand."""
    x, h = 0.5, 0.2
    h0, c0 = torch.tensor([[h]], dtype=torch.float64), torch.tensor([[0.3]], dtype=torch.float64)
    # RNN: tanh(2 * 0.5 + 0.5 * 0.2 + 0.1) = tanh(1.2)
    xp = torch.tensor([[[2 * x + 0.1]]], dtype=torch.float64)
    h_new, _ = cell_step_ref("rnn", xp, torch.tensor([[[0.5]]], dtype=torch.float64), h0)
    assert h_new.item() == pytest.approx(np.tanh(1.2), rel=1e-14)
    # LSTM, pre-activations i, f, g, o = 0 + 1 h, 1 + 0 h, 0.5 + 0 h, -1 + 2 h; c = 0.3
    xp = torch.tensor([[[0.0], [1.0], [0.5], [-1.0]]], dtype=torch.float64)
    W = torch.tensor([[[1.0]], [[0.0]], [[0.0]], [[2.0]]], dtype=torch.float64)
    h_new, c_new = cell_step_ref("lstm", xp, W, h0, c0)
    i, f, g, o = _sigmoid(0.2), _sigmoid(1.0), np.tanh(0.5), _sigmoid(-1.0 + 0.4)
    assert c_new.item() == pytest.approx(f * 0.3 + i * g, rel=1e-14)
    assert h_new.item() == pytest.approx(o * np.tanh(f * 0.3 + i * g), rel=1e-14)
    # GRU, r = sigma(0.1 + 1 h), z = sigma(-0.2 + 0 h), n = tanh(0.3 + 2 (r h))
    xp = torch.tensor([[[0.1], [-0.2], [0.3]]], dtype=torch.float64)
    W = torch.tensor([[[1.0]], [[0.0]], [[2.0]]], dtype=torch.float64)
    hs, _ = recurrent_cell_ref("gru", xp[:, None], W, h0)
    r, z = _sigmoid(0.1 + h), _sigmoid(-0.2)
    n = np.tanh(0.3 + 2 * r * h)
    assert hs.item() == pytest.approx((1 - z) * n + z * h, rel=1e-14)

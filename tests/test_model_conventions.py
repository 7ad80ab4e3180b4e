"""The models' constructor convention (rnnlab.models.common): generator=, device=, dtype=, seed= where it was."""
import pytest
import torch

from rnnlab.models import LDS, LDStack, LDStackExact, DeepLSTM, MemoryLSTM, RNN, LSTM
from rnnlab.models.common import resolve_dtype, resolve_generator, seeded_init

BUILDERS = {
    "LDS": lambda **kw: LDS(2, 8, 3, **kw),
    "LDStack": lambda **kw: LDStack(2, 8, 3, depth=2, **kw),
    "LDStackExact": lambda **kw: LDStackExact(2, 4, depth=2, **kw),
    "RNN": lambda **kw: RNN(2, 4, rank=2, sparsity=0.25, backend="torch", **kw),
    "LSTM": lambda **kw: LSTM(2, 4, backend="torch", **kw),
    "MemoryLSTM": lambda **kw: MemoryLSTM(3, 3, "deque", 8, 4, 4, **kw),
    "DeepLSTM": lambda **kw: DeepLSTM(3, 3, 8, 2, 4, **kw),
}


def _state(model):
    return [p.detach().clone() for p in model.parameters()]


def _gen(seed):
    return torch.Generator().manual_seed(seed)


@pytest.mark.parametrize("name", sorted(BUILDERS))
def test_generator_reproduces_and_leaves_the_global_rng_alone(name):
    build = BUILDERS[name]
    before = torch.get_rng_state()
    a, b, c = build(generator=_gen(5)), build(generator=_gen(5)), build(generator=_gen(6))
    if name != "LDStackExact":  # its optional read-out (absent here) takes torch's own initialiser
        assert torch.equal(torch.get_rng_state(), before)
    assert all(torch.equal(x, y) for x, y in zip(_state(a), _state(b)))
    assert not all(torch.equal(x, y) for x, y in zip(_state(a), _state(c)))


@pytest.mark.parametrize("name", sorted(BUILDERS))
def test_dtype_and_device(name):
    build = BUILDERS[name]
    default = build(generator=_gen(1))
    assert {p.dtype for p in default.parameters()} == {torch.get_default_dtype()}
    double = build(generator=_gen(1), dtype=torch.float64)
    assert {p.dtype for p in double.parameters()} == {torch.float64}
    for x, y in zip(_state(default), _state(double)):  # the same draws, in another precision
        torch.testing.assert_close(x.double(), y, rtol=1e-6, atol=1e-7)
    meta = build(generator=_gen(1), device="meta")
    assert {p.device.type for p in meta.parameters()} == {"meta"}
    with pytest.raises(ValueError, match="real floating dtype"):
        build(dtype=torch.int32)
    with pytest.raises(TypeError, match="dtype must be a torch.dtype"):
        build(dtype="float64")
    with pytest.raises(TypeError, match="generator must be a torch.Generator"):
        build(generator=3)


def test_seed_stays_an_alias_of_generator_for_the_cells():
    a, b = RNN(2, 4, seed=3), RNN(2, 4, generator=_gen(3))
    assert all(torch.equal(x, y) for x, y in zip(_state(a), _state(b)))
    with pytest.raises(ValueError, match="generator or seed"):
        RNN(2, 4, seed=3, generator=_gen(3))
    with pytest.raises(TypeError, match="seed must be an int"):
        RNN(2, 4, seed=1.5)


def test_memory_models_without_generator_draw_as_before():
    """generator=None leaves torch's initialisers on the global RNG: the models' first version's draws."""
    torch.manual_seed(0)
    a = MemoryLSTM(3, 3, "stack", 8, 4, 4)
    torch.manual_seed(0)
    emb = torch.nn.Embedding(4 + 3 + 3, 4, padding_idx=0)
    assert torch.equal(a.embedding.weight, emb.weight)


def test_helpers():
    assert resolve_generator() is None
    g = _gen(0)
    assert resolve_generator(g) is g
    assert torch.equal(torch.rand(3, generator=resolve_generator(seed=4)), torch.rand(3, generator=_gen(4)))
    assert resolve_dtype() is torch.get_default_dtype() and resolve_dtype(torch.float64) is torch.float64
    with seeded_init(None):
        pass
    state = torch.get_rng_state()
    with seeded_init(_gen(1)):
        x = torch.rand(2)
    with seeded_init(_gen(1)):
        assert torch.equal(torch.rand(2), x)
    assert torch.equal(torch.get_rng_state(), state)


def test_the_four_ops_and_their_references_at_the_top_level():
    import rnnlab
    import rnnlab.kernels as kernels

    for name in ("linear_scan", "modal_stack_scan", "neural_memory", "recurrent_cell"):
        for n in (name, name + "_ref"):
            assert n in rnnlab.__all__ and getattr(rnnlab, n) is getattr(kernels, n), n


@pytest.mark.parametrize("name", ["SparseComboNet", "SVDComboNet"])
def test_the_combo_nets_take_generator_and_device(name):
    from rnnlab.models import SparseComboNet, SVDComboNet

    cls = {"SparseComboNet": SparseComboNet, "SVDComboNet": SVDComboNet}[name]
    kw = {"seed": 0} if name == "SparseComboNet" else {}      # the module sampler's own seed
    before = torch.get_rng_state()
    a, b = (cls(1, [4, 4], 2, generator=_gen(5), **kw) for _ in range(2))
    c = cls(1, [4, 4], 2, generator=_gen(6), **kw)
    assert torch.equal(torch.get_rng_state(), before)
    assert all(torch.equal(x, y) for x, y in zip(_state(a), _state(b)))
    assert not all(torch.equal(x, y) for x, y in zip(_state(a), _state(c)))
    meta = cls(1, [4, 4], 2, generator=_gen(5), device="meta", **kw)
    assert {p.device.type for p in meta.parameters()} == {"meta"}
    with pytest.raises(TypeError, match="generator must be a torch.Generator"):
        cls(1, [4, 4], 2, generator=3, **kw)


def test_the_imitation_net_keeps_seed_and_takes_generator_and_device():
    from rnnlab.models.policy import ImitationNet

    torch.manual_seed(123)
    assert all(torch.equal(x, y) for x, y in zip(ImitationNet(4, 2, "gru").parameters(),
                                                 ImitationNet(4, 2, "gru", seed=0).parameters()))
    before = torch.get_rng_state()
    a = ImitationNet(4, 2, "lstm", generator=_gen(3))
    b = ImitationNet(4, 2, "lstm", generator=_gen(3), device="meta")
    assert torch.equal(torch.get_rng_state(), before)
    assert {p.device.type for p in b.parameters()} == {"meta"}
    assert all(torch.equal(x, y) for x, y in zip(a.parameters(), ImitationNet(4, 2, "lstm", generator=_gen(3)).parameters()))
    with pytest.raises(ValueError, match="not both"):
        ImitationNet(4, 2, "gru", seed=1, generator=_gen(3))

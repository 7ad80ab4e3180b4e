"""Tests of ``neural_memory`` and ``NeuralMemory``: hand-worked examples, the
backends and the hand-written backward against autograd through the
reference ``neural_memory_ref``, the step API against the whole-sequence op,
memory use, validation.

The CUDA kernels are tested in ``tests/cudasim`` (numba's simulator, separate
process) and compiled for real GPUs in ``tests/test_ptx.py``.
"""
import pytest
import torch
from hypothesis import given, settings, strategies as st

import rnnlab
from kernel_cases import F64, TOL, backends, memory_case, memory_shapes as _shapes  # noqa: F401
from rnnlab.kernels import NeuralMemory, neural_memory, neural_memory_backward_ref, neural_memory_ref

KINDS = ["stack", "queue", "deque"]
BACKENDS = backends()


def _inputs(kind, B, T, m, dtype, seed, controls="uniform", requires_grad=False):
    """Random values and controls (:func:`kernel_cases.memory_case`)."""
    out = memory_case(kind, B, T, m, dtype, seed, controls)
    return [x.requires_grad_() for x in out] if requires_grad else out


def _loss_weights(r, s, seed):
    gen = torch.Generator().manual_seed(seed + 1)
    return (torch.randn(r.shape, generator=gen, dtype=F64).to(r.dtype),
            torch.randn(s.shape, generator=gen, dtype=F64).to(s.dtype))


def _grads(fn, v, d, u, seed):
    v, d, u = (x.detach().clone().requires_grad_() for x in (v, d, u))
    r, s = fn(v, d, u)
    gr, gs = _loss_weights(r, s, seed)
    ((r * gr).sum() + (s * gs).sum()).backward()
    return (r.detach(), s.detach()), (v.grad, d.grad, u.grad)


def _run_steps(kind, v, d, u, backend):
    """The whole sequence through NeuralMemory.step: (r, s) stacked over time."""
    B, T = d.shape[:2]
    mem = NeuralMemory(kind, B, T, v.shape[-1], dtype=v.dtype, backend=backend)
    reads, strengths = [], []
    for t in range(T):
        reads.append(mem.step(v[:, t], d[:, t], u[:, t]))
        strengths.append(mem.strengths)
    assert mem.t == T
    return torch.stack(reads, 1), torch.stack(strengths, 1)


# ---------------------------------------------------------------------------
# Hand-worked examples (values computed by hand in the comments).
# ---------------------------------------------------------------------------

E = torch.eye(4, dtype=F64)     # one-hot values: a read is its vector of weights


def _all_ways(kind, v, d, u):
    """(r, s) of the reference, of every backend and of the step API, all equal."""
    out = [neural_memory_ref(kind, v, d, u)]
    out += [neural_memory(kind, v, d, u, backend=b) for b in BACKENDS]
    out += [_run_steps(kind, v, d, u, b) for b in BACKENDS]
    return out


@pytest.mark.parametrize("kind, want_s, want_r", [
    # push v1 (0.8); pop 0.1, push v2 (0.5); pop 0.9, push v3 (0.9)
    ("stack",
     # t=2: v1 0.8-0.1 = 0.7; t=3: v2 max(0, 0.5-0.9) = 0, v1 0.7-(0.9-0.5) = 0.3
     [[0.8, 0, 0], [0.7, 0.5, 0], [0.3, 0, 0.9]],
     # r2 = 0.5 v2 + min(0.7, 1-0.5) v1; r3 = 0.9 v3 + 0 v2 + min(0.3, 0.1) v1
     [[0.8, 0, 0], [0.5, 0.5, 0], [0.1, 0, 0.9]]),
    ("queue",
     # pops from the front: t=2 v1 0.7; t=3 v1 max(0, 0.7-0.9) = 0, v2 0.5-(0.9-0.7) = 0.3
     [[0.8, 0, 0], [0.7, 0.5, 0], [0, 0.3, 0.9]],
     # r2 = 0.7 v1 + min(0.5, 0.3) v2; r3 = 0.3 v2 + min(0.9, 0.7) v3
     [[0.8, 0, 0], [0.7, 0.3, 0], [0, 0.3, 0.7]]),
])
def test_stack_and_queue_by_hand(kind, want_s, want_r):
    v = E[None, :3, :3]
    d = torch.tensor([[0.8, 0.5, 0.9]], dtype=F64)
    u = torch.tensor([[0.0, 0.1, 0.9]], dtype=F64)
    for r, s in _all_ways(kind, v, d, u):
        torch.testing.assert_close(s, torch.tensor([want_s], dtype=F64))
        torch.testing.assert_close(r, torch.tensor([want_r], dtype=F64))


@pytest.mark.parametrize("kind", ["stack", "queue"])
def test_push_one_then_pop_one(kind):
    v = torch.tensor([[[3.0], [5.0]]], dtype=F64)
    d = torch.tensor([[1.0, 0.0]], dtype=F64)
    u = torch.tensor([[0.0, 1.0]], dtype=F64)
    for r, s in _all_ways(kind, v, d, u):
        assert s.tolist() == [[[1.0, 0.0], [0.0, 0.0]]]
        assert r.tolist() == [[[3.0], [0.0]]]


def test_deque_by_hand():
    # T = 2: the bottom row of step 0 is column 1, its top row column 2; step 1: columns 0 and 3.
    # step 0: push a on top (0.6), b at the bottom (0.3): s = [0, 0.3, 0.6, 0]
    #   r_top = 0.6 a + min(0.3, 0.4) b;  r_bot = 0.3 b + min(0.6, 0.7) a
    # step 1: top pop 0.5: a 0.1, b 0.3; bottom pop 0.2: b 0.1, a 0.1 (0.2 - 0.3 < 0);
    #   push c on top (0.9), e at the bottom (0.1): s = [0.1, 0.1, 0.1, 0.9]
    #   r_top = 0.9 c + min(0.1, 0.1) a;  r_bot = 0.1 e + 0.1 b + 0.1 a + min(0.9, 0.7) c
    a, b, c, e = E
    v = torch.stack([torch.stack([a, b]), torch.stack([c, e])])[None]
    d = torch.tensor([[[0.6, 0.3], [0.9, 0.1]]], dtype=F64)
    u = torch.tensor([[[0.0, 0.0], [0.5, 0.2]]], dtype=F64)
    want_s = torch.tensor([[[0, 0.3, 0.6, 0], [0.1, 0.1, 0.1, 0.9]]], dtype=F64)
    want_r = torch.stack([torch.stack([0.6 * a + 0.3 * b, 0.3 * b + 0.6 * a]),
                          torch.stack([0.9 * c + 0.1 * a, 0.1 * e + 0.1 * b + 0.1 * a + 0.7 * c])])[None]
    for r, s in _all_ways("deque", v, d, u):
        torch.testing.assert_close(s, want_s)
        torch.testing.assert_close(r, want_r)


def test_deque_bottom_pop_reaches_a_value_pushed_on_top():
    # step 0: push x on top only; step 1: pop 1 from the bottom: x is gone
    v = torch.tensor([[[[7.0], [0.0]], [[0.0], [0.0]]]], dtype=F64)
    d = torch.tensor([[[1.0, 0.0], [0.0, 0.0]]], dtype=F64)
    u = torch.tensor([[[0.0, 0.0], [0.0, 1.0]]], dtype=F64)
    for r, s in _all_ways("deque", v, d, u):
        assert s.tolist() == [[[0, 0, 1, 0], [0, 0, 0, 0]]]
        assert r.tolist() == [[[[7.0], [7.0]], [[0.0], [0.0]]]]


def test_gradients_by_hand():
    # stack, one step: r = min(d, 1) v = d v, so dr/dv = d and dr/dd = v (eq. 15, 14)
    v = torch.tensor([[[2.0, -1.0]]], dtype=F64, requires_grad=True)
    d = torch.tensor([[0.25]], dtype=F64, requires_grad=True)
    u = torch.tensor([[0.5]], dtype=F64, requires_grad=True)
    for backend in BACKENDS:
        r, _ = neural_memory("stack", v, d, u, backend=backend)
        gv, gd, gu = torch.autograd.grad(r.sum(), (v, d, u))
        assert gv.tolist() == [[[0.25, 0.25]]] and gd.tolist() == [[1.0]] and gu.tolist() == [[0.0]]


# ---------------------------------------------------------------------------
# Backends and the hand-written backward against autograd through the reference.
# ---------------------------------------------------------------------------

cases = st.fixed_dictionaries(dict(
    kind=st.sampled_from(KINDS),
    B=st.integers(1, 3),
    T=st.integers(1, 9),
    m=st.integers(1, 5),
    dtype=st.sampled_from([torch.float32, torch.float64]),
    controls=st.sampled_from(["uniform", "grid"]),
    seed=st.integers(0, 2**31 - 1),
))


@settings(max_examples=60, deadline=None, derandomize=True)
@given(case=cases)
def test_backends_match_autograd_through_reference(case):
    kind, dtype, seed = case["kind"], case["dtype"], case["seed"]
    v, d, u = _inputs(kind, case["B"], case["T"], case["m"], dtype, seed, case["controls"])
    (r_ref, s_ref), g_ref = _grads(lambda v, d, u: neural_memory_ref(kind, v, d, u), v, d, u, seed)
    gr, gs = _loss_weights(r_ref, s_ref, seed)
    g_hand = neural_memory_backward_ref(kind, v, d, u, s_ref, gr, gs)
    for name, x, y in zip("vdu", g_hand, g_ref):
        torch.testing.assert_close(x, y, **TOL[dtype], msg=lambda m: f"hand backward, grad {name}: {m}")
    for backend in BACKENDS:
        (r, s), g = _grads(lambda v, d, u: neural_memory(kind, v, d, u, backend=backend), v, d, u, seed)
        assert r.shape == r_ref.shape and s.shape == s_ref.shape and r.dtype == dtype
        torch.testing.assert_close(r, r_ref, **TOL[dtype])
        torch.testing.assert_close(s, s_ref, **TOL[dtype])
        for name, x, y in zip("vdu", g, g_ref):
            torch.testing.assert_close(x, y, **TOL[dtype], msg=lambda m: f"{backend}, grad {name}: {m}")


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("B, T, m", [(1, 1, 1), (2, 1, 3), (1, 5, 1)])
def test_edge_shapes(kind, backend, B, T, m):
    v, d, u = _inputs(kind, B, T, m, F64, B * 100 + T * 10 + m)
    (r, s), g = _grads(lambda v, d, u: neural_memory(kind, v, d, u, backend=backend), v, d, u, 0)
    (r_ref, s_ref), g_ref = _grads(lambda v, d, u: neural_memory_ref(kind, v, d, u), v, d, u, 0)
    torch.testing.assert_close(r, r_ref, **TOL[F64])
    torch.testing.assert_close(s, s_ref, **TOL[F64])
    for x, y in zip(g, g_ref):
        torch.testing.assert_close(x, y, **TOL[F64])


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("fill", [0.0, 1.0, 0.5])
def test_controls_at_the_ends_and_ties(kind, fill):
    """Every control 0, 1 or 0.5 (reads and pops exactly exhaust rows: ties everywhere),
    and a mix of 0 and 1: the left-argument derivative in every backend."""
    B, T, m = 2, 6, 3
    v, d, _ = _inputs(kind, B, T, m, F64, 7)
    k = torch.arange(d.numel()).reshape(d.shape)
    mixes = [(torch.full_like(d, fill), torch.full_like(d, fill)), ((k % 2).to(F64), (k % 3 == 0).to(F64))]
    for d, u in mixes:
        (r_ref, s_ref), g_ref = _grads(lambda v, d, u: neural_memory_ref(kind, v, d, u), v, d, u, 3)
        for backend in BACKENDS:
            (r, s), g = _grads(lambda v, d, u: neural_memory(kind, v, d, u, backend=backend), v, d, u, 3)
            torch.testing.assert_close(r, r_ref, **TOL[F64])
            torch.testing.assert_close(s, s_ref, **TOL[F64])
            for name, x, y in zip("vdu", g, g_ref):
                torch.testing.assert_close(x, y, **TOL[F64], msg=lambda msg: f"{backend} grad {name}: {msg}")


def test_noncontiguous_inputs():
    v, d, u = _inputs("queue", 3, 5, 4, F64, 11)
    vt = v.transpose(0, 1).contiguous().transpose(0, 1)
    dt, ut = d.t().contiguous().t(), u.t().contiguous().t()
    assert not vt.is_contiguous() and not dt.is_contiguous()
    for backend in BACKENDS:
        for x, y in zip(neural_memory("queue", vt, dt, ut, backend=backend), neural_memory_ref("queue", v, d, u)):
            torch.testing.assert_close(x, y, **TOL[F64])


# ---------------------------------------------------------------------------
# gradcheck in float64, away from kinks.
# ---------------------------------------------------------------------------

@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("backend", BACKENDS)
def test_gradcheck_op(kind, backend):
    v, d, u = _inputs(kind, 2, 5, 3, F64, 5, "interior", requires_grad=True)
    assert torch.autograd.gradcheck(lambda v, d, u: neural_memory(kind, v, d, u, backend=backend), (v, d, u))


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("backend", BACKENDS)
def test_gradcheck_steps(kind, backend):
    v, d, u = _inputs(kind, 2, 4, 2, F64, 6, "interior", requires_grad=True)
    assert torch.autograd.gradcheck(lambda v, d, u: _run_steps(kind, v, d, u, backend), (v, d, u))


# ---------------------------------------------------------------------------
# The step API.
# ---------------------------------------------------------------------------

@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_steps_equal_the_whole_sequence(kind, backend, dtype):
    v, d, u = _inputs(kind, 3, 7, 4, dtype, 21, "grid")
    (r, s), g = _grads(lambda v, d, u: neural_memory(kind, v, d, u, backend=backend), v, d, u, 1)
    (r2, s2), g2 = _grads(lambda v, d, u: _run_steps(kind, v, d, u, backend), v, d, u, 1)
    torch.testing.assert_close(r2, r, **TOL[dtype])
    torch.testing.assert_close(s2, s, **TOL[dtype])
    for x, y in zip(g2, g):
        torch.testing.assert_close(x, y, **TOL[dtype])


@pytest.mark.parametrize("backend", BACKENDS)
def test_steps_with_feedback_and_shorter_sequence(backend):
    """Controls that depend on the previous read, fewer steps than max_steps,
    and a loss on some reads only: the gradients equal autograd through the reference."""
    B, T, m, max_steps = 2, 5, 3, 8
    gen = torch.Generator().manual_seed(4)
    W = torch.randn(m, m, generator=gen, dtype=F64, requires_grad=True)
    x = torch.randn(B, T, m, generator=gen, dtype=F64)

    def run(step):
        r = torch.zeros(B, m, dtype=F64)
        reads = []
        for t in range(T):
            h = torch.tanh(x[:, t] + r @ W)
            r = step(h, torch.sigmoid(h[:, 0]), torch.sigmoid(h[:, 1]))
            reads.append(r)
        return (reads[1] ** 2).sum() + reads[-1].sum()

    mem = NeuralMemory("stack", B, max_steps, m, dtype=F64, backend=backend)
    g = torch.autograd.grad(run(mem.step), W)[0]

    vs, ds, us = [], [], []

    def ref_step(v, d, u):      # the reference over the steps so far
        vs.append(v), ds.append(d), us.append(u)
        r, _ = neural_memory_ref("stack", torch.stack(vs, 1), torch.stack(ds, 1), torch.stack(us, 1))
        return r[:, -1]
    g_ref = torch.autograd.grad(run(ref_step), W)[0]
    torch.testing.assert_close(g, g_ref, **TOL[F64])


@pytest.mark.parametrize("backend", BACKENDS)
def test_second_and_partial_backward(backend):
    v, d, u = _inputs("deque", 2, 5, 3, F64, 8, requires_grad=True)
    r, s = _run_steps("deque", v, d, u, backend)
    loss = (r ** 2).sum() + s.sum()
    g1 = torch.autograd.grad(loss, (v, d, u), retain_graph=True)
    partial = torch.autograd.grad(r[:, 3].sum(), v, retain_graph=True)[0]       # reaches steps 3 .. 0 only
    g2 = torch.autograd.grad(loss, (v, d, u), retain_graph=True)
    for x, y in zip(g1, g2):
        torch.testing.assert_close(x, y, rtol=0, atol=0)
    r_ref, _ = neural_memory_ref("deque", v, d, u)
    torch.testing.assert_close(partial, torch.autograd.grad(r_ref[:, 3].sum(), v, retain_graph=True)[0], **TOL[F64])
    torch.testing.assert_close(g1[0], torch.autograd.grad((r_ref ** 2).sum(), v)[0], **TOL[F64])


def test_step_api_stores_values_once():
    """Autograd saves per step only strengths and controls: the same bytes whatever
    the value size m; the values live in the object's buffers, B x R x m each."""
    def saved_bytes(kind, m, T=12, B=2):
        storages = {}

        def pack(x):
            storages[x.untyped_storage().data_ptr()] = x.untyped_storage().nbytes()
            return x

        v, d, u = _inputs(kind, B, T, m, F64, 0, requires_grad=True)
        with torch.autograd.graph.saved_tensors_hooks(pack, lambda x: x):
            mem = NeuralMemory(kind, B, T, m, dtype=F64, backend=BACKENDS[-1])
            out = [mem.step(v[:, t], d[:, t], u[:, t]) for t in range(T)]
        own = mem.value_buffer_bytes()
        inputs = {x.untyped_storage().data_ptr() for x in (v, d, u)}
        saved = sum(n for p, n in storages.items() if p not in inputs)
        torch.stack(out).sum().backward()
        assert mem.value_buffer_bytes() == own                  # the gradient buffer is freed after backward
        return saved, own

    for kind in KINDS:
        H = 2 if kind == "deque" else 1
        s1, own1 = saved_bytes(kind, 1)
        s64, own64 = saved_bytes(kind, 64)
        assert s1 == s64, (kind, s1, s64)                       # nothing saved scales with m
        assert own64 == 2 * H * 12 * 64 * 8                    # values, per row once (no gradient buffer yet)
        # s_t (B x W) of every step, the initial zeros, and d_t, u_t (B x H) per step
        assert s64 <= ((12 + 1) * 2 * H * 12 + 2 * 12 * 2 * H) * 8


def test_step_api_guards():
    mem = NeuralMemory("queue", 2, 2, 3, backend="torch")
    v, d = torch.zeros(2, 3), torch.full((2,), 0.5)
    with pytest.raises(ValueError, match=r"v_t must have shape \(2, 3\)"):
        mem.step(torch.zeros(2, 2, 3), d, d)
    with pytest.raises(ValueError, match="d_t must have shape"):
        mem.step(v, torch.zeros(2, 2), d)
    with pytest.raises(TypeError, match="dtype"):
        mem.step(v.double(), d, d)
    with pytest.raises(ValueError, match=r"u_t must lie in \[0, 1\]"):
        mem.step(v, d, d + 1)
    mem.step(v, d, d)
    mem.step(v, d, d)
    with pytest.raises(RuntimeError, match="max_steps=2"):
        mem.step(v, d, d)
    deque = NeuralMemory("deque", 2, 3, 3)
    with pytest.raises(ValueError, match=r"v_t must have shape \(2, 2, 3\)"):
        deque.step(v, d, d)
    assert deque.strengths.shape == (2, 6) and deque.t == 0
    with pytest.raises(ValueError, match="kind"):
        NeuralMemory("heap", 2, 3, 3)
    with pytest.raises(ValueError, match="max_steps"):
        NeuralMemory("stack", 2, 0, 3)
    with pytest.raises(TypeError, match="dtype"):
        NeuralMemory("stack", 2, 3, 3, dtype=torch.float16)
    with pytest.raises(ValueError, match="backend"):
        NeuralMemory("stack", 2, 3, 3, backend="gpu")
    with pytest.raises(ValueError, match="backend='cuda' needs CUDA"):
        NeuralMemory("stack", 2, 3, 3, backend="cuda")


# ---------------------------------------------------------------------------
# Validation of the whole-sequence op.
# ---------------------------------------------------------------------------

def test_validation():
    v, d, u = _inputs("stack", 2, 3, 4, torch.float32, 0)
    vq, dq, uq = _inputs("deque", 2, 3, 4, torch.float32, 0)
    bad = [
        (ValueError, "kind must be one of", ("heap", v, d, u), {}),
        (ValueError, "kind must be one of", (None, v, d, u), {}),
        (TypeError, "v must be a torch.Tensor", ("stack", v.numpy(), d, u), {}),
        (ValueError, r"v must have shape \(B, T, m\).*shape for kind='deque'", ("stack", vq, d, u), {}),
        (ValueError, r"v must have shape \(B, T, 2, m\).*shape for a stack", ("deque", v, dq, uq), {}),
        (ValueError, r"d must have shape \(B, T, 2\)", ("deque", vq, d, uq), {}),
        (ValueError, r"u must have shape \(B, T\)", ("queue", v, d, uq), {}),
        (ValueError, "B, T, m >= 1", ("stack", v[:, :0], d[:, :0], u[:, :0]), {}),
        (ValueError, "B, T, m >= 1", ("stack", v[:0], d[:0], u[:0]), {}),
        (TypeError, "expected float32 or float64", ("stack", v.half(), d.half(), u.half()), {}),
        (TypeError, "d has dtype torch.float64", ("stack", v, d.double(), u), {}),
        (ValueError, r"d must lie in \[0, 1\]", ("stack", v, d - 1, u), {}),
        (ValueError, r"u must lie in \[0, 1\]", ("stack", v, d, u * float("nan")), {}),
        (ValueError, "backend must be one of", ("stack", v, d, u), {"backend": "numba"}),
        (ValueError, "backend='cuda' needs CUDA tensors", ("stack", v, d, u), {"backend": "cuda"}),
    ]
    for exc, match, args, kwargs in bad:
        with pytest.raises(exc, match=match):
            neural_memory(*args, **kwargs)


def test_exports():
    assert rnnlab.neural_memory is neural_memory
    assert "neural_memory" in rnnlab.__all__
    import rnnlab.kernels as k
    assert {"neural_memory", "NeuralMemory", "neural_memory_ref"} <= set(k.__all__)

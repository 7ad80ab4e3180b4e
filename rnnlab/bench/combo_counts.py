"""The work of a Sparse Combo Net's training step, counted, and what a fused kernel could gain.

The analysis half of the ``combo`` benchmark (:mod:`rnnlab.bench.combo`, which
times the rows named here and re-exports these names): no timing, no model,
only counts and arithmetic on the times of one run.

Operation counts (:func:`macs_per_time_step`): multiply-accumulates per time step of the
forward pass by component: the input projection ``B n i``, the recurrent ``W`` product
(``B n s`` as ``p`` blocks, ``B n^2`` dense), the feedback ``L`` (``B n^2`` as computed;
``B n (n - s)`` structurally, since ``B`` is strictly lower block-triangular and so ``L``
has zero diagonal blocks), and a count of elementwise operations (not MACs). Per training
step (:func:`train_macs`) the **convention** is forward x 3 (each product's backward is two
products of the same size: the gradient of its input and of its weight), plus the readout;
``train_macs(...)["exact"]`` counts instead only the gradients autograd computes (a frozen ``W`` or
the input ``x`` needs none: x 2). The Adam step, the readout's backward and the SVD modules'
rebuild are ``O(n^2)`` per training step, not per time step, and left out.

What a fused kernel could gain, from the numbers of one run (:func:`kernel_estimate`, in
the ``combo`` row's ``kernel_estimate`` and the table's notes): the step's time splits
into the per-step overhead (the ``overhead`` row), the ``L`` product (``combo -
combo_no_l``), and the rest (the block product, elementwise work). A fused kernel (one call
for the sequence forward, one backward, like ``torch.nn.RNN``) removes at most the
overhead: ``fused_s = combo - overhead``; no kernel can go below the products' compute
floor ``ideal_s`` (the exact MAC count at the ``floor`` row's rate). The block-diagonal
``W`` is already used (``combo_dense_w / combo`` is what using it gains); since ``W``'s
diagonal blocks and ``L``'s off-diagonal ones do not overlap, a kernel could even apply
both as one ``n x n`` matrix (``relu(x)`` on the diagonal blocks, ``x`` off them): exactly
the dense RNN's ``n^2`` per step, which is why the benchmark's target (the combo step within
1.5x of the dense Euler RNN's) is justified.

With ``B = batch``, ``p = modules``, ``s = module_size``, ``n = p s``, ``i = input_size``
and ``o = output_size`` (1 and 10 by default: sequential MNIST).
"""

__all__ = ["ELEMENTWISE", "INPUT_SIZE", "OUTPUT_SIZE", "macs_per_time_step", "train_macs", "kernel_estimate"]

INPUT_SIZE = 1
OUTPUT_SIZE = 10


# ---------------------------------------------------------------- operation counts

#: Elementwise operations per unit and time step of each loop (not MACs): combo: relu, -x, + W.., + L.., + u,
#: alpha *, x + (7); the dense Euler loop has no L (6); torch.nn.RNN: + W_hh h, + biases, relu (about 3).
ELEMENTWISE = {"combo": 7, "combo_dense_w": 7, "combo_no_l": 6, "overhead": 7, "dense_euler": 6, "nn_rnn": 3,
               "svd_combo": 7}


def macs_per_time_step(kind, *, batch, modules, module_size, input_size=INPUT_SIZE):
    """Multiply-accumulates of one time step of the forward pass of row ``kind``, by component.

    With ``B = batch``, ``n = modules * module_size``, ``s = module_size``, ``i = input_size``:
    ``input`` ``B n i``; ``w`` ``B n s`` for the block-diagonal ``W`` applied as blocks (``combo``,
    ``combo_no_l``, ``svd_combo``, ``overhead``), ``B n^2`` applied densely (``combo_dense_w``,
    ``dense_euler``, ``nn_rnn``); ``l`` ``B n^2`` for the combo nets' dense ``L`` product (0 without
    it); ``l_structural`` ``B n (n - s)``, the products a kernel skipping ``L``'s zero diagonal blocks
    would do; ``elementwise`` the count of elementwise operations ``B n k`` (:data:`ELEMENTWISE`, not
    MACs); ``total`` = ``input + w + l``. Returns a dict of ints.
    """
    if kind not in ELEMENTWISE:
        raise ValueError(f"macs_per_time_step: kind must be one of {sorted(ELEMENTWISE)}, got {kind!r}")
    B, p, s, i = (int(v) for v in (batch, modules, module_size, input_size))
    if min(B, p, s, i) < 1:
        raise ValueError(f"macs_per_time_step: batch, modules, module_size and input_size must be >= 1, "
                         f"got {batch}, {modules}, {module_size}, {input_size}")
    n = p * s
    blocks = kind in ("combo", "combo_no_l", "svd_combo", "overhead")
    has_l = kind in ("combo", "combo_dense_w", "svd_combo", "overhead")
    out = {"input": B * n * i, "w": B * n * (s if blocks else n), "l": B * n * n if has_l else 0,
           "l_structural": B * n * (n - s) if has_l else 0, "elementwise": B * n * ELEMENTWISE[kind]}
    out["total"] = out["input"] + out["w"] + out["l"]
    return out


def train_macs(kind, *, T, batch, modules, module_size, input_size=INPUT_SIZE, output_size=OUTPUT_SIZE):
    """MACs of one training step of row ``kind`` over ``T`` time steps: ``{"x3", "exact", "forward"}``.

    ``forward``: ``T`` times :func:`macs_per_time_step`'s ``total`` plus the readout ``B n o``.
    ``x3`` (the convention): ``3 * forward``. ``exact``: each product counted once more for each
    gradient autograd computes: the input projection x 2 (``x`` needs no gradient), a frozen ``W``
    (the Sparse Combo Net's modules, a buffer) x 2, a trained ``W`` and ``L`` (through ``B``) x 3,
    the readout x 3.
    """
    c = macs_per_time_step(kind, batch=batch, modules=modules, module_size=module_size, input_size=input_size)
    B, n = int(batch), int(modules) * int(module_size)
    readout = B * n * int(output_size)
    w_factor = 2 if kind in ("combo", "combo_dense_w", "combo_no_l", "overhead") else 3
    forward = int(T) * c["total"] + readout
    exact = int(T) * (2 * c["input"] + w_factor * c["w"] + 3 * c["l"]) + 3 * readout
    return {"forward": forward, "x3": 3 * forward, "exact": exact}


# ---------------------------------------------------------------- the estimate

def kernel_estimate(t, macs, *, T, batch, n):
    """What a fused kernel could gain, from the times ``t`` (``{row: seconds}``) of one run.

    ``macs``: ``{row: train_macs(row)}``. Returns a dict (None where a time is missing): ``rate_macs_per_s``
    (the ``floor`` row's products: ``3 T B n^2 / floor``); ``ideal_s`` (the combo row's exact MACs at that
    rate) and ``fraction_of_ideal`` (``ideal_s / combo``); ``overhead_s``, ``overhead_share``; ``l_s``
    (``combo - combo_no_l``), ``l_share``; ``w_dense_extra_s`` (``combo_dense_w - combo``: what the block
    product saves); ``fused_s`` (``max(combo - overhead, ideal_s)``, at most ``combo``: the step without the
    per-step overhead) and ``fused_gain`` (``combo / fused_s``); ``bound_gain`` (``combo / ideal_s``, what no kernel
    can beat); ``dense_euler_fraction_of_ideal`` (the same for the dense Euler RNN, for comparison).
    """
    def get(k):
        v = t.get(k)
        return v if v is not None and v > 0 else None

    combo, floor = get("combo"), get("floor")
    out = dict.fromkeys(("rate_macs_per_s", "ideal_s", "fraction_of_ideal", "overhead_s", "overhead_share",
                         "l_s", "l_share", "w_dense_extra_s", "fused_s", "fused_gain", "bound_gain",
                         "dense_euler_ideal_s", "dense_euler_fraction_of_ideal"))
    if combo is None:
        return out
    if floor is not None:
        rate = 3 * int(T) * int(batch) * int(n) ** 2 / floor
        out["rate_macs_per_s"] = rate
        out["ideal_s"] = macs["combo"]["exact"] / rate
        out["fraction_of_ideal"] = out["ideal_s"] / combo
        out["bound_gain"] = combo / out["ideal_s"]
        if get("dense_euler") is not None:
            out["dense_euler_ideal_s"] = macs["dense_euler"]["exact"] / rate
            out["dense_euler_fraction_of_ideal"] = out["dense_euler_ideal_s"] / t["dense_euler"]
    if get("overhead") is not None:
        out["overhead_s"] = t["overhead"]
        out["overhead_share"] = t["overhead"] / combo
        fused = combo - t["overhead"]
        if out["ideal_s"] is not None:
            fused = max(fused, out["ideal_s"])
        fused = min(fused, combo)
        if fused > 0:
            out["fused_s"] = fused
            out["fused_gain"] = combo / fused
    if get("combo_no_l") is not None:
        out["l_s"] = combo - t["combo_no_l"]
        out["l_share"] = out["l_s"] / combo
    if get("combo_dense_w") is not None:
        out["w_dense_extra_s"] = t["combo_dense_w"] - combo
    return out

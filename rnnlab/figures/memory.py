"""Schematics of the neural-memory chapter (``book/memory``).

The first three draw the worked examples of ``01_stack_queue_deque``, step by
step (pop, push, read), with the strengths computed by the package's own
reference (:mod:`rnnlab.kernels.memory_torch`): the stack and the queue driven
by :data:`EXAMPLE_D`, :data:`EXAMPLE_U`, and the deque by the same controls on
top and :data:`DEQUE_D_BOTTOM`, :data:`DEQUE_U_BOTTOM` at the bottom (the
notebook runs the same controls through ``rnnlab.neural_memory`` and checks
that they give these numbers). ``controller`` draws one step of a
Stack-LSTM (``rnnlab.models.MemoryLSTM._step``); ``pop_backward`` the running
sums of the pop's backward pass on the example of ``02_backward_dynamics``, and
``read_backward`` those of the read that follows it (the same rows after a push of
:data:`READ_D`, under the gradients :data:`READ_GAMMA`). ``memory_loop`` draws what drives
a memory (a controller emitting d_t, u_t, v_t and seeing the read r_t at the next step),
``deque_columns`` the deque's worked example in the package's 2T fixed rows, and
``read_intervals`` the read of ``read_backward`` as depth intervals, with a little strength
added above and at the row where the read runs out. ``step_graph`` draws one step of a stack as a
computational graph, forwards and backwards (eq. eq-mem-bptt).
"""
from __future__ import annotations

import numpy as np
from matplotlib.patches import Rectangle

from .drawing import arrow as _arrow, box as _box, canvas as _canvas  # the drawing helpers the chapters share

__all__ = ["EXAMPLE_D", "EXAMPLE_U", "DEQUE_D_BOTTOM", "DEQUE_U_BOTTOM", "BACKWARD_S", "BACKWARD_U",
           "BACKWARD_G", "stack_steps", "queue_steps", "deque_steps", "controller", "pop_backward",
           "READ_D", "READ_GAMMA", "read_backward", "backward_read_example", "example_steps",
           "example_deque", "stack_intervals", "reversal_controls", "reversal_timing", "memory_loop",
           "deque_columns", "READ_EPS", "read_intervals", "step_graph"]

EXAMPLE_D = (0.8, 0.5, 0.9)
"""The push strengths d_1, d_2, d_3 of the worked example of book/memory/01_stack_queue_deque."""
EXAMPLE_U = (0.0, 0.1, 0.9)
"""The pop strengths u_1, u_2, u_3 of the worked example."""
DEQUE_D_BOTTOM = (0.6, 0.0, 0.4)
"""The deque's bottom pushes in the worked example (its top is driven by EXAMPLE_D, EXAMPLE_U)."""
DEQUE_U_BOTTOM = (0.0, 0.3, 0.5)
"""The deque's bottom pops in the worked example."""
BACKWARD_S = (0.3, 0.5, 0.4)
"""The strengths (bottom first) before the pop of the backward example of 02_backward_dynamics."""
BACKWARD_U = 0.6
"""The pop strength of the backward example."""
BACKWARD_G = (1.0, -0.5, 2.0)
"""The gradient dL/ds reaching the strengths after the pop, in the backward example."""
READ_D = 0.6
"""The push after the pop of the backward example, before the read of ``read_backward``."""
READ_GAMMA = (2.0, -1.0, 0.5, 1.0)
"""gamma_i = <dL/dr, V[i]> of the read example, bottom row first: what a unit of weight on row i is
worth to the loss."""

_INK = "#333333"
_BLUE, _BLUE_FILL = "#1f4e79", "#9cc3e6"
_GREEN, _GREEN_FILL = "#2f7a2f", "#8fd18f"
_ORANGE, _ORANGE_FILL = "#c25e00", "#f7c08a"
_RED = "#b22222"
_PURPLE, _PURPLE_FILL = "#5b3a8c", "#cdb8e6"
_GREY, _GREY_FILL = "#999999", "#f2f2f2"
_SUB = str.maketrans("0123456789", "₀₁₂₃₄₅₆₇₈₉")


def _sub(n):
    return str(n).translate(_SUB)


def _num(x, digits=2):
    text = f"{x:.{digits}f}".rstrip("0").rstrip(".")
    if text in ("-0", ""):
        text = "0"
    return text.replace("-", "−")


# ------------------------------------------------------------------ the worked examples

def example_steps(kind):
    """The stack's or the queue's worked example, step by step: a list of dicts with
    ``before``, ``popped`` (after the pop), ``after`` (after the push) and ``read``
    (the read weights), each a list of strengths, bottom (oldest) row first."""
    import torch

    from ..kernels import memory_torch as mt

    rule = "top" if kind == "stack" else "front"
    s = torch.zeros(1, 0, dtype=torch.float64)
    out = []
    for d, u in zip(EXAMPLE_D, EXAMPLE_U):
        popped = mt._pop(s, torch.tensor([u], dtype=torch.float64), rule)
        after = torch.cat([popped, torch.tensor([[d]], dtype=torch.float64)], 1)
        read = mt._read_weights(after, rule)
        out.append(dict(before=s[0].tolist(), popped=popped[0].tolist(), after=after[0].tolist(),
                        read=read[0].tolist(), d=d, u=u))
        s = after
    return out


def example_deque():
    """The deque's worked example, step by step, as :func:`example_steps` (rows bottom first;
    ``names`` labels each row by the push that wrote it), plus the bottom read ``read_bottom``
    and the intermediate ``top_popped`` (after the top pop, before the bottom pop)."""
    import torch

    from ..kernels import memory_torch as mt

    def t(x):
        return torch.tensor([x], dtype=torch.float64)

    s = torch.zeros(1, 0, dtype=torch.float64)
    names, out = [], []
    for k, (dt, ut, db, ub) in enumerate(zip(EXAMPLE_D, EXAMPLE_U, DEQUE_D_BOTTOM, DEQUE_U_BOTTOM), 1):
        top_popped = mt._pop(s, t(ut), "top")
        popped = mt._pop(top_popped, t(ub), "front")
        after = torch.cat([torch.tensor([[db]], dtype=torch.float64), popped,
                           torch.tensor([[dt]], dtype=torch.float64)], 1)
        before_names = list(names)
        names = [f"bot{_sub(k)}"] + names + [f"top{_sub(k)}"]
        out.append(dict(before=s[0].tolist(), top_popped=top_popped[0].tolist(),
                        popped=popped[0].tolist(), after=after[0].tolist(),
                        read=mt._read_weights(after, "top")[0].tolist(),
                        read_bottom=mt._read_weights(after, "front")[0].tolist(),
                        names=names, before_names=before_names, d=(dt, db), u=(ut, ub)))
        s = after
    return out


_ROW_H = 0.34          # height of one row
_BAR_W = 1.0           # width of a bar of strength 1


def _rows(ax, x, y0, strengths, names, *, fill=_BLUE_FILL, edge=_BLUE, lost=None, new=None, title="",
          numbers=True, fontsize=7.5):
    """Draw a column of rows (bottom first) with their strengths as bars from x; ``lost``:
    the strengths before a pop (drawn as a dashed outline beyond the bar), ``new``: the index
    of a freshly pushed row (drawn in green); ``fontsize``: of the labels (the title's is
    half a point larger)."""
    for i, (s, name) in enumerate(zip(strengths, names)):
        y = y0 + i * _ROW_H
        ax.add_patch(Rectangle((x, y), _BAR_W, _ROW_H * 0.8, fc=_GREY_FILL, ec="#cccccc", lw=0.6, zorder=1))
        is_new = new is not None and i == new
        if s > 1e-12:
            ax.add_patch(Rectangle((x, y), _BAR_W * s, _ROW_H * 0.8, fc=_GREEN_FILL if is_new else fill,
                                   ec=_GREEN if is_new else edge, lw=0.8, zorder=2))
        if lost is not None and i < len(lost) and lost[i] - s > 1e-12:
            ax.add_patch(Rectangle((x + _BAR_W * s, y), _BAR_W * (lost[i] - s), _ROW_H * 0.8, fc="none",
                                   ec=_RED, lw=0.9, ls=(0, (2, 1.5)), zorder=3))
        ax.text(x - 0.06, y + _ROW_H * 0.4, name, ha="right", va="center", fontsize=fontsize, color=_INK)
        if numbers:
            ax.text(x + _BAR_W + 0.06, y + _ROW_H * 0.4, _num(s), ha="left", va="center", fontsize=fontsize,
                    color=_INK)
    if not len(strengths):
        ax.text(x + _BAR_W / 2, y0 + _ROW_H * 0.4, "(empty)", ha="center", va="center", fontsize=fontsize,
                color=_GREY)
    if title:
        ax.text(x + _BAR_W / 2, y0 - 0.28, title, ha="center", va="top", fontsize=fontsize + 0.5, color=_INK,
                linespacing=1.25)


def _memory_steps(kind):
    steps = example_steps(kind)
    col, group = 1.75, 5.6
    fig, ax = _canvas(11, 2.9, (-0.45, 3 * group - 0.2), (-0.95, 1.55))
    end = "top" if kind == "stack" else "front"
    for k, st in enumerate(steps):
        x0 = k * group + 0.3
        n = k + 1
        names = [f"v{_sub(i)}" for i in range(1, n + 1)]
        ax.text(x0 + 1.9, 1.45, f"step {n}:  u{_sub(n)} = {_num(st['u'])},  d{_sub(n)} = {_num(st['d'])}",
                ha="center", va="top", fontsize=9, color=_INK, fontweight="bold")
        _rows(ax, x0, 0.0, st["popped"], names[:-1], lost=st["before"],
              title=f"pop {_num(st['u'])}\nfrom the {end}")
        _rows(ax, x0 + col, 0.0, st["after"], names, new=n - 1, title=f"push {_num(st['d'])}\nas row {n}")
        total = sum(st["read"])
        _rows(ax, x0 + 2 * col, 0.0, st["read"], names, fill=_ORANGE_FILL, edge=_ORANGE,
              title=f"read weights\n(total {_num(total)})")
        if k:
            ax.plot([x0 - 0.45, x0 - 0.45], [-0.9, 1.45], color="#dddddd", lw=0.8)
    return fig


def stack_steps():
    """The stack's worked example, three steps: at each step the rows (bottom first) with
    their strengths as bars after the pop (the popped strength dashed red), after the push
    (the new row green) and the read's weights on the rows (orange)."""
    return _memory_steps("stack")


def _intervals(ax, x, strengths, names, window, *, w=0.55, scale=1.9, fill=_BLUE_FILL, edge=_BLUE,
               hit_fill=_ORANGE_FILL, hit_edge=_ORANGE, hit_ls="-", label=""):
    """Draw the rows (``strengths`` bottom first) laid end to end from the top down as one
    vertical bar, depth 0 at y = 0 and depth z at y = -z * scale; the part of each row inside
    the depth window ``window = (lo, hi)`` is drawn with ``hit_fill``/``hit_edge``, bracketed
    on the right with ``label``."""
    depth = 0.0
    for s, name in reversed(list(zip(strengths, names))):
        if s <= 1e-12:
            continue
        top, bottom = depth, depth + s
        ax.add_patch(Rectangle((x, -bottom * scale), w, s * scale, fc=fill, ec=edge, lw=0.8, zorder=2))
        lo, hi = max(top, window[0]), min(bottom, window[1])
        if hi - lo > 1e-12:
            ax.add_patch(Rectangle((x, -hi * scale), w, (hi - lo) * scale, fc=hit_fill, ec=hit_edge, lw=0.9,
                                   ls=hit_ls, zorder=3))
        ax.text(x + w / 2, -(top + bottom) / 2 * scale, name, ha="center", va="center", fontsize=8,
                color=_INK, zorder=4)
        ax.text(x - 0.05, -bottom * scale, _num(bottom), ha="right", va="center", fontsize=7, color=_GREY)
        depth = bottom
    ax.text(x - 0.05, 0, "0", ha="right", va="center", fontsize=7, color=_GREY)
    lo, hi = window
    xb = x + w + 0.1
    ax.plot([xb, xb + 0.08, xb + 0.08, xb], [-lo * scale, -lo * scale, -hi * scale, -hi * scale],
            color=hit_edge, lw=1.0)
    ax.text(xb + 0.14, -(lo + hi) / 2 * scale, label, ha="left", va="center", fontsize=7.5, color=hit_edge,
            linespacing=1.2)


def stack_intervals():
    """The stack's worked example with the strengths laid end to end from the top down, on
    [0, total]: at each step the old rows, of which the pop removes the depths [0, u] (red),
    and the rows after the push, of which the read takes the depths [0, 1] (orange); each
    row's read weight is the length of its part inside that window."""
    steps = example_steps("stack")
    group = 3.9
    fig, ax = _canvas(11, 3.3, (-0.4, 3 * group - 0.2), (-2.75, 0.75))
    for k, st in enumerate(steps):
        x0 = k * group + 0.3
        n = k + 1
        names = [f"v{_sub(i)}" for i in range(1, n + 1)]
        ax.text(x0 + 1.55, 0.62, f"step {n}:  u{_sub(n)} = {_num(st['u'])},  d{_sub(n)} = {_num(st['d'])}",
                ha="center", va="top", fontsize=9, color=_INK, fontweight="bold")
        ax.text(x0 + 0.3, 0.22, "before the pop", ha="center", va="center", fontsize=7.5, color=_INK)
        if sum(st["before"]) > 1e-12:
            _intervals(ax, x0, st["before"], names[:-1], (0.0, st["u"]), hit_fill="white", hit_edge=_RED,
                       hit_ls=(0, (2, 1.5)), label=f"pop:\ndepth\n0 to {_num(st['u'])}")
        else:
            ax.text(x0 + 0.3, -0.3, "(empty)", ha="center", va="center", fontsize=7.5, color=_GREY)
        x1 = x0 + 1.95
        ax.text(x1 + 0.3, 0.22, "after the push", ha="center", va="center", fontsize=7.5, color=_INK)
        weights = ", ".join(f"{_num(w)} v{_sub(i)}" for i, w in reversed(list(enumerate(st["read"], 1)))
                            if w > 1e-12)
        _intervals(ax, x1, st["after"], names, (0.0, 1.0), label="read:\ndepth\n0 to 1")
        ax.text(x0 + 1.55, -2.6, f"read = {weights}", ha="center", va="center", fontsize=8, color=_ORANGE)
        if k:
            ax.plot([x0 - 0.5, x0 - 0.5], [-2.7, 0.65], color="#dddddd", lw=0.8)
    return fig


def queue_steps():
    """The same three steps for the queue: pops and reads work from the front (the oldest,
    bottom row)."""
    return _memory_steps("queue")


def deque_steps():
    """The deque's worked example: three steps, one above the other, each drawn as its two
    pops (top, then bottom), the two pushes, and the two reads (from the top in orange, from
    the bottom in purple). A row is named by the end and the step of its push: top₂ is the
    top push of step 2."""
    steps = example_deque()
    col, fs = 2.1, 9
    bands = [len(st["names"]) * _ROW_H + 1.25 for st in steps]      # rows, header, titles
    fig, ax = _canvas(7.6, 6.9, (-0.62, 4 * col + 1.45), (-sum(bands) - 0.05, 0.05))
    y_top = 0.0
    for k, (st, band) in enumerate(zip(steps, bands)):
        x0, n = 0.0, k + 1
        y0 = y_top - band + 0.85                     # the bottom row of this step
        ax.text(-0.6, y_top - 0.05, f"step {n}:  top pop {_num(st['u'][0])}, push {_num(st['d'][0])};  "
                f"bottom pop {_num(st['u'][1])}, push {_num(st['d'][1])}",
                ha="left", va="top", fontsize=fs + 0.5, color=_INK, fontweight="bold")
        _rows(ax, x0, y0, st["top_popped"], st["before_names"], lost=st["before"],
              title=f"pop {_num(st['u'][0])}\nfrom the top", fontsize=fs)
        _rows(ax, x0 + col, y0, st["popped"], st["before_names"], lost=st["top_popped"],
              title=f"pop {_num(st['u'][1])}\nfrom the bottom", fontsize=fs)
        _rows(ax, x0 + 2 * col, y0, st["after"], st["names"], new=len(st["names"]) - 1,
              title="push top\nand bottom", fontsize=fs)
        # the bottom push: green as well
        b = st["after"][0]
        if b > 1e-12:
            ax.add_patch(Rectangle((x0 + 2 * col, y0), _BAR_W * b, _ROW_H * 0.8, fc=_GREEN_FILL, ec=_GREEN,
                                   lw=0.8, zorder=2))
        _rows(ax, x0 + 3 * col, y0, st["read"], st["names"], fill=_ORANGE_FILL, edge=_ORANGE,
              title=f"top read\n(total {_num(sum(st['read']))})", fontsize=fs)
        _rows(ax, x0 + 4 * col, y0, st["read_bottom"], st["names"], fill=_PURPLE_FILL, edge=_PURPLE,
              title=f"bottom read\n(total {_num(sum(st['read_bottom']))})", fontsize=fs)
        if k:
            ax.plot([-0.6, 4 * col + 1.4], [y_top + 0.02, y_top + 0.02], color="#dddddd", lw=0.8)
        y_top -= band
    return fig


# ------------------------------------------------------------------ 04_transduction

def controller():
    """One step t of a Stack-LSTM: the input symbol and the previous read enter the
    LSTM cell; its output hₜ feeds four heads (push dₜ, pop uₜ, value vₜ, output
    oₜ); a linear layer turns oₜ into scores yₜ for the softmax; the memory pops, pushes
    and reads; the read rₜ goes to step t + 1."""
    fig, ax = _canvas(11, 4.4, (0, 11), (0, 4.4))
    y = 2.3
    _box(ax, 0.8, 3.6, 1.3, 0.5, "input symbol\niₜ", fc=_GREY_FILL)
    _box(ax, 0.8, 2.3, 1.3, 0.5, "embedding", fc=_GREY_FILL)
    _arrow(ax, (0.8, 3.35), (0.8, 2.55))
    _box(ax, 0.8, 1.0, 1.3, 0.5, "read rₜ₋₁\n(from step t−1)", fc=_ORANGE_FILL, ec=_ORANGE)
    _box(ax, 2.35, y, 0.7, 0.5, "concat", fc="white")
    _arrow(ax, (1.45, 2.3), (2.0, 2.3))
    _arrow(ax, (1.45, 1.0), (2.1, 2.05), rad=0.2)
    _box(ax, 3.85, y, 1.5, 0.9, "LSTM cell\n(hₜ₋₁, cₜ₋₁)\n→ (hₜ, cₜ)", ec=_BLUE, fc="#dbe8f5")
    _arrow(ax, (2.7, y), (3.1, y))
    ax.text(3.85, 3.05, "the controller", ha="center", fontsize=8.5, color=_BLUE)
    heads = [(r"push  $d_t = \sigma(W_d\, h_t + b_d)$", 3.8), (r"pop  $u_t = \sigma(W_u\, h_t + b_u)$", 3.05),
             (r"value  $v_t = \tanh(W_v\, h_t + b_v)$", 2.3),
             (r"output  $o_t = \tanh(W_o\, h_t + b_o)$", 1.0)]
    for text, hy in heads:
        _box(ax, 6.3, hy, 2.45, 0.5, text, fontsize=8, ec=_BLUE, fc="white")
        _arrow(ax, (4.6, y), (5.07, hy), rad=0.0)
    ax.text(4.83, 2.08, r"$h_t$", fontsize=8.5, color=_BLUE, ha="center")   # mathtext: drawn as paths
    _box(ax, 9.2, 3.05, 2.3, 1.6, "memory (stack)\n1. pop uₜ\n2. push vₜ with dₜ\n3. read rₜ\n"
         "values V, strengths s", ec=_ORANGE, fc="#fdf1e4", fontsize=8.3)
    for hy in (3.8, 3.05, 2.3):
        _arrow(ax, (7.53, hy), (8.05, min(max(hy, 2.35), 3.75)))
    _box(ax, 9.2, 1.0, 2.3, 0.5, "scores $y_t = W_y\\, o_t + b_y$\n→ softmax → next symbol", fc=_GREY_FILL,
         fontsize=8)
    _arrow(ax, (7.53, 1.0), (8.05, 1.0))
    _box(ax, 9.2, 1.8, 2.3, 0.4, "rₜ: into the controller at step t + 1", fc=_ORANGE_FILL, ec=_ORANGE,
         fontsize=8)
    _arrow(ax, (9.2, 2.25), (9.2, 2.0), color=_ORANGE)
    ax.text(0.15, 0.25, "step t, in order: controller, heads, memory; the read rₜ enters the "
            "controller at step t + 1", fontsize=8.5, color=_INK, va="center")
    return fig


# ------------------------------------------------------------------ 02_backward_dynamics

def backward_example():
    """The pop's forward and backward quantities of the example, bottom row first:
    a dict of lists ``s_prev, ahead, x, y, s, g, gy, c, behind, grad_s`` and the float
    ``grad_u``, computed as ``memory_torch._pop_backward`` does."""
    s_prev = np.array(BACKWARD_S)
    g = np.array(BACKWARD_G)
    ahead = np.cumsum(s_prev[::-1])[::-1] - s_prev            # the stack: rows above
    x = BACKWARD_U - ahead
    y = s_prev - np.maximum(x, 0)
    gy = np.where(y > 0, g, 0.0)
    c = np.where(x > 0, gy, 0.0)
    behind = np.cumsum(c) - c                                  # rows below
    return dict(s_prev=s_prev.tolist(), ahead=ahead.tolist(), x=x.tolist(), y=y.tolist(),
                s=np.maximum(y, 0).tolist(), g=g.tolist(), gy=gy.tolist(), c=c.tolist(),
                behind=behind.tolist(), grad_s=(gy + behind).tolist(), grad_u=float(-c.sum()))


def pop_backward():
    """The backward pass of one stack pop as running sums: forward, the sum of the rows
    above (a running sum from the top), x = u − ahead, y = s' − max(0, x); backward, the
    indicators [y > 0] and [x > 0] select the gradient, and a running sum from the bottom
    carries each partly popped row's gradient c to the rows above it."""
    e = backward_example()
    n = len(e["s_prev"])
    cols = [(r"$s'_i$", e["s_prev"]), (r"$a_i = \sum_{j>i} s'_j$", e["ahead"]), (r"$x_i = u - a_i$", e["x"]),
            (r"$y_i = s'_i - (x_i)^+$", e["y"]), (r"$s_i = (y_i)^+$", e["s"]),
            (r"$g_i = \partial L/\partial s_i$", e["g"]), (r"$g^y_i = g_i\,[y_i > 0]$", e["gy"]),
            (r"$c_i = g^y_i\,[x_i > 0]$", e["c"]), (r"$\sum_{i<j} c_i$", e["behind"]),
            (r"$\partial L/\partial s'_j$", e["grad_s"])]
    W = 1.2
    fig, ax = _canvas(12, 3.4, (-0.9, len(cols) * W + 0.1), (-1.05, n * 0.6 + 0.95))
    for k, (title, values) in enumerate(cols):
        xc = k * W + W / 2
        backward = k >= 5
        color = _ORANGE if backward else _BLUE
        ax.text(xc, n * 0.6 + 0.2, title, ha="center", va="bottom", fontsize=8, color=color)
        for i, v in enumerate(values):
            yc = i * 0.6 + 0.25
            fc = "#fdf1e4" if backward else "#e8f0f8"
            if k in (6, 7) and abs(v) < 1e-12:
                fc = _GREY_FILL
            _box(ax, xc, yc, W * 0.7, 0.42, _num(v), fc=fc, ec=color, fontsize=8.5)
    for i in range(n):
        ax.text(-0.15, i * 0.6 + 0.25, f"row {i + 1}", ha="right", va="center", fontsize=8)
    # running sums: ahead from the top (down), behind from the bottom (up)
    xa, xb = 2 * W - 0.08, 9 * W - 0.08
    _arrow(ax, (xa, (n - 1) * 0.6 + 0.3), (xa, 0.2), color=_BLUE)
    _arrow(ax, (xb, 0.2), (xb, (n - 1) * 0.6 + 0.3), color=_ORANGE)
    ax.text(0.1, -0.45, f"forward: pop u = {_num(BACKWARD_U)} from the top; the sum a of the rows above runs "
            "down from the top (blue arrow)", fontsize=8, color=_BLUE)
    ax.text(0.1, -0.85, f"backward: the indicators select the gradient; the sum of c runs up from the bottom (orange arrow);  ∂L/∂u = −Σ cᵢ = {_num(e['grad_u'])}",
            fontsize=8, color=_ORANGE)
    return fig


BPTT_D = (0.6, 0.5, 0.4)
"""The pushes of the backward-through-time example of 02_backward_dynamics (three steps)."""
BPTT_U = (0.0, 0.2, 0.7)
"""Its pops: step 2 pops row 1 partly; step 3 empties row 2 and runs out in row 1."""
BPTT_G_R = ((1.0, 0.3, -0.7), (0.5, -1.0, 0.2), (2.0, 1.0, -0.5))
"""dL/dr_t of that example, with one-hot values: gamma_t[i] = BPTT_G_R[t][i] (entries of rows not
yet pushed do not matter)."""


def bptt_example():
    """The gradient carried back through the three steps of :data:`BPTT_D`, :data:`BPTT_U`, by the recursion
    gbar_t = rho_t + P_{t+1}^T(gbar_{t+1}[1..t]): a list, step 1 first, of dicts with the
    strengths ``s`` after the step, the read's gradient ``rho``, what the next pop sends back
    ``back`` (zero after the last step), their sum ``gbar`` (bottom row first), and the floats
    ``g_d`` = dL/dd_t and ``g_u`` = dL/du_t."""
    T = len(BPTT_D)
    kept, s = [], np.zeros(0)
    for t in range(T):                                    # forward: the strengths before each pop
        kept.append(s)
        ahead = np.cumsum(s[::-1])[::-1] - s
        s = np.append(np.maximum(0, s - np.maximum(0, BPTT_U[t] - ahead)), BPTT_D[t])
    out, back = [None] * T, np.zeros(T)
    for t in range(T - 1, -1, -1):
        prev = kept[t]
        x = BPTT_U[t] - (np.cumsum(prev[::-1])[::-1] - prev)
        y = prev - np.maximum(x, 0)
        s = np.append(np.maximum(y, 0), BPTT_D[t])
        room = 1 - (np.cumsum(s[::-1])[::-1] - s)
        gamma = np.array(BPTT_G_R[t][:t + 1])
        whole = s <= np.maximum(room, 0)
        cut = np.where(~whole & (room > 0), gamma, 0.0)
        rho = np.where(whole, gamma, 0.0) - (np.cumsum(cut) - cut)
        gbar = rho + back
        gy = np.where(y > 0, gbar[:t], 0.0)
        c = np.where(x > 0, gy, 0.0)
        out[t] = dict(s=s.tolist(), rho=rho.tolist(), back=back.tolist(), gbar=gbar.tolist(),
                      g_d=float(gbar[t]), g_u=float(-c.sum()))
        back = gy + (np.cumsum(c) - c)
    return out


def bptt_backward():
    """The gradient of the strengths carried back through time on the worked example: for each
    step, the strengths after it, the gradient of its own read (rho), what the pop of the next
    step sends back, and their sum sbar_t = dL/ds_t; the pop of step t + 1 carries sbar_{t+1} to step t."""
    steps = bptt_example()
    W, H, group = 0.95, 0.55, 4.9
    fig, ax = _canvas(12, 3.3, (-0.75, 3 * group - 0.3), (-1.05, 3 * H + 1.0))
    cols = [("$s_t$", "s", _BLUE), (r"$\rho_t$ (read)", "rho", _ORANGE),
            ("from the\nnext pop", "back", _ORANGE), (r"$\bar s_t$", "gbar", _ORANGE)]
    for k, st in enumerate(steps):
        x0 = k * group
        n = k + 1
        ax.text(x0 + 2 * W, 3 * H + 0.85, f"step {n}:  u{_sub(n)} = {_num(BPTT_U[k])},  d{_sub(n)} = {_num(BPTT_D[k])}", ha="center", va="top", fontsize=9, color=_INK,
                fontweight="bold")
        for j, (title, key, color) in enumerate(cols):
            xc = x0 + j * W + W / 2
            ax.text(xc, 3 * H + 0.2, title, ha="center", va="top", fontsize=7.5, color=color,
                    linespacing=1.1)
            for i in range(n):
                yc = i * H + 0.2
                v = st[key][i]
                fc = "#e8f0f8" if color == _BLUE else ("#fdf1e4" if abs(v) > 1e-12 else _GREY_FILL)
                _box(ax, xc, yc, W * 0.78, H * 0.72, _num(v), fc=fc, ec=color, fontsize=8)
        for i in range(n):
            ax.text(x0 - 0.08, i * H + 0.2, f"row {i + 1}", ha="right", va="center", fontsize=7.5)
        ax.text(x0 + 2 * W, -0.45, f"∂L/∂d{_sub(n)} = {_num(st['g_d'])},   ∂L/∂u{_sub(n)} = {_num(st['g_u'])}",
                ha="center", va="center", fontsize=8, color=_ORANGE)
        if k < 2:
            _arrow(ax, (x0 + group - 0.55, 0.5), (x0 + 4 * W + 0.05, 0.5), color=_ORANGE, lw=1.2)
            ax.text(x0 + 4 * W + (group - 4 * W - 0.5) / 2, 0.75, f"pop of\nstep {n + 1}", ha="center",
                    va="bottom", fontsize=7, color=_ORANGE, linespacing=1.1)
    ax.text(0, -0.9, "backward in time, right to left: the gradient of the strengths after step t is its own "
            "read's plus what the pop of step t + 1 sends back; its new row's entry is ∂L/∂dₜ",
            fontsize=8, color=_ORANGE)
    return fig


def backward_read_example():
    """The read's forward and backward quantities of the example, bottom row first: the
    strengths ``s`` after the pop of :func:`backward_example` and a push of :data:`READ_D`;
    ``ahead`` (the strength above each row), ``room = 1 - ahead``, the weights ``w``, the
    cases ``whole`` and ``cut`` (the row where the read runs out), ``gamma``, ``gw`` (gamma
    where read whole), ``gc`` (gamma where cut), ``behind`` (the running sum of ``gc`` over
    the rows below) and ``grad_s = gw - behind``, as ``memory_torch._read_backward`` does."""
    s = np.array(backward_example()["s"] + [READ_D])
    gamma = np.array(READ_GAMMA)
    ahead = np.cumsum(s[::-1])[::-1] - s
    room = 1 - ahead
    cap = np.maximum(room, 0)
    w = np.minimum(s, cap)
    whole = s <= cap
    cut = ~whole & (room > 0)
    gw = np.where(whole, gamma, 0.0)
    gc = np.where(cut, gamma, 0.0)
    behind = np.cumsum(gc) - gc
    return dict(s=s.tolist(), ahead=ahead.tolist(), room=room.tolist(), w=w.tolist(),
                whole=whole.tolist(), cut=cut.tolist(), gamma=gamma.tolist(), gw=gw.tolist(),
                gc=gc.tolist(), behind=behind.tolist(), grad_s=(gw - behind).tolist())


def read_backward():
    """The backward pass of one stack read as a running sum: forward, the strength above
    each row (a running sum from the top) and the weights; backward, a row read whole passes
    its gamma to its own strength, and the row where the read runs out passes minus its gamma
    to every row above it (a running sum from the bottom)."""
    e = backward_read_example()
    n = len(e["s"])
    case = ["read whole" if wh else ("runs out" if c else "not read") for wh, c in zip(e["whole"], e["cut"])]
    cols = [(r"$s_i$", e["s"]), (r"$A_i = \sum_{j>i} s_j$", e["ahead"]),
            (r"$w_i = \min(s_i, (1 - A_i)^+)$", e["w"]), ("", case),
            (r"$\gamma_i = \langle \bar r, V_i\rangle$", e["gamma"]),
            (r"$\gamma_i\,[\mathrm{whole}_i]$", e["gw"]), (r"$\gamma_i\,[\mathrm{runs\ out}_i]$", e["gc"]),
            (r"$-\sum_{i<j} \gamma_i[\mathrm{runs\ out}_i]$", [-b if b else 0.0 for b in e["behind"]]),
            (r"$\partial L/\partial s_j$", e["grad_s"])]
    W = 1.32
    fig, ax = _canvas(12, 3.9, (-0.9, len(cols) * W + 0.1), (-1.05, n * 0.6 + 0.95))
    for k, (title, values) in enumerate(cols):
        xc = k * W + W / 2
        backward = k >= 4
        color = _ORANGE if backward else _BLUE
        ax.text(xc, n * 0.6 + 0.2, title, ha="center", va="bottom", fontsize=8, color=color)
        for i, v in enumerate(values):
            yc = i * 0.6 + 0.25
            if isinstance(v, str):
                ax.text(xc, yc, v, ha="center", va="center", fontsize=8, color=_INK, style="italic")
                continue
            fc = "#fdf1e4" if backward else "#e8f0f8"
            if k in (5, 6) and abs(v) < 1e-12:
                fc = _GREY_FILL
            _box(ax, xc, yc, W * 0.7, 0.42, _num(v), fc=fc, ec=color, fontsize=8.5)
    for i in range(n):
        ax.text(-0.15, i * 0.6 + 0.25, f"row {i + 1}", ha="right", va="center", fontsize=8)
    xa, xb = 2 * W - 0.08, 8 * W - 0.08
    _arrow(ax, (xa, (n - 1) * 0.6 + 0.3), (xa, 0.2), color=_BLUE)
    _arrow(ax, (xb, 0.2), (xb, (n - 1) * 0.6 + 0.3), color=_ORANGE)
    ax.text(0.1, -0.45, f"forward: after the pop above and a push of {_num(READ_D)}, the read takes a total "
            "of 1 from the top; A runs down from the top (blue arrow)", fontsize=8, color=_BLUE)
    ax.text(0.1, -0.85, "backward: a row read whole passes γ to its own strength; the row where the read "
            "runs out passes −γ to every row above it (orange arrow, up from the bottom)",
            fontsize=8, color=_ORANGE)
    return fig


# ------------------------------------------------------------------ 04_transduction

REVERSAL_SOURCE = ("x₁", "x₂", "x₃")
"""The source of the reversal timing diagram of book/memory/04_transduction."""


def reversal_controls(m):
    """The exact stack controls of reversal on the joint sequence ``<s> x_1 .. x_m ||| x_m .. x_1``
    (steps ``0 .. 2m + 1``), as lists ``(d, u)``: push 1 on each source step ``1 .. m``, pop 1 on
    the steps ``m + 1 .. 2m`` (from the one that reads ``|||``), since the output of step ``t``
    comes from ``h_t``, which saw the read ``r_{t-1}``."""
    d = [0.0] + [1.0] * m + [0.0] * (m + 1)
    u = [0.0] * (m + 1) + [1.0] * m + [0.0]
    return d, u


def reversal_timing():
    """The timing of an exact reversal by a Stack-LSTM, step by step: each step's input, the
    read r_{t-1} that its controller sees, its output, and the stack after its pop and push,
    computed by the package's reference (:func:`rnnlab.neural_memory`, one-hot values) from
    :func:`reversal_controls`."""
    import torch

    from .. import neural_memory

    m = len(REVERSAL_SOURCE)
    d, u = reversal_controls(m)
    T = len(d)
    eye = torch.eye(T, dtype=torch.float64)[None]
    reads, s = neural_memory("stack", eye, torch.tensor([d], dtype=torch.float64),
                             torch.tensor([u], dtype=torch.float64), backend="torch")
    reads, s = reads[0], s[0]                      # reads[t, i]: weight of step i's value in r_t
    names = {i: REVERSAL_SOURCE[i - 1] for i in range(1, m + 1)}
    inputs = ["<s>", *REVERSAL_SOURCE, "|||", *REVERSAL_SOURCE[::-1]]
    outputs = [""] * (m + 1) + [*REVERSAL_SOURCE[::-1], "</s>"]

    def read_name(t):                              # what r_t holds, by its largest weight
        if t < 0 or float(reads[t].sum()) < 1e-9:
            return "∅"
        return names.get(int(reads[t].argmax()), "?")

    dx = 1.3
    fig, ax = _canvas(11, 4.6, (-1.3, T * dx - 0.2), (-0.35, 4.6))
    label_x = -1.25
    for y, text in ((4.2, "output"), (3.35, "controller"), (2.5, "input"), (1.7, "d, u"),
                    (0.7, "stack after\nthe step")):
        ax.text(label_x, y, text, ha="left", va="center", fontsize=8, color=_GREY)
    for t in range(T):
        x = t * dx + 0.5
        ax.text(x, 4.5, f"t = {t}", ha="center", va="center", fontsize=8, color=_INK, fontweight="bold")
        if outputs[t]:
            _box(ax, x, 4.2, 0.7, 0.36, outputs[t], fc=_GREEN_FILL, ec=_GREEN)
        else:
            ax.text(x, 4.2, "–", ha="center", va="center", fontsize=8, color=_GREY)
        seen = f"sees r{_sub(t - 1)} = {read_name(t - 1)}" if t else "sees no read"
        _box(ax, x, 3.35, 0.85, 0.5, f"h{_sub(t)}\n{seen}", ec=_BLUE, fc="#dbe8f5", fontsize=7.2)
        _arrow(ax, (x, 3.6), (x, 4.02))
        _box(ax, x, 2.5, 0.7, 0.36, inputs[t], fc=_GREY_FILL)
        _arrow(ax, (x, 2.68), (x, 3.1))
        ax.text(x, 1.7, f"d = {_num(d[t])}\nu = {_num(u[t])}", ha="center", va="center", fontsize=7.2,
                color=_INK, linespacing=1.15)
        rows = [i for i in range(T) if float(s[t, i]) > 1e-9]
        for k, i in enumerate(rows):               # bottom first
            top = k == len(rows) - 1
            ax.add_patch(Rectangle((x - 0.3, 0.05 + 0.3 * k), 0.6, 0.28, lw=0.9, zorder=2,
                                   fc=_ORANGE_FILL if top else _BLUE_FILL, ec=_ORANGE if top else _BLUE))
            ax.text(x, 0.19 + 0.3 * k, names[i], ha="center", va="center", fontsize=7.5, zorder=3)
        if not rows:
            ax.text(x, 0.19, "empty", ha="center", va="center", fontsize=7, color=_GREY)
        if t + 1 < T:                              # the read r_t goes to the next step's controller
            y0 = 0.05 + 0.3 * max(len(rows), 1)
            _arrow(ax, (x + 0.2, y0), (x + dx - 0.43, 3.15), color=_ORANGE, lw=0.8, rad=0.15)
    ax.text(0.5 + (m + 1) * dx, -0.25, "the step that reads ||| must pop: its read is seen one step "
            "later", ha="center", va="center", fontsize=8, color=_RED)
    return fig


# ------------------------------------------------------------------ 01: the loop and the deque's columns

def memory_loop():
    """What drives a neural memory: at step t a controller (a recurrent network) reads
    the input and the memory's last read r_{t-1}, and emits a push strength d_t, a pop
    strength u_t and a value v_t; the memory pops, pushes and reads; its read r_t goes
    back to the controller at step t + 1."""
    fig, ax = _canvas(9, 3.2, (0, 9), (0, 3.2))
    _box(ax, 0.85, 1.7, 1.3, 0.5, "input xₜ", fc=_GREY_FILL)
    _box(ax, 2.9, 1.7, 1.9, 1.0, "controller\n(a recurrent network,\ne.g. an LSTM)", ec=_BLUE, fc="#dbe8f5")
    _arrow(ax, (1.5, 1.7), (1.95, 1.7))
    _box(ax, 2.9, 0.35, 1.6, 0.42, "output yₜ", fc=_GREY_FILL)
    _arrow(ax, (2.9, 1.2), (2.9, 0.56))
    controls = [("push strength dₜ ∈ [0, 1]", 2.35), ("pop strength uₜ ∈ [0, 1]", 1.7),
                ("value vₜ ∈ ℝᵐ", 1.05)]
    for text, y in controls:
        _arrow(ax, (3.85, 1.7 + 0.35 * (y - 1.7) / 0.65), (5.55, y), color=_BLUE)
        ax.text(4.7, y + (0.1 if y > 1.1 else -0.3), text, ha="center", va="bottom", fontsize=7.8,
                color=_BLUE)
    _box(ax, 6.75, 1.7, 2.3, 1.5, "memory (stack)\n1. pop uₜ\n2. push vₜ with dₜ\n3. read rₜ",
         ec=_ORANGE, fc="#fdf1e4", fontsize=8.3)
    _arrow(ax, (6.75, 2.45), (2.9, 2.2), color=_ORANGE, rad=0.3)
    ax.text(4.8, 3.05, "read rₜ ∈ ℝᵐ: into the controller at step t + 1", ha="center", va="center",
            fontsize=8, color=_ORANGE)
    ax.text(6.75, 0.55, "values never move;\nonly their strengths change", ha="center", va="center",
            fontsize=7.5, color=_GREY)
    return fig


def deque_columns():
    """The deque's worked example in the package's 2T fixed rows (T = 3), drawn bottom to top
    like the other pictures of the page: row c holds the bottom push of step T - c for c < T
    and the top push of step c - T + 1 for c >= T, so bottom pushes grow downwards and top
    pushes upwards; each column of the grid is the strengths after one step, grey where a
    row is not yet written."""
    steps = example_deque()
    T = len(steps)
    names = [f"bot{_sub(T - c)}" for c in range(T)] + [f"top{_sub(c + 1)}" for c in range(T)]
    cw, rh = 1.05, 0.42
    fig, ax = _canvas(7.6, 3.7, (-1.75, T * cw + 3.1), (-0.55, 2 * T * rh + 0.75))
    for c, name in enumerate(names):
        yc = c * rh + rh / 2
        color = _GREEN if c < T else _BLUE
        ax.text(-0.12, yc, name, ha="right", va="center", fontsize=9, color=color)
        ax.text(-0.62, yc, f"row {c}", ha="right", va="center", fontsize=7, color=_GREY)
    for k, st in enumerate(steps):
        x = k * cw
        ax.text(x + cw / 2, 2 * T * rh + 0.12, f"after\nstep {k + 1}", ha="center", va="bottom", fontsize=8,
                color=_INK, linespacing=1.1)
        live = st["after"]                       # bottom first: rows T-1-k .. T+k
        for c in range(2 * T):
            y = c * rh
            i = c - (T - 1 - k)
            written = 0 <= i < len(live)
            ax.add_patch(Rectangle((x + 0.05, y + 0.04), cw - 0.1, rh - 0.08, fc="white" if written else
                                   _GREY_FILL, ec="#cccccc", lw=0.6, zorder=1))
            if not written:
                continue
            s = live[i]
            if s > 1e-12:
                ax.add_patch(Rectangle((x + 0.05, y + 0.04), (cw - 0.1) * s, rh - 0.08,
                                       fc=_GREEN_FILL if c < T else _BLUE_FILL, ec="none", zorder=2))
            ax.text(x + cw / 2, y + rh / 2, _num(s), ha="center", va="center", fontsize=8, color=_INK,
                    zorder=3)
    ax.plot([-0.05, T * cw + 0.05], [T * rh, T * rh], color=_INK, lw=1.0)
    xa = T * cw + 0.3
    ax.annotate("", xy=(xa, 2 * T * rh - 0.05), xytext=(xa, T * rh + 0.1),
                arrowprops=dict(arrowstyle="-|>", color=_BLUE, lw=1.0, mutation_scale=9))
    ax.text(xa + 0.15, 1.5 * T * rh, "top pushes:\na new row above\neach step", ha="left", va="center",
            fontsize=7.5, color=_BLUE, linespacing=1.15)
    ax.annotate("", xy=(xa, 0.05), xytext=(xa, T * rh - 0.1),
                arrowprops=dict(arrowstyle="-|>", color=_GREEN, lw=1.0, mutation_scale=9))
    ax.text(xa + 0.15, 0.5 * T * rh, "bottom pushes:\na new row below\neach step", ha="left", va="center",
            fontsize=7.5, color=_GREEN, linespacing=1.15)
    ax.text(T * cw / 2, 2 * T * rh + 0.58, "top end: pop and read here", ha="center", va="bottom",
            fontsize=7.5, color=_INK)
    ax.text(T * cw / 2, -0.1, "bottom end: pop and read here", ha="center", va="top", fontsize=7.5,
            color=_INK)
    return fig


# ------------------------------------------------------------------ 02: the read's gradient as intervals

READ_EPS = 0.05
"""The small strength added to one row in :func:`read_intervals`."""


def read_intervals():
    """The read example of 02_backward_dynamics laid end to end from the top, as in
    :func:`stack_intervals`: as it is, with READ_EPS more strength on the top row (every
    stretch below slides down and the row where the read runs out loses READ_EPS of weight),
    and with READ_EPS more on the row where the read runs out (its stretch grows below
    depth 1: no weight changes)."""
    e = backward_read_example()
    s = list(e["s"])
    names = [f"row {i}" for i in range(1, len(s) + 1)]
    cases = [("as it is", s), (f"+{_num(READ_EPS)} on row 4 (above)", s[:3] + [s[3] + READ_EPS]),
             (f"+{_num(READ_EPS)} on row 1 (where\nthe read runs out)", [s[0] + READ_EPS] + s[1:])]
    group, scale = 3.0, 1.9
    fig, ax = _canvas(9, 3.9, (-0.5, 3 * group - 0.3), (-3.35, 0.75))
    w0 = None
    for k, (title, strengths) in enumerate(cases):
        x0 = k * group + 0.55
        ax.text(x0 + 0.6, 0.62, title, ha="center", va="top", fontsize=8.5, color=_INK, fontweight="bold",
                linespacing=1.15)
        _intervals(ax, x0, strengths, names, (0.0, 1.0), w=0.75, scale=scale, label="read:\ndepth\n0 to 1")
        ss = np.array(strengths)
        ahead = np.cumsum(ss[::-1])[::-1] - ss
        w = np.minimum(ss, np.maximum(1 - ahead, 0))
        w0 = w if w0 is None else w0
        shown = [i for i in range(len(w), 0, -1) if ss[i - 1] > 0]
        for n, i in enumerate(shown):
            changed = abs(w[i - 1] - w0[i - 1]) > 1e-12
            text = f"w{_sub(i)} = {_num(w[i - 1])}" + (f"  (was {_num(w0[i - 1])})" if changed else "")
            ax.text(x0 + 0.05, -2.62 - 0.2 * n, text, ha="left", va="center", fontsize=7.5,
                    color=_RED if changed else _ORANGE, fontweight="bold" if changed else "normal")
        ax.plot([x0 - 0.4, x0 + 1.9], [-scale, -scale], color=_RED, lw=0.8, ls=(0, (3, 2)))
        if k:
            ax.plot([x0 - 0.5, x0 - 0.5], [-3.3, 0.65], color="#dddddd", lw=0.8)
    ax.text(-0.45, -scale + 0.04, "depth 1", ha="left", va="bottom", fontsize=7, color=_RED)
    return fig


def step_graph():
    """One step t of a stack as a computational graph: forwards (blue) the old rows
    s_{t-1} go through the pop u_t and the push (d_t, v_t) to the rows s_t, which feed the
    read r_t and the pop u_{t+1} of the next step; backwards (orange) the gradient of s_t
    collects rho_t from the read and P_{t+1}^T from the next pop (eq. eq-mem-bptt), gives
    dL/dd_t from the new row, and goes back through the pop u_t to the old rows."""
    fig, ax = _canvas(10, 3.3, (0, 10), (0, 3.3))
    y = 2.3
    nodes = [(0.8, "old rows\n$s_{t-1}$", _GREY_FILL, _INK), (2.6, "pop $u_t$", "white", _BLUE),
             (4.4, "push\n$d_t$, $v_t$", "white", _BLUE), (6.2, "rows $s_t$\n($t$ rows)", _GREY_FILL, _INK),
             (8.0, "read", "white", _BLUE)]
    for x, text, fc, ec in nodes:
        _box(ax, x, y, 1.2, 0.62, text, fc=fc, ec=ec, fontsize=8.5)
    for (x0, *_), (x1, *_) in zip(nodes, nodes[1:]):
        _arrow(ax, (x0 + 0.62, y + 0.08), (x1 - 0.62, y + 0.08), color=_BLUE)
    _box(ax, 9.4, y, 0.8, 0.5, "$r_t$", fc=_ORANGE_FILL, ec=_ORANGE)
    _arrow(ax, (8.62, y + 0.08), (9.0, y + 0.08), color=_BLUE)
    _box(ax, 8.0, 0.9, 1.6, 0.62, "pop $u_{t+1}$\n(step $t + 1$)", fc="white", ec=_BLUE)
    _arrow(ax, (9.0, y - 0.14), (8.62, y - 0.14), color=_ORANGE, lw=1.3)
    ax.text(8.85, y - 0.5, r"$\bar r_t$", color=_ORANGE, ha="center", fontsize=9)
    _arrow(ax, (6.5, y - 0.32), (7.2, 1.05), color=_BLUE)
    # backwards, in orange, below the forward arrows
    back = dict(color=_ORANGE, lw=1.3)
    _arrow(ax, (7.4, y - 0.14), (6.82, y - 0.14), **back)
    ax.text(7.1, y - 0.5, r"$\rho_t$", color=_ORANGE, ha="center", fontsize=9)
    _arrow(ax, (7.2, 0.75), (6.35, y - 0.33), rad=-0.25, **back)
    ax.text(6.55, 1.0, r"$P_{t+1}^{\top}$", color=_ORANGE, ha="center", fontsize=9)
    _arrow(ax, (5.6, y - 0.14), (5.02, y - 0.14), **back)
    ax.text(5.3, y - 0.55, r"$\bar s_t[t]$" + "\n" + r"$= \partial L/\partial d_t$", color=_ORANGE,
            ha="center", fontsize=8)
    _arrow(ax, (3.8, y - 0.14), (3.22, y - 0.14), **back)
    _arrow(ax, (2.0, y - 0.14), (1.42, y - 0.14), **back)
    ax.text(2.6, y - 0.75, r"$\partial L/\partial u_t = -\Sigma_i\, c_i$," + "\n"
            + r"$P_t^{\top}(\ldots)$ to $\bar s_{t-1}$",
            color=_ORANGE, ha="center", fontsize=8)
    ax.text(6.2, 3.05, r"$\bar s_t = \rho_t + P_{t+1}^{\top}(\ldots)$", color=_ORANGE, ha="center", fontsize=9)
    ax.text(0.15, 0.25, "forwards (blue): pop, push, read; backwards (orange): the rows' gradient "
            "collects the read's and the next pop's, then runs back through the push and the pop",
            fontsize=8, color=_INK, va="center")
    return fig

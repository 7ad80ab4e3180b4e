"""Schematics of the contraction chapter (``book/contraction``).

Each one is drawn from the worked example of its page, with the package's own
numerics (:mod:`rnnlab.theory`):

* :func:`slope_box` (``01_contraction_in_one_page``): the rate ``lambda(D)`` of
  the two-unit example ``W = [[0, -0.2], [4, 0]]`` in the page's hand-derived
  metric ``diag(1, 0.05)``, over
  the box of slopes ``[0, 1]^2``: concave, so its minimum is at a corner;
* :func:`combo_net_blocks` (``06_networks_of_networks``): the assembly of three
  four-unit Theorem-1 modules of that page, ``W~``, the mask on ``B`` and
  ``L = B - M^-1 B^T M``;
* :func:`euler_circle` (``06_networks_of_networks``): the eigenvalues
  ``1 + alpha (-1 +- i omega)`` of the Euler step against the unit circle, at
  the sizes ``omega = ||M^1/2 L M^-1/2||`` of the committed trained nets;
* :func:`metric_chain` (``06_networks_of_networks``): the diagonal metric of a
  chain of three links of weight 6, stepping down along it.
"""
from __future__ import annotations

import json
import pathlib

import numpy as np
from matplotlib.figure import Figure
from matplotlib.patches import FancyArrowPatch, FancyBboxPatch, Rectangle

__all__ = ["SLOPE_W", "SLOPE_METRIC", "CHAIN_WEIGHT", "CHAIN_LINKS", "EULER_ALPHA",
           "slope_box", "combo_net_blocks", "euler_circle", "metric_chain",
           "certificate_levels"]

SLOPE_W = ((0.0, -0.2), (4.0, 0.0))
"""The two-unit example of ``01_contraction_in_one_page``."""
SLOPE_METRIC = (1.0, 0.05)
"""The diagonal of the metric that ``01_contraction_in_one_page`` derives by hand for ``SLOPE_W``."""
CHAIN_WEIGHT = 6.0
"""The weight of every link of the chain of ``06_networks_of_networks``."""
CHAIN_LINKS = 3
"""The number of links of that chain (four units)."""
EULER_ALPHA = 0.1
"""The Euler step of the trained Combo Nets (``combo_net.PAPER['alpha']``)."""

_INK = "#333333"
_BLUE, _BLUE_FILL = "#1f4e79", "#dbe8f5"
_GREEN, _GREEN_FILL = "#2f7a2f", "#e2f2e2"
_ORANGE, _ORANGE_FILL = "#c25e00", "#fbe6d0"
_RED = "#b22222"
_SUP = str.maketrans("0123456789", "⁰¹²³⁴⁵⁶⁷⁸⁹")


def _num(x, digits=2):
    text = f"{x:.{digits}f}".rstrip("0").rstrip(".")
    return ("0" if text in ("-0", "") else text).replace("-", "−")


def _theory():
    import rnnlab.theory as th  # imported late: the figures registry stays cheap to import

    return th


def slope_box(n_grid=81):
    """The rate in the metric over the slope box, with its four corners."""
    th = _theory()
    W = np.array(SLOPE_W)
    P = np.diag(SLOPE_METRIC)
    d = np.linspace(0.0, 1.0, n_grid)
    D1, D2 = np.meshgrid(d, d, indexing="xy")
    slopes = np.stack([D1.ravel(), D2.ravel()], axis=1)
    rate = np.array([th.rate_in_metric(W, P, slopes=s[None])[0] for s in slopes]).reshape(D1.shape)
    corners = [(0.0, 0.0), (1.0, 0.0), (0.0, 1.0), (1.0, 1.0)]
    corner_rate = {c: th.rate_in_metric(W, P, slopes=np.array([c]))[0] for c in corners}
    low = min(corner_rate.values())
    worst = {c for c, r in corner_rate.items() if r < low + 1e-9}  # ties: every lowest corner is red

    fig = Figure(figsize=(8.4, 3.6))
    ax, ax2 = fig.add_axes((0.07, 0.15, 0.38, 0.75)), fig.add_axes((0.6, 0.15, 0.37, 0.75))
    mesh = ax.imshow(rate, origin="lower", extent=(0.0, 1.0, 0.0, 1.0), cmap="Blues", aspect="auto",
                     interpolation="nearest")
    ax.contour(D1, D2, rate, levels=8, colors="white", linewidths=0.5)
    cb = fig.colorbar(mesh, ax=ax, fraction=0.05, pad=0.03)
    cb.set_label("rate λ(D) in the metric M₀ = diag(1, 0.05)", fontsize=8)
    for c, r in corner_rate.items():
        mark = dict(color=_RED, s=60, zorder=4) if c in worst else dict(color=_INK, s=25, zorder=4)
        ax.scatter(*c, **mark)
        ax.annotate(f"λ = {_num(r)}", c, xytext=(8 if c[0] == 0 else -8, 8 if c[1] == 0 else -14),
                    textcoords="offset points", ha="left" if c[0] == 0 else "right", fontsize=8,
                    color=_RED if c in worst else _INK, zorder=5,
                    bbox=dict(boxstyle="round,pad=0.15", fc="white", ec="none", alpha=0.85))
    ax.plot([0, 1], [1, 0], color=_ORANGE, lw=1.5, ls="--")
    ax.set_xlabel("slope of unit 1, D₁₁")
    ax.set_ylabel("slope of unit 2, D₂₂")
    ax.set_title("the box of slopes [0, 1]²", fontsize=9)
    ax.set_xlim(-0.02, 1.02)
    ax.set_ylim(-0.02, 1.02)
    s = np.linspace(0.0, 1.0, 101)
    along = [th.rate_in_metric(W, P, slopes=np.array([[t, 1.0 - t]]))[0] for t in s]
    ax2.plot(s, along, color=_ORANGE, lw=2)
    ax2.scatter([0.0, 1.0], [along[0], along[-1]],
                color=[_RED if c in worst else _INK for c in [(0.0, 1.0), (1.0, 0.0)]], zorder=3)
    ax2.set_xlabel("t on the dashed segment, D = diag(t, 1 − t)")
    ax2.set_ylabel("rate λ(D)")
    ax2.set_title("concave along every segment: lowest at an end", fontsize=9)
    ax2.grid(alpha=0.3)
    return fig


def _example_assembly():
    th = _theory()
    Ws, _ = th.sample_theorem1_modules(3, 4, density=1.0, scalar=1.0, rng=0)
    certs = [th.certify_theorem1(W) for W in Ws]
    B = np.random.default_rng(1).normal(size=(12, 12))
    assembly = th.certify_assembly(Ws, certs, B, lower_only=True)
    mask = th.block_mask([4, 4, 4], lower_only=True)
    return certs, assembly, B * mask


def combo_net_blocks():
    """W~ (block diagonal), the masked B, and L = B - M^-1 B^T M of the page's assembly."""
    certs, assembly, B_masked = _example_assembly()
    W, L, M = assembly.details["W"], assembly.details["L"], assembly.metric
    fig = Figure(figsize=(9.6, 3.7))
    # the network: three modules and their links
    ax = fig.add_axes((0.0, 0.02, 0.27, 0.9))
    ax.set_xlim(0, 3)
    ax.set_ylim(0, 4.2)
    ax.set_axis_off()
    ys = (3.5, 2.1, 0.7)
    for i, (y, c) in enumerate(zip(ys, certs)):
        ax.add_patch(FancyBboxPatch((0.7, y - 0.42), 1.6, 0.84, boxstyle="round,pad=0,rounding_size=0.1",
                                    ec=_BLUE, fc=_BLUE_FILL, lw=1.2))
        ax.text(1.5, y + 0.1, f"module W{'₁₂₃'[i]}", ha="center", va="center", fontsize=9)
        ax.text(1.5, y - 0.2, f"rate {_num(c.rate, 3)}", ha="center", va="center", fontsize=7.5)
    for y0, y1 in ((ys[0], ys[1]), (ys[1], ys[2])):
        ax.add_patch(FancyArrowPatch((1.05, y0 - 0.44), (1.05, y1 + 0.44), arrowstyle="-|>",
                                     mutation_scale=10, color=_GREEN, lw=1.4))
        ax.add_patch(FancyArrowPatch((1.95, y1 + 0.44), (1.95, y0 - 0.44), arrowstyle="-|>",
                                     mutation_scale=10, color=_ORANGE, lw=1.4))
    ax.add_patch(FancyArrowPatch((0.6, ys[0] - 0.2), (0.6, ys[2] + 0.2), arrowstyle="-|>",
                                 mutation_scale=10, color=_GREEN, lw=1.0, connectionstyle="arc3,rad=0.35"))
    ax.add_patch(FancyArrowPatch((2.4, ys[2] + 0.2), (2.4, ys[0] - 0.2), arrowstyle="-|>",
                                 mutation_scale=10, color=_ORANGE, lw=1.0, connectionstyle="arc3,rad=0.35"))
    ax.text(0.05, 4.1, "B (trained)", color=_GREEN, fontsize=8)
    ax.text(1.9, 4.1, "−M⁻¹BᵀM", color=_ORANGE, fontsize=8)
    panels = [("W̃ = BlockDiag(W₁, W₂, W₃)\nfixed modules", W, "Greys"),
              ("B, masked: lower blocks only\n(the trained entries)", B_masked, "Greens"),
              ("L = B − M⁻¹BᵀM\nupper blocks set by the lower", L, "Oranges")]
    for k, (title, A, cmap) in enumerate(panels):
        a = fig.add_axes((0.3 + 0.235 * k, 0.06, 0.2, 0.72))
        a.imshow(np.abs(A), cmap=cmap, vmin=0, vmax=np.abs(A).max())
        for edge in (3.5, 7.5):
            a.axhline(edge, color=_INK, lw=0.8)
            a.axvline(edge, color=_INK, lw=0.8)
        a.set_xticks([])
        a.set_yticks([])
        a.set_title(title, fontsize=8.5)
    fig.text(0.3, 0.02, f"|entries| of the 12 × 12 matrices; in the metric M, M L + Lᵀ M = 0 "
             f"(residual {assembly.details['skew_residual']:.0e})", fontsize=7.5)
    return fig


def _trained_feedback_sizes(root=None):
    """``(before, after)`` lists of ||M^1/2 L M^-1/2|| of the committed constrained digit runs."""
    root = pathlib.Path(root) if root else pathlib.Path(__file__).resolve().parents[2]
    runs = json.loads((root / "book/contraction/data/combo-digits.json").read_text())["runs"]
    keep = [r for _, r in sorted(runs.items()) if r["config"]["constraint"] == "on"
            and r["certificate_after"]["L_norm_in_metric"] > 0]
    return ([r["certificate_before"]["L_norm_in_metric"] for r in keep],
            [r["certificate_after"]["L_norm_in_metric"] for r in keep])


def euler_circle(alpha=EULER_ALPHA):
    """The flow's eigenvalues -1 +- i omega and the Euler step's 1 + alpha (-1 +- i omega)."""
    before, after = _trained_feedback_sizes()
    limit = np.sqrt(2 / alpha - 1)
    fig = Figure(figsize=(8.6, 4.2))
    ax1, ax2 = fig.add_axes((0.08, 0.12, 0.38, 0.7)), fig.add_axes((0.57, 0.12, 0.38, 0.7))
    for ws, col, lab in ((before, _BLUE, "before training"), (after, _ORANGE, "after training")):
        w = np.array(ws)
        ax1.scatter(np.full_like(w, -1.0), w, color=col, s=18, label=lab, zorder=3)
        ax1.scatter(np.full_like(w, -1.0), -w, color=col, s=18, zorder=3)
        z = 1 + alpha * (-1 + 1j * w)
        ax2.scatter(z.real, z.imag, color=col, s=18, zorder=3, label=lab)
        ax2.scatter(z.real, -z.imag, color=col, s=18, zorder=3)
    ax1.axvspan(-6.5, 0, color=_GREEN_FILL, zorder=0)
    ax1.axvline(0, color=_INK, lw=0.8)
    ax1.axhline(0, color="#bbbbbb", lw=0.6)
    ax1.set_xlim(-2.5, 1.0)
    ax1.set_ylim(-6.5, 6.5)
    ax1.set_xlabel("real part")
    ax1.set_ylabel("imaginary part")
    ax1.set_title("the flow at D = 0: −1 ± iω, stable for every ω", fontsize=9)
    ax1.text(-2.4, 5.6, "left half-plane:\nmodes decay", fontsize=7.5, color=_GREEN)
    t = np.linspace(0, 2 * np.pi, 300)
    ax2.fill(np.cos(t), np.sin(t), color=_GREEN_FILL, zorder=0)
    ax2.plot(np.cos(t), np.sin(t), color=_INK, lw=0.8)
    ax2.axvline(1 - alpha, color="#999999", lw=0.8, ls=":")
    for s in (1, -1):
        ax2.scatter([1 - alpha], [s * alpha * limit], marker="x", color=_RED, s=40, zorder=4)
    ax2.annotate(f"ω = √(2/α − 1) = {_num(limit)}:\nthe step's modulus reaches 1",
                 (1 - alpha, alpha * limit), xytext=(0.2, 0.3), fontsize=7.5, color=_RED,
                 arrowprops=dict(arrowstyle="-", color=_RED, lw=0.6))
    ax2.set_aspect("equal")
    ax2.set_xlim(0.15, 1.2)
    ax2.set_ylim(-0.62, 0.62)
    ax2.set_xlabel("real part")
    ax2.set_title(f"the Euler step, α = {_num(alpha)}: 1 + α(−1 ± iω)", fontsize=9)
    ax2.legend(fontsize=7.5, loc="lower left")
    fig.text(0.5, 0.95, f"points: the fastest-turning mode ±iω, ω = ‖L‖ in the metric, of each of page 07's "
             f"{len(before)} constrained Combo Nets with feedback", ha="center", fontsize=8.5)
    return fig


def metric_chain(weight=CHAIN_WEIGHT, links=CHAIN_LINKS):
    """A chain 1 -> 2 -> ... of equal links and the diagonal Theorem-1 metric it forces."""
    th = _theory()
    W = np.diag(np.full(links, weight), -1)
    p = np.diag(th.certify_theorem1(W).metric)
    n = links + 1
    fig = Figure(figsize=(8.0, 3.5))
    ax = fig.add_axes((0.02, 0.02, 0.96, 0.9))
    ax.set_xlim(-0.5, n - 0.3)
    ax.set_ylim(-1.6, 5.2)
    ax.set_axis_off()
    top = np.log10(p.max())
    scale = 3.6 / (top - np.log10(p.min()))
    base = 0.4
    for i in range(n):
        ax.scatter([i], [-0.8], s=520, marker="o", edgecolors=_BLUE, facecolors=_BLUE_FILL, lw=1.2, zorder=3)
        ax.text(i, -0.8, f"{i + 1}", ha="center", va="center", fontsize=10, zorder=4)
        h = base + (np.log10(p[i]) - np.log10(p.min())) * scale
        ax.add_patch(Rectangle((i - 0.18, -0.35), 0.36, h, ec=_GREEN, fc=_GREEN_FILL))
        ax.text(i, -0.35 + h + 0.12, f"p{'₁₂₃₄₅₆'[i]} = {p[i]:.3g}", ha="center", fontsize=8.5)
        if i < n - 1:
            ax.add_patch(FancyArrowPatch((i + 0.2, -0.8), (i + 0.8, -0.8), arrowstyle="-|>",
                                         mutation_scale=10, color=_INK))
            ax.text(i + 0.5, -1.25, f"w = {_num(weight)}", ha="center", fontsize=8)
            ax.text(i + 0.5, 4.2, f"÷ {p[i] / p[i + 1]:.1f}", ha="center", fontsize=8.5, color=_ORANGE)
    ax.text(-0.45, 5.05, f"each link alone needs pᵢ / pᵢ₊₁ > w²/4 = {_num(weight**2 / 4)}; "
            f"the chain needs p₁ / p{'₁₂₃₄₅₆'[n - 1]} > (w{str(links).translate(_SUP)})²/4 = {weight**(2 * links) / 4:.3g}, "
            f"and this metric has {p[0] / p[-1]:.3g}", fontsize=8)
    ax.text(-0.45, 4.2, "metric steps down:", fontsize=8, color=_ORANGE)
    ax.text(n - 0.35, 0.2, "bar height:\nlog p, shifted", fontsize=7.5, ha="right", color=_GREEN)
    return fig


def certificate_levels(root=None):
    """The three levels of a Combo Net's certificate, and test R's set, as nested sets of networks (``07_training_combo_nets``).

    For a fixed block-diagonal metric ``M`` and Euler step ``alpha``: the nets whose modules
    contract in their metrics (level 1) contain those whose flow contracts in ``M`` (level 2; the
    assembly's symmetric part has the modules' on its diagonal blocks), which contain those whose
    every Euler step contracts in ``M`` (level 3; ``(I + aJ)^T M (I + aJ) < M`` gives
    ``M J + J^T M < 0``), which contain those certified by the Euler norm bound. The nets whose
    Euler map contracts in *some* constant metric (the set test R probes, dashed) contain level 3
    but not level 2. Every net drawn has Theorem-1 modules, so all lie in level 1, R included.
    The committed constrained nets
    are placed from their certificates: all below the norm bound before training (the
    unconstrained controls start above it, 1.04 to 1.07, and are not drawn), and those of
    8 modules and more, after training, with an Euler Jacobian of spectral radius above 1. The
    page's own trained net is not drawn: its flow is certified (level 2), but whether it lies in
    level 3 or in R is unknown (its Euler norm bound is above 1; only sampled steps contract).
    """
    root = pathlib.Path(root) if root else pathlib.Path(__file__).resolve().parents[2]
    runs = json.loads((root / "book/contraction/data/combo-digits.json").read_text())["runs"]
    on = [r for r in runs.values() if r["config"]["constraint"] == "on"]
    big = [r for r in on if r["config"]["modules"] >= 8]
    assert all(r["certificate_before"]["euler_norm_bound"] < 1 for r in on)
    assert all(r["certificate_after"]["continuous_certified"] for r in big)
    assert all(r["certificate_after"]["max_euler_radius"] > 1 for r in big)
    fig = Figure(figsize=(8.6, 4.4))
    ax = fig.add_axes((0.01, 0.01, 0.98, 0.98))
    ax.set_xlim(0, 10.6)
    ax.set_ylim(0, 5.2)
    ax.set_axis_off()
    from matplotlib.patches import Ellipse

    boxes = [((0.1, 0.04), 10.4, 5.08, _BLUE, "#eef3fa",
              "1  every module contracts in its own metric"),
             ((0.6, 0.55), 6.8, 3.9, _BLUE, _BLUE_FILL,
              "2  the assembled flow contracts in M (skew feedback ensures it)"),
             ((3.6, 0.9), 3.5, 2.9, _GREEN, "#cfe8cf", "3  every Euler step contracts in M"),
             ((3.9, 1.25), 2.9, 1.5, _GREEN, "#b5dcb5", "Euler norm bound below 1")]
    for (x, y), w, h, ec, fc, text in boxes:
        ax.add_patch(FancyBboxPatch((x, y), w, h, boxstyle="round,pad=0.02,rounding_size=0.15",
                                    ec=ec, fc=fc, lw=1.2))
        ax.text(x + 0.15, y + h - 0.3, text, fontsize=8.5, color=ec, va="center")
    ax.add_patch(Ellipse((6.5, 2.35), 7.8, 4.5, fill=False, ec=_ORANGE, lw=1.4, ls="--"))
    ax.text(8.5, 4.75, "R  the Euler map contracts\nin some constant metric", fontsize=8.5,
            color=_ORANGE, ha="left", va="center")
    ax.scatter([4.6], [1.75], s=40, color=_INK, zorder=4)
    ax.text(4.75, 1.75, "constrained nets before\ntraining; with the feedback\ncapped, after it too",
            fontsize=7.5, va="center")
    ax.scatter([1.6], [1.6], s=40, color=_RED, zorder=4)
    ax.text(0.8, 1.05, "constrained, trained,\n8 modules and more: an\nEuler Jacobian with\nspectral radius above 1",
            fontsize=7.5, color=_RED, va="center")
    ax.text(10.35, 0.22, "for a fixed metric M and step α", fontsize=7.5, color=_INK, style="italic",
            ha="right")
    return fig

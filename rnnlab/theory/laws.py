"""The appendix's laws about ``W_rec(r, s)`` at initialisation, confronted with measurement.

Tumma et al. (2024), A.6 (spectral radius and norm of sparse and low-rank
matrices), A.7 (singular-value decay), Lemma 1 and A.10 (initialisation):
:func:`initialisation_laws` states each claim, measures it over seeds and
gives a verdict; :func:`laws_table` prints the rows, :func:`law_verdicts`
sums them up. The spectral statistics are those of :mod:`.spectra`.
"""
import math
from dataclasses import dataclass

import numpy as np
import torch

from ..models.cells import glorot_uniform, haar_orthogonal, init_recurrent, recurrent_matrix
from .spectra import spectral_radius, spectral_norm, truncated_haar_mean_modulus
from .spectra import entropy_rank as _entropy_rank


# ---------------------------------------------------------------------------
# The appendix's laws at initialisation, confronted with measurement (A.6, A.7, A.10).
# ---------------------------------------------------------------------------

PAPER_RANKS_64 = (1, 5, 16, 27, 64)
PAPER_SPARSITIES = (0.0, 0.2, 0.5, 0.8)
WIDE_SPARSITIES = (0.0, 0.2, 0.5, 0.8, 0.95)
LARGE_SPARSITY = 0.8
EXACT_TOL = 1e-9
VERDICTS = ("holds", "holds in part", "fails", "—")


@dataclass
class LawRow:
    """One claim of the appendix at one setting, with what was measured.

    ``predicted`` is the claimed value (``nan`` for a qualitative claim, whose
    text is ``claim``); ``measured`` and ``sd`` are the mean and standard
    deviation over seeds. ``verdict``: ``"holds"`` (within ``tol`` of the
    prediction, or the qualitative claim is met), ``"fails"``, ``"holds in
    part"`` (a qualitative claim met at some settings only) or ``"—"`` (a
    context row with nothing claimed). ``claimed`` is False for rows that test
    a prediction of ours rather than the appendix's (e.g. the Życzkowski-Sommers
    mean modulus), and for context rows; :func:`law_verdicts` ignores them.
    """

    law: str
    quantity: str
    setting: str
    n: int
    claim: str
    predicted: float
    measured: float
    sd: float
    verdict: str
    note: str = ""
    claimed: bool = True

    @property
    def rel_error(self):
        """``(measured − predicted) / |predicted|`` (nan without a numeric prediction)."""
        if math.isnan(self.predicted) or self.predicted == 0:
            return math.nan
        return (self.measured - self.predicted) / abs(self.predicted)


def paper_grid(n):
    """Ranks and sparsities for hidden size ``n``: the paper's at n = 64 (A.11.3), the same rank ratios otherwise.

    n = 64: ranks {1, 5, 16, 27, 64 (full)}, sparsities {0, 0.2, 0.5, 0.8}.
    Other n: ranks ``round(n k / 64)`` for those k, and the finer sparsity
    grid {0, 0.2, 0.5, 0.8, 0.95} (A.6's figures are at n = 512 and run s
    over (0, 1); the large-s claim of A.6.2 wants a point beyond 0.8).
    """
    if n == 64:
        return PAPER_RANKS_64, PAPER_SPARSITIES
    ranks = tuple(sorted({max(1, round(n * k / 64)) for k in PAPER_RANKS_64}))
    return ranks, WIDE_SPARSITIES


def _seeds(seeds, n):
    if seeds is None:
        seeds = 3 if n >= 256 else 30
    if isinstance(seeds, int):
        return tuple(range(seeds))
    return tuple(int(s) for s in seeds)


def _gen(seed):
    return torch.Generator().manual_seed(seed)


def _msd(values):
    v = np.asarray(values, dtype=float)
    return float(v.mean()), (float(v.std(ddof=1)) if v.size > 1 else 0.0)


def _judge(predicted, measured, tol):
    return "holds" if abs(measured - predicted) <= tol * abs(predicted) else "fails"


def _row(law, quantity, setting, n, claim, predicted, values, tol, note="", claimed=True):
    m, sd = _msd(values)
    verdict = _judge(predicted, m, tol)
    if tol >= 1e-3:
        se = sd / math.sqrt(len(values)) / abs(predicted)
        tail = f"rel. error {(m - predicted) / abs(predicted):+.1%} (tolerance {tol:.0%}; s.e. {se:.1%})"
    else:
        tail = f"|Δ| = {abs(m - predicted):.1e}"
    return LawRow(law, quantity, setting, n, claim, float(predicted), m, sd, verdict,
                  f"{tail}{'; ' + note if note else ''}", claimed)


class _Draws:
    """``W_rec(r, s)`` from :func:`init_recurrent`, one per seed, each decomposed at most once.

    ``"eig"``: eigenvalues (of an unmasked rank-r draw, the r nonzero ones:
    those of ``W2 W1``, r × r); ``"sv"``: singular values. Only these results
    are kept, not the matrices; laws that share a setting share its draws.
    """

    def __init__(self, n, seeds):
        self.n, self.seeds, self._cache = n, seeds, {}

    def get(self, init, rank, s, *whats):
        r = None if rank == self.n else rank
        for seed in self.seeds:
            missing = [w for w in whats if (init, r, s, seed, w) not in self._cache]
            if not missing:
                continue
            W1, W2, M = init_recurrent(self.n, r, s, init, _gen(seed), dtype=torch.float64)
            W = recurrent_matrix(W1, W2, M)
            for w in missing:
                if w == "eig":
                    val = torch.linalg.eigvals(W2 @ W1 if W2 is not None and s == 0 else W)
                else:
                    val = torch.linalg.svdvals(W)
                self._cache[(init, r, s, seed, w)] = val
        return tuple([self._cache[(init, r, s, seed, w)] for seed in self.seeds] for w in whats)

    def rho_norm(self, init, rank, s):
        eig, sv = self.get(init, rank, s, "eig", "sv")
        return [float(e.abs().max()) for e in eig], [float(v[0]) for v in sv]


def _glorot_sparse_rows(n, sparsities, draws, tol):
    rows = []
    for s in sparsities:
        rho, norm = draws.rho_norm("glorot", n, s)
        setting = f"Glorot, full rank, s={s:g}"
        rows.append(_row("A.6.1", "ρ(W)", setting, n, "√(1−s) (circular law)", math.sqrt(1 - s), rho, tol))
        rows.append(_row("A.6.1", "‖W‖", setting, n, "2√(1−s) (Marchenko-Pastur edge)", 2 * math.sqrt(1 - s),
                         norm, tol))
    return rows


def _orthogonal_sparse_rows(n, sparsities, draws, tol):
    rows = []
    for s in sparsities:
        rho, norm = draws.rho_norm("orthogonal", n, s)
        large = s >= LARGE_SPARSITY
        note = "" if large else f"not claimed: the appendix claims the Glorot law at large s (s ≥ {LARGE_SPARSITY})"
        setting = f"orthogonal, full rank, s={s:g}"
        rows.append(_row("A.6.2", "ρ(W)", setting, n, "→ √(1−s) at large s", math.sqrt(1 - s), rho, tol, note,
                         claimed=large))
        rows.append(_row("A.6.2", "‖W‖", setting, n, "→ 2√(1−s) at large s", 2 * math.sqrt(1 - s), norm, tol,
                         note, claimed=large))
    norms = [_msd(draws.rho_norm("orthogonal", n, s)[1]) for s in sparsities]
    means = [m for m, _ in norms]
    k = int(np.argmax(means))
    interior = 0 < k < len(means) - 1 and means[k] > (1 + tol) * max(means[0], means[-1])
    seq = ", ".join(f"s={s:g}: {m:.3f}" for s, m in zip(sparsities, means))
    rows.append(LawRow("A.6.2", "‖W‖ vs s", "orthogonal, full rank", n, "non-monotonic in s", math.nan,
                       means[k], norms[k][1],
                       "holds" if interior else "fails",
                       f"measured = the largest mean ‖W‖, at s={sparsities[k]:g}; {seq}"))
    return rows


def _orthogonal_lowrank_rows(n, ranks, draws, tol):
    rows = []
    for r in ranks:
        eigs, _ = draws.get("orthogonal", r, 0.0, "eig", "sv")
        rho, norm = draws.rho_norm("orthogonal", r, 0.0)
        mu = r / n
        setting = f"orthogonal, r={r} (r/n={mu:.3f}), s=0"
        rows.append(_row("A.6.3", "‖W‖", setting, n, "= 1 (all singular values 1)", 1.0, norm, EXACT_TOL))
        rows.append(_row("A.6.3", "ρ(W) = max|λ|", setting, n, "√(r/n)", math.sqrt(mu), rho, tol))
        mean_mod = [float(e.abs().mean()) for e in eigs]
        zs = truncated_haar_mean_modulus(mu)
        rows.append(_row("A.6.3", "mean |λ| of the r nonzero λ", setting, n, "E[λ] = √(r/n), read as mean |λ|",
                         math.sqrt(mu), mean_mod, tol, f"the Życzkowski-Sommers mean modulus is {zs:.3f}"))
        rows.append(_row("A.6.3", "mean |λ| of the r nonzero λ", setting, n,
                         "Życzkowski-Sommers mean (ours, not the appendix's)", zs, mean_mod, tol, claimed=False))
    return rows


def _glorot_lowrank_rows(n, ranks, draws, tol):
    rows, rho_means = [], []
    full = draws.rho_norm("glorot", n, 0.0)[1]
    for r in ranks:
        rho, norm = draws.rho_norm("glorot", r, 0.0)
        # ‖W_r‖ against ‖W0‖ of the same draw: the truncation keeps σ_1, so the difference is rounding only.
        worst = max(abs(a - b) for a, b in zip(norm, full))
        m, sd = _msd(norm)
        rows.append(LawRow("A.6.4", "‖W_r‖", f"Glorot, r={r} (r/n={r / n:.3f}), s=0", n,
                           "= ‖W0‖ (truncation keeps σ_1)", _msd(full)[0], m, sd,
                           "holds" if worst <= EXACT_TOL * max(full) else "fails",
                           f"max over seeds |‖W_r‖ − ‖W0‖| = {worst:.1e}"))
        rho_means.append(_msd(rho))
    increasing = all(b[0] > a[0] for a, b in zip(rho_means, rho_means[1:]))
    seq = ", ".join(f"r={r}: {m:.3f}±{sd:.3f}" for r, (m, sd) in zip(ranks, rho_means))
    rows.append(LawRow("A.6.4", "ρ(W) vs rank", "Glorot, s=0", n, "increasing in rank", math.nan,
                       rho_means[-1][0], rho_means[-1][1], "holds" if increasing else "fails",
                       f"measured = ρ at full rank; {seq}"))
    return rows


def _erank_grid(ranks, sparsities, draws, init):
    """Mean entropy effective rank of ``W_rec(r, s)`` over seeds, ``{(r, s): (mean, sd)}``."""
    return {(r, s): _msd([float(_entropy_rank(v)) for v in draws.get(init, r, s, "sv")[0]])
            for r in ranks for s in sparsities}


def _monotone_row(law, quantity, setting, n, claim, axis, values, measured_at):
    inc = all(b[0] > a[0] for a, b in zip(values, values[1:]))
    seq = ", ".join(f"{a}: {m:.1f}" for a, (m, _) in zip(axis, values))
    m, sd = values[measured_at]
    return LawRow(law, quantity, setting, n, claim, math.nan, m, sd, "holds" if inc else "fails",
                  f"effective rank (entropy) along the axis: {seq}")


def _decay_rows(n, ranks, sparsities, draws):
    rows = []
    for init in ("orthogonal", "glorot"):
        grid = _erank_grid(ranks, sparsities, draws, init)
        for r in ranks:
            rname = "full" if r == n else r
            rows.append(_monotone_row("A.7", "erank vs s", f"{init}, r={rname}", n,
                                      "decay slower (erank up) as s rises", [f"s={s:g}" for s in sparsities],
                                      [grid[(r, s)] for s in sparsities], -1))
        for s in sparsities:
            rows.append(_monotone_row("A.7", "erank vs r", f"{init}, s={s:g}", n,
                                      "decay slower (erank up) as r rises", [f"r={r}" for r in ranks],
                                      [grid[(r, s)] for r in ranks], -1))
    return rows


def _lemma1_rows(n, seeds, tol, gate_counts=(3, 4)):
    rows = []
    for G in gate_counts:
        norms, rhos = [], []
        for seed in seeds:
            W1, _, _ = init_recurrent(n, None, 0.0, "concatenated", _gen(seed), gates=G, dtype=torch.float64)
            norms += spectral_norm(W1).tolist()
            if seed == seeds[0] or n < 256:      # ρ needs an eigendecomposition: the blocks of one draw at large n
                rhos += spectral_radius(W1).tolist()
        setting = f"concatenated orthogonal, G={G} (blocks of an n × {G}n draw)"
        worst = max(norms)
        m, sd = _msd(norms)
        rows.append(LawRow("Lemma 1", "max ‖W_g‖", setting, n, "≤ ‖[W_1 … W_G]‖ = 1", 1.0, worst, 0.0,
                           "holds" if worst <= 1 + EXACT_TOL else "fails",
                           f"mean ‖W_g‖ = {m:.3f} ± {sd:.3f}: {1 - m:.1%} below an own orthogonal draw "
                           "(‖W‖ = 1)"))
        edge = 2 * math.sqrt(G - 1) / G
        rows.append(_row("Lemma 1", "‖W_g‖", setting, n, "2√(G−1)/G (Jacobi-ensemble edge; ours)", edge, norms,
                         tol, claimed=False))
        rows.append(_row("Lemma 1", "ρ(W_g)", setting, n, "1/√G (truncated Haar, as A.6.3; ours)",
                         1 / math.sqrt(G), rhos, tol,
                         f"an own orthogonal draw has ρ = 1: the blocks' ρ is {1 - _msd(rhos)[0]:.0%} smaller",
                         claimed=False))
    return rows


def _product_rows(n, ranks, draws, tol):
    """A.10: "multiplying the two matrices [W1, W2 drawn individually] does not preserve the spectral norm"."""
    rows = []
    for r in (r for r in ranks if r < n):
        setting = f"r={r} (r/n={r / n:.3f})"
        dev, prod_rho, glorot_norm, glorot_ref = [], [], [], []
        for seed in draws.seeds:
            g = _gen(10_000 + seed)
            A, B = haar_orthogonal(n, r, generator=g), haar_orthogonal(r, n, generator=g)
            s = torch.linalg.svdvals(A @ B)
            dev.append(float((s[:r] - 1).abs().max()))
            prod_rho.append(float(torch.linalg.eigvals(B @ A).abs().max()))
            G1, G2 = glorot_uniform(n, r, generator=g), glorot_uniform(r, n, generator=g)
            glorot_norm.append(float(spectral_norm(G1 @ G2)))
            glorot_ref.append(float(spectral_norm(glorot_uniform(n, n, generator=g))))
        split_rho = draws.rho_norm("orthogonal", r, 0.0)[0]
        worst = max(dev)
        rows.append(LawRow("A.10", "max_i |σ_i(W1 W2) − 1|, i ≤ r",
                           f"orthonormal-column W1 (n×r), orthonormal-row W2 (r×n), independent Haar, {setting}", n,
                           "the product does not preserve ‖W_rec‖ (= 1)", 0.0, worst, 0.0,
                           "fails" if worst <= EXACT_TOL else "holds",
                           "all r singular values of W1 W2 are 1, so ‖W1 W2‖ = 1 = ‖W_rec‖: the remark fails "
                           "for orthogonal factors"))
        (pm, psd), (sm, ssd) = _msd(prod_rho), _msd(split_rho)
        se2 = 2 * math.sqrt((psd ** 2 + ssd ** 2) / len(draws.seeds))
        rows.append(LawRow("A.10", "ρ(W1 W2), independent factors", f"orthogonal factors, {setting}", n,
                           "same law as the random-subspace split of init_recurrent (ours)", sm, pm, psd,
                           "holds" if abs(pm - sm) <= max(tol * sm, se2) else "fails",
                           f"split: {sm:.3f} ± {ssd:.3f}; a two-sample test: |Δ| = {abs(pm - sm):.3f} vs "
                           f"max(tol·split, 2 s.e.) = {max(tol * sm, se2):.3f}", claimed=False))
        gm, gref = _msd(glorot_norm)[0], _msd(glorot_ref)[0]
        changed = abs(gm - gref) > tol * gref
        rows.append(LawRow("A.10", "‖W1 W2‖, Glorot factors", f"Glorot W1 (n×r), W2 (r×n), {setting}", n,
                           "the product does not preserve ‖W_rec‖", gref, gm, _msd(glorot_norm)[1],
                           "holds" if changed else "fails",
                           f"predicted column = ‖W_rec‖ of a Glorot n×n draw (kept by its rank-r SVD split); "
                           f"the product's norm is {gm / gref:.2f}× that"))
    return rows


def initialisation_laws(n=512, seeds=None, *, ranks=None, sparsities=None, tol=0.05, laws=None):
    """The appendix's claims about ``W_rec(r, s)`` at initialisation, each confronted with measurement.

    Laws (each row's ``law``):

    - ``"A.6.1"`` Glorot + sparse: ``ρ = √(1−s)``, ``‖W‖ = 2√(1−s)``;
    - ``"A.6.2"`` orthogonal + sparse: the same at large s (claimed rows
      s ≥ 0.8), and ``‖W‖`` non-monotonic in s;
    - ``"A.6.3"`` orthogonal + low rank: ``‖W‖ = 1``; ``ρ = √(r/n)`` (the
      largest ``|λ|``); the appendix's "E[λ] = √r" read as the mean ``|λ|``
      of the r nonzero eigenvalues (and that mean against the
      Życzkowski-Sommers law, :func:`truncated_haar_mean_modulus`);
    - ``"A.6.4"`` Glorot + low rank: ``‖W‖`` unchanged by truncation, ``ρ``
      increasing in rank;
    - ``"A.7"`` singular-value decay slower as sparsity rises and as rank
      rises, measured by the entropy effective rank (:func:`effective_rank`)
      along each axis of the rank × sparsity grid, both initialisations;
    - ``"Lemma 1"`` (A.10): the blocks of the concatenated (TensorFlow)
      orthogonal init have ``‖W_g‖ ≤ 1``, G = 3 (GRU, CfC) and 4 (LSTM), with
      how far below an own orthogonal draw (``ρ = ‖W‖ = 1``) they fall;
    - ``"A.10"``: "multiplying the two matrices [W1, W2 drawn individually]
      does not preserve the spectral norm of W_rec", for orthogonal and for
      Glorot factors.

    Parameters
    ----------
    n : int
        Hidden size (the appendix's figures: 512; its networks: 64).
    seeds : int, sequence of ints or None
        Draws per setting (None: 3 at n ≥ 256, 30 below). Each seed seeds a
        ``torch.Generator`` for :func:`rnnlab.models.cells.init_recurrent`.
    ranks, sparsities : sequences or None
        Grids (None: :func:`paper_grid`). ``ranks`` must include n (full rank).
    tol : float
        Relative tolerance of the asymptotic laws: a row holds when
        ``|mean − predicted| ≤ tol · |predicted|``. Exact identities (``‖W‖ = 1``,
        ``‖W_r‖ = ‖W0‖``, Lemma 1, unit singular values) use ``1e-9``.
        Qualitative claims (monotone, non-monotonic) are judged on the means.
    laws : iterable of law ids or None
        A subset of the laws above (None: all).

    Returns
    -------
    list of :class:`LawRow`
        Format with :func:`laws_table`; :func:`law_verdicts` summarises.
    """
    if isinstance(n, bool) or not isinstance(n, int) or n < 2:
        raise ValueError(f"n must be an int >= 2, got {n!r}")
    default_ranks, default_sparsities = paper_grid(n)
    ranks = tuple(default_ranks if ranks is None else ranks)
    sparsities = tuple(default_sparsities if sparsities is None else sparsities)
    if not ranks or ranks[-1] != n or any(not 1 <= r <= n for r in ranks) or list(ranks) != sorted(set(ranks)):
        raise ValueError(f"ranks must be increasing ints in [1, n] ending with n = {n} (full rank), got {ranks}")
    if not sparsities or any(not 0 <= s < 1 for s in sparsities) or list(sparsities) != sorted(set(sparsities)):
        raise ValueError(f"sparsities must be increasing floats in [0, 1), got {sparsities}")
    if not tol > 0:
        raise ValueError(f"tol must be > 0, got {tol}")
    known = ("A.6.1", "A.6.2", "A.6.3", "A.6.4", "A.7", "Lemma 1", "A.10")
    laws = known if laws is None else tuple(laws)
    if any(law not in known for law in laws):
        raise ValueError(f"laws must be a subset of {known}, got {laws}")
    seeds = _seeds(seeds, n)
    draws = _Draws(n, seeds)
    rows = []
    if "A.6.1" in laws:
        rows += _glorot_sparse_rows(n, sparsities, draws, tol)
    if "A.6.2" in laws:
        rows += _orthogonal_sparse_rows(n, sparsities, draws, tol)
    if "A.6.3" in laws:
        rows += _orthogonal_lowrank_rows(n, ranks, draws, tol)
    if "A.6.4" in laws:
        rows += _glorot_lowrank_rows(n, ranks, draws, tol)
    if "A.7" in laws:
        rows += _decay_rows(n, ranks, tuple(s for s in sparsities if s in PAPER_SPARSITIES) or sparsities, draws)
    if "Lemma 1" in laws:
        rows += _lemma1_rows(n, seeds, tol)
    if "A.10" in laws:
        rows += _product_rows(n, ranks, draws, tol)
    return rows


def law_verdicts(rows):
    """One verdict per claim ``(law, quantity)``: all its claimed rows hold → "holds", none → "fails", else
    "holds in part".

    Returns ``{(law, quantity): (verdict, "k of m claimed rows hold")}``;
    rows with ``claimed=False`` (our own reference predictions, context) do
    not count.
    """
    out = {}
    for key in dict.fromkeys((r.law, r.quantity) for r in rows):
        claimed = [r for r in rows if (r.law, r.quantity) == key and r.claimed]
        if not claimed:
            continue
        k = sum(r.verdict == "holds" for r in claimed)
        verdict = "holds" if k == len(claimed) else ("fails" if k == 0 else "holds in part")
        out[key] = (verdict, f"{k} of {len(claimed)} claimed rows hold")
    return out


def laws_table(rows):
    """The rows as a Markdown table (predicted vs measured mean ± sd, verdict, note)."""
    lines = ["| law | quantity | setting | n | claim | predicted | measured (mean ± sd) | verdict | note |",
             "|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        pred = "—" if math.isnan(r.predicted) else f"{r.predicted:.4g}"
        meas = f"{r.measured:.4g} ± {r.sd:.2g}"
        verdict = r.verdict if r.claimed else f"({r.verdict})"
        lines.append(f"| {r.law} | {r.quantity} | {r.setting} | {r.n} | {r.claim} | {pred} | {meas} | {verdict} "
                     f"| {r.note} |")
    return "\n".join(lines)


def laws_to_json(rows):
    """The rows as a list of plain dicts (JSON-ready; ``nan`` predictions become None)."""
    from dataclasses import asdict

    out = []
    for r in rows:
        d = asdict(r)
        d["predicted"] = None if math.isnan(r.predicted) else r.predicted
        out.append(d)
    return out


def laws_from_json(items):
    """:class:`LawRow` s back from :func:`laws_to_json`."""
    return [LawRow(**{**d, "predicted": math.nan if d["predicted"] is None else d["predicted"]}) for d in items]


seed_tuple = _seeds      # public, for rnnlab.experiments.lowrank_laws

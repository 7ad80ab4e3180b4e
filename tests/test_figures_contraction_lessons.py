"""The contraction lessons' Venn diagram places each matrix by its certificates."""
import numpy as np

import rnnlab.theory as th
from rnnlab.figures import contraction_lessons as cl


def _certifying(W):
    # Theorems 1, 2 and 5 decided here from their conditions, not from the figure's code.
    A = np.abs(W)
    A[np.diag_indices_from(A)] *= np.diag(W) > 0                     # the diagonal rule
    hits = set()
    if np.linalg.eigvals(A - np.eye(len(W))).real.max() < 0:
        hits.add(1)
    if np.allclose(W, W.T) and np.linalg.eigvalsh(W).max() < 1:
        hits.add(2)
    if th.certify_theorem5(W).holds:                                 # an LMI: cvxpy decides
        hits.add(5)
    return hits


def test_every_venn_dot_lies_in_exactly_the_circles_of_its_certificates():
    layout = cl.venn_layout()
    assert {name for name, *_ in layout} == set(cl.VENN_MATRICES)
    for name, hits, xy, _ in layout:
        W = np.array(cl.VENN_MATRICES[name], dtype=float)
        assert hits == _certifying(W), name
        assert cl.in_circles(xy) == hits, (name, xy)


def test_the_symmetric_matrix_with_a_strong_negative_self_weight_is_theorem_2s_only():
    layout = {name: (hits, xy) for name, hits, xy, _ in cl.venn_layout()}
    hits, xy = layout["symmetric [[−9, 2.5], [2.5, 0]]"]
    assert hits == {2} and cl.in_circles(xy) == {2}


def test_the_flowchart_routes_each_example_to_the_first_theorem_that_holds():
    # Theorems 1 and 2 decided here from their conditions; 3 and 5 by the package's LMIs.
    for name, rows in cl.FLOW_EXAMPLES.items():
        W = np.array(rows, dtype=float)
        hits = _certifying(W)
        symmetric = np.allclose(W, W.T)
        if symmetric and np.linalg.eigvalsh(W).max() >= 1:
            expected = -2
        elif symmetric and abs(np.linalg.det(W)) > 1e-12:
            expected = 2
        elif 1 in hits:
            expected = 1
        elif th.certify_theorem3(W).holds:
            expected = 3
        else:
            expected = 5 if 5 in hits else 0
        assert cl.flowchart_route(W) == expected, name
    assert {cl.flowchart_route(rows) for rows in cl.FLOW_EXAMPLES.values()} == {-2, 0, 1, 2, 3, 5}

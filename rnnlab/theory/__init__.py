"""Numerics of the papers' theory: contraction certificates, assemblies, simulation; spectra and Jacobians.

Kozachkov, Ennis, Slotine, "RNNs of RNNs" (NeurIPS 2022): one function per
theorem (:mod:`.contraction`: the certificate and definitions in :mod:`.certificate`,
Theorems 1-6 in :mod:`.theorems`, the counterexamples and Theorem 7 in
:mod:`.counterexamples`), feedback and hierarchical combinations and the
module constructors (:mod:`.assembly`), the empirical check that confronts
every certificate with simulation (:mod:`.simulation`), and the certificates of
a Combo Net as it stands after training, with the public code's metric
reproduced (:mod:`.combo_report`).

Tumma et al., "Leveraging Low-Rank and Sparse Recurrent Connectivity" (ICLR
2024): the cells' recurrent Jacobians (:mod:`.jacobians`, A.4), spectra of
``W_rec(r, s)`` and the appendix's laws at initialisation confronted with
measurement (:mod:`.spectra` and :mod:`.laws`, A.6, A.7, A.10, A.11.5), and the memory
horizon from products of Jacobians (:mod:`.horizon`, A.5.1).
"""
from .activations import ACTIVATIONS, Activation, get_activation
from .assembly import (
    block_diag_metric,
    block_mask,
    certify_assembly,
    certify_combo_net,
    certify_hierarchy,
    feedback_matrix,
    lyapunov_metric,
    metzler_diagonal_metric,
    sample_theorem1_module,
    sample_theorem1_modules,
    skew_residual,
    sparse_combo_net_naive_num_params,
    sparse_combo_net_num_params,
    svd_module,
    svd_module_weight,
    theorem1_acceptance,
    theorem1_module_metric,
)
from .combo_report import (
    combo_net_report,
    linearisation,
    public_code_check,
    public_code_find_M,
    public_code_metric_report,
    slope_patterns,
)
from .contraction import (
    Certificate,
    certify_continuous,
    certify_discrete,
    certify_theorem1,
    certify_theorem2,
    certify_theorem3,
    certify_theorem4,
    certify_theorem5,
    certify_theorem6,
    contraction_rate_continuous,
    contraction_rate_discrete,
    find_common_metric,
    jacobian,
    metric_jacobian_sym,
    rate_in_metric,
    slope_vertices,
    sym,
    theorem1_counterexample,
    theorem7_conditions,
    theorem7_counterexample,
    theorem7_critical_c,
    theorem7_critical_eps,
    theorem7_margin_grid,
)
from .horizon import (HorizonRow, MemoryHorizon, carry_factors, cumulative_log_norms, default_drive, horizon_row,
                      horizon_sensitivity, horizon_slope, horizon_vs_radius, memory_horizon, run_states)
from .jacobians import appendix_jacobian, autograd_jacobian, recurrent_jacobian
from .simulation import (EmpiricalCheck, check_certificate, empirical_contraction, euler_rate_bound, euler_step_for,
                         piecewise_input, simulate)
from .laws import LawRow, initialisation_laws, law_verdicts, laws_table, paper_grid
from .spectra import (cell_spectra, effective_rank, eigenvalues, matrix_spectra, singular_values, spectral_norm,
                      spectral_radius, truncated_haar_mean_modulus)

__all__ = [name for name in dir() if not name.startswith("_") and name not in {
    "activations", "assembly", "certificate", "combo_report", "contraction", "counterexamples", "horizon",
    "jacobians", "laws", "simulation", "spectra", "theorems"}]

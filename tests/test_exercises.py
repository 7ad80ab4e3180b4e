"""The exercise convention, over every chapter notebook, and the student notebooks.

Every code exercise is: the ``{exercise}`` text, a starter cell (tag
``exercise-starter``) defining the function of its ``rnnlab.checks``
declaration with a body that raises NotImplementedError, a gated solution,
and a check cell (tags ``exercise-check`` and ``nbval-check-output``) whose
stored output says it passed. The student notebooks in ``student/`` are the
generator's output for the current chapters and leak nothing.
"""
import ast
import json
import pathlib
import re

import pytest

from rnnlab import book, checks
from rnnlab.book import editions
from rnnlab.checks import student as st

ROOT = pathlib.Path(__file__).resolve().parents[1]
NOTEBOOKS = book.notebooks(ROOT)
IDS = [p.relative_to(ROOT / "book").with_suffix("").as_posix() for p in NOTEBOOKS]
LINE_WIDTH = 88


def _load(path):
    return json.loads(path.read_text())


def _src(cell):
    return "".join(cell["source"])


def _tags(cell):
    return cell.get("metadata", {}).get("tags", [])


def _out_text(cell):
    text = []
    for out in cell.get("outputs", []):
        if "text" in out:
            text.append("".join(out["text"]))
        elif "data" in out and "text/plain" in out["data"]:
            text.append("".join(out["data"]["text/plain"]))
    return "".join(text)


def _exercise_labels(nb):
    labels = []
    for cell in nb["cells"]:
        if cell["cell_type"] == "markdown":
            labels += re.findall(r"\{exercise\}[^\n]*\n:label: (\S+)", _src(cell))
    return labels


@pytest.mark.parametrize("path", NOTEBOOKS, ids=IDS)
def test_code_exercises_follow_the_convention(path):
    nb = _load(path)
    name = path.relative_to(ROOT / "book").with_suffix("").as_posix()
    declared = {ex.label: ex for ex in checks.exercises(notebook=name)}
    labels = _exercise_labels(nb)
    checked = st.checked_labels(nb)
    assert sorted(checked) == sorted(declared), (
        f"{name}: check cells for {sorted(checked)}, rnnlab.checks declares {sorted(declared)}")
    cells = nb["cells"]
    for label, ex in declared.items():
        assert label in labels, f"{label} is declared but has no {{exercise}} in {name}"
        at = {k: i for i, c in enumerate(cells) for k in [label]
              if "exercise-check" in _tags(c) and re.search(rf"check\(\s*\"{label}\"", _src(c))}
        assert at, f"{label}: no check cell tagged exercise-check"
        check_at = at[label]
        check_cell = cells[check_at]
        assert "nbval-check-output" in _tags(check_cell), f"{label}: check cell not tagged nbval-check-output"
        assert _src(check_cell).strip() == f'from rnnlab.checks import check\ncheck("{label}", {ex.name})', (
            f"{label}: the check cell is exactly the import and the call")
        assert f"{label}: passed" in _out_text(check_cell), f"{label}: stored check output is not 'passed'"
        starters = [i for i, c in enumerate(cells[:check_at])
                    if "exercise-starter" in _tags(c) and re.search(rf"^def {ex.name}\(", _src(c), re.M)]
        assert starters, f"{label}: no starter cell defining {ex.name} before its check"
        starter = cells[starters[-1]]
        tree = ast.parse(_src(starter))
        funcs = [n for n in tree.body if isinstance(n, ast.FunctionDef)]
        assert [f.name for f in funcs] == [ex.name], f"{label}: the starter must define only {ex.name}"
        namespace = {}
        exec(compile(tree, f"<starter {label}>", "exec"), namespace)   # defining it runs nothing
        result = checks.evaluate(label, namespace[ex.name])
        assert result.status == "not attempted", f"{label}: starter gives {result.status}: {result.message}"
        between = "".join(_src(c) for c in cells[starters[-1]:check_at] if c["cell_type"] == "markdown")
        assert re.search(rf"\{{solution-start\}}\s+{label}", between), f"{label}: no gated solution between starter and check"
        assert not starter.get("outputs"), f"{label}: the starter cell has output"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=IDS)
def test_every_exercise_has_a_solution(path):
    nb = _load(path)
    text = "\n".join(_src(c) for c in nb["cells"] if c["cell_type"] == "markdown")
    for label in _exercise_labels(nb):
        assert re.search(rf"\{{solution(-start)?\}}\s+{label}\b", text), f"{label} has no solution"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=IDS)
def test_output_checks_are_tags_and_code_fits_the_page(path):
    nb = _load(path)
    for n, cell in enumerate(nb["cells"], 1):
        if cell["cell_type"] != "code":
            continue
        src = _src(cell)
        assert "NBVAL_" not in src, f"cell {n}: nbval markers are cell tags, not comments"
        for line in src.splitlines():
            assert len(line) <= LINE_WIDTH, f"cell {n}: a line of {len(line)} characters: {line[:50]}..."


def test_every_declared_exercise_is_in_a_notebook():
    names = set(IDS)
    for ex in checks.exercises():
        assert ex.notebook in names, f"{ex.label}: notebook {ex.notebook} does not exist"


@pytest.mark.parametrize("label", [ex.label for ex in checks.exercises()])
def test_the_reference_passes_and_wrong_answers_fail(label):
    ex = checks.get(label)
    result = checks.evaluate(label, ex.reference)
    # A few small public cases: one for an answer worked by hand, up to ten cheap ones (checks run on Colab).
    assert result.ok and 1 <= result.total <= 10, result.message
    assert result.message == f"{label}: passed, {result.total} of {result.total} cases"
    for wrong in (lambda *a, **k: None, lambda *a, **k: 0.123456, lambda *a, **k: "x"):
        result = checks.evaluate(label, wrong)
        assert result.status == "failed", result.message
        assert "case 1 of" in result.message
    result = checks.evaluate(label, lambda *a, **k: 1 / 0)
    assert result.status == "failed" and "ZeroDivisionError" in result.message


def test_student_folder_is_current():
    assert editions.stale_student_notebooks(ROOT) == []


def test_student_notebooks_leak_nothing():
    files = editions.student_files(ROOT)
    assert files
    for rel, (text, removed, chapter) in files.items():
        student = json.loads(text)
        assert st.leaks(student, removed, chapter) == [], rel
        assert student["metadata"]["rnnlab"] == {"student": True, "source": f"book/{rel}"}
        # every code exercise keeps its starter and its check; no solution directive survives
        code = [c for c in student["cells"] if c["cell_type"] == "code"]
        for label in st.checked_labels(chapter):
            assert any(re.search(rf"check\(\s*\"{label}\"", _src(c)) for c in code), (rel, label)
        assert not any("{solution" in _src(c) for c in student["cells"]), rel


def test_every_exercise_gets_an_answer_cell():
    """Prose exercises where their solution was; code exercises after their check
    (for the questions they ask in words)."""
    for rel, (text, _, chapter) in editions.student_files(ROOT).items():
        student = json.loads(text)
        answers = [re.search(r"\((ex-[\w-]+)\)", _src(c)).group(1)
                   for c in student["cells"] if st.ANSWER_TAG in _tags(c)]
        silent = {ex.label for ex in checks.exercises() if not ex.words}
        assert sorted(answers) == sorted(set(_exercise_labels(chapter)) - silent), rel


# ------------------------------------------------------------- the generator on small cases

def _nb(*cells):
    out = []
    for kind, src, *tags in cells:
        cell = {"cell_type": kind, "metadata": {"tags": tags} if tags else {}, "source": src}
        if kind == "code":
            cell.update(execution_count=3, outputs=[{"output_type": "stream", "name": "stdout",
                                                     "text": "secret 42\n"}])
        out.append(cell)
    return {"cells": out, "metadata": {"kernelspec": {"name": "python3"}, "widgets": {"state": 1}},
            "nbformat": 4, "nbformat_minor": 5}


def test_generator_removes_gated_and_prose_solutions():
    nb = _nb(("markdown", "# Title"),
             ("markdown", "```{exercise} A\n:label: ex-a\n\nWrite f.\n```"),
             ("code", "def f(x):\n    raise NotImplementedError", "exercise-starter"),
             ("markdown", "```{solution-start} ex-a\n:class: dropdown\n```\n\nThe trick is to square it carefully."),
             ("code", "def f(x):\n    return x * x  # the squared solution line"),
             ("markdown", "```{solution-end}\n```\n\n```{exercise} B\n:label: ex-b\n\nProve it.\n```\n\n"
                          "````{solution} ex-b\n:class: dropdown\n\nBy induction on the length n.\n```python\nx\n```\n````\n\nAfter."),
             ("code", "from rnnlab.checks import check\ncheck(\"ex-a\", f)", "exercise-check"))
    student, removed = st.student_notebook(nb, source="book/x/y.ipynb")
    text = json.dumps(student)
    for secret in ("square it carefully", "the squared solution line", "By induction", "secret 42",
                   "{solution", '"widgets"'):
        assert secret not in text
    kinds = [(c["cell_type"], _src(c)[:12]) for c in student["cells"]]
    assert kinds[0] == ("markdown", "# Title")
    assert "Student version" in _src(student["cells"][1])
    srcs = [_src(c) for c in student["cells"]]
    assert any(s.startswith("def f(x):\n    raise NotImplementedError") for s in srcs)
    # ex-b is prose: an answer cell right where its solution was; ex-a is a code
    # exercise: an answer cell (for questions in words) right after its check
    answers = [s for s in srcs if s.startswith("**Your answer")]
    assert answers[0] == "**Your answer (ex-b).** *Write your derivation or explanation here.*"
    assert srcs.index(answers[0]) == srcs.index("After.") - 1
    assert answers[1].startswith("**Your answer (ex-a), in words.**")
    assert srcs.index(answers[1]) == len(srcs) - 1
    assert st.leaks(student, removed, nb) == []
    assert all(c.get("outputs", []) == [] and c.get("execution_count") is None
               for c in student["cells"] if c["cell_type"] == "code")


def test_leak_check_catches_a_leak():
    nb = _nb(("markdown", "```{exercise} A\n:label: ex-a\n```"),
             ("markdown", "```{solution-start} ex-a\n```"),
             ("code", "answer = compute_the_hidden_answer(42)"),
             ("markdown", "```{solution-end}\n```"))
    student, removed = st.student_notebook(nb)
    student["cells"].append({"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": None,
                             "source": "answer = compute_the_hidden_answer(42)"})
    assert any("solution text present" in p for p in st.leaks(student, removed, nb))
    student["cells"][-1]["outputs"] = [{"output_type": "stream", "name": "stdout", "text": "1"}]
    assert any("outputs" in p for p in st.leaks(student, removed, nb))


def test_unclosed_gated_solution_is_an_error():
    nb = _nb(("markdown", "```{solution-start} ex-a\n```"), ("code", "x = 1"))
    with pytest.raises(ValueError, match="ex-a"):
        st.student_notebook(nb)


# ------------------------------------------------------------- references against an independent answer (issue 40)
# Each entry computes the answer of the exercise's cases without the reference: by a hand
# derivation (the comments), a formula, or a second implementation. ``None`` for a case it
# does not cover (only cases worked by hand). A wrong reference fails here even though it
# passes its own check above.

import itertools  # noqa: E402
import math  # noqa: E402
import statistics  # noqa: E402

import numpy as np  # noqa: E402
import scipy.linalg  # noqa: E402
import torch  # noqa: E402


def _hillis_blelloch(algorithm, n):
    levels = max(0, math.ceil(math.log2(n))) if n > 1 else 0
    if algorithm == "hillis_steele":            # level d adds n - 2^d pairs
        return sum(n - 2 ** d for d in range(levels)), levels
    m = 2 ** levels                              # Blelloch pads to a power of two: up- and down-sweep
    return 2 * (m - 1), 2 * levels


def _segmented(x, starts):
    out, total = [], 0
    for i, v in enumerate(x):
        total = v if i in set(starts) or i == 0 else total + v
        out.append(total)
    return np.array(out)


def _stack_reads(s, depth=0.0):
    """Walk down from the top (last row): skip a strength of ``depth``, then read until the
    strengths read add up to 1."""
    w, skip, left = [0.0] * len(s), depth, 1.0
    for i in reversed(range(len(s))):
        passed = min(s[i], skip)                 # the part of the row inside the skipped strength
        skip -= passed
        w[i] = min(s[i] - passed, left)
        left -= w[i]
    return np.array(w)


def _deque_pops(s, u_top, u_bot):
    """The two pops in the other order, row by row: the bottom pop first, then the top pop."""
    s = [float(x) for x in s]
    for rows, u in ((range(len(s)), u_bot), (range(len(s) - 1, -1, -1), u_top)):
        for i in rows:                           # from the end that pops
            taken = min(s[i], u)
            s[i] -= taken
            u -= taken
    return np.array(s)


def _pop_grads(s_prev, u, g, queue):
    """Autograd through a pop written here: row i loses what is left of u after the rows
    popped before it (those above it for the stack, those in front for the queue)."""
    s = torch.tensor(np.asarray(s_prev, dtype=float), requires_grad=True)
    uu = torch.tensor(float(u), requires_grad=True)
    n = len(s_prev)
    new = []
    for i in range(n):
        before = s[:i].sum() if queue else s[i + 1:].sum()
        new.append(torch.relu(s[i] - torch.relu(uu - before)))
    (torch.stack(new) * torch.tensor(np.asarray(g, dtype=float))).sum().backward()
    return s.grad.numpy(), float(uu.grad)


def _deque_pop_grads(s_prev, u_top, u_bot, g):
    """The deque's two pops backwards, in reverse order: the bottom pop (the queue's direction) on
    what the top pop left, then the top pop, each through _pop_grads."""
    s = np.asarray(s_prev, dtype=float)
    s_mid = np.maximum(0.0, s - np.maximum(0.0, u_top - (s[::-1].cumsum()[::-1] - s)))
    g_mid, g_ub = _pop_grads(s_mid, u_bot, g, queue=True)
    g_old, g_ut = _pop_grads(s, u_top, g_mid, queue=False)
    return g_old, g_ut, g_ub


def _stack_rows(v, d, u):
    """A neural stack written row by row in NumPy (eq. 1-3): the reads, one step a row."""
    rows, reads = [], []
    for t in range(len(d)):
        left = u[t]                                   # what is left of the pop, from the top down
        for i in range(len(rows) - 1, -1, -1):
            taken = min(rows[i], max(0.0, left))
            left, rows[i] = left - rows[i], rows[i] - taken
        rows.append(d[t])
        room, r = 1.0, np.zeros(v.shape[1])
        for i in range(len(rows) - 1, -1, -1):
            w = min(rows[i], max(0.0, room))
            r, room = r + w * v[i], room - rows[i]
        reads.append(r)
    return np.array(reads)


def _stack_bptt_fd(v, d, u, g_r, h=1e-6):
    """Central differences of L = sum_t <g_r[t], r_t> through the row-by-row stack: exact up to
    roundoff away from the kinks, since the stack is piecewise linear in d and u, linear in v."""
    x = [np.array(_t(a), dtype=float) for a in (v, d, u)]
    g = np.array(_t(g_r), dtype=float)

    def loss(y):
        return float((_stack_rows(*y) * g).sum())

    grads = []
    for k, a in enumerate(x):
        out = np.zeros_like(a)
        for idx in np.ndindex(a.shape):
            plus, minus = [y.copy() for y in x], [y.copy() for y in x]
            plus[k][idx] += h
            minus[k][idx] -= h
            out[idx] = (loss(plus) - loss(minus)) / (2 * h)
        grads.append(out)
    return tuple(grads)


def _exact_pops(m, same_step):
    """Search every 0/1 pop sequence of <s> x_1 .. x_m ||| x_m .. x_1 on a classical list stack (push
    each source symbol; a pop of an empty stack does nothing): keep those whose output steps see x_m ..
    x_1 and then an empty stack, with the fewest pops; it must be unique."""
    import itertools

    T, found = 2 * m + 2, []
    for pops in itertools.product((0, 1), repeat=T):
        stack, reads = [], []
        for t in range(T):
            if pops[t] and stack:
                stack.pop()
            if 1 <= t <= m:
                stack.append(t)
            reads.append(stack[-1] if stack else None)
        seen = [reads[t] if same_step else reads[t - 1] for t in range(m + 1, T)]
        if seen == list(range(m, 0, -1)) + [None]:
            found.append(pops)
    fewest = min(sum(p) for p in found)
    best = [p for p in found if sum(p) == fewest]
    assert len(best) == 1, best
    return [float(p) for p in best[0]]


def _top_sym_eig(A):
    """The largest eigenvalue of (A + A^T) / 2 for a 1 x 1, 2 x 2 or 3 x 3 A, in closed form
    (the 3 x 3 case by the trigonometric solution of the characteristic cubic)."""
    S = (np.asarray(A, dtype=float) + np.asarray(A, dtype=float).T) / 2
    if len(S) == 1:
        return float(S[0, 0])
    if len(S) == 2:
        return float((S[0, 0] + S[1, 1]) / 2 + math.hypot((S[0, 0] - S[1, 1]) / 2, S[0, 1]))
    q = np.trace(S) / 3
    p = math.sqrt(((S - q * np.eye(3)) ** 2).sum() / 6)
    if p == 0:
        return float(q)
    r = np.clip(np.linalg.det((S - q * np.eye(3)) / p) / 2, -1.0, 1.0)
    return float(q + 2 * p * math.cos(math.acos(r) / 3))


def _cross(W, p):
    """The (0, 1) entry of M J + J^T M for M = diag(1, p) and J = -I + W."""
    M, J = np.diag([1.0, p]), -np.eye(2) + np.asarray(W, dtype=float)
    return float((M @ J + J.T @ M)[0, 1])


def _vertex_rate(W):
    """Identity metric, ReLU slopes in [0, 1]: the worst -lambda_max(sym(-I + W D)) over the
    vertices D (the largest eigenvalue of the symmetric part is convex in D)."""
    n = len(W)
    worst = math.inf
    for bits in range(2 ** n):
        D = np.diag([(bits >> i) & 1 for i in range(n)]).astype(float)
        J = -np.eye(n) + W @ D
        worst = min(worst, -np.linalg.eigvalsh((J + J.T) / 2).max())
    return worst


def _combo_params(input_size, hidden_sizes, output_size, lower_only=True):
    """Trained: input weights and biases of every unit, the readout and its bias, and the
    feedback blocks between modules (below the diagonal, or all off-diagonal blocks)."""
    H = sum(hidden_sizes)
    pairs = sum(a * b for i, a in enumerate(hidden_sizes) for j, b in enumerate(hidden_sizes)
                if (i > j if lower_only else i != j))
    return input_size * H + H + H * output_size + output_size + pairs


def _euler_limit_bisect(B, p):
    B, p = np.asarray(B, float), np.asarray(p, float)
    s = np.sqrt(p)
    Lm = s[:, None] * (B - B.T * p[None, :] / p[:, None]) / s[None, :]
    lo, hi = 0.0, 2.0 + 1e-12
    for _ in range(200):
        mid = (lo + hi) / 2
        step = (1 - mid) * np.eye(len(p)) + mid * Lm
        lo, hi = (mid, hi) if np.linalg.norm(step, 2) < 1 else (lo, mid)
    return (lo + hi) / 2


def _skew_euler(alpha, leak=1.0):
    """|1 + alpha(-leak + i omega)| < 1  <=>  omega < sqrt(1 - (1 - alpha leak)^2) / alpha."""
    return math.sqrt(max(0.0, 1 - (1 - alpha * leak) ** 2)) / alpha


def _certified_feedback(L, p, modules_norm, alpha, margin, g=1.0):
    from rnnlab.models.combo import euler_feedback_limit

    L, p = _t(L), _t(p)
    omega = euler_feedback_limit(alpha, g, modules_norm, margin)
    Lm = np.diag(np.sqrt(p)) @ L @ np.diag(1 / np.sqrt(p))
    size = np.abs(np.linalg.eigvals(Lm)).max()
    return L * (omega / size if size > omega else 1.0)


def _velocity(obs_prev, obs, dt):
    a, b = np.asarray(obs_prev, dtype=float), np.asarray(obs, dtype=float)
    turn = np.angle((b[..., 0] + 1j * b[..., 1]) / (a[..., 0] + 1j * a[..., 1]))
    return turn / dt


def _lqr(A, B, Q, R):
    P = scipy.linalg.solve_discrete_are(A, B, Q, R)
    return np.linalg.solve(R + B.T @ P @ B, B.T @ P @ A)


def _effective_dim(X, k):
    X = np.asarray(X, dtype=float)
    ev = np.sort(np.linalg.eigvalsh(np.cov(X.T)))[::-1]
    return ev[:k].sum() / ev.sum()


def _radius(W1, W2):
    """W1 W2 and W2 W1 have the same nonzero eigenvalues; the second is r x r."""
    W1, W2 = np.asarray(W1, dtype=float), np.asarray(W2, dtype=float)
    return float(np.abs(np.linalg.eigvals(W2 @ W1)).max())


def _delay(k):
    """The (k+1)-th roots of unity, each with weight lambda / (k + 1)."""
    lam = torch.exp(2j * torch.pi * torch.arange(k + 1, dtype=torch.float64) / (k + 1))
    return lam, lam / (k + 1)


def _partial_loss(T, known):
    """The cost of every step of one real sequence of the task: 0, except ln 8 at the recall
    steps whose symbol is not known (the first `known` recall steps are)."""
    from rnnlab.tasks.copy_memory import copy_memory

    _, targets = copy_memory(T, 1, seed=0)
    recall = (targets[0] != 0).nonzero().ravel()
    costs = np.zeros(targets.shape[1])
    costs[recall[known:].numpy()] = math.log(8)
    return float(costs.mean())


def _copier_antiperiodic(delay):
    """A copier from the delay + 1 roots of z^(delay + 1) = -1, each with weight mu^(-delay) / (delay + 1):
    the response is 1 at lag delay and 0 at every other lag from 0 to 2 delay. The check reads the delay
    from the number of modes (delay + 1), as for ex-lds-delay."""
    n = delay + 1
    mu = torch.exp(1j * torch.pi * (2 * torch.arange(n, dtype=torch.float64) + 1) / n)
    return mu, mu ** (-delay) / n


def _two_modes(lam):
    l1, l2 = complex(lam[0]), complex(lam[1])
    return np.array([l1 / (l1 - l2), l2 / (l2 - l1)])


def _tanh_jacobian(W, U, h, x):
    W, U, h, x = (np.asarray(a, dtype=float) for a in (W, U, h, x))
    h_new = np.tanh(W @ h + U @ x)
    return (1 - h_new ** 2)[:, None] * W


def _t(value):
    return value.numpy() if isinstance(value, torch.Tensor) else value


def _scan_loop(a, b, h0=None, reverse=False):
    """h_t = a_t h_{t-1} + b_t as a plain loop over t (backwards, h_t = a_t h_{t+1} + b_t, for
    ``reverse``); ``a`` (B, T, C) or shared (C,)."""
    B, T, C = b.shape
    h = torch.zeros(B, C, dtype=b.dtype) if h0 is None else h0
    out = [None] * T
    for t in (reversed(range(T)) if reverse else range(T)):
        h = (a if a.dim() == 1 else a[:, t]) * h + b[:, t]
        out[t] = h
    return torch.stack(out, 1)


def _swapped_scan(a, b):
    """Hillis-Steele with swapped operands, written as what it computes: in step d, slot t
    (0-based, t >= 2^(d-1)) gets the pair (x_t then x_s) reversed, x_t ∘ x_s, s = t - 2^(d-1)."""
    pairs = [list(zip(a[:, t], b[:, t])) for t in range(a.shape[1])]   # per slot, per batch
    offset = 1
    while offset < len(pairs):
        pairs = [pairs[t] if t < offset else
                 [(at * as_, as_ * bt + bs) for (at, bt), (as_, bs) in zip(pairs[t], pairs[t - offset])]
                 for t in range(len(pairs))]
        offset *= 2
    return (torch.stack([torch.stack([p[0] for p in col]) for col in pairs], 1),
            torch.stack([torch.stack([p[1] for p in col]) for col in pairs], 1))


def _running_pair(a, b, p):
    """The inclusive scan by a plain loop: A_t = a_t A_{t-1} (the running product), B_t = h_t."""
    A, out = torch.ones_like(a[:, 0]), []
    for t in range(a.shape[1]):
        A = a[:, t] * A
        out.append(A)
    return torch.stack(out, 1), _scan_loop(a, b)


def _shared_grad(a, b, h0, g):
    """Autograd through the plain loop, for the shared transition ``a`` (C,)."""
    a = a.clone().requires_grad_(True)
    (grad,) = torch.autograd.grad(_scan_loop(a, b, h0), a, g)
    return grad


def _scan_backward_by_formula(a, h, h0, g):
    """The gradients of a, b and h0 for h_t = a_t h_{t-1} + b_t from the stored states, by
    the reverse recurrence G_t = g_t + conj(a_{t+1}) G_{t+1} (no autograd): dL/da_t =
    G_t conj(h_{t-1}), dL/db_t = G_t, dL/dh0 = conj(a_1) G_1."""
    T = h.shape[1]
    h_prev = torch.cat([h0[:, None], h[:, :-1]], dim=1)
    G = torch.zeros_like(g)
    carry = torch.zeros_like(g[:, 0])
    for t in reversed(range(T)):
        G[:, t] = g[:, t] + carry
        carry = a[:, t].conj() * G[:, t]
    return G * h_prev.conj(), G.clone(), carry


def _matrix_backward(A, b, h0, g):
    """The backward pass of h_t = A_t h_{t-1} + b_t by its reverse recurrence, no autograd:
    G_T = g_T, G_t = g_t + A_{t+1}^H G_{t+1}; then dL/db_t = G_t, dL/dA_t = G_t h_{t-1}^H,
    dL/dh0 = A_1^H G_1 (PyTorch's convention for complex tensors)."""
    T = A.shape[1]
    hs, h = [h0], h0
    for t in range(T):
        h = torch.einsum("bij,bj->bi", A[:, t], h) + b[:, t]
        hs.append(h)
    G, gA, gb = torch.zeros_like(g[:, 0]), [None] * T, [None] * T
    for t in reversed(range(T)):
        G = g[:, t] + (torch.einsum("bji,bj->bi", A[:, t + 1].conj(), G) if t + 1 < T else 0)
        gb[t] = G
        gA[t] = torch.einsum("bi,bj->bij", G, hs[t].conj())
    gh0 = torch.einsum("bji,bj->bi", A[:, 0].conj(), G)
    return torch.stack(gA, 1), torch.stack(gb, 1), gh0


def _gru_step_jacobian(W, drive, h_prev):
    """d h'/d h of the book's GRU step (gates r, z, n; the reset gate before W_n), by autograd
    of the step written here."""
    def step(h):
        r = torch.sigmoid(drive[0] + W[0] @ h)
        z = torch.sigmoid(drive[1] + W[1] @ h)
        n = torch.tanh(drive[2] + W[2] @ (r * h))
        return (1 - z) * n + z * h
    return torch.autograd.functional.jacobian(step, h_prev)


def _gru_weight_grad(g_pre, r, h_prev):
    # autograd of L = sum_{b,t,g} g_pre_g . (W_g u_g) with u = (h, h, r * h): the pre-activation gradients
    # are the upstream gradients of the recurrent terms, so dL/dW is autograd's
    g_pre, r, h_prev = (torch.as_tensor(v, dtype=torch.float64) for v in (g_pre, r, h_prev))
    n = h_prev.shape[-1]
    W = torch.zeros(3, n, n, dtype=torch.float64, requires_grad=True)
    terms = [h_prev @ W[0].T, h_prev @ W[1].T, (r * h_prev) @ W[2].T]
    (sum((g_pre[:, :, g] * terms[g]).sum() for g in range(3))).backward()
    return W.grad


def _lstm_cell_step(pre, W, h, c):
    """One LSTM step by torch.nn.LSTMCell (gates i, f, g, o): its input is the drive itself
    (W_ih = I, no biases) and its W_hh the four recurrent matrices stacked."""
    B, G, n = pre.shape
    cell = torch.nn.LSTMCell(G * n, n, bias=False).double()
    with torch.no_grad():
        cell.weight_ih.copy_(torch.eye(G * n, dtype=torch.float64))
        cell.weight_hh.copy_(W.reshape(G * n, n))
        return cell(pre.reshape(B, G * n), (h, c))


def _cfc_step_numpy(u, W, h):
    """One CfC step in NumPy, rearranged: h' = tanh(H) + sigma(F) (tanh(G) - tanh(H))."""
    u, W, h = (np.asarray(_t(v)) for v in (u, W, h))
    pre = u + np.stack([h @ W[k].T for k in range(3)], axis=1)
    gate = 1.0 / (1.0 + np.exp(-pre[:, 0]))
    return np.tanh(pre[:, 2]) + gate * (np.tanh(pre[:, 1]) - np.tanh(pre[:, 2]))


def _cfc_step_jacobian(W, drive, h_prev):
    """d h'/d h of the CfC step h' = sigma(F) G + (1 - sigma(F)) H (heads F, G, H), by autograd of the
    step written here."""
    def step(h):
        gate = torch.sigmoid(drive[0] + W[0] @ h)
        return gate * torch.tanh(drive[1] + W[1] @ h) + (1 - gate) * torch.tanh(drive[2] + W[2] @ h)
    return torch.autograd.functional.jacobian(step, h_prev)


def _mask_rank_bounds(M, r):
    # r rank(M) by numpy's SVD, and a maximum matching by augmenting paths (Kuhn)
    kept = np.asarray(M, dtype=float) != 0
    owner = {}

    def augment(i, seen):
        for j in np.flatnonzero(kept[i]):
            if j not in seen:
                seen.add(j)
                if j not in owner or augment(owner[j], seen):
                    owner[j] = i
                    return True
        return False

    matching = sum(augment(i, set()) for i in range(kept.shape[0]))
    return r * int(np.linalg.matrix_rank(kept.astype(float))), matching


def _growth_rate(Js):
    """log ||J_T ... J_1||_F / T (NumPy), the running product rescaled by its largest entry (not by its
    norm, as the reference does) with the logs of the scales summed."""
    Js = [np.asarray(_t(J)) for J in Js]
    P, logs = np.eye(Js[0].shape[0]), 0.0
    for J in Js:
        P = J @ P
        top = np.abs(P).max()
        logs, P = logs + np.log(top), P / top
    return (logs + np.log(np.linalg.norm(P))) / len(Js)


def _shortening_interval(a, f):
    """By bisection on the top |eigenvalue| of [[a, 1], [pq, f]] (NumPy eigvals, no formula): the
    loop shortens the horizon while that is below f, from pq = 0 down to the crossing."""
    def excess(pq):
        return np.abs(np.linalg.eigvals([[a, 1.0], [pq, f]])).max() - f
    lo, hi = -2.0, -1e-6  # excess(lo) > 0 > excess(hi)
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if excess(mid) > 0 else (lo, mid)
    return (0.5 * (lo + hi), 0.0)


def _constant_horizon(A, T):
    """-1 / the least-squares slope (np.polyfit) of log ||A^k||_F, with A^k from
    np.linalg.matrix_power, over k = ceil(T/2) ... T."""
    A = np.asarray(_t(A), dtype=float)
    k = np.arange(math.ceil(T / 2), T + 1)
    curve = [np.log(np.linalg.norm(np.linalg.matrix_power(A, int(j)))) for j in k]
    return -1 / np.polyfit(k, curve, 1)[0]


def _highway_horizon(Js):
    """The cut product is diagonal, D(f_T ... f_{T-k+1}): its log-norm over the last k steps is
    1/2 log sum_i exp(sum of 2 log f_{t,i}) (NumPy, cumulative sums of logs, no matrix product);
    -1 / its least-squares slope (np.polyfit) over k = ceil(T/2) ... T."""
    J = np.asarray(_t(Js), dtype=float)
    n = J.shape[-1] // 2
    f = np.einsum("tii->ti", J[:, n:, n:])
    logs = np.cumsum(2 * np.log(f[::-1]), axis=0)      # row k - 1: the last k steps
    top = logs.max(axis=1)
    curve = 0.5 * (top + np.log(np.exp(logs - top[:, None]).sum(axis=1)))
    k = np.arange(1, len(f) + 1)
    window = k >= math.ceil(len(f) / 2)
    return -1 / np.polyfit(k[window], curve[window], 1)[0]


def _find_m(W):
    """find_M's diagonal: entry (i, i) of the integral over t >= 0 of exp(A^T t) exp(A t) with
    A = |diag(W)| - I, by quadrature (scipy.integrate.quad)."""
    import scipy.integrate

    return [scipy.integrate.quad(lambda t, w=w: math.exp(2 * (w - 1) * t), 0, math.inf)[0]
            for w in np.abs(np.diag(np.asarray(W, dtype=float)))]


def _identity_threshold(eps, k=1.0):
    """W = [[0, -c], [k c, 0]], slopes d in [eps, 1]: the symmetric part of -I + W D has the
    eigenvalues -1 +- c |k d1 - d2| / 2, so the rate is 0 at c = 2 / max |k d1 - d2|, the
    maximum at a corner of the box."""
    return 2 / max(abs(k * d1 - d2) for d1 in (eps, 1.0) for d2 in (eps, 1.0))


def _chunked_depth(n, chunks):
    """Chunks of L = ceil(n / chunks), of which ceil(n / L) are not empty: the reduce takes
    L - 1 steps, the Hillis-Steele carry scan ceil(log2 chunks) over the chunks that are not
    empty, the rescan L (L - 1 with one chunk: no carry to apply)."""
    L = -(-n // chunks)
    used = -(-n // L)
    if used == 1:
        return 2 * (L - 1)
    return (L - 1) + math.ceil(math.log2(used)) + L


def _modal_lds(theta, C, x):
    """s_t = e^{i theta} s_{t-1} + x_t (every mode fed the one input), y_t = Re(s_t C), in NumPy."""
    lam = np.exp(1j * np.asarray(_t(theta)))
    xs, Cn = np.asarray(_t(x))[..., 0], np.asarray(_t(C))
    s, ys = np.zeros((xs.shape[0], len(lam)), dtype=complex), []
    for t in range(xs.shape[1]):
        s = lam * s + xs[:, t, None]
        ys.append((s @ Cn).real)
    return np.stack(ys, 1)


def _diag_interval(W):
    """The p > 0 for which diag(1, p) is a metric: at each corner D of the slope box, with
    J = -I + W D, the symmetric part of diag(1, p) J is negative definite iff J_11 < 0, J_22 < 0
    and q(p) = J_11 J_22 p - (J_12 + p J_21)^2 / 4 > 0, a quadratic in p; intersect the corners'
    intervals (None when empty)."""
    W = np.asarray(W, dtype=float)
    lo, hi = 0.0, math.inf
    for d1 in (0.0, 1.0):
        for d2 in (0.0, 1.0):
            J = -np.eye(2) + W @ np.diag([d1, d2])
            (j11, j12), (j21, j22) = J
            if j11 >= 0 or j22 >= 0:
                return None
            a, b, c = -j21 ** 2 / 4, j11 * j22 - j12 * j21 / 2, -j12 ** 2 / 4
            if a == 0:                      # b p + c > 0 with b > 0
                lo = max(lo, -c / b)
                continue
            disc = b * b - 4 * a * c
            if disc <= 0:
                return None
            r1, r2 = sorted(((-b + math.sqrt(disc)) / (2 * a), (-b - math.sqrt(disc)) / (2 * a)))
            lo, hi = max(lo, r1), min(hi, r2)
    return (lo, hi) if lo < hi else None


def _second_layer(lam, drive):
    """lds/02's solution: layer 1 is s1_t = lam s1_{t-1} + drive_t; layer 2 is
    s2_t = a_t s2_{t-1} + drive_t with a_t = lam / sqrt(1 + |lam s1_{t-1}|^2); both from 0 (NumPy)."""
    lam, drive = np.asarray(_t(lam)), np.asarray(_t(drive))
    s1 = s2 = np.zeros((drive.shape[0], drive.shape[2]), dtype=complex)
    out = []
    for t in range(drive.shape[1]):
        a = lam / np.sqrt(1 + np.abs(lam * s1) ** 2)
        s1, s2 = lam * s1 + drive[:, t], a * s2 + drive[:, t]
        out.append(s2)
    return np.stack(out, 1)


def _sign_xor(n, seed, T=20):
    """lds/02's XOR in signs: the same bits (the task's seed), x = +1 for a 1 and -1 for a 0, and
    the target 1 exactly when x_(t-1) x_(t-3) = -1 (the two bits differ)."""
    b = torch.randint(0, 2, (n, T, 1), generator=torch.Generator().manual_seed(seed))
    x = torch.where(b == 1, 1.0, -1.0)
    return x, (x[:, 2:T - 1, 0] * x[:, 0:T - 3, 0] < 0).long()


def _newton_round(A, B, x, guess, rho):
    """lds/02's Newton round in NumPy with the derivative written out: the new states solve
    s_t = rho(a_t) + rho'(a_t) (A s_(t-1) - a_t) + B x_t, a_t = A g_(t-1), as one block-bidiagonal
    linear system over all steps (not a loop over time)."""
    A, B, x, g = (np.asarray(_t(v), dtype=float) for v in (A, B, x, guess))
    f, df = {"tanh": (np.tanh, lambda a: 1 - np.tanh(a) ** 2),
             "sin": (np.sin, np.cos),
             "sigmoid": (lambda a: 1 / (1 + np.exp(-a)),
                         lambda a: np.exp(-a) / (1 + np.exp(-a)) ** 2)}[rho]
    batch, T, n = g.shape
    a = np.concatenate([np.zeros((batch, 1, n)), g[:, :-1]], 1) @ A.T
    rhs = f(a) - df(a) * a + x @ B.T                          # (batch, T, n)
    out = np.empty((batch, T, n))
    for b in range(batch):
        M = np.eye(T * n)
        for t in range(1, T):                                 # - diag(rho'(a_t)) A below the diagonal
            M[t * n:(t + 1) * n, (t - 1) * n:t * n] = -df(a[b, t])[:, None] * A
        out[b] = np.linalg.solve(M, rhs[b].reshape(-1)).reshape(T, n)
    return out


def _quasi_deer_round(A, B, x, guess):
    """lds/02's quasi-DEER round in NumPy: Newton's linearisation of s_t = tanh(A s_(t-1)) + B x_t
    around the guess with its Jacobian tanh'(a_t) A cut to its diagonal, solved as one
    block-bidiagonal linear system over all steps (not a loop over time)."""
    A, B, x, g = (np.asarray(_t(v), dtype=float) for v in (A, B, x, guess))
    batch, T, n = g.shape
    before = np.concatenate([np.zeros((batch, 1, n)), g[:, :-1]], 1)     # g_(t-1), 0 at t = 1
    a = before @ A.T
    slope = (1 - np.tanh(a) ** 2) * np.diag(A)                          # (batch, T, n)
    rhs = np.tanh(a) - slope * before + x @ B.T
    out = np.empty((batch, T, n))
    for b in range(batch):
        M = np.eye(T * n)
        for t in range(1, T):
            M[t * n:(t + 1) * n, (t - 1) * n:t * n] = -np.diag(slope[b, t])
        out[b] = np.linalg.solve(M, rhs[b].reshape(-1)).reshape(T, n)
    return out


def _first_miss(A, B, x, k):
    """lds/02's first miss by the formula (p^(k-1)_k - delta(A s_k)) A s_k, with the RNN and the
    layers run step by step in NumPy (layer k - 1 only up to step k)."""
    A, B, x = (np.asarray(_t(v), dtype=float) for v in (A, B, x))
    dev = lambda a: np.where(a == 0, 1.0, np.tanh(a) / np.where(a == 0, 1.0, a))  # noqa: E731
    s = np.zeros((x.shape[0], A.shape[0]))
    for t in range(k):
        s = np.tanh(s @ A.T) + x[:, t] @ B.T                  # the RNN: s_k after k steps
    handed = np.ones_like(s)
    if k > 1:
        layers = [np.zeros((x.shape[0], k + 1, A.shape[0]))]
        for i in range(k - 1):                                # layers 1 .. k - 1, steps 1 .. k
            prev, cur, st = layers[-1], np.zeros_like(layers[-1]), np.zeros_like(s)
            for t in range(k):
                p = dev(prev[:, t] @ A.T) if i else 1.0
                st = p * (st @ A.T) + x[:, t] @ B.T
                cur[:, t + 1] = st
            layers.append(cur)
        handed = dev(layers[-1][:, k] @ A.T)
    pre = s @ A.T
    return (handed - dev(pre)) * pre


def _step_time(model, B, H, peak, bandwidth):
    """lds/04's roofline time of one step from real tensors: the bytes are the nbytes of what the step
    reads and writes, the LSTM's operations torch's FlopCounterMode of its product, the LDS's 8 per
    complex multiply-add (4 multiplications and 2 additions, then 2 additions)."""
    from torch.utils.flop_counter import FlopCounterMode

    if model == "lstm":
        h, W = torch.zeros(B, H), torch.zeros(4 * H, H)
        with FlopCounterMode(display=False) as counter:
            out = h @ W.T
        flops, moved = counter.get_total_flops(), h.nbytes + W.nbytes + out.nbytes
    else:
        lam = torch.zeros(H // 2, dtype=torch.complex64)
        u = torch.zeros(B, H // 2, dtype=torch.complex64)
        s = lam * u + u
        flops, moved = 8 * s.numel(), u.nbytes + s.nbytes + lam.nbytes
    return max(flops / peak, moved / bandwidth)


def _matching_depth(B, H, peak, bandwidth):
    """lds/04's depth at which the fused stack's roofline time reaches the LSTM's, in closed form: both
    roofs of the stack grow linearly with the depth k, so the answer is the first k where either does."""
    c = H // 2
    lstm = max(8 * B * H * H / peak, (16 * H * H + 20 * B * H) / bandwidth)
    if max(8 * B * c / peak, (16 * B * c + 8 * c) / bandwidth) >= lstm:
        return 1
    k_ops = 1 + (lstm * peak - 8 * B * c) / (17 * B * c)
    k_bytes = (lstm * bandwidth - 12 * c) / (8 * B * c) - 1
    return max(2, math.ceil(min(k_ops, k_bytes)))


def _flowchart_leaf_2x2(W, g=1.0):
    # Closed forms for 2 x 2: eigenvalues, trace/determinant tests, and a scan over r for Theorem 5.
    W = np.asarray(W, dtype=float)
    (a, b), (c, d) = W
    if b == c:                                             # symmetric
        lam = (a + d) / 2 + np.hypot((a - d) / 2, b)
        if g * lam >= 1:
            return -2
        if a * d - b * c != 0:
            return 2
    A = g * np.array([[max(a, 0.0), abs(b)], [abs(c), max(d, 0.0)]]) - np.eye(2)
    if np.trace(A) < 0 and np.linalg.det(A) > 0:           # a 2 x 2 Hurwitz test
        return 1
    # W T symmetric (b t2 = c t1 with t > 0) and negative definite
    if a < 0 and d < 0 and (b * c > 0 or b == c == 0) and a * d - b * c > 0:
        return 3
    r = np.logspace(-4, 4, 4001)
    best = min(np.linalg.norm(np.array([[a, b * x], [c / x, d]]), 2) for x in r)
    return 5 if g * best < 1 else 0


def _mask_energy_by_outcomes(W, s):
    # each mask entry takes 1 (probability 1 - s) or 0 (probability s): average the two outcomes
    W = np.asarray(W, dtype=float)
    outcomes = ((1.0, 1 - s), (0.0, s))
    copy = float(((1 - s) * W) ** 2 @ np.ones(W.shape[1]) @ np.ones(W.shape[0]))
    noise = sum(p * float(((W * (m - (1 - s))) ** 2).sum()) for m, p in outcomes)
    masked = sum(p * float(((W * m) ** 2).sum()) for m, p in outcomes)
    return copy, noise, masked


def _outside_energy_by_columns(P, r, s):
    # E||(I - Q Q^T)(P * M)||_F^2, column by column: the mean (1 - s) p_j plus independent noise
    # of variance s (1 - s) P_ij^2 in row i; Q = the r leading left singular vectors of P
    P = np.asarray(P, dtype=float)
    Q = np.linalg.svd(P)[0][:, :r]
    out = np.eye(len(P)) - Q @ Q.T
    total = 0.0
    for j in range(P.shape[1]):
        mean = out @ ((1 - s) * P[:, j])
        total += float(mean @ mean) + float(np.trace(out @ np.diag(s * (1 - s) * P[:, j] ** 2)))
    return total


def _step_energy_by_rows(W, v, s):
    # E((W * M) v)_i^2 = (mean)^2 + variance, entry by entry, with m_ij = 1 (prob. 1 - s) or 0
    W, v = np.asarray(W, dtype=float), np.asarray(v, dtype=float)
    total = 0.0
    for i in range(len(W)):
        mean = sum((1 - s) * W[i, j] * v[j] for j in range(len(v)))
        var = sum(s * (1 - s) * (W[i, j] * v[j]) ** 2 for j in range(len(v)))
        total += mean ** 2 + var
    return total


def _deque_controls_from_the_bottom(n, role):
    # push every symbol whole at the bottom; a stack's order pops the bottom, a queue's the top
    d = [[0.0, 1.0]] * n + [[0.0, 0.0]] * n
    pop = [0.0, 1.0] if role == "stack" else [1.0, 0.0]
    return d, [[0.0, 0.0]] * (n + 1) + [pop] * (n - 1)


def _strengths_from_the_cell(net, m=12, seed=0):
    # the controller's hidden state h_t by a hook on the LSTM cell, then sigma(W h + b) for each head
    from rnnlab.tasks import joint_sequences, transduction

    hs = []
    hook = net.cell.register_forward_hook(lambda mod, inp, out: hs.append(out[0]))
    sources, targets = transduction("copy", 1, m, m, vocab=net.n_source, seed=seed)
    batch = joint_sequences(sources, targets, n_source=net.n_source, n_target=net.n_target)
    try:
        with torch.no_grad():
            net(batch.inputs)
    finally:
        hook.remove()
    h = torch.stack(hs, 1)[0].double()
    return [torch.sigmoid(h @ head.weight.double().T + head.bias.double())[:, 0].detach().numpy()
            for head in (net.push, net.pop)]


def _banded_mask_by_loops(n, width):
    out = np.zeros((n, n))
    for i in range(n):
        for j in range(max(0, i - width), min(n, i + width + 1)):
            out[i, j] = 1.0
    return torch.from_numpy(out)


def _ls_error_by_trace(A, Z, sigma):
    # E||sigma Z G^+ xi||^2 = sigma^2 trace((G^T G)^-1), G = A Z of full column rank
    G = np.asarray(_t(A), dtype=float) @ np.asarray(_t(Z), dtype=float)
    return sigma ** 2 * float(np.trace(np.linalg.inv(G.T @ G)))


def _budget(n, r, s):
    rho = (r * (1 - s) / n) ** 0.5
    return np.array([rho, 1 / rho, -1 / np.log(rho)])


def _tanh_grads(W, xs):
    W, xs = np.asarray(W, float), np.asarray(xs, float)
    h, J, out = np.zeros(len(W)), np.eye(len(W)), []
    for x in xs:
        h = np.tanh(W @ h + x)
        J = np.diag(1 - h ** 2) @ W @ J
        out.append(np.linalg.norm(J, 2))
    return np.array(out)


def _linked_symbols(d, u, n):
    """A stack of its own (pop, push, read with the left-argument rule) and autograd: does the read
    of step 2n - i depend on the push of step i?"""
    import torch

    d = torch.as_tensor(d, dtype=torch.float64).detach().clone().requires_grad_()
    u = torch.as_tensor(u, dtype=torch.float64)
    B, T = d.shape
    v = torch.randn(B, T, 2, generator=torch.Generator().manual_seed(7), dtype=torch.float64)
    out = torch.zeros(B, n, dtype=torch.bool)
    for b in range(B):
        s, reads = d.new_zeros(0), []
        for t in range(T):
            above = s.flip(0).cumsum(0).flip(0) - s
            s = torch.cat([torch.relu(s - torch.relu(u[b, t] - above)), d[b, t:t + 1]])
            cap = torch.relu(1 - (s.flip(0).cumsum(0).flip(0) - s))
            reads.append(torch.where(s <= cap, s, cap) @ v[b, :t + 1])
        for i in range(1, n + 1):
            (g,) = torch.autograd.grad(reads[2 * n - i].sum(), d, retain_graph=True)
            out[b, i - 1] = bool(g[b, i] != 0)
    return out


def _two_state_distances(W, P, xa, xb, u, dt, steps):
    X, w, out = np.array([xa, xb], dtype=float), np.diag(np.asarray(P, dtype=float)), []
    assert np.allclose(np.diag(w), P)                      # the page's metrics are diagonal
    for k in range(steps + 1):
        out.append(np.sqrt(np.sum(w * (X[0] - X[1]) ** 2)))
        X = X + dt * (-X + np.clip(X, 0, None) @ np.asarray(W, dtype=float).T + u(k * dt))
    return np.array(out)



def _two_roots_cosh(c):
    """The t with c t > 2 cosh t (equal holds that make the kicked loop grow), or None."""
    from scipy.optimize import brentq

    t_min = brentq(lambda t: t * np.tanh(t) - 1, 0.5, 2.0, xtol=1e-14)
    f = lambda t: c * t - 2 * np.cosh(t)
    if f(t_min) <= 0:
        return None
    return (brentq(f, 1e-12, t_min, xtol=1e-14), brentq(f, t_min, 60.0, xtol=1e-14))

INDEPENDENT = {
    # torch's own GRU: three gates, input and recurrent matrices, two biases each
    "ex-lr-gru-torch-count": lambda n_in, n_hidden: sum(
        p.numel() for p in torch.nn.GRU(n_in, n_hidden).parameters()),
    # singular values as square roots of the eigenvalues of (W1 W2)^T (W1 W2), largest r
    "ex-lr-orthonormal-product": lambda W1, W2: np.sqrt(np.clip(np.sort(np.linalg.eigvalsh(
        (np.asarray(W1) @ np.asarray(W2)).T @ (np.asarray(W1) @ np.asarray(W2))))[::-1], 0, None))[
        : np.asarray(W1).shape[1]],
    # mean and standard error of the paired differences, by the statistics module
    "ex-lr-paired-se": lambda a, b, m: np.array([
        statistics.mean([(x - y) / m for x, y in zip(a, b)]),
        statistics.stdev([(x - y) / m for x, y in zip(a, b)]) / len(a) ** 0.5]),
    "ex-lr-knob-sweep": _banded_mask_by_loops,
    "ex-lr-decode-noise": _ls_error_by_trace,
    "ex-lr-init-budget": _budget,
    "ex-lr-rescaled-rnn": lambda W, xs: _tanh_grads(_t(W), _t(xs)),
    "ex-mem-linked-symbols": _linked_symbols,
    "ex-scans-counts": _hillis_blelloch,
    "ex-scans-segmented": lambda x, starts: _segmented(_t(x), starts),
    "ex-scans-chunks": _chunked_depth,
    "ex-scans-flip": lambda a, b, h0=None: _scan_loop(a, b, h0, reverse=True),
    "ex-scans-shared": _shared_grad,
    "ex-scans-matrix-backward": _matrix_backward,
    "ex-scans-backward": _scan_backward_by_formula,
    "ex-scans-chunked-torch": _running_pair,
    "ex-scans-layer": lambda x, a, W, starts: _scan_loop(
        torch.where(starts.unsqueeze(-1), torch.zeros_like(a), a).expand(*starts.shape, -1), x @ W),
    "ex-scans-swap": _swapped_scan,
    "ex-lr-gru-jacobian": _gru_step_jacobian,
    "ex-lr-equal-cost": lambda n, r: (n * n - 2 * n * r) / (n * n),  # (1 - s) n^2 = 2nr
    "ex-lr-lstm-step": _lstm_cell_step,
    "ex-lr-cfc-step": _cfc_step_numpy,
    "ex-lr-gru-weight-grad": _gru_weight_grad,
    "ex-lr-cfc-jacobian": _cfc_step_jacobian,
    "ex-lr-linear-horizon": _constant_horizon,
    "ex-lr-loops": _highway_horizon,
    "ex-lr-mixing": _growth_rate,
    "ex-lr-loop-sign": _shortening_interval,
    "ex-lr-mask-rank": _mask_rank_bounds,
    "ex-lr-mask-energy": _mask_energy_by_outcomes,
    "ex-lr-mask-reach": _outside_energy_by_columns,
    "ex-lr-trace-size": _step_energy_by_rows,
    # sigma on the diagonal, columns shifted cyclically: W^n = (prod sigma) I
    "ex-lr-radius-range": lambda sigma: torch.from_numpy(
        np.diag(np.asarray(sigma, dtype=float))[:, np.r_[1:len(sigma), 0]]),
    "ex-mem-deque-roles": _deque_controls_from_the_bottom,
    "ex-mem-inside-queue": _strengths_from_the_cell,
    "ex-mem-read-weights": lambda s, depth: _stack_reads(np.asarray(_t(s), dtype=float), depth),
    # t1: push .6 of v1, read .6 of v1; t2: pop .2 from the front (v1 keeps .4), push .7 of v2,
    # read .4 + .6; t3: pop .9 (v1's .4, then .5 of v2), push .4 of v3, read .2 of v2 + .4 of v3
    "ex-mem-queue-by-hand": lambda: np.array([[0.6, 0, 0], [0.4, 0.6, 0], [0, 0.2, 0.4]]),
    # push n rows whole (d = 1, u = 0), then push nothing, read the top, pop one row per step
    "ex-mem-reversal-controls": lambda n: ([1.0] * n + [0.0] * n, [0.0] * (n + 1) + [1.0] * (n - 1)),
    "ex-mem-deque-pops": lambda s, u_top, u_bot: _deque_pops(_t(s), u_top, u_bot),
    # six steps at least: every exact read needs two steps after the one before (the proof of the
    # solution); pushes A .5, A .6 (read A), B .6, B .6 (read B), pop .9 and push A .2, pop .5 and
    # push A .6 (read A)
    "ex-mem-fractional": lambda: ("AABBAA", [0.5, 0.6, 0.6, 0.6, 0.2, 0.6], [0.3, 0.05, 0.05, 0.05, 0.9, 0.5],
                                  (2, 4, 6)),
    # a = (1.3, .7, .4, 0): the pop of .5 empties row 4 and runs out in row 3 (x = .1); row 3
    # keeps its g = .5 and sends it to row 4 and, negated, to u; rows 1 and 2 keep theirs
    "ex-mem-pop-grad": lambda: ([1.0, -2.0, 0.5, 0.0 + 0.5], -0.5),
    # from the top: .4 and .3 read whole, row 2 (A = .7) runs out with .3, row 1 not read; the whole
    # rows keep their gamma and pay -gamma_2 = 2 each; rows 1 and 2 get nothing
    "ex-mem-read-grad": lambda: np.array([0.0, 0.0, 0.5 + 2.0, 3.0 + 2.0]),
    # the top row holds d, every row below d - u: a push is read whole j steps later while
    # d + j (d - u) <= 1; a pop of at least d empties it at once
    "ex-mem-push-reach": lambda d, u: math.floor((1 - d) / (d - u)) if u < d else 0,
    "ex-mem-queue-backward": lambda s, u, g: _pop_grads(_t(s), u, _t(g), queue=True),
    "ex-mem-deque-backward": lambda s, ut, ub, g: _deque_pop_grads(_t(s), ut, ub, _t(g)),
    "ex-mem-stack-bptt": _stack_bptt_fd,
    "ex-mem-pop-steps": _exact_pops,
    # the cross term of M J + J^T M, M = diag(1, p), J = -I + W, is affine in p: its root from p = 0, 1
    "ex-ctr-balance": lambda W: float(np.roots([_cross(W, 1.0) - _cross(W, 0.0), _cross(W, 0.0)])[0]),
    "ex-ctr-linear": lambda W: _vertex_rate(np.asarray(W, dtype=float)),
    "ex-ctr-thm1-scratch": lambda W, g=1.0: float(np.linalg.eigvals(
        g * (np.abs(W) - np.diag(np.diag(np.abs(W))) + np.diag(np.maximum(np.diag(W), 0))) - np.eye(len(W))
    ).real.max()),
    "ex-ctr-flowchart": _flowchart_leaf_2x2,
    # both states advanced at once as the rows of one array, the distance by a weighted sum
    "ex-ctr-thm1-sim": lambda W, P, xa, xb, u, dt=0.01, steps=2000: _two_state_distances(
        W, P, xa, xb, u, dt, steps),
    "ex-ctr-params": _combo_params,
    "ex-ctr-skew-euler": _skew_euler,
    # bisection on alpha for the all-off step's norm, ||(1 - alpha) I + alpha L_M||_2 < 1
    "ex-ctr-euler-limit": _euler_limit_bisect,
    # omega from the package's euler_feedback_limit; ||L_M|| as L_M's spectral radius (it is normal)
    "ex-ctr-certified-feedback": _certified_feedback,
    "ex-ctr-find-m": _find_m,
    "ex-ctr-diag": _diag_interval,
    "ex-ctr-identity": _identity_threshold,
    # rho(Phi) = e^{-2t} |mu|, mu + 1/mu = tr Q = 2 - c^2 t^2 (det Q = 1), in closed form
    "ex-ctr-kicked-loop": lambda c, t: float(np.exp(-2 * t) * (1.0 if abs(2 - (c * t) ** 2) <= 2 else (
        abs(2 - (c * t) ** 2) + np.sqrt((2 - (c * t) ** 2) ** 2 - 4)) / 2)),
    # the loop grows iff c t > 2 cosh t: the two roots on each side of t tanh t = 1, by brentq
    "ex-ctr-break-it": lambda c: _two_roots_cosh(c),
    # every corner's symmetric part, its top eigenvalue in closed form (_top_sym_eig)
    "ex-ctr-corner-growth": lambda W: {d: _top_sym_eig(-np.eye(len(W)) + np.asarray(W, float) * np.array(d))
                                       for d in itertools.product((0, 1), repeat=len(W))},
    # L_ij = B_ij - B_ji p_j / p_i, as an outer-product formula
    "ex-ctr-skew-feedback": lambda B, p: np.asarray(B, float)
    - np.asarray(B, float).T * np.outer(1 / np.asarray(p, float), np.asarray(p, float)),
    "ex-lr-velocity": _velocity,
    "ex-lr-lqr": _lqr,
    "ex-lr-effective-dim": _effective_dim,
    # one episode at a time: its observations and its halved expert labels, appended in a loop
    "ex-lr-second-round": lambda obs, act, runs: (
        np.array(list(obs) + [[s[:2] for s in r[0]] for r in runs], dtype=np.float32),
        np.array(list(act) + [[[u / 2.0] for u in r[2]] for r in runs], dtype=np.float32)),
    "ex-lr-lowrank-radius": lambda W1, W2: _radius(_t(W1), _t(W2)),
    "ex-lds-delay": _delay,
    # the causal convolution by NumPy's direct np.convolve, cut to the sequence's length
    "ex-copy-fft": lambda u, K: np.stack([np.convolve(row, np.asarray(_t(K)))[:len(row)]
                                          for row in np.asarray(_t(u))]),
    # E cos(tau delta), delta ~ N(0, sigma^2), by 80-point Gauss-Hermite quadrature (E sin = 0)
    "ex-copy-angles": lambda tau, sigma: float(
        np.polynomial.hermite_e.hermegauss(80)[1] @ np.cos(tau * sigma * np.polynomial.hermite_e.hermegauss(80)[0])
        / math.sqrt(2 * math.pi)),
    "ex-copy-partial": _partial_loss,
    "ex-copy-hand": _copier_antiperiodic,
    "ex-speed-batch": _step_time,
    "ex-speed-layer": _matching_depth,
    "ex-lds-scratch": _modal_lds,
    "ex-ldstack-by-hand": _second_layer,
    "ex-ldstack-miss": _first_miss,
    "ex-ldstack-newton": _newton_round,
    "ex-ldstack-quasi": _quasi_deer_round,
    "ex-ldstack-odd": _sign_xor,
    "ex-lds-bprime-2": lambda lam: _two_modes(_t(lam)),
    # (I - W) h = U x
    "ex-found-fixed-point": lambda W, U, x: np.linalg.solve(np.eye(len(W)) - np.asarray(W), np.asarray(U) @ x),
    # h' = tanh(W h + U x): dh'/dh = diag(1 - h'^2) W
    "ex-found-jacobian": _tanh_jacobian,
}

# Cases worked by hand only: {label: {case index: value}}.
BY_HAND = {
    # |W_a| = |W_b| has rho 1.3: magnitudes fails; neither is triangular; W_a^T W_a = 0.89 I, so
    # ||W_a||_2 < 1 (P = I); flipping row and column 2 turns W_b into |W_b|: every scaled norm >= 1.3
    "ex-ctr-sign-grid": {0: (False, False, True), 1: (False, False, False)},
    # ages at pop 1, 3 and 5, every row of strength 1: mean age 3
    "ex-mem-lifetime": {0: 3.0},
    # delta = 1 - 0.5; ||N|| = 4 eps; the largest eps with 4 eps <= delta / 2
    "ex-ctr-thm4": {0: 0.0625},
    # the chain in its Perron metric: sqrt(0.9); p = 1: ||W_chain||_2; the loop at p2/p1 = 30: sqrt(0.3)
    "ex-ctr-lmi-numpy": {0: 0.9 ** 0.5, 2: 0.3 ** 0.5},
    # W = L = 0: x' = (1 - alpha) x, norm 1 - alpha; W = 0.5 I: 1 - alpha + alpha ||W|| = 0.9
    "ex-ctr-euler-bound": {0: 0.9, 1: 0.9},
    # one unit per module, metric weights 1 and w: diag(1, w) contracts at lam iff
    # (lam1 - lam) w (lam2 - lam) >= (w G / 2)^2, so the largest w is 4 (lam1 - lam)(lam2 - lam) / G^2
    "ex-ctr-hierarchy": {0: 4 * 0.75 * 0.25 / 4, 3: 4 * 0.15 * 0.15 / 1e-6},
}

# No independent answer yet (each needs its own derivation); the list may only shrink.
NOT_YET = {"ex-ldstack-h0", "ex-found-explode"}
# The projects' milestone functions have their independent answers in tests/test_checks_projects.py.
PROJECTS = {ex.label for ex in checks.exercises() if ex.notebook.startswith("projects/")}


def test_every_exercise_has_an_independent_answer_or_is_listed():
    labels = {ex.label for ex in checks.exercises()}
    assert not (set(INDEPENDENT) | set(BY_HAND) | NOT_YET) - labels, "an entry for no exercise"
    missing = labels - set(INDEPENDENT) - set(BY_HAND) - NOT_YET - PROJECTS
    assert not missing, f"no independent answer for {sorted(missing)}"
    assert not NOT_YET & (set(INDEPENDENT) | set(BY_HAND))


@pytest.mark.parametrize("label", sorted(INDEPENDENT))
def test_the_reference_agrees_with_an_independent_answer(label):
    ex = checks.get(label)
    for i, case in enumerate(ex.cases()):
        got = ex.reference(*case.args, **case.kwargs)
        want = INDEPENDENT[label](*case.args, **case.kwargs)
        assert ex.agree(got, want) is None, f"{label}, case {i + 1} ({case.show}): {ex.agree(got, want)}"


@pytest.mark.parametrize("label", sorted(BY_HAND))
def test_the_reference_agrees_with_the_cases_worked_by_hand(label):
    ex = checks.get(label)
    cases = ex.cases()
    for i, want in BY_HAND[label].items():
        got = ex.reference(*cases[i].args, **cases[i].kwargs)
        assert ex.agree(got, want) is None, f"{label}, case {i + 1}: {ex.agree(got, want)}"


def test_exercise_labels_are_unique_across_the_book():
    """Sphinx resolves a {ref} to one of two equal labels silently, and the editions then number
    an exercise by the wrong page: every exercise label must be used once in the book."""
    seen = {}
    for path in NOTEBOOKS:
        for label in _exercise_labels(_load(path)):
            assert label not in seen, f"{label} in {path.name} and in {seen[label]}"
            seen[label] = path.name

"""The course kit's question bank (rnnlab/course/questions, rnnlab.course.quiz).

The bank validates, every chapter has its questions, every page is a page of the book,
quizzes are reproducible and hold no answers, a broken file is named in the error, and
every numeric answer is recomputed here independently (NumPy or autograd, a few lines
each, not the package), and the number the answer prints is checked against it.
"""
from __future__ import annotations

import itertools
import math
import re
import shutil

import numpy as np
import pytest
import yaml

from rnnlab.course import quiz

BANK = quiz.load_bank()
BY_ID = {q["id"]: q for qs in BANK.values() for q in qs}


def text(qid):
    """Everything a question and its answer say: question, choices, answer, explanation."""
    q = BY_ID[qid]
    return "\n".join([q["question"], *q.get("choices", []), str(q["answer"]), q["explanation"]])


def says(qid, *numbers):
    """The question or its answer prints each of these numbers (as written)."""
    for n in numbers:
        assert n in text(qid), f"{qid}: the answer should say {n}"


# ---------------------------------------------------------------- the bank itself

def test_every_file_validates_and_every_chapter_has_its_questions():
    assert list(BANK) == list(quiz.CHAPTERS)
    for chapter, qs in BANK.items():
        assert 10 <= len(qs) <= 12, chapter
        assert {q["kind"] for q in qs} >= {"multiple-choice", "true-false"}, chapter
    ids = list(BY_ID)
    assert len(ids) == sum(map(len, BANK.values()))      # unique over the bank


def test_every_page_is_a_page_of_the_toc_and_every_anchor_a_label_on_it():
    toc = (quiz.ROOT / "_toc.yml").read_text(encoding="utf8")
    files = set(re.findall(r"file:\s*(\S+)", toc))
    for q in BY_ID.values():
        assert f"book/{q['page']}" in files, q["id"]
        if "anchor" in q:
            source = (quiz.ROOT / "book" / f"{q['page']}.ipynb").read_text(encoding="utf8")
            assert re.search(rf"(:label:\s*|:name:\s*|\(){re.escape(q['anchor'])}\b", source), q["id"]


def test_the_bank_is_out_of_the_book_and_ships_with_the_package():
    assert not list((quiz.ROOT / "book").rglob("*.yaml")) or all(
        "questions" not in p.parts for p in (quiz.ROOT / "book").rglob("*.yaml"))
    import tomllib

    pyproject = tomllib.loads((quiz.ROOT / "pyproject.toml").read_text(encoding="utf8"))
    assert "questions/*.yaml" in pyproject["tool"]["setuptools"]["package-data"]["rnnlab.course"]


def test_quiz_is_reproducible_by_seed_and_holds_no_answers(tmp_path):
    args = ["--n", "12", "--stars", "1", "2", "3", "--chapter", "lds", "--chapter", "memory"]
    for seed, out in ((5, "a"), (5, "b"), (6, "c")):
        assert quiz.main(args + ["--seed", str(seed), "--out", str(tmp_path / out)]) == 0
    a, b, c = ((tmp_path / d / "quiz.md").read_text() for d in "abc")
    assert a == b and (tmp_path / "a" / "answers.md").read_text() == (tmp_path / "b" / "answers.md").read_text()
    assert a != c
    assert len(re.findall(r"^## Question \d+", a, re.M)) == 12
    # the whole bank as one quiz: no answer, explanation or page in quiz.md
    assert quiz.main(["--seed", "0", "--out", str(tmp_path / "all")]) == 0
    whole = (tmp_path / "all" / "quiz.md").read_text()
    answers = (tmp_path / "all" / "answers.md").read_text()
    assert len(re.findall(r"^## Question \d+", whole, re.M)) == len(BY_ID)
    assert "**Answer.**" not in whole and "Tests:" not in whole
    for q in BY_ID.values():
        assert q["explanation"].strip()[:60] not in whole, q["id"]
        if q["kind"] in ("short", "derive"):
            assert q["answer"].strip()[:60] not in whole, q["id"]
        assert f"`{q['id']}`" in answers and f"`{q['page']}`" in answers, q["id"]
    for q, choices in quiz.select(BANK, seed=0):
        if choices:
            assert sorted(choices) == sorted(q["choices"])


def test_selection_by_stars_and_chapter():
    picked = quiz.select(BANK, chapters=["contraction"], stars=[3])
    assert picked and all(q["page"].startswith("contraction/") and q["stars"] == 3 for q, _ in picked)
    assert len(quiz.select(BANK, n=7, seed=1)) == 7


def _broken(tmp_path, edit):
    """A copy of the bank with the lds file edited; returns the path of that file."""
    shutil.copytree(quiz.QUESTIONS, tmp_path / "q")
    path = tmp_path / "q" / "lds.yaml"
    data = yaml.safe_load(path.read_text())
    raw = edit(data)
    bad_text = isinstance(raw, str) and raw.startswith("chapter:")     # else an edit of the data
    path.write_text(raw if bad_text else yaml.safe_dump(data, allow_unicode=True))
    return tmp_path / "q"


@pytest.mark.parametrize("edit, message", [
    (lambda d: d["questions"][1].pop("answer"), "lds.yaml, question q-lds-02: missing field 'answer'"),
    (lambda d: d["questions"][1].update(kind="essay"), "lds.yaml, question q-lds-02: unknown kind 'essay'"),
    (lambda d: d["questions"][1].update(page="lds/09_missing"), "q-lds-02: page 'lds/09_missing' is not a page of _toc.yml"),
    (lambda d: d["questions"][1].update(page="memory/01_stack_queue_deque"), "q-lds-02: page 'memory/01_stack_queue_deque' is not a page of the chapter lds"),
    (lambda d: d["questions"][1].update(anchor="no-such-label"), "q-lds-02: anchor 'no-such-label' is not a label"),
    (lambda d: d["questions"][0].update(answer="about 3 steps"), "q-lds-01: the answer is not one of the choices"),
    (lambda d: d["questions"][3].update(answer="false"), "q-lds-04: a true-false answer must be true or false"),
    (lambda d: d["questions"][1].update(stars=4), "q-lds-02: stars must be 1, 2 or 3"),
    (lambda d: d["questions"][1].update(choices=["a", "b"]), "q-lds-02: only a multiple-choice question has choices"),
    (lambda d: d["questions"][2].update(id="q-lds-01"), "lds.yaml, question q-lds-01: the id is used twice"),
    (lambda d: d["questions"][2].update(awnser="typo"), "q-lds-03: unknown field(s) awnser"),
    (lambda d: "chapter: lds\nquestions:\n  - id: q-lds-01\n   page: [", "lds.yaml: not valid YAML"),
])
def test_a_broken_file_is_named_with_its_question(tmp_path, capsys, edit, message):
    folder = _broken(tmp_path, edit)
    with pytest.raises(quiz.BankError) as err:
        quiz.load_bank(folder)
    assert message in str(err.value)
    assert quiz.main(["--check", "--questions", str(folder)]) == 1
    assert message in capsys.readouterr().err


def test_the_check_passes():
    assert quiz.main(["--check"]) == 0


# ---------------------------------------------------------------- the answers, recomputed: scans

def test_scans_01_halving():
    r, theta = 0.9, 0.3
    W = r * np.array([[math.cos(theta), -math.sin(theta)], [math.sin(theta), math.cos(theta)]])
    h, norms = np.array([1.0, 0.0]), []
    for _ in range(10):
        norms.append(np.linalg.norm(h))
        h = W @ h
    assert norms[6] > 0.5 > norms[7]
    assert math.log(2) / -math.log(r) == pytest.approx(6.58, abs=0.01)
    says("q-scans-01", "6.58")


def test_scans_02_nilpotent_network_forgets_in_two_steps():
    W, U = np.array([[0.0, 4.0], [0.0, 0.0]]), np.array([1.0, 0.5])
    rng = np.random.default_rng(0)
    assert np.linalg.norm(W, 2) == pytest.approx(4.0)
    for _ in range(20):
        h, hp = rng.uniform(-1, 1, 2), rng.uniform(-1, 1, 2)
        for t in range(1, 6):
            x = 3 * rng.normal()
            h, hp = np.tanh(W @ h + U * x), np.tanh(W @ hp + U * x)
            if t >= 2:
                assert np.array_equal(h, hp)
    assert BY_ID["q-scans-02"]["answer"] is False


def test_scans_03_fixed_point():
    W = np.array([[0.5, 0.25], [0.0, 0.5]])
    h = np.zeros(2)
    for _ in range(200):
        h = W @ h + np.array([1.0, 1.0])
    assert h == pytest.approx([3.0, 2.0])
    says("q-scans-03", "(3, 2)", "0.5 < 1")


def test_scans_04_non_normal_gradient_vanishes():
    W = np.array([[0.5, 4.0], [0.0, 0.5]])
    assert np.linalg.norm(W, 2) == pytest.approx(4.06, abs=0.005)
    norms = [np.linalg.norm(np.linalg.matrix_power(W, t), 2) for t in (1, 2, 200, 400)]
    assert norms[1] > 1                                   # grows for a few steps
    assert (norms[3] / norms[2]) ** (1 / 200) == pytest.approx(0.5, abs=0.005)
    says("q-scans-04", "4.06", "0.5")


def test_scans_05_tanh_gradient_vanishes_at_the_attractor():
    W = np.array([[1.6, 0.4], [0.4, 0.6]])
    h, P, logs = np.array([0.05, -0.02]), np.eye(2), []
    for t in range(400):
        h = np.tanh(W @ h)
        P = np.diag(1 - h**2) @ W @ P                     # d h_t / d h_0, by the chain rule
        s = np.linalg.norm(P, 2)
        logs.append(math.log(s) + (logs[-1] if logs else 0.0))
        P = P / s
    assert h == pytest.approx([0.94, 0.64], abs=0.005)
    rate = (logs[399] - logs[199]) / 200
    assert rate == pytest.approx(-0.92, abs=0.01)
    assert max(abs(np.linalg.eigvals(np.diag(1 - h**2) @ W))) == pytest.approx(0.40, abs=0.005)
    assert max(abs(np.linalg.eigvals(W))) == pytest.approx(1.74, abs=0.005)
    says("q-scans-05", "0.40", "-0.92", "(0.94, 0.64)")


def test_scans_06_07_08_09_10_scan_arithmetic():
    combine = lambda x, y: (x[0] * y[0], y[0] * x[1] + y[1])
    assert combine((2, 1), (3, 5)) == (6, 8) and combine((3, 5), (2, 1)) == (6, 11)
    assert BY_ID["q-scans-06"]["answer"] == "$(6, 8)$"
    # 07: Brent's estimates
    n = 1024
    loop, hs, bl = (n - 1, n - 1), (n * 10 - n + 1, 10), (2 * (n - 1), 20)
    assert hs == (9217, 10) and bl == (2046, 20)
    est = lambda p: [w / p + d for w, d in (loop, hs, bl)]
    assert np.argmin(est(4)) == 2 and np.argmin(est(1024)) == 1
    assert [round(x) for x in est(4)] == [1279, 2314, 532] and [round(x) for x in est(1024)] == [1024, 19, 22]
    says("q-scans-07", "532", "1279", "2314", "19", "22", "1024")
    # 08: count Blelloch's combines level by level on the padded tree
    m, work, depth = 2 ** 12 + 1, 0, 0
    slots = 1 << (m - 1).bit_length()
    stride = 2
    while stride <= slots:                      # up-sweep, then the down-sweep at the same levels
        work += 2 * (slots // stride)
        depth += 2
        stride *= 2
    assert (work, depth) == (16382, 26)
    says("q-scans-08", "16382", "26")
    # 09: resets
    x, a = np.arange(1, 13), np.ones(12)
    a[[0, 4, 5, 9]] = 0
    h, out = 0, []
    for t in range(12):
        h = a[t] * h + x[t]
        out.append(h)
    assert out == [1, 3, 6, 10, 5, 6, 13, 21, 30, 10, 21, 33]
    # 10: matrices compose with the later step on the left
    rng = np.random.default_rng(1)
    A1, A2, b1, b2, h0 = rng.normal(size=(3, 3)), rng.normal(size=(3, 3)), rng.normal(size=3), rng.normal(size=3), rng.normal(size=3)
    two_steps = A2 @ (A1 @ h0 + b1) + b2
    assert np.allclose(A2 @ A1 @ h0 + A2 @ b1 + b2, two_steps)
    assert not np.allclose(A1 @ A2 @ h0 + A2 @ b1 + b2, two_steps)
    assert BY_ID["q-scans-10"]["answer"] is False


def test_scans_11_gradients_by_autograd():
    torch = pytest.importorskip("torch")
    a = torch.tensor([0.5, 2.0, -1.0], dtype=torch.float64, requires_grad=True)
    b = torch.ones(3, dtype=torch.float64, requires_grad=True)
    h0 = torch.tensor(1.0, dtype=torch.float64, requires_grad=True)
    h = h0
    for t in range(3):
        h = a[t] * h + b[t]
    h.backward()
    assert b.grad[0].item() == -2 and a.grad[1].item() == -1.5 and h0.grad.item() == -1
    says("q-scans-11", "= -2", "-1.5", "= -1")


def test_scans_12_memory_ratio():
    assert (3 + 5) / 3 == pytest.approx(2.67, abs=0.01) and (2 + 3) / 2 == 2.5
    says("q-scans-12", "8/3", "5/2")


# ---------------------------------------------------------------- lds

def test_lds_01_05_06_07_decays_and_baselines():
    assert 0.99 ** 2000 == pytest.approx(1.9e-9, rel=0.03) and 1.01 ** 2000 == pytest.approx(4.4e8, rel=0.03)
    assert 0.99 ** 200 == pytest.approx(0.13, abs=0.005)
    says("q-lds-01", "1.9 \\times 10^{-9}", "4 \\times 10^8", "0.99^{200}")
    base = lambda T: 10 * math.log(8) / (T + 20)
    assert base(2000) == pytest.approx(0.0103, abs=5e-5) and base(100) == pytest.approx(0.173, abs=5e-4)
    says("q-lds-05", "0.0103")
    assert base(100) > 0.05 > base(2000)
    says("q-lds-06", "0.173", "0.0103")
    assert 0.99 ** 2010 == pytest.approx(1.7e-9, rel=0.03)
    says("q-lds-07", "1.7 \\times 10^{-9}", "1/8")


def test_lds_02_03_modal_input_weights():
    lam = np.array([0.5, 0.25])
    V = np.array([[l ** -k for l in lam] for k in range(2)])
    assert np.allclose(V, [[1, 1], [2, 4]])
    assert np.allclose(np.linalg.solve(V, [1, 0]), [2, -1])
    # the companion system with these eigenvalues, from the modes: same impulse response
    c = -np.poly(lam)[1:]                                   # z_t = c1 z_{t-1} + c2 z_{t-2} + x_t
    z, resp = [0.0, 0.0], []
    for t in range(8):
        z = [c[0] * z[0] + c[1] * z[1] + (t == 0), z[0]]
        resp.append(z[0])
    assert np.allclose(resp, [2 * 0.5 ** t - 0.25 ** t for t in range(8)])
    says("q-lds-02", "(2, -1)")
    lam = 0.9 * 1j ** np.arange(4)
    Bp = [np.prod([1 / (1 - lam[j] / lam[i]) for j in range(4) if j != i]) for i in range(4)]
    assert np.allclose(Bp, 0.25)


def test_lds_08_one_mode_delay():
    resp = [(-1j * 1j ** m).real for m in range(4)]
    assert np.allclose(resp, [0, 1, 0, -1])
    says("q-lds-08", "(0, 1, 0, -1)")


def test_lds_09_ldstack_is_exact_on_k_steps_and_not_more():
    rng = np.random.default_rng(3)
    n, T, K = 3, 6, 3
    A, B, x = rng.normal(size=(n, n)), rng.normal(size=(n, 1)), rng.normal(size=(T + 1, 1))
    delta = lambda a: np.divide(np.tanh(a), a, out=np.ones_like(a), where=a != 0)
    s = [np.zeros(n)]                                       # the RNN s_t = tanh(A s_{t-1}) + B x_t
    for t in range(1, T + 1):
        s.append(np.tanh(A @ s[-1]) + B @ x[t])
    prev = None
    for i in range(1, K + 1):                               # the stack's layers, by the definition
        layer = [np.zeros(n)]
        for t in range(1, T + 1):
            corr = np.ones(n) if prev is None else delta(A @ prev[t - 1])
            layer.append(corr * (A @ layer[-1]) + B @ x[t])
        prev = layer
    assert all(np.allclose(prev[t], s[t]) for t in range(K + 1))
    assert not np.allclose(prev[K + 1], s[K + 1])
    assert BY_ID["q-lds-09"]["answer"] is False


def test_lds_12_fft_needs_padding():
    rng = np.random.default_rng(4)
    T = 16
    u, k = rng.normal(size=T), rng.normal(size=T)
    direct = np.array([sum(k[tau] * u[t - tau] for tau in range(t + 1)) for t in range(T)])
    conv = lambda L: np.fft.irfft(np.fft.rfft(u, L) * np.fft.rfft(k, L), L)[:T]
    assert np.allclose(conv(2 * T - 1), direct) and not np.allclose(conv(T), direct)


# ---------------------------------------------------------------- memory

def neural_memory(d, u, end="top"):
    """Read weights of a neural stack (end="top") or queue (end="front"), row by row, from the page's rules."""
    T = len(d)
    s, reads, strengths = np.zeros(T), [], []
    for t in range(T):
        old, rem = s.copy(), u[t]
        rows = list(range(t))
        for i in (rows[::-1] if end == "top" else rows):    # pop from the working end
            take = min(old[i], max(rem, 0.0))
            s[i], rem = old[i] - take, rem - take
        s[t] = d[t]
        w, left = np.zeros(T), 1.0
        rows = list(range(t + 1))
        for i in (rows[::-1] if end == "top" else rows):    # read from the working end
            w[i] = min(s[i], max(0.0, left))
            left -= s[i]
        reads.append(w)
        strengths.append(s.copy())
    return reads, strengths


def test_memory_01_02_04_hand_computations():
    reads, _ = neural_memory([0.8, 0.5, 0.0], [0, 0, 0.6])
    assert np.allclose(reads[1], [0.5, 0.5, 0]) and np.allclose(reads[2], [0.7, 0, 0])
    says("q-memory-01", "0.5\\, v_2 + 0.5\\, v_1", "0.7\\, v_1")
    reads, _ = neural_memory([0.5, 0.9, 0.3], [0, 0.3, 0.8], "front")
    assert np.allclose(reads, [[0.5, 0, 0], [0.2, 0.8, 0], [0, 0.3, 0.3]])
    says("q-memory-02", "(0.5, 0, 0)", "(0.2, 0.8, 0)", "(0, 0.3, 0.3)")
    # 04: strengths (0.2, 0.3, 0.1) bottom up, reached by pushes without pops
    reads, _ = neural_memory([0.2, 0.3, 0.1], [0, 0, 0])
    assert reads[2].sum() == pytest.approx(0.6) and np.allclose(reads[2], [0.2, 0.3, 0.1])


def _reach(d0, u, T=12, t=5, eps=1e-6):
    """Which later reads r_{t'} (t' > t) move when d_t moves, by finite differences."""
    base = np.array(neural_memory([d0] * T, [u] * T)[0])
    d = [d0] * T
    d[t] += eps
    moved = np.abs(np.array(neural_memory(d, [u] * T)[0]) - base).sum(axis=1) > eps / 10
    return [tp - t for tp in range(t + 1, T) if moved[tp]]


def test_memory_06_07_gradient_reach():
    reads, _ = neural_memory([0.5] * 8, [0.62] * 8)
    assert all(np.allclose(r, 0.5 * np.eye(8)[t]) for t, r in enumerate(reads))
    assert _reach(0.5, 0.62) == []
    assert _reach(0.5, 0.27) == [1, 2]
    assert _reach(0.5, 0.12) == [1]
    says("q-memory-06", "r_t = 0.5\\, v_t")
    says("q-memory-07", "0.23", "0.38", "0.73", "0.96", "0.88")


def test_memory_08_pop_bias():
    sigma = lambda z: 1 / (1 + math.exp(-z))
    assert sigma(-1) == pytest.approx(0.27, abs=0.005) and sigma(-2) == pytest.approx(0.12, abs=0.005)


def test_memory_10_fine_accuracy():
    end = "</s>"
    target, pred = [3, 1, 4, 1, 5, end], [3, 1, 4, 2, 5, end]
    right = next(i for i, (p, q) in enumerate(zip(pred, target)) if p != q)
    assert right / len(target) == 0.5 and pred != target
    says("q-memory-10", "3/6 = 0.5")


# ---------------------------------------------------------------- lowrank

def _orthogonal(n, rng):
    q, r = np.linalg.qr(rng.normal(size=(n, n)))
    return q * np.sign(np.diag(r))                          # Haar


def test_lowrank_01_02_counts():
    n = 64
    assert 2 * n * 32 == n * n and 2 * n * 33 > n * n and 2 * n * 31 < n * n
    assert 2 * n * 8 == 1024 and (1 - 0.5) * n * n == 2048
    says("q-lowrank-01", "r > n/2 = 32", "4096")
    assert BY_ID["q-lowrank-02"]["answer"] == "1024"


def test_lowrank_03_mask_raises_the_rank():
    rng = np.random.default_rng(0)
    n, r = 64, 4
    W0, V = _orthogonal(n, rng), _orthogonal(n, rng)[:, :r]
    M = rng.random((n, n)) < 0.5
    assert np.linalg.matrix_rank((W0 @ V @ V.T) * M) == n
    assert np.linalg.matrix_rank((W0 @ np.diag(np.arange(n) < r)) * M) <= r


def test_lowrank_04_05_spectral_radius():
    rng = np.random.default_rng(1)
    n, r, s = 512, 128, 0.75
    W0, V = _orthogonal(n, rng), _orthogonal(n, rng)[:, :r]
    M = rng.random((n, n)) < 1 - s
    radius = lambda W: max(abs(np.linalg.eigvals(W)))
    assert radius((W0 @ V @ V.T) * M) == pytest.approx(0.25, rel=0.08)
    assert math.sqrt(r * (1 - s) / n) == 0.25
    # 05: the spectral radius of W1 W2 from the r x r product
    W1, W2 = rng.normal(size=(50, 3)), rng.normal(size=(3, 50))
    assert radius(W1 @ W2) == pytest.approx(radius(W2 @ W1))


def test_lowrank_06_rnn_jacobian_by_finite_differences():
    rng = np.random.default_rng(2)
    n = 4
    W, U, b, x, h = rng.normal(size=(n, n)), rng.normal(size=(n, 2)), rng.normal(size=n), rng.normal(size=2), rng.normal(size=n)
    step = lambda h: np.tanh(W @ h + U @ x + b)
    eps = 1e-6
    J = np.stack([(step(h + eps * e) - step(h - eps * e)) / (2 * eps) for e in np.eye(n)], axis=1)
    assert np.allclose(J, np.diag(1 - step(h) ** 2) @ W, atol=1e-8)
    assert not np.allclose(J, np.diag(1 - np.tanh(h) ** 2) @ W, atol=1e-3)


def test_lowrank_08_10_11_numbers():
    assert 1 / -math.log(0.9) == pytest.approx(9.49, abs=0.01) and math.log(100) / -math.log(0.9) == pytest.approx(43.7, abs=0.05)
    says("q-lowrank-08", "9.5", "43.7")
    th0, th1, dt = math.radians(179), math.radians(-179), 0.05
    wrapped = math.atan2(math.sin(th1 - th0), math.cos(th1 - th0)) / dt
    assert wrapped == pytest.approx(0.70, abs=0.005) and (th1 - th0) / dt == pytest.approx(-125, abs=0.5)
    says("q-lowrank-10", "0.70", "-125")
    S = 1.0                                                     # Riccati, by iteration
    for _ in range(200):
        S = 1 + S - S * S / (1 + S)
    K = S / (1 + S)
    assert S == pytest.approx(1.618, abs=5e-4) and K == pytest.approx(0.618, abs=5e-4) and 1 - K == pytest.approx(0.382, abs=5e-4)
    says("q-lowrank-11", "1.618", "0.618", "0.382")


# ---------------------------------------------------------------- contraction

def corners(n):
    return [np.diag(c) for c in itertools.product([0.0, 1.0], repeat=n)]


def sym(A):
    return (A + A.T) / 2


def test_contraction_01_02_03_rotations():
    W = np.array([[0.0, -5.0], [5.0, 0.0]])
    assert np.allclose(sym(-np.eye(2) + W), -np.eye(2))         # linear: rate 1 in the identity
    worst = max(np.linalg.eigvalsh(sym(W @ D) - np.eye(2)).max() for D in corners(2))
    assert worst > 0                                            # ReLU: the identity fails (so does every metric)
    assert BY_ID["q-contraction-02"]["answer"] is False
    eps = 0.5
    for c, ok in ((3.99, True), (4.0, False), (4.5, False)):
        D = np.diag([1.0, eps])
        top = np.linalg.eigvalsh(sym(np.array([[0, -c], [c, 0]]) @ D) - np.eye(2)).max()
        assert (top < 0) == ok and top == pytest.approx(-1 + c * (1 - eps) / 2)
    says("q-contraction-03", "c < 4", "-1 \\pm c/4")


def test_contraction_04_05_06_07_numbers():
    assert 2 ** 10 == 1024
    assert 2 * math.log(2) / 0.2 == pytest.approx(6.9, abs=0.05)
    says("q-contraction-05", "6.9")
    for alpha, gamma, limit in ((0.1, 1.0, 4.36), (0.1, 0.5, 3.12)):
        w = math.sqrt(2 * gamma / alpha - gamma ** 2)
        assert w == pytest.approx(limit, abs=0.005)
        factor = lambda om: abs(1 + alpha * (-gamma + 1j * om))
        assert factor(0.999 * w) < 1 < factor(1.001 * w)
    says("q-contraction-06", "4.36", "3.12", "\\sqrt{19}", "\\sqrt{9.75}")
    L = np.array([[0.0, -10.0], [10.0, 0.0]])
    assert np.linalg.norm(np.eye(2) + 0.1 * (-np.eye(2) + L), 2) == pytest.approx(1.35, abs=0.005)
    says("q-contraction-07", "1.35", "4.36")


def test_contraction_08_theorem1_fails_but_the_identity_works():
    W = np.array([[0.0, 1.1], [-1.1, 0.0]])
    metzler = np.abs(W) - np.eye(2)
    assert max(np.linalg.eigvals(metzler).real) == pytest.approx(0.1)
    tops = sorted(np.linalg.eigvalsh(sym(W @ D) - np.eye(2)).max() for D in corners(2))
    assert tops == pytest.approx([-1.0, -1.0, -0.45, -0.45])
    says("q-contraction-08", "0.1 > 0", "-1 \\pm 0.55")


def test_contraction_09_theorem3_rate_one():
    Q = np.array([[2.0, 1.0], [1.0, 2.0]])
    W, M = -Q, np.linalg.inv(Q)
    root = np.linalg.cholesky(M)                             # M = R R^T, normalise by R
    for D in corners(2) + [np.diag([0.3, 0.8])]:
        J = -np.eye(2) + W @ D
        S = np.linalg.solve(root, np.linalg.solve(root, (M @ J + J.T @ M).T).T)
        assert np.linalg.eigvalsh(sym(S)).max() <= -2 + 1e-12   # rate >= 1
    assert np.linalg.norm(W, 2) == pytest.approx(3.0)


def test_contraction_10_chain_metric():
    ok = lambda p: np.linalg.eigvalsh(np.array([[-2, 6 * p], [6 * p, -2 * p]])).max() < 0
    for p in (0.01, 0.05, 0.11, 1 / 9 - 1e-6):
        assert ok(p)
    for p in (1 / 9 + 1e-6, 0.2, 1.0):
        assert not ok(p)
    P = lambda p: np.diag([1.0, p])
    S = lambda p: P(p) @ (np.abs(np.array([[0, 0], [6.0, 0]])) - np.eye(2))
    assert np.allclose(S(0.1) + S(0.1).T, [[-2, 0.6], [0.6, -0.2]])
    says("q-contraction-10", "1/9", "9 = (g w)^2 / 4")

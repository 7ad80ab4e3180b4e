"""The transduction tasks of Grefenstette et al. 2015: data, grammars, joint sequences, metrics."""
import re
from collections import Counter

import numpy as np
import pytest
import torch

from rnnlab.tasks import (
    BOS,
    EOS,
    IGNORE_INDEX,
    PAD,
    SEP,
    SPECIAL,
    TASKS,
    decode,
    itg_length_probabilities,
    itg_parse,
    joint_sequences,
    joint_vocab,
    transduction,
    transduction_accuracy,
    transduction_vocab,
)
from rnnlab.tasks.grammars import GRAMMARS, PAPER_EXAMPLES
from rnnlab.tasks.transduction import ITG_TASKS, MAX_EXPECTED_TRIES, _sample_itg


# ---------------------------------------------------------------------- generation
@pytest.mark.parametrize("task", TASKS)
def test_reproducible_by_seed(task):
    a = transduction(task, 20, 8, 30, seed=1)
    b = transduction(task, 20, 8, 30, seed=1)
    c = transduction(task, 20, 8, 30, seed=2)
    assert a == b and a != c
    sources, targets = a
    assert len(sources) == len(targets) == 20
    assert all(isinstance(i, int) for s in sources + targets for i in s)


@pytest.mark.parametrize("task", TASKS)
@pytest.mark.parametrize("lo,hi", [(8, 20), (5, 5), (30, 40)])
def test_lengths_in_range_and_ids_in_the_vocabularies(task, lo, hi):
    if task == "bigram_flip" and lo == hi == 5:
        lo = hi = 6
    sources, targets = transduction(task, 60, lo, hi, seed=0)
    source_words, target_words = transduction_vocab(task)
    for s, t in zip(sources, targets):
        assert lo <= len(s) <= hi
        assert len(t) == len(s)  # every task maps one source word to one target word
        assert 0 <= min(s) and max(s) < len(source_words)
        assert 0 <= min(t) and max(t) < len(target_words)


def test_synthetic_lengths_cover_the_range_uniformly():
    sources, _ = transduction("copy", 4000, 3, 6, vocab=5, seed=0)
    counts = Counter(len(s) for s in sources)
    assert sorted(counts) == [3, 4, 5, 6] and max(abs(c / 1000 - 1) for c in counts.values()) < 0.1
    sources, _ = transduction("bigram_flip", 400, 3, 8, seed=0)
    assert sorted(Counter(len(s) for s in sources)) == [4, 6, 8]
    symbols = np.concatenate([np.array(s) for s in sources])
    assert symbols.min() == 0 and symbols.max() == 127  # the paper's 128 symbols


def test_synthetic_targets():
    src, tgt = transduction("copy", 50, 1, 20, vocab=7, seed=3)
    assert tgt == src and max(max(s) for s in src) < 7
    src, tgt = transduction("reversal", 50, 1, 20, seed=3)
    assert all(t == s[::-1] for s, t in zip(src, tgt))
    src, tgt = transduction("bigram_flip", 50, 2, 20, seed=3)
    for s, t in zip(src, tgt):
        assert len(s) % 2 == 0
        for k in range(0, len(s), 2):  # positions 2k-1 and 2k (1-based) swapped
            assert (t[k], t[k + 1]) == (s[k + 1], s[k])
    # by hand
    assert [[s[i ^ 1] for i in range(4)] for s in [[10, 11, 12, 13]]] == [[11, 10, 13, 12]]


def test_synthetic_vocab():
    src_words, tgt_words = transduction_vocab("reversal", vocab=4)
    assert src_words == tgt_words == ["a0", "a1", "a2", "a3"]
    assert len(transduction_vocab("copy")[0]) == 128
    assert decode([3, 0, 3], src_words) == "a3 a0 a3"


# ---------------------------------------------------------------------- grammars
@pytest.mark.parametrize("task", ITG_TASKS)
def test_the_papers_example_parses_to_its_target(task):
    source, target = PAPER_EXAMPLES[task]
    assert itg_parse(task, source) == [target]
    assert itg_parse(task, source.split()) == [target]


def test_parser_rejects_strings_outside_the_language():
    assert itg_parse("svo_sov", "si1 oi2 vi3") == []  # SOV is the target order, not the source's
    assert itg_parse("svo_sov", "si1 vi2") == []
    assert itg_parse("svo_sov", "si1 vi28 oi5 rpi") == []
    assert itg_parse("svo_sov", "so1 vo2 oo3") == []  # target words
    assert itg_parse("svo_sov", "") == []
    assert itg_parse("gender_conjugation", "the we3") == []
    assert itg_parse("gender_conjugation", "we11 the en19 and") == []
    # the example with the article before a feminine noun: die, and eine for a
    assert itg_parse("gender_conjugation", "we11 the ef19 and a ef17") == ["wg11 die gf19 und eine gf17"]
    assert itg_parse("gender_conjugation", "we1 a en2 and the ef3 or we4") == ["wg1 ein gn2 und die gf3 oder wg4"]
    assert itg_parse("gender_conjugation", "we1 a en2") == []  # nouns come in pairs: B -> S1 and S2
    # a relative clause inside the subject: the verb that closes it stays, the main verb moves last
    assert itg_parse("svo_sov", "si1 rpi si2 vi3 vi4 oi5") == ["so1 rpo so2 vo3 oo5 vo4"]


@pytest.mark.parametrize("task", ITG_TASKS)
def test_generated_pairs_parse_back_to_their_targets(task):
    source_words, target_words = transduction_vocab(task)
    sources, targets = transduction(task, 40, 8, 40, seed=5)
    sources2, targets2 = transduction(task, 3, 60, 64, seed=6)
    for s, t in zip(sources + sources2, targets + targets2):
        assert itg_parse(task, decode(s, source_words)) == [decode(t, target_words)]


def _classes(words):
    return Counter(re.sub(r"\d+$", "", w) for w in words if re.search(r"\d$", w))


def test_word_classes():
    src, tgt = transduction_vocab("svo_sov")
    assert _classes(src) == {"si": 33, "vi": 33, "oi": 33} and _classes(tgt) == {"so": 33, "vo": 33, "oo": 33}
    assert len(src) == len(tgt) == 100 and "rpi" in src and "rpo" in tgt
    assert {"si1", "si33"} <= set(src) and "si0" not in src and "si34" not in src
    src, tgt = transduction_vocab("gender_conjugation")
    assert _classes(src) == {"we": 25, "em": 25, "ef": 25, "en": 25}
    assert _classes(tgt) == {"wg": 25, "gm": 25, "gf": 25, "gn": 25}
    assert src[:4] == ["the", "a", "and", "or"] and tgt[:7] == ["der", "die", "das", "ein", "eine", "und", "oder"]
    assert len(src) == 104 and len(tgt) == 107 and len(set(src)) == 104 and len(set(tgt)) == 107


def test_rule_probabilities_are_the_papers():
    probs = {name: {r.text.split(":")[0].strip(): str(r.prob) for rs in g.rules.values() for r in rs}
             for name, g in GRAMMARS.items()}
    assert probs["svo_sov"] == {
        "A -> S1 VT2 O3 ||| S1 O3 VT2": "1",
        "S -> S1 S2 ||| S1 S2": "1/5",
        "S -> S1 rpi S2 VT3 ||| S1 rpo S2 VT3": "1/5",
        "S -> ST1 ||| ST1": "3/5",
        "O -> O1 O2 ||| O1 O2": "1/5",
        "O -> S1 rpi S2 VT3 ||| S1 rpo S2 VT3": "1/5",
        "O -> OT1 ||| OT1": "3/5",
    }
    gender = probs["gender_conjugation"]
    assert gender["B -> B1 or B2 ||| B1 oder B2"] == gender["B -> S1 and S2 ||| S1 und S2"] == "1/4"
    assert gender["B -> V1 ||| V1"] == "1/2"
    assert gender["V -> W1 B2 ||| W1 B2"] == "3/4" and gender["V -> W1 ||| W1"] == "1/4"
    assert [gender[f"S -> {e} {c}1 ||| {g} {c}1"] for e, c, g in [
        ("the", "M", "der"), ("the", "F", "die"), ("the", "N", "das"),
        ("a", "M", "ein"), ("a", "F", "eine"), ("a", "N", "ein")]] == ["1/6"] * 6


def test_length_law():
    # svo_sov: A = x S O with S = S^2/5 + x^2 S^2/5 + 3x/5; the shortest sentence is 'si vi oi'
    P = itg_length_probabilities("svo_sov", 400)
    assert P[:3].sum() == 0 and P[3] == pytest.approx(0.6 ** 2)
    assert 1 - 1e-5 < P.sum() <= 1  # (lengths above 400 hold the rest)
    assert (np.arange(401) * P).sum() == pytest.approx(11, rel=1e-3)  # E|S| = E|O| = 5, plus the verb
    # length 4: S -> S S (0.2 * 0.6^2) with O -> OT (0.6), or the other way round
    assert P[4] == pytest.approx(2 * 0.2 * 0.6 ** 2 * 0.6)
    P = itg_length_probabilities("gender_conjugation", 400)
    assert P[0] == 0 and P[1] == pytest.approx(0.5 * 0.25)  # B -> V -> W
    assert P.sum() == pytest.approx(1, abs=1e-2)  # subcritical (see the module docstring): it terminates


@pytest.mark.parametrize("task", ITG_TASKS)
def test_rejection_sampling_follows_the_length_law(task):
    P = itg_length_probabilities(task, 64)
    p = P[8:].sum()
    rng = np.random.default_rng(0)
    sources, _, draws = _sample_itg(task, 2000, 8, 64, rng)
    lengths = np.array([len(s) for s in sources])
    mean = (np.arange(8, 65) * P[8:]).sum() / p
    assert lengths.mean() == pytest.approx(mean, abs=4 * lengths.std() / np.sqrt(2000))
    # the fraction of draws kept is P(8 <= length <= 64)
    assert 2000 / draws == pytest.approx(p, rel=0.1)
    assert 0.3 < p < 0.4


# ---------------------------------------------------------------------- joint sequences
def test_joint_sequence_layout_by_hand():
    # n_source = 3 (ids 4..6), n_target = 2 (ids 7..8); </s> is output class 2
    batch = joint_sequences([[0, 2], [1, 1, 1, 0]], [[1], [0, 1]], n_source=3, n_target=2)
    inputs, targets, lengths = batch
    assert inputs.dtype == targets.dtype == lengths.dtype == torch.int64
    assert inputs.tolist() == [
        [BOS, 4, 6, SEP, 8, PAD, PAD, PAD],
        [BOS, 5, 5, 5, 4, SEP, 7, 8],
    ]
    X = IGNORE_INDEX
    assert targets.tolist() == [
        [X, X, X, 1, 2, X, X, X],
        [X, X, X, X, X, 0, 1, 2],
    ]
    assert lengths.tolist() == [5, 8]
    words = joint_vocab(["s0", "s1", "s2"], ["t0", "t1"])
    assert words[:4] == list(SPECIAL) == ["<pad>", "<s>", "|||", "</s>"] and EOS == 3
    assert decode(inputs[0, :5], words) == "<s> s0 s2 ||| t1"
    # the loss scores only the target positions
    logits = torch.zeros(2, 8, 3)
    loss = torch.nn.functional.cross_entropy(logits.transpose(1, 2), targets)
    assert loss.item() == pytest.approx(np.log(3))


def test_joint_sequences_of_a_task():
    src, tgt = transduction("svo_sov", 4, 8, 12, seed=0)
    ns, nt = map(len, transduction_vocab("svo_sov"))
    inputs, targets, lengths = joint_sequences(src, tgt, ns, nt)
    for b, (s, t) in enumerate(zip(src, tgt)):
        m = len(s)
        assert lengths[b] == m + len(t) + 2
        assert targets[b, m + 1:m + 1 + len(t)].tolist() == t and targets[b, m + 1 + len(t)] == nt
        assert (inputs[b, m + 2:lengths[b]] - 4 - ns).tolist() == t[:len(t)]
        assert (targets[b] != IGNORE_INDEX).sum() == len(t) + 1


# ---------------------------------------------------------------------- metrics
def test_accuracy_by_hand():
    E = 9
    targets = [[1, 2, 3], [4, 5], [6], [7, 8]]
    predictions = [
        [1, 2, 3, E],  # all right: 4/4
        [4, 0, 5, E],  # error at position 2: 1/3
        [6, 6, E],  # no end where expected: 1/2
        [7, 8, E, 3, 3],  # right; symbols after the first end are ignored: 3/3
    ]
    coarse, fine = transduction_accuracy(predictions, targets, end=E)
    assert coarse == pytest.approx(2 / 4)
    assert fine == pytest.approx((1 + 1 / 3 + 1 / 2 + 1) / 4)
    # shorter (cut) and longer predictions without an end
    assert transduction_accuracy([[1, 2]], [[1, 2, 3]], end=E) == pytest.approx((0, 2 / 4))
    assert transduction_accuracy([[1, 2, 3, 3, 3]], [[1, 2, 3]], end=E) == pytest.approx((0, 3 / 4))
    assert transduction_accuracy([[]], [[1]], end=E) == (0, 0)
    assert transduction_accuracy([[E]], [[]], end=E) == (1, 1)  # empty target: </s> alone
    # a batch tensor of greedy outputs, padded after the end
    preds = torch.tensor([[1, 2, 3, E, 0], [4, 5, E, 0, 0]])
    assert transduction_accuracy(preds, [[1, 2, 3], [4, 5]], end=E) == (1, 1)


def test_accuracy_bad_arguments():
    with pytest.raises(ValueError, match="same length"):
        transduction_accuracy([[1]], [[1], [2]], end=3)
    with pytest.raises(ValueError, match="targets"):
        transduction_accuracy([[1]], [[3]], end=3)
    with pytest.raises(ValueError, match="targets"):
        transduction_accuracy([], [], end=3)
    with pytest.raises(TypeError, match="predictions"):
        transduction_accuracy([[1.5]], [[1]], end=3)


# ---------------------------------------------------------------------- validation
@pytest.mark.parametrize("args,kwargs,exc,word", [
    (("copies", 4, 8, 64), {}, ValueError, "task"),
    (("copy", 0, 8, 64), {}, ValueError, "n"),
    (("copy", 4.0, 8, 64), {}, TypeError, "n"),
    (("copy", 4, 0, 64), {}, ValueError, "min_len"),
    (("copy", 4, 9, 8), {}, ValueError, "min_len"),
    (("svo_sov", 4, 65, 64), {}, ValueError, "min_len"),
    (("copy", 4, 8, 64), dict(vocab=0), ValueError, "vocab"),
    (("copy", 4, 8, 64), dict(vocab=True), TypeError, "vocab"),
    (("svo_sov", 4, 8, 64), dict(vocab=10), ValueError, "vocab"),
    (("gender_conjugation", 4, 8, 64), dict(vocab=200), ValueError, "vocab"),
    (("copy", 4, 8, 64), dict(seed=-1), ValueError, "seed"),
    (("bigram_flip", 4, 5, 5), {}, ValueError, "even"),
    (("bigram_flip", 4, 7, 7), {}, ValueError, "min_len"),
    (("svo_sov", 4, 1, 2), {}, ValueError, "max_len"),  # the shortest sentence has 3 words
    (("svo_sov", 4, 3000, 3500), {}, ValueError, "MAX_EXPECTED_TRIES"),  # reachable, too rarely
])
def test_bad_arguments(args, kwargs, exc, word):
    with pytest.raises(exc, match=word):
        transduction(*args, **kwargs)


def test_other_bad_arguments():
    with pytest.raises(ValueError, match="vocab"):
        transduction_vocab("svo_sov", vocab=5)
    with pytest.raises(ValueError, match="task"):
        transduction_vocab("svo")
    with pytest.raises(ValueError, match="task"):
        itg_parse("copy", "a0")
    with pytest.raises(ValueError, match="task"):
        itg_length_probabilities("reversal", 10)
    with pytest.raises(ValueError, match="ids"):
        decode([4], ["a", "b"])
    with pytest.raises(ValueError, match="sources"):
        joint_sequences([[3]], [[0]], n_source=3, n_target=2)
    with pytest.raises(ValueError, match="targets"):
        joint_sequences([[0]], [[2]], n_source=3, n_target=2)
    with pytest.raises(ValueError, match="same length"):
        joint_sequences([[0]], [], n_source=3, n_target=2)
    with pytest.raises(ValueError, match="n_target"):
        joint_sequences([[0]], [[0]], n_source=3, n_target=0)
    assert MAX_EXPECTED_TRIES >= 1000

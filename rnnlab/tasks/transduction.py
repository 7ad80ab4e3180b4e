"""The five transduction tasks of Grefenstette et al. 2015, "Learning to Transduce with Unbounded Memory".

Each example is a pair of token-id lists, a *source* and a *target*; source
ids index the task's source vocabulary, target ids its target vocabulary
(:func:`transduction_vocab`), and neither holds a special symbol.

Synthetic tasks (``vocab`` symbols, 128 in the paper, drawn i.i.d. uniform;
the source length is uniform over the allowed lengths in
``[min_len, max_len]``):

- ``copy``: the target is the source;
- ``reversal``: the target is the source reversed;
- ``bigram_flip``: even lengths only; the target swaps the symbols at
  positions 2k-1 and 2k (``a b c d -> b a d c``).

Their source and target vocabularies hold the same symbols ``a0 .. a<vocab-1>``
(the model embeds them separately, as the paper does).

ITG tasks (appendix C): source and target are generated jointly by a
synchronous grammar (:mod:`rnnlab.tasks.grammars` holds the rules as text, a
sampler and a parser):

- ``svo_sov``: subject-verb-object sentences with relative clauses,
  translated into subject-object-verb order::

      A -> S1 VT2 O3        ||| S1 O3 VT2         1
      S -> S1 S2            ||| S1 S2             1/5
      S -> S1 rpi S2 VT3    ||| S1 rpo S2 VT3     1/5
      S -> ST1              ||| ST1               3/5
      O -> O1 O2            ||| O1 O2             1/5
      O -> S1 rpi S2 VT3    ||| S1 rpo S2 VT3     1/5   (see choice 1)
      O -> OT1              ||| OT1               3/5
      ST -> si<k> ||| so<k>,  VT -> vi<k> ||| vo<k>,  OT -> oi<k> ||| oo<k>   (k = 1..33, 1/33 each)

- ``gender_conjugation``: English-like to German-like, where the article
  agrees with the gender class of its noun::

      A -> B1               ||| B1                1
      B -> B1 or B2         ||| B1 oder B2        1/4
      B -> S1 and S2        ||| S1 und S2         1/4
      B -> V1               ||| V1                1/2   (see choice 2)
      V -> W1 B2            ||| W1 B2             3/4
      V -> W1               ||| W1                1/4
      S -> the M1 ||| der M1,  the F1 ||| die F1,  the N1 ||| das N1,
           a M1 ||| ein M1,    a F1 ||| eine F1,   a N1 ||| ein N1          1/6 each
      W -> we<k> ||| wg<k>,  M -> em<k> ||| gm<k>,  F -> ef<k> ||| gf<k>,  N -> en<k> ||| gn<k>
                                                        (k = 1..25, 1/25 each)

Choices where the grammars as recovered from a text conversion of the paper
(``shared/PAPERS.md``) are unclear, each checked against the paper's own
examples, which :func:`itg_parse` parses back (``tests/test_transduction.py``):

1. The SVO example ``si1 vi28 oi5 oi7 si15 rpi si19 vi16 oi10 oi24 |||
   so1 oo5 oo7 so15 rpo so19 vo16 oo10 oo24 vo28`` has the object
   ``oi5 oi7 si15 rpi si19 vi16 oi10 oi24``: a relative clause headed by a
   *subject* word inside an object. With the recovered rule
   ``O -> O1 rpi S2 VT3`` (the S rules with OT for ST) no object contains
   ``si15 rpi``, so the example could not be generated. We use
   ``O -> S1 rpi S2 VT3 ||| S1 rpo S2 VT3`` (probability 1/5 kept): the
   example then parses, as ``oi5 oi7 [si15 rpi si19 vi16] oi10 oi24`` joined by
   ``O -> O1 O2``, and its target comes out as printed. Every source still has
   exactly one target: ``rpi`` opens a relative clause and its verb closes it,
   so the main verb is the first verb outside every clause (the tests check
   that each generated source parses to a single target).
2. The gender example ``we11 the en19 and the em17 ||| wg11 das gn19 und der
   gm17`` starts with a verb, but with the recovered ``A -> B1`` and
   ``B -> B1 V1`` every sentence starts with an article. We read the rule as
   ``B -> V1`` (probability 1/2 kept): the example is then ``A -> B -> V ->
   W B`` with ``B -> S and S``. This also makes the grammar terminate: with
   ``B -> B1 V1`` a B has on average 1/4*2 + 1/2*(1 + 3/4) = 1.375 B children,
   a supercritical branching process in which 60 % of derivations never end
   (the other reading, ``A -> V1`` with ``B -> B1 V1`` kept, also parses the
   example but has the same defect, and needs about 600 draws per accepted
   sentence of 65..128 words instead of 30).
3. Word names follow the examples: SVO words ``si/vi/oi`` -> ``so/vo/oo``
   plus ``rpi -> rpo``; gender verbs ``we -> wg`` (class letter first) but
   nouns ``em/ef/en -> gm/gf/gn`` (language letter first), as in ``we11`` and
   ``en19``. Word indices are 1-based (``si1`` occurs), so 33 words per SVO
   class (1..33) and 25 per gender class (1..25). The article follows the
   noun class: masculine ``der``/``ein``, feminine ``die``/``eine``, neuter
   ``das``/``ein``; the example's ``the en19 -> das gn19`` and ``the em17 ->
   der gm17`` fix N as neuter and M as masculine.

Vocabularies (id -> word): ``svo_sov`` source ``rpi, si1..si33, vi1..vi33,
oi1..oi33`` (100 words), target the same with ``rpo/so/vo/oo``;
``gender_conjugation`` source ``the, a, and, or, we1..25, em1..25, ef1..25,
en1..25`` (104), target ``der, die, das, ein, eine, und, oder, wg1..25,
gm1..25, gf1..25, gn1..25`` (107). ``vocab`` does not apply to the ITG tasks:
a value other than the default 128 is a ``ValueError``.

Lengths of the ITG tasks are measured on the source; both grammars pair each
source word with one target word, so the target has the same length. A pair
is drawn from the grammar and kept if its source length is in ``[min_len,
max_len]`` (rejection, as in the paper); a draw is abandoned as soon as it
must exceed ``max_len``, so a rejected draw costs at most ``max_len`` words.
The kept pairs follow the grammar's distribution conditioned on the length
window. :func:`itg_length_probabilities` gives the exact length law; from it,
at the paper's train lengths 8..64 (test 65..128) a draw is kept with
probability 0.361 (0.0148) for ``svo_sov``, 2.8 (67) draws per pair, mean
length 19.1 (84.9), and 0.341 (0.0330) for ``gender_conjugation``, 2.9 (30)
draws per pair, mean length 21.2 (88.8). A window the grammar cannot reach
(``max_len`` < 3 for ``svo_sov``), or reaches so rarely that a pair would
need more than ``MAX_EXPECTED_TRIES`` draws on average, is a ``ValueError``.

The model sees one joint sequence per example, ``<s> source ||| target </s>``
(:func:`joint_sequences`), and is scored by greedy decoding with the paper's
coarse and fine accuracies (:func:`transduction_accuracy`). The paper's
splits: train lengths 8..64, test 65..128, 1000 test sequences.
"""
from typing import NamedTuple

import numpy as np
import torch

from .._validate import check_choice, check_int
from .grammars import GRAMMARS, PAPER_EXAMPLES, BlockUniforms, LengthRejected

__all__ = [
    "transduction",
    "transduction_vocab",
    "joint_sequences",
    "joint_vocab",
    "transduction_accuracy",
    "decode",
    "itg_parse",
    "itg_length_probabilities",
    "JointBatch",
    "TASKS",
    "SYNTHETIC_TASKS",
    "ITG_TASKS",
    "SPECIAL",
    "PAD",
    "BOS",
    "SEP",
    "EOS",
    "IGNORE_INDEX",
    "PAPER_VOCAB",
    "PAPER_TRAIN_LENGTHS",
    "PAPER_TEST_LENGTHS",
    "PAPER_EXAMPLES",
    "MAX_EXPECTED_TRIES",
]

SYNTHETIC_TASKS = ("copy", "reversal", "bigram_flip")
ITG_TASKS = ("svo_sov", "gender_conjugation")
TASKS = SYNTHETIC_TASKS + ITG_TASKS
PAPER_VOCAB = 128
PAPER_TRAIN_LENGTHS = (8, 64)
PAPER_TEST_LENGTHS = (65, 128)
MAX_EXPECTED_TRIES = 100_000  # ITG rejection: refuse windows needing more draws per pair on average

# Joint input vocabulary: the specials, then the source words, then the target words.
SPECIAL = ("<pad>", "<s>", "|||", "</s>")
PAD, BOS, SEP, EOS = 0, 1, 2, 3
IGNORE_INDEX = -100  # torch.nn.functional.cross_entropy's default ignore_index


def _check_task(fn, task):
    check_choice("task", task, TASKS, fn=fn)


def _check_vocab(fn, task, vocab):
    vocab = check_int("vocab", vocab, minimum=1, fn=fn)
    if task in ITG_TASKS and vocab != PAPER_VOCAB:
        raise ValueError(f"{fn}: vocab applies only to the synthetic tasks ({', '.join(SYNTHETIC_TASKS)}); "
                         f"the {task} grammar fixes its own vocabulary (leave vocab at {PAPER_VOCAB})")
    return vocab


def transduction_vocab(task, vocab=PAPER_VOCAB):
    """``(source_words, target_words)``: lists mapping id -> word for ``task``.

    Synthetic tasks: ``["a0", .., f"a{vocab-1}"]`` on both sides. ITG tasks:
    the grammar's words (see the module docstring for their order); ``vocab``
    must stay at its default there.
    """
    _check_task("transduction_vocab", task)
    vocab = _check_vocab("transduction_vocab", task, vocab)
    if task in ITG_TASKS:
        g = GRAMMARS[task]
        return list(g.source_words), list(g.target_words)
    words = [f"a{i}" for i in range(vocab)]
    return words, list(words)


def transduction(task, n, min_len, max_len, vocab=PAPER_VOCAB, seed=0):
    """``n`` examples of ``task``: ``(sources, targets)``, two lists of ``n`` lists of int ids.

    Source lengths lie in ``[min_len, max_len]`` (the paper: 8..64 to train,
    65..128 to test): uniform over that range for ``copy`` and ``reversal``,
    uniform over its even lengths for ``bigram_flip``, and the grammar's
    length law restricted to the range (by rejection) for the ITG tasks, whose
    targets have the source's length. Symbols of the synthetic tasks are
    i.i.d. uniform over ``vocab``; the ITG tasks have fixed vocabularies and
    reject any other ``vocab``. Drawn with ``numpy.random.default_rng(seed)``:
    the same arguments give the same data.
    """
    fn = "transduction"
    _check_task(fn, task)
    n = check_int("n", n, minimum=1, fn=fn)
    min_len = check_int("min_len", min_len, minimum=1, fn=fn)
    max_len = check_int("max_len", max_len, minimum=1, fn=fn)
    if min_len > max_len:
        raise ValueError(f"{fn}: min_len must be <= max_len, got min_len={min_len} > max_len={max_len}")
    vocab = _check_vocab(fn, task, vocab)
    seed = check_int("seed", seed, minimum=0, fn=fn)
    rng = np.random.default_rng(seed)
    if task in ITG_TASKS:
        sources, targets, _ = _sample_itg(task, n, min_len, max_len, rng)
        return sources, targets
    if task == "bigram_flip":
        lengths = np.arange(min_len + min_len % 2, max_len + 1, 2)
        if lengths.size == 0:
            raise ValueError(f"{fn}: bigram_flip needs an even length in [min_len, max_len], "
                             f"got [{min_len}, {max_len}]")
    else:
        lengths = np.arange(min_len, max_len + 1)
    sizes = rng.choice(lengths, size=n)
    sources, targets = [], []
    for size in sizes:
        src = rng.integers(0, vocab, size=int(size)).tolist()
        if task == "copy":
            tgt = list(src)
        elif task == "reversal":
            tgt = src[::-1]
        else:
            tgt = [src[i ^ 1] for i in range(len(src))]  # swap 0<->1, 2<->3, ...
        sources.append(src)
        targets.append(tgt)
    return sources, targets


def itg_length_probabilities(task, max_len):
    """``P`` with ``P[l]`` = probability that the ``task`` grammar derives a source of ``l`` words, l = 0..max_len.

    Exact (the grammar's generating functions solved degree by degree). The
    probability that rejection keeps a draw for the window ``[a, b]`` is
    ``P[a:b + 1].sum()``; its inverse is the mean number of draws per pair.
    """
    fn = "itg_length_probabilities"
    if task not in ITG_TASKS:
        raise ValueError(f"{fn}: task must be one of {', '.join(ITG_TASKS)}; got {task!r}")
    max_len = check_int("max_len", max_len, minimum=0, fn=fn)
    return GRAMMARS[task].length_probabilities(max_len)


def _sample_itg(task, n, min_len, max_len, rng):
    """Rejection sampling: ``(sources, targets, draws)`` where ``draws`` counts every draw, kept or not."""
    p = float(itg_length_probabilities(task, max_len)[min_len:].sum())
    if p == 0:
        raise ValueError(f"transduction: the {task} grammar derives no source with a length in "
                         f"[min_len, max_len] = [{min_len}, {max_len}]")
    if 1 / p > MAX_EXPECTED_TRIES:
        raise ValueError(f"transduction: the {task} grammar reaches source lengths [min_len, max_len] = "
                         f"[{min_len}, {max_len}] with probability {p:.3g} per draw; more than "
                         f"MAX_EXPECTED_TRIES = {MAX_EXPECTED_TRIES} draws per pair on average")
    # a hard bound so that nothing can loop for ever; exceeding it has probability < exp(-50)
    limit = int(50 / p) + 1000
    g = GRAMMARS[task]
    uniform = BlockUniforms(rng)
    sources, targets, draws = [], [], 0
    for _ in range(n):
        for _ in range(limit):
            draws += 1
            try:
                src, tgt = g.sample(uniform, max_len)
            except LengthRejected:
                continue
            if len(src) >= min_len:
                break
        else:
            raise ValueError(f"transduction: no {task} pair with source length in [min_len, max_len] = "
                             f"[{min_len}, {max_len}] after {limit} draws")
        sources.append(src)
        targets.append(tgt)
    return sources, targets, draws


def _words_of(fn, source):
    if isinstance(source, str):
        return source.split()
    words = list(source)
    if not all(isinstance(w, str) for w in words):
        raise TypeError(f"{fn}: source must be a string or a list of words (str)")
    return words


def itg_parse(task, source):
    """Every target that a derivation of ``source`` yields, as sorted space-joined strings.

    ``source`` is a string of space-separated words (``"we11 the en19"``) or a
    list of words. A chart parser over source spans: the result is empty when
    the grammar cannot derive ``source``, and has one entry when the
    translation is unambiguous (always, for these two grammars).
    """
    fn = "itg_parse"
    if task not in ITG_TASKS:
        raise ValueError(f"{fn}: task must be one of {', '.join(ITG_TASKS)}; got {task!r}")
    return sorted(" ".join(t) for t in GRAMMARS[task].parse(_words_of(fn, source)))


def _id_list(fn, name, ids, size):
    if isinstance(ids, torch.Tensor) or isinstance(ids, np.ndarray):
        ids = ids.tolist()
    out = []
    for i in ids:
        if isinstance(i, bool) or not isinstance(i, (int, np.integer)):
            raise TypeError(f"{fn}: {name} must hold int ids, got {type(i).__name__}")
        if size is not None and not 0 <= i < size:
            raise ValueError(f"{fn}: {name} holds id {i}, outside 0..{size - 1}")
        out.append(int(i))
    return out


def decode(ids, words):
    """The words of ``ids`` joined by spaces: ``decode([3, 0], ["a", "b", "c", "d"]) == "d a"``."""
    return " ".join(words[i] for i in _id_list("decode", "ids", ids, len(words)))


def joint_vocab(source_words, target_words):
    """Words of the joint input vocabulary: ``SPECIAL + source_words + target_words`` (see :func:`joint_sequences`)."""
    return list(SPECIAL) + list(source_words) + list(target_words)


class JointBatch(NamedTuple):
    """Padded joint sequences: ``inputs`` (B, L), ``targets`` (B, L), ``lengths`` (B,), all int64."""

    inputs: torch.Tensor
    targets: torch.Tensor
    lengths: torch.Tensor


def joint_sequences(sources, targets, n_source, n_target):
    """The paper's joint sequences ``<s> source ||| target </s>`` as padded next-token batches.

    Input ids (joint vocabulary, :func:`joint_vocab`): ``PAD = 0``, ``BOS = 1``
    (``<s>``), ``SEP = 2`` (``|||``), ``EOS = 3`` (``</s>``, reserved: never an
    input, since nothing is predicted after it), source word ``s`` ->
    ``4 + s``, target word ``t`` -> ``4 + n_source + t``; the two ranges are
    disjoint, so a model embeds source and target words separately. Row b of
    ``inputs`` is ``<s> s_1 .. s_m ||| t_1 .. t_k`` (the joint sequence without
    its last symbol), right-padded with ``PAD``; ``lengths[b] = m + k + 2``.

    ``targets`` holds the next symbol in the *target* vocabulary plus ``</s>``
    (``n_target + 1`` classes: target word ``t`` -> ``t``, ``</s>`` ->
    ``n_target``) at the prediction positions, from ``|||`` (predicting
    ``t_1``) to ``t_k`` (predicting ``</s>``), and ``IGNORE_INDEX = -100``
    everywhere else (source positions and padding), so that
    ``F.cross_entropy(logits.transpose(1, 2), targets)`` scores the target
    only. Example, ``n_source = 3``, ``n_target = 2``, source ``[0, 2]``,
    target ``[1]``: inputs ``[1, 4, 6, 2, 8]``, targets
    ``[-100, -100, -100, 1, 2]``.
    """
    fn = "joint_sequences"
    n_source = check_int("n_source", n_source, minimum=1, fn=fn)
    n_target = check_int("n_target", n_target, minimum=1, fn=fn)
    sources, targets = list(sources), list(targets)
    if len(sources) != len(targets):
        raise ValueError(f"{fn}: sources and targets must have the same length, "
                         f"got {len(sources)} and {len(targets)}")
    if not sources:
        raise ValueError(f"{fn}: sources must hold at least one sequence")
    rows = [(_id_list(fn, "sources", s, n_source), _id_list(fn, "targets", t, n_target))
            for s, t in zip(sources, targets)]
    lengths = [len(s) + len(t) + 2 for s, t in rows]
    L = max(lengths)
    inputs = torch.full((len(rows), L), PAD, dtype=torch.int64)
    nexts = torch.full((len(rows), L), IGNORE_INDEX, dtype=torch.int64)
    base = len(SPECIAL)
    for b, (s, t) in enumerate(rows):
        m, k = len(s), len(t)
        inputs[b, 0] = BOS
        inputs[b, 1:m + 1] = torch.tensor(s, dtype=torch.int64) + base
        inputs[b, m + 1] = SEP
        if k:
            inputs[b, m + 2:m + 2 + k] = torch.tensor(t, dtype=torch.int64) + base + n_source
            nexts[b, m + 1:m + 1 + k] = torch.tensor(t, dtype=torch.int64)
        nexts[b, m + 1 + k] = n_target
    return JointBatch(inputs, nexts, torch.tensor(lengths, dtype=torch.int64))


def transduction_accuracy(predictions, targets, end):
    """The paper's ``(coarse, fine)`` accuracies of greedy decodings.

    ``targets``: the reference target id lists, without the end symbol;
    ``predictions``: one decoded id list per target (or a 2-D tensor/array,
    one row each), in the same id space, with ``end`` the id of ``</s>``
    (``n_target`` in :func:`joint_sequences`'s output vocabulary). Convention:
    a prediction ends at its first ``end`` (anything after it is ignored), or,
    if it has none, wherever the decoder stopped (a maximum length). Each
    prediction is compared with ``target + [end]`` position by position:

    - coarse = fraction of sequences predicted entirely right, ``</s>``
      included;
    - fine = mean over sequences of (correct symbols before the first error)
      / (``len(target) + 1``), the ``+ 1`` being ``</s>``.

    A prediction that stops early counts its missing symbols as errors; one
    that goes on past the target without ``end`` errs at the ``</s>``
    position. Returns two floats.
    """
    fn = "transduction_accuracy"
    end = check_int("end", end, minimum=0, fn=fn)
    if isinstance(predictions, (torch.Tensor, np.ndarray)):
        predictions = predictions.tolist()
    predictions, targets = list(predictions), list(targets)
    if len(predictions) != len(targets):
        raise ValueError(f"{fn}: predictions and targets must have the same length, "
                         f"got {len(predictions)} and {len(targets)}")
    if not targets:
        raise ValueError(f"{fn}: targets must hold at least one sequence")
    coarse = fine = 0.0
    for pred, tgt in zip(predictions, targets):
        pred = _id_list(fn, "predictions", pred, None)
        ref = _id_list(fn, "targets", tgt, None)
        if end in ref:
            raise ValueError(f"{fn}: targets must not contain the end id {end}")
        ref.append(end)
        if end in pred:
            pred = pred[:pred.index(end) + 1]
        correct = 0
        for p, r in zip(pred, ref):
            if p != r:
                break
            correct += 1
        coarse += correct == len(ref)
        fine += correct / len(ref)
    return coarse / len(targets), fine / len(targets)

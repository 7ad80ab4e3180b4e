"""Synchronous grammars (ITGs) of Grefenstette et al. 2015, appendix C: sampling, parsing, length laws.

A rule rewrites one nonterminal into a source and a target side at once::

    S -> S1 rpi S2 VT3 ||| S1 rpo S2 VT3 : 1/5

Upper-case names are nonterminals; the digit after a name links the two
sides (``S1`` on the left is ``S1`` on the right, so a rule can reorder its
constituents, as ``A -> S1 VT2 O3 ||| S1 O3 VT2`` does); lower-case tokens
are words; ``: p`` is the rule's probability among the rules of its left-hand
side. A *word class* (``ST``, ``W``, ...) is a nonterminal with ``size``
lexical rules ``ST -> si<k> ||| so<k>`` (k = 1..size), each of probability
1/size. :mod:`rnnlab.tasks.transduction` documents the two grammars, the
choices made where the paper's text is unclear, and the statistics of the
length rejection; this module holds the machinery:

- :meth:`ITG.sample`: a joint (source, target) derivation, drawn top-down in
  source order, abandoned as soon as it must exceed ``max_len`` source words
  (each pending nonterminal still owes at least its shortest yield), so a
  rejected draw costs at most ``max_len`` words;
- :meth:`ITG.parse`: every target that some derivation of a source string
  yields (a chart parser over source spans, bottom-up by span length);
- :meth:`ITG.length_probabilities`: P(source length = l), exactly, from the
  grammar's generating functions, solved degree by degree.
"""
import itertools
import re
from fractions import Fraction

import numpy as np

__all__ = ["ITG", "LengthRejected", "BlockUniforms", "SVO_SOV", "GENDER_CONJUGATION", "GRAMMARS", "PAPER_EXAMPLES"]

_NT = re.compile(r"^([A-Z]+)(\d+)$")
_T, _LEX, _N = 0, 1, 2  # item kinds: word, word class, nonterminal


class LengthRejected(Exception):
    """A draw that cannot end inside the length window (internal to rejection sampling)."""


class BlockUniforms:
    """Uniform(0, 1) numbers from a numpy Generator, drawn in blocks (one Python call per draw is slow)."""

    def __init__(self, rng, block=4096):
        self.rng, self.block = rng, block
        self.buf, self.i = rng.random(block), 0

    def __call__(self):
        if self.i == self.block:
            self.buf, self.i = self.rng.random(self.block), 0
        self.i += 1
        return self.buf[self.i - 1]


class _Rule:
    __slots__ = ("lhs", "src", "tgt", "prob", "text", "n_words", "nonterminals", "min_len", "rest")

    def __init__(self, lhs, src, tgt, prob, text):
        self.lhs, self.src, self.tgt, self.prob, self.text = lhs, src, tgt, prob, text
        self.n_words = sum(1 for it in src if it[0] != _N)  # words and word classes: one source word each
        self.nonterminals = [it[1] for it in src if it[0] == _N]


class ITG:
    """A synchronous grammar with word classes; see the module docstring for the rule syntax.

    ``source_words``/``target_words`` are the vocabularies (id -> word): the
    function words given, in their order, then each word class's words in the
    order of ``classes`` (``prefix1 .. prefix<size>``).
    """

    def __init__(self, name, rules, classes, source_function_words, target_function_words, start="A"):
        self.name, self.start = name, start
        self.classes = dict(classes)  # class -> (source prefix, target prefix, size)
        self.source_words = list(source_function_words)
        self.target_words = list(target_function_words)
        self._class_base = {}
        for c, (sp, tp, size) in self.classes.items():
            self._class_base[c] = (len(self.source_words), len(self.target_words), size)
            self.source_words += [f"{sp}{k}" for k in range(1, size + 1)]
            self.target_words += [f"{tp}{k}" for k in range(1, size + 1)]
        self._src_id = {w: i for i, w in enumerate(self.source_words)}
        self._tgt_id = {w: i for i, w in enumerate(self.target_words)}
        self._lexicon = {}  # source word -> (class, target word)
        for c, (sp, tp, size) in self.classes.items():
            for k in range(1, size + 1):
                self._lexicon[f"{sp}{k}"] = (c, f"{tp}{k}")
        self.rules = {}
        for line in rules.strip().splitlines():
            rule = self._read_rule(line)
            self.rules.setdefault(rule.lhs, []).append(rule)
        for lhs, rs in self.rules.items():
            total = sum(r.prob for r in rs)
            if total != 1:
                raise ValueError(f"{name}: the rules of {lhs} have probabilities summing to {total}, not 1")
        for rs in self.rules.values():
            for r in rs:
                for name_ in r.nonterminals:
                    if name_ not in self.rules:
                        raise ValueError(f"{self.name}: {name_} in '{r.text}' has no rules")
        self._min_len = self._shortest_yields()
        for rs in self.rules.values():
            for r in rs:  # shortest yield of the rule, and of its source items after position k
                sizes = [1 if it[0] != _N else self._min_len[it[1]] for it in r.src]
                r.min_len = sum(sizes)
                r.rest = [sum(sizes[k + 1:]) for k in range(len(sizes))]
        self._order = self._unit_order()
        # for sampling: cumulative probabilities per nonterminal, compiled items
        self._choices = {
            lhs: (np.cumsum([float(r.prob) for r in rs]).tolist(), rs) for lhs, rs in self.rules.items()
        }

    # ------------------------------------------------------------------ reading the rules
    def _read_rule(self, line):
        text = line.strip()
        head, _, prob = text.rpartition(":")
        lhs, arrow, rhs = head.partition("->")
        src_text, bar, tgt_text = rhs.partition("|||")
        if not arrow or not bar:
            raise ValueError(f"{self.name}: cannot read rule '{text}'")
        lhs = lhs.strip()
        src, src_links = self._read_side(src_text, self._src_id, text)
        tgt, tgt_links = self._read_side(tgt_text, self._tgt_id, text)
        if src_links != tgt_links:
            raise ValueError(f"{self.name}: the linked nonterminals of '{text}' differ between the sides")
        return _Rule(lhs, tuple(src), tuple((it[0], it[2]) if it[0] != _T else it for it in tgt),
                     Fraction(prob.strip()), text)

    def _read_side(self, text, ids, rule_text):
        items, links = [], {}
        for tok in text.split():
            m = _NT.match(tok)
            if m:
                sym, link = m.group(1), int(m.group(2))
                if link in links:
                    raise ValueError(f"{self.name}: link {link} used twice in '{rule_text}'")
                links[link] = sym
                items.append((_LEX if sym in self.classes else _N, sym, link))
            elif tok in ids:
                items.append((_T, ids[tok]))
            else:
                raise ValueError(f"{self.name}: '{tok}' in '{rule_text}' is not in the vocabulary")
        return items, links

    def _shortest_yields(self):
        inf = float("inf")
        best = {lhs: inf for lhs in self.rules}
        changed = True
        while changed:
            changed = False
            for lhs, rs in self.rules.items():
                for r in rs:
                    m = r.n_words + sum(best[x] for x in r.nonterminals)
                    if m < best[lhs]:
                        best[lhs], changed = m, True
        bad = [x for x, m in best.items() if m in (0, inf)]
        if bad:
            raise ValueError(f"{self.name}: nonterminals {bad} derive no word or nothing finite")
        return best

    def _unit_order(self):
        """Nonterminals ordered so that each comes after those it rewrites to alone (A -> B1)."""
        deps = {x: {r.nonterminals[0] for r in rs if r.n_words == 0 and len(r.nonterminals) == 1}
                for x, rs in self.rules.items()}
        order, done = [], set()

        def visit(x, path):
            if x in done:
                return
            if x in path:
                raise ValueError(f"{self.name}: unit rules form a cycle through {x}")
            for y in sorted(deps[x]):
                visit(y, path | {x})
            done.add(x)
            order.append(x)

        for x in self.rules:
            visit(x, frozenset())
        return order

    # ------------------------------------------------------------------ sampling
    def sample(self, uniform, max_len):
        """One derivation ``(source ids, target ids)``; :class:`LengthRejected` once it must pass ``max_len``.

        ``uniform()`` returns Uniform(0, 1) numbers. The derivation is expanded
        leftmost-first on the source side with an explicit stack (no recursion
        limit); ``committed`` = words emitted + the shortest yield of every
        pending nonterminal, a lower bound on the final length.
        """
        src = []
        stack = [self._open(self.start, uniform)]
        committed = stack[0][0].min_len
        if committed > max_len:
            raise LengthRejected
        while True:
            rule, pos, children, link = stack[-1]
            if pos < len(rule.src):
                stack[-1][1] = pos + 1
                item = rule.src[pos]
                if item[0] == _T:
                    src.append(item[1])
                elif item[0] == _LEX:
                    sbase, tbase, size = self._class_base[item[1]]
                    k = min(int(uniform() * size), size - 1)
                    src.append(sbase + k)
                    children[item[2]] = [tbase + k]
                else:
                    frame = self._open(item[1], uniform, item[2])
                    committed += frame[0].min_len - self._min_len[item[1]]
                    if committed > max_len:
                        raise LengthRejected
                    stack.append(frame)
                continue
            out = []
            for it in rule.tgt:
                if it[0] == _T:
                    out.append(it[1])
                else:
                    out.extend(children[it[1]])
            stack.pop()
            if not stack:
                return src, out
            stack[-1][2][link] = out

    def _open(self, lhs, uniform, link=None):
        cum, rs = self._choices[lhs]
        u = uniform()
        for c, r in zip(cum, rs):
            if u < c:
                break
        return [r, 0, {}, link]

    # ------------------------------------------------------------------ parsing
    def parse(self, words):
        """The set of target word tuples of all derivations of the source ``words`` (a list of str)."""
        words = list(words)
        n = len(words)
        if n == 0:
            return set()
        chart = {}  # (X, i, j) -> frozenset of target tuples (non-empty only)
        ends = {x: [[] for _ in range(n + 1)] for x in self.rules}  # ends[X][i]: sorted j with (X, i, j) set
        lex_target = [self._lexicon.get(w) for w in words]
        src_word_id = [self._src_id.get(w) for w in words]
        for length in range(1, n + 1):
            for i in range(n - length + 1):
                j = i + length
                for x in self._order:
                    found = set()
                    for r in self.rules[x]:
                        if r.min_len > length:
                            continue
                        for kids in self._splits(r, 0, i, j, {}, chart, ends, lex_target, src_word_id):
                            found.update(self._targets(r, kids))
                    if found:
                        chart[x, i, j] = frozenset(found)
                        ends[x][i].append(j)
        return set(chart.get((self.start, 0, n), ()))

    def _splits(self, rule, k, i, j, kids, chart, ends, lex_target, src_word_id):
        """Assignments of the rule's source items to consecutive spans covering [i, j)."""
        if k == len(rule.src):
            if i == j:
                yield dict(kids)
            return
        if i >= j:
            return
        item = rule.src[k]
        rest = rule.rest[k]
        if item[0] == _T:
            if src_word_id[i] == item[1]:
                yield from self._splits(rule, k + 1, i + 1, j, kids, chart, ends, lex_target, src_word_id)
        elif item[0] == _LEX:
            lt = lex_target[i]
            if lt is not None and lt[0] == item[1]:
                kids[item[2]] = (lt[1],)
                yield from self._splits(rule, k + 1, i + 1, j, kids, chart, ends, lex_target, src_word_id)
        else:
            for b in ends[item[1]][i]:
                if b > j - rest:
                    break
                if k == len(rule.src) - 1 and b != j:
                    continue
                kids[item[2]] = chart[item[1], i, b]
                yield from self._splits(rule, k + 1, b, j, kids, chart, ends, lex_target, src_word_id)

    def _targets(self, rule, kids):
        links = [it[1] for it in rule.tgt if it[0] != _T]
        options = [kids[link] if isinstance(kids[link], frozenset) else (kids[link],) for link in links]
        for combo in itertools.product(*options):
            chosen = dict(zip(links, combo))
            out = []
            for it in rule.tgt:
                out.extend((self.target_words[it[1]],) if it[0] == _T else chosen[it[1]])
            yield tuple(out)

    # ------------------------------------------------------------------ lengths
    def length_probabilities(self, max_len):
        """``P[l]`` = probability that a derivation's source has ``l`` words, for l = 0..max_len.

        Solves the generating-function equations (one per nonterminal: the sum
        over its rules of p * x^words * product of the nonterminals' series)
        one degree at a time; every rule has at most two nonterminals besides
        word classes, and a degree-l coefficient needs only lower degrees,
        except through unit rules (handled in :meth:`_unit_order`'s order).
        ``P.sum()`` < 1 means some derivations are longer than ``max_len``.
        """
        P = {x: np.zeros(max_len + 1) for x in self.rules}
        for x, rs in self.rules.items():
            for r in rs:
                if len(r.nonterminals) > 2:
                    raise NotImplementedError(f"{self.name}: length law of '{r.text}' (three nonterminals)")
        for d in range(1, max_len + 1):
            for x in self._order:
                total = 0.0
                for r in self.rules[x]:
                    e = d - r.n_words
                    if e < 0:
                        continue
                    nts = r.nonterminals
                    if not nts:
                        c = 1.0 if e == 0 else 0.0
                    elif len(nts) == 1:
                        c = P[nts[0]][e]
                    else:
                        a, b = P[nts[0]], P[nts[1]]
                        c = float(np.dot(a[1:e], b[e - 1:0:-1])) if e >= 2 else 0.0
                    total += float(r.prob) * c
                P[x][d] = total
        return P[self.start]


# ---------------------------------------------------------------------- the paper's two grammars
# Written as PAPERS.md gives appendix C, with two changes that the paper's own examples need
# (the module docstring of rnnlab.tasks.transduction says why): the relative clause of an
# object is headed by S (not O), and B -> V1 (not B -> B1 V1).
SVO_SOV_RULES = """
A -> S1 VT2 O3 ||| S1 O3 VT2 : 1
S -> S1 S2 ||| S1 S2 : 1/5
S -> S1 rpi S2 VT3 ||| S1 rpo S2 VT3 : 1/5
S -> ST1 ||| ST1 : 3/5
O -> O1 O2 ||| O1 O2 : 1/5
O -> S1 rpi S2 VT3 ||| S1 rpo S2 VT3 : 1/5
O -> OT1 ||| OT1 : 3/5
"""

GENDER_CONJUGATION_RULES = """
A -> B1 ||| B1 : 1
B -> B1 or B2 ||| B1 oder B2 : 1/4
B -> S1 and S2 ||| S1 und S2 : 1/4
B -> V1 ||| V1 : 1/2
V -> W1 B2 ||| W1 B2 : 3/4
V -> W1 ||| W1 : 1/4
S -> the M1 ||| der M1 : 1/6
S -> the F1 ||| die F1 : 1/6
S -> the N1 ||| das N1 : 1/6
S -> a M1 ||| ein M1 : 1/6
S -> a F1 ||| eine F1 : 1/6
S -> a N1 ||| ein N1 : 1/6
"""

SVO_SOV = ITG(
    "svo_sov", SVO_SOV_RULES,
    classes={"ST": ("si", "so", 33), "VT": ("vi", "vo", 33), "OT": ("oi", "oo", 33)},
    source_function_words=("rpi",), target_function_words=("rpo",),
)

GENDER_CONJUGATION = ITG(
    "gender_conjugation", GENDER_CONJUGATION_RULES,
    classes={"W": ("we", "wg", 25), "M": ("em", "gm", 25), "F": ("ef", "gf", 25), "N": ("en", "gn", 25)},
    source_function_words=("the", "a", "and", "or"),
    target_function_words=("der", "die", "das", "ein", "eine", "und", "oder"),
)

GRAMMARS = {"svo_sov": SVO_SOV, "gender_conjugation": GENDER_CONJUGATION}

# The examples printed in appendix C (source ||| target).
PAPER_EXAMPLES = {
    "svo_sov": ("si1 vi28 oi5 oi7 si15 rpi si19 vi16 oi10 oi24",
                "so1 oo5 oo7 so15 rpo so19 vo16 oo10 oo24 vo28"),
    "gender_conjugation": ("we11 the en19 and the em17", "wg11 das gn19 und der gm17"),
}

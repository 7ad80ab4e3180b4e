"""The course kit's question bank: concept questions per chapter, and quizzes drawn from them.

The bank is one YAML file per chapter in ``rnnlab/course/questions/`` (``<chapter>.yaml``),
kept out of the book and its editions: it holds the answers. A file is a mapping with
``chapter`` (the file's name) and ``questions``, a list of questions with the fields

- ``id``: ``q-<chapter>-NN``, unique in the bank;
- ``page``: the page it tests, a path of ``_toc.yml`` under ``book/`` (``lds/01_modal_form``);
- ``anchor`` (optional): a label on that page (a proposition, an exercise, a figure);
- ``kind``: one of :data:`KINDS`;
- ``stars``: 1 to 3, as the book's exercises;
- ``question``: Markdown, math in ``$...$``;
- ``choices``: the options of a ``multiple-choice`` question (only there);
- ``answer``: for ``multiple-choice`` one of the choices, for ``true-false`` ``true`` or
  ``false`` (the justification goes into the explanation), otherwise Markdown;
- ``explanation``: why the answer is right, and why a wrong-looking choice is wrong.

``python -m rnnlab.course.quiz --out DIR`` validates the whole bank and writes, for the
questions it draws, ``DIR/quiz.md`` (the questions only, choices shuffled) and
``DIR/answers.md`` (answers and explanations, each with the page it tests) for a teacher.
``--chapter`` (repeatable), ``--stars`` and ``--n`` choose the questions, ``--seed`` the draw:
the same arguments write the same files. ``--check`` only validates. A problem in the bank
is a :class:`BankError` that names the file and the question.
"""
from __future__ import annotations

import argparse
import random
import re
import sys
from pathlib import Path

import yaml

from .._io import atomic_write_text



def _root():
    """The checkout whose book the questions point into (rnnlab's own, else the current folder's);
    without one (an installed rnnlab), the package's parent, where no _toc.yml is: pages unchecked."""
    from ..checks.grade.folder import checkout

    return checkout() or Path(__file__).resolve().parents[2]


ROOT = _root()
QUESTIONS = Path(__file__).resolve().parent / "questions"
CHAPTERS = ("scans", "lds", "memory", "lowrank", "contraction")   # the book's order
KINDS = ("multiple-choice", "short", "true-false", "derive")
REQUIRED = ("id", "page", "kind", "stars", "question", "answer", "explanation")
OPTIONAL = ("anchor", "choices")
LETTERS = "ABCDEFGHIJ"


class BankError(ValueError):
    """A question (or file) of the bank that does not validate; the message names both."""


def _fail(path, qid, problem):
    where = f"{path.name}" + (f", question {qid}" if qid else "")
    raise BankError(f"{where}: {problem}")


def toc_pages(root=ROOT):
    """The pages of ``_toc.yml`` under ``book/``, without the prefix; None without a toc."""
    toc = Path(root) / "_toc.yml"
    if not toc.exists():        # an installed package without the book
        return None
    text = toc.read_text(encoding="utf8")
    files = re.findall(r"^\s*-?\s*(?:file|root):\s*(\S+)\s*$", text, re.M)
    return {f[len("book/"):] for f in files if f.startswith("book/")}


def page_labels(page, root=ROOT):
    """The labels a page defines (``:label:``, ``:name:``, ``(label)=``); None without the page."""
    for suffix in (".ipynb", ".md"):
        path = Path(root) / "book" / (page + suffix)
        if path.exists():
            text = path.read_text(encoding="utf8")
            return set(re.findall(r":(?:label|name):\s*([\w-]+)", text)) | set(
                re.findall(r"\(([\w-]+)\)=", text))
    return None


def validate_question(q, path, chapter, pages=None, root=ROOT):
    """Check one question (a dict) of the file ``path``; raise :class:`BankError`."""
    qid = q.get("id") if isinstance(q, dict) else None
    if not isinstance(q, dict):
        _fail(path, None, f"a question must be a mapping, not {q!r:.60}")
    for field in REQUIRED:
        if field not in q or q[field] is None or q[field] == "":
            _fail(path, qid, f"missing field '{field}'")
    unknown = sorted(set(q) - set(REQUIRED) - set(OPTIONAL))
    if unknown:
        _fail(path, qid, f"unknown field(s) {', '.join(unknown)}")
    if not re.fullmatch(rf"q-{re.escape(chapter)}-\d\d", str(qid)):
        _fail(path, qid, f"id must be q-{chapter}-NN")
    if q["kind"] not in KINDS:
        _fail(path, qid, f"unknown kind '{q['kind']}' (known: {', '.join(KINDS)})")
    if not isinstance(q["stars"], int) or isinstance(q["stars"], bool) or not 1 <= q["stars"] <= 3:
        _fail(path, qid, f"stars must be 1, 2 or 3, not {q['stars']!r}")
    for field in ("question", "explanation"):
        if not isinstance(q[field], str):
            _fail(path, qid, f"'{field}' must be text")
    page = q["page"]
    if not isinstance(page, str) or page.split("/")[0] != chapter:
        _fail(path, qid, f"page '{page}' is not a page of the chapter {chapter}")
    if pages is not None and page not in pages:
        _fail(path, qid, f"page '{page}' is not a page of _toc.yml (book/{page})")
    if "anchor" in q:
        labels = page_labels(page, root) if pages is not None else None
        if pages is not None and (labels is None or q["anchor"] not in labels):
            _fail(path, qid, f"anchor '{q['anchor']}' is not a label of book/{page}")
    if q["kind"] == "multiple-choice":
        choices = q.get("choices")
        if not isinstance(choices, list) or len(choices) < 2 or not all(isinstance(c, str) for c in choices):
            _fail(path, qid, "a multiple-choice question needs 'choices', a list of at least two texts")
        if len(set(choices)) != len(choices):
            _fail(path, qid, "two choices are the same")
        if len(choices) > len(LETTERS):
            _fail(path, qid, f"at most {len(LETTERS)} choices")
        if q["answer"] not in choices:
            _fail(path, qid, "the answer is not one of the choices")
    else:
        if "choices" in q:
            _fail(path, qid, f"only a multiple-choice question has choices, not a {q['kind']} one")
        if q["kind"] == "true-false":
            if not isinstance(q["answer"], bool):
                _fail(path, qid, "a true-false answer must be true or false")
        elif not isinstance(q["answer"], str):
            _fail(path, qid, "the answer must be text")


def load_file(path, pages=None, root=ROOT):
    """The validated questions of one chapter file."""
    path = Path(path)
    chapter = path.stem
    try:
        data = yaml.safe_load(path.read_text(encoding="utf8"))
    except yaml.YAMLError as err:
        _fail(path, None, f"not valid YAML: {err}")
    if not isinstance(data, dict) or not isinstance(data.get("questions"), list):
        _fail(path, None, "the file must be a mapping with 'chapter' and a list 'questions'")
    if data.get("chapter") != chapter:
        _fail(path, None, f"'chapter' must be the file's name, {chapter}")
    if chapter not in CHAPTERS:
        _fail(path, None, f"unknown chapter {chapter} (known: {', '.join(CHAPTERS)})")
    seen = set()
    for q in data["questions"]:
        validate_question(q, path, chapter, pages, root)
        if q["id"] in seen:
            _fail(path, q["id"], "the id is used twice")
        seen.add(q["id"])
    return data["questions"]


def load_bank(directory=QUESTIONS, root=ROOT):
    """Every chapter's validated questions, ``{chapter: [question, ...]}`` in the book's order."""
    pages = toc_pages(root)
    files = {p.stem: p for p in sorted(Path(directory).glob("*.yaml"))}
    bank = {}
    for chapter in sorted(files, key=lambda c: CHAPTERS.index(c) if c in CHAPTERS else len(CHAPTERS)):
        bank[chapter] = load_file(files[chapter], pages, root)
    return bank


def select(bank, chapters=None, n=None, seed=0, stars=None):
    """The questions of a quiz: drawn by ``seed`` from the chosen chapters and stars.

    Returns ``(question, choices)`` pairs in the book's order (chapter, then id); ``choices``
    is the multiple-choice options in the quiz's shuffled order (None for other kinds)."""
    rng = random.Random(seed)
    pool = [q for ch in bank if chapters is None or ch in chapters for q in bank[ch]
            if stars is None or q["stars"] in stars]
    if n is not None and n < len(pool):
        pool = rng.sample(pool, n)
    order = {q["id"]: i for i, q in enumerate(q for ch in bank for q in bank[ch])}
    pool.sort(key=lambda q: order[q["id"]])
    picked = []
    for q in pool:
        choices = None
        if q["kind"] == "multiple-choice":
            choices = list(q["choices"])
            rng.shuffle(choices)
        picked.append((q, choices))
    return picked


def _block(text):
    return text.strip() + "\n"


_PROMPT = {
    "multiple-choice": "Choose one.",
    "true-false": "True or false? Justify your answer.",
    "short": "Answer in a few sentences.",
    "derive": "Derive the result; show your steps.",
}


def render_quiz(picked, title="Quiz"):
    """``quiz.md``: the questions only, no answers, no explanations, no pages."""
    out = [f"# {title}\n", f"{len(picked)} questions.\n"]
    for k, (q, choices) in enumerate(picked, 1):
        out.append(f"## Question {k} ({'★' * q['stars']})\n")
        out.append(_block(q["question"]))
        if choices:
            out.append("".join(f"- **{LETTERS[i]}.** {c}\n" for i, c in enumerate(choices)))
        out.append(f"*{_PROMPT[q['kind']]}*\n")
    return "\n".join(out)


def render_answers(picked, title="Quiz"):
    """``answers.md``: each question's answer and explanation, with its id and the page it tests."""
    out = [f"# {title}: answers\n", "For the teacher; not for students.\n"]
    for k, (q, choices) in enumerate(picked, 1):
        page = f"`{q['page']}`" + (f", `{q['anchor']}`" if q.get("anchor") else "")
        out.append(f"## Question {k} (`{q['id']}`, {'★' * q['stars']}, {q['kind']})\n")
        out.append(f"Tests: {page}\n")
        if choices:
            answer = f"**{LETTERS[choices.index(q['answer'])]}.** {q['answer']}"
        elif q["kind"] == "true-false":
            answer = "**True.**" if q["answer"] else "**False.**"
        else:
            answer = _block(q["answer"])
        out.append(f"**Answer.** {answer}".rstrip() + "\n")
        out.append(f"**Why.** {_block(q['explanation'])}")
    return "\n".join(out)


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m rnnlab.course.quiz", description=__doc__.split("\n")[0])
    parser.add_argument("--chapter", action="append", choices=CHAPTERS,
                        help="a chapter to draw from (repeat for several; default: all)")
    parser.add_argument("--n", type=int, help="number of questions (default: all that match)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the draw and of the choices' order")
    parser.add_argument("--stars", type=int, nargs="+", choices=(1, 2, 3), help="only these difficulties")
    parser.add_argument("--title", default="Quiz", help="the title of both files")
    parser.add_argument("--out", type=Path, help="folder for quiz.md and answers.md")
    parser.add_argument("--check", action="store_true", help="only validate the bank")
    parser.add_argument("--questions", type=Path, default=QUESTIONS, help=argparse.SUPPRESS)
    parser.add_argument("--root", type=Path, help="repository root (where _toc.yml is; default: the checkout "
                                                   "rnnlab runs from, or the current folder)")
    args = parser.parse_args(argv)
    if args.root is None:
        args.root = ROOT
    elif not (args.root / "_toc.yml").is_file():
        parser.error(f"--root {args.root}: no _toc.yml there (give the root of a checkout of the book)")
    if args.n is not None and args.n < 1:
        parser.error("--n must be at least 1")
    try:
        bank = load_bank(args.questions, args.root)
    except BankError as err:
        print(f"question bank: {err}", file=sys.stderr)
        return 1
    if args.check:
        pages = "" if toc_pages(args.root) is not None else " (pages and anchors not checked: no _toc.yml)"
        print(f"question bank: {sum(map(len, bank.values()))} questions in {len(bank)} chapters, all valid{pages}")
        return 0
    if args.out is None:
        parser.error("--out is required (or --check)")
    picked = select(bank, args.chapter, args.n, args.seed, args.stars)
    if not picked:
        print("question bank: no question matches", file=sys.stderr)
        return 1
    atomic_write_text(args.out / "quiz.md", render_quiz(picked, args.title))
    atomic_write_text(args.out / "answers.md", render_answers(picked, args.title))
    print(f"wrote {args.out / 'quiz.md'} and {args.out / 'answers.md'}: {len(picked)} questions")
    return 0


if __name__ == "__main__":
    sys.exit(main())

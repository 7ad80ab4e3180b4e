"""The term plans of the course kit (``book/teaching.md``), written from the chapters.

``python -m rnnlab.course.plan`` rewrites, in ``book/teaching.md``, every region between
``<!-- plan: NAME -->`` and ``<!-- end plan -->`` (NAME: a key of :data:`PLANS`) with
the plan's weeks. Which pages a week covers is decided here, by hand (:data:`PLANS`);
everything else is read from the pages, so the plan stays true when a page changes:

- **read**: the week's pages with their reading time, from the words of each page's main
  line (:func:`rnnlab.book.lint.page_words`) at :data:`WORDS_PER_MINUTE`;
- **lecture**: the key ideas, the bullets of the pages' *Summary* admonitions (at most
  :data:`IDEAS` a week, the first of each page's), and the schematics that carry them
  (the pages' ``{figure}`` directives);
- **lab**: the pages' exercises below ★★★ with their points as the grader gives them
  (:func:`rnnlab.checks.grade.folder.weights`: ★ 1, ★★ 2) and their time as the kit's
  tables give it; the ★★★ exercises are listed as projects;
- the short course says which pages of the full course it leaves out.

``--check`` only says whether the page is current (``tests/test_course_plan.py`` runs it).
A page of a plan that the table of contents no longer lists is an error, and so is a
lesson page (a page of ``_toc.yml`` under a chapter, not its index, not a
"Reproducing" or optional page) that the 10-week plan leaves out.
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import math
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
WORDS_PER_MINUTE = 100      # technical prose with equations and code, read to be understood
IDEAS = 5                   # key ideas a lecture carries at most

# The weeks: (title, pages). Pages are paths of _toc.yml without the suffix, under book/.
PLANS = {
    "10": [
        ("Recurrent networks as dynamical systems", ["scans/00_dynamical_systems"]),
        ("Linear recurrences as parallel scans", ["scans/01_associative_scan", "scans/02_gradients_and_kernels"]),
        ("The modal form of a linear dynamical system", ["lds/01_modal_form"]),
        ("Stacks of linear systems; long memory",
         ["lds/02_ldstack", "lds/03_modal_stack", "lds/04_copy_memory"]),
        ("Differentiable stacks, queues and deques", ["memory/01_stack_queue_deque"]),
        ("Learning with a differentiable memory",
         ["memory/02_backward_dynamics", "memory/03_initialisation", "memory/04_transduction",
          "memory/05_what_each_memory_can_do"]),
        ("Low-rank and sparse recurrent weights",
         ["lowrank/01_cells", "lowrank/02_rank_and_mask", "lowrank/03_spectra"]),
        ("Memory horizons and closed-loop control",
         ["lowrank/04_jacobians_memory", "lowrank/05_rank_and_memory", "lowrank/06_closed_loop"]),
        ("Contraction and the theorems that certify it",
         ["contraction/01_contraction_in_one_page", "contraction/02_discrete_time", "contraction/03_diagonal_metrics",
          "contraction/04_full_metrics"]),
        ("Where constant metrics fail; stable networks of networks",
         ["contraction/05_counterexamples", "contraction/06_networks_of_networks",
          "contraction/07_training_combo_nets", "contraction/08_keeping_the_certificate"]),
    ],
    "5": [
        ("Recurrences as dynamical systems and as scans", ["scans/00_dynamical_systems", "scans/01_associative_scan"]),
        ("Linear dynamical systems and long memory", ["lds/01_modal_form", "lds/04_copy_memory"]),
        ("Differentiable memories", ["memory/01_stack_queue_deque", "memory/04_transduction"]),
        ("Low-rank recurrent weights", ["lowrank/01_cells", "lowrank/04_jacobians_memory"]),
        ("Contraction and stable networks of networks",
         ["contraction/01_contraction_in_one_page", "contraction/06_networks_of_networks"]),
    ],
}
REGION = re.compile(r"(?P<open><!-- plan: (?P<name>\w+) -->\n)(?P<body>.*?)(?P<close><!-- end plan -->)", re.S)


@dataclasses.dataclass
class Page:
    path: str                # "scans/00_dynamical_systems"
    title: str
    words: int               # main line
    ideas: list              # the Summary's bullets
    figures: list            # (name or None, first sentence of the caption)
    exercises: list          # (label, title, stars, points, minutes)

    @property
    def minutes(self):
        return 5 * math.ceil(self.words / WORDS_PER_MINUTE / 5)


def _cells(path):
    return [("".join(c["source"]) if isinstance(c["source"], list) else c["source"])
            for c in json.loads(Path(path).read_text(encoding="utf8"))["cells"] if c["cell_type"] == "markdown"]


def _bullets(body):
    out, current = [], None
    for line in body.splitlines():
        if line.startswith("- "):
            current = [line[2:].strip()]
            out.append(current)
        elif current is not None and line.strip():
            current.append(line.strip())
    return [" ".join(b) for b in out]


def _first_sentence(text):
    text = " ".join(text.split())
    m = re.search(r"(?<!e\.g)(?<!i\.e)(?<!cf)\.(\s|$)", text)
    return text[:m.start() + 1] if m else text


DOC_ROLE = re.compile(r"\{doc\}`(?P<text>[^`<]*?)(?:\s*<(?P<target>[^>`]+)>)?`")


def _rebase_docs(text, chapter):
    """``text`` with its ``{doc}`` targets, relative to a page of ``chapter``, made relative to
    ``book/`` (where the plan's page lives): ``06_reproducing`` -> ``lowrank/07_reproducing``."""
    import posixpath

    def fix(m):
        target = m["target"] if m["target"] is not None else m["text"]
        where = target.strip()
        if not where.startswith("/"):
            where = posixpath.normpath(posixpath.join(chapter, where))
        if m["target"] is None:
            return f"{{doc}}`{where}`"
        return f"{{doc}}`{m['text'].strip()} <{where}>`"
    return DOC_ROLE.sub(fix, text)


def read_page(rel, book):
    """What the plan needs of ``book/<rel>.ipynb``."""
    from ..book.lint import page_words
    from ..book.myst import directive_of, parse
    from ..checks import exercises
    from ..checks.grade.folder import difficulty_of, titles, weights
    from ..checks.grade.kit import MINUTES

    path = Path(book) / f"{rel}.ipynb"
    cells = _cells(path)
    title = next((m.group(1).strip() for text in cells for m in [re.search(r"^# (.+)$", text, re.M)] if m), rel)
    ideas, figures = [], []
    for text in cells:
        lines = text.split("\n")
        for tok in parse(text):
            d = directive_of(tok, lines)
            if d is None:
                continue
            if d.name == "admonition" and d.argument == "Summary":
                ideas += [_rebase_docs(b, rel.split("/")[0]) for b in _bullets(d.body)]
            elif d.name == "figure":
                figures.append((d.options.get("name"),
                                _rebase_docs(_first_sentence(d.body), rel.split("/")[0])))
    registered = {ex.label: ex for ex in exercises()}
    points = weights([registered[label] for label in titles(path) if label in registered], book=book)
    found = []
    for label, full in titles(path).items():
        stars = difficulty_of(full)
        found.append((label, full.lstrip("★ ").strip(), stars, points.get(label, float(stars or 2)),
                      MINUTES.get(stars, 25)))
    return Page(rel, title, page_words(path)["main"], ideas, figures, found)


def lessons(root=ROOT):
    """The lesson pages of ``_toc.yml`` (``chapter/page``), in reading order."""
    from ..book.lint import is_lesson
    from ..book.myst import toc_order

    return [p[len("book/"):] for p in toc_order(root) if p.startswith("book/") and p.count("/") == 2 and is_lesson(p)]


def _time(minutes):
    hours, rest = divmod(int(minutes), 60)
    return (f"{hours} h {rest:02d} min" if hours else f"{rest} min").replace(" 00 min", "")


def _points(x):
    return f"{x:g} point" + ("" if x == 1 else "s")


def render(name, root=ROOT):
    """The Markdown of plan ``name``: one block per week."""
    from ..book.myst import toc_order

    book = Path(root) / "book"
    weeks = PLANS[name]
    known = {p[len("book/"):] for p in toc_order(root)}
    for _, pages in weeks:
        for rel in pages:
            if rel not in known:
                raise ValueError(f"plan {name}: {rel} is not a page of _toc.yml")
    planned = [rel for _, pages in weeks for rel in pages]
    if name == "10":
        missing = [rel for rel in lessons(root) if rel not in planned]
        if missing:
            raise ValueError(f"the 10-week plan leaves out lesson pages: {', '.join(missing)}")
    cache = {rel: read_page(rel, book) for rel in planned}
    out = []
    total_read = total_lab = total_points = 0
    for n, (title, pages) in enumerate(weeks, 1):
        ps = [cache[rel] for rel in pages]
        read = sum(p.minutes for p in ps)
        lab = [e for p in ps for e in p.exercises if e[2] != 3]
        projects = [e for p in ps for e in p.exercises if e[2] == 3]
        lab_minutes, lab_points = sum(e[4] for e in lab), sum(e[3] for e in lab)
        total_read, total_lab, total_points = total_read + read, total_lab + lab_minutes, total_points + lab_points
        quota = max(1, IDEAS // len(ps))
        ideas = [i for p in ps for i in p.ideas[:quota]][:IDEAS]
        out += [f"**Week {n}: {title}**", ""]
        out.append(f"- *Read* (about {_time(read)}): "
                   + "; ".join(f"{{doc}}`{p.title} <{p.path}>` ({p.minutes} min)" for p in ps) + ".")
        out.append("- *Lecture*, the key ideas:")
        out += [f"  - {idea}" for idea in ideas]
        figs = [f for p in ps for f in p.figures]
        if figs:
            out.append("  - Figures to show: " + "; ".join(
                (f"{{numref}}`{fig}`" if fig else "a schematic") + f" ({caption.rstrip('.')})" for fig, caption in figs) + ".")
        out.append(f"- *Lab* (about {_time(lab_minutes)}, {_points(lab_points)}): "
                   + ("; ".join(f"`{e[0]}` ({'★' * (e[2] or 2)}, {_points(e[3])})" for e in lab) or "reading only") + ".")
        if projects:
            out.append("- *Project material* (★★★): " + "; ".join(f"`{e[0]}` ({e[1]})" for e in projects) + ".")
        out.append("")
    out.append(f"In all: {len(weeks)} weeks, about {_time(total_read)} of reading and "
               f"{_time(total_lab)} of labs for {_points(total_points)}.")
    if name != "10":
        full = [rel for _, pages in PLANS["10"] for rel in pages]
        dropped = [rel for rel in full if rel not in planned]
        if dropped:
            out.append("Left out of the 10-week course: "
                       + ", ".join(f"{{doc}}`{rel.split('/')[-1]} <{rel}>`" for rel in dropped) + ".")
    return "\n".join(out) + "\n"


def refresh(text, root=ROOT):
    """``text`` with every plan region rewritten."""
    return REGION.sub(lambda m: m["open"] + render(m["name"], root) + m["close"], text)


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m rnnlab.course.plan", description=__doc__.split("\n\n")[0])
    parser.add_argument("--page", type=Path, default=ROOT / "book" / "teaching.md")
    parser.add_argument("--root", type=Path, default=ROOT, help="repository root (where _toc.yml is)")
    parser.add_argument("--check", action="store_true", help="say whether the page is current; change nothing")
    args = parser.parse_args(argv)
    from ..checks.grade.kit import update_page

    return update_page(args.page, lambda text: refresh(text, args.root), args.check,
                       stale=f"{args.page}: the term plans are not current: run python -m rnnlab.course.plan",
                       done=f"rewrote the term plans of {args.page}")


if __name__ == "__main__":
    sys.exit(main())

"""The book's notebooks, maintained by code: ``python -m rnnlab.book <command>``.

    sync-setup        rewrite the first (setup) cell of every notebook from _config.yml
                      (--ref TAG: pin rnnlab at TAG for a term; --unpin; by default
                      the ref the notebooks already carry is kept)
    check             what the test suite checks about the stored notebooks
    execute NB...     re-execute notebooks in place, as the book build does
    editions          write the notebook editions Colab and Jupyter open: full/ and student/
    student OUT/      write only the student edition, under OUT/
    lint [PATH...]    the conventions of CONTRIBUTING.md, checked (book/conforming.txt: must pass)
    words [PATH...]   words of each page's main line and of its folded parts (a lesson: at most
                      about 2,300 on the main line, TEACHING.md)

The repository URL is written once, in ``_config.yml`` (``repository.url``);
the first code cell of every notebook installs rnnlab from that URL when it is
missing (on Colab). After changing the URL in a fork, run ``sync-setup``; to
pin one version of rnnlab for a term, ``sync-setup --ref TAG`` (then
``editions``).
The editions (:mod:`rnnlab.book.editions`: the MyST converted by
:mod:`rnnlab.book.myst`; the student edition without solutions, from
:mod:`rnnlab.checks.student`, which belongs with the checks and the grading
in the classroom package :mod:`rnnlab.checks`) are generated, never edited by
hand; the repository keeps them in ``full/`` and ``student/``.
"""
from .maintenance import (SETUP_MARKER, check, check_ref, current_ref, execute,  # noqa: F401
                          notebooks, pinned_ref, repository_url, setup_cell_source,
                          sync_setup, toc_files)

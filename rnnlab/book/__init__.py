"""The book's notebooks, maintained by code: ``python -m rnnlab.book <command>``.

    sync-setup        rewrite the first (setup) cell of every notebook from _config.yml
    check             what the test suite checks about the stored notebooks
    execute NB...     re-execute notebooks in place, as the book build does
    student OUT/      write the student version of every chapter notebook under OUT/

The repository URL is written once, in ``_config.yml`` (``repository.url``);
the first code cell of every notebook installs rnnlab from that URL when it is
missing (on Colab). After changing the URL in a fork, run ``sync-setup``.
Student notebooks (:mod:`rnnlab.book.student`) are generated, never edited by
hand; the repository keeps them in ``student/``.
"""
from .maintenance import (SETUP_MARKER, check, execute, notebooks, repository_url,  # noqa: F401
                          setup_cell_source, sync_setup, toc_files)
from .student import (leaks, stale_student_notebooks, student_files,  # noqa: F401
                      student_notebook, write_student_notebooks)

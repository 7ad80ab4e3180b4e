"""Sphinx extension of the book (loaded by ``sphinx.local_extensions`` in ``_config.yml``):
write every inline ``<script>`` once.

Sphinx 7.4 writes an inline script twice when an extension adds it after the
HTML builder started: ``Sphinx.add_js_file(None, body=...)`` hands the builder
the file name ``None``, while the builder later re-adds the registry's copy
under the name ``''``, so the two do not compare equal. sphinx-thebe adds
``const THEBE_JS_URL = ...`` that way, and its second copy throws "Identifier
'THEBE_JS_URL' has already been declared" on every page of the book. Sphinx
fixed it in sphinx-doc/sphinx#13402 (Sphinx 8.2) by passing ``''``; this
extension does the same on the builder, and does nothing on later Sphinx.
"""
from __future__ import annotations


def _name_inline_scripts_alike(app):
    builder = app.builder
    add_js_file = getattr(builder, "add_js_file", None)
    if add_js_file is None:  # not an HTML builder
        return

    def add_js_file_once(filename, **kwargs):
        return add_js_file("" if filename is None else filename, **kwargs)

    builder.add_js_file = add_js_file_once


def setup(app):
    app.connect("builder-inited", _name_inline_scripts_alike)
    return {"parallel_read_safe": True, "parallel_write_safe": True}

"""Atomic file writes: the one place rnnlab writes a file that a reader (or a resumed run) may open.

Every writer here writes a temporary file in the target's own folder (so the
final :func:`os.replace` never crosses a file system), flushes and fsyncs it,
then renames it over the target: a reader sees the old file or the new one,
never half of one, and an interrupted write leaves the old file in place. The
temporary is removed when the write fails (any exception, KeyboardInterrupt
included). The target's folder is created when missing.

- :func:`atomic_write_text` / :func:`atomic_write_bytes` / :func:`atomic_write_json`:
  whole contents at once;
- :func:`atomic_save`: ``torch.save(obj, path)``;
- :func:`atomic_open`: a context manager that yields the open temporary file,
  for writers that stream (``csv.writer``, ``numpy.savez``);
- :func:`atomic_path`: a context manager that yields the temporary's *name*, for
  libraries that insist on opening the file themselves (give ``suffix`` when the
  library appends an extension it does not find, as ``numpy.savez`` adds
  ``.npz``).

The temporary is ``.<name>.<random>.tmp`` beside the target, created with the
usual permissions (``0o666`` less the umask, as ``open`` would).
"""
import contextlib
import json
import os
import secrets

__all__ = ["atomic_write_text", "atomic_write_bytes", "atomic_write_json", "atomic_save",
           "atomic_open", "atomic_path"]


def _temporary_name(path, suffix=""):
    path = os.fspath(path)
    folder, name = os.path.split(os.path.abspath(path))
    os.makedirs(folder, exist_ok=True)
    return os.path.join(folder, f".{name}.{secrets.token_hex(4)}.tmp{suffix}")


def _remove(tmp):
    with contextlib.suppress(FileNotFoundError):
        os.remove(tmp)


def _fsync_path(tmp):
    fd = os.open(tmp, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


@contextlib.contextmanager
def atomic_path(path, suffix=""):
    """Yield a temporary file name beside ``path``; on a clean exit, fsync it and move it onto ``path``.

    The caller (or the library it hands the name to) creates the file. ``suffix`` ends the
    temporary's name (``".npz"`` for ``numpy.savez``, ``".zip"`` for a library that appends it).
    On an exception the temporary is removed and ``path`` is left as it was.
    """
    tmp = _temporary_name(path, suffix)
    try:
        yield tmp
        _fsync_path(tmp)
        os.replace(tmp, path)
    except BaseException:
        _remove(tmp)
        raise


@contextlib.contextmanager
def atomic_open(path, mode="w", **open_kw):
    """``open(path, mode)`` made atomic: yield the open temporary file; replace ``path`` on a clean exit.

    ``mode`` is ``"w"`` (text: UTF-8 and ``newline=""`` unless ``open_kw`` says otherwise, so
    the bytes written are exactly the text given) or ``"wb"``.
    """
    if mode not in ("w", "wb"):
        raise ValueError(f"atomic_open: mode must be 'w' or 'wb', got {mode!r}")
    if mode == "w":
        open_kw.setdefault("encoding", "utf-8")
        open_kw.setdefault("newline", "")
    tmp = _temporary_name(path)
    try:
        # O_EXCL: never write through a file (or link) that is already there; 0o666 less the umask.
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
        with os.fdopen(fd, mode, **open_kw) as f:
            yield f
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        _remove(tmp)
        raise


def atomic_write_text(path, text, encoding="utf-8"):
    """Write the string ``text`` to ``path`` atomically (no newline translation)."""
    if not isinstance(text, str):
        raise TypeError(f"atomic_write_text: text must be a str, got {type(text).__name__}")
    with atomic_open(path, "w", encoding=encoding) as f:
        f.write(text)


def atomic_write_bytes(path, data):
    """Write ``data`` (bytes-like) to ``path`` atomically."""
    if not isinstance(data, (bytes, bytearray, memoryview)):
        raise TypeError(f"atomic_write_bytes: data must be bytes, got {type(data).__name__}")
    with atomic_open(path, "wb") as f:
        f.write(data)


def atomic_write_json(path, obj, *, newline=True, **json_kw):
    """Write ``json.dumps(obj, **json_kw)`` to ``path`` atomically, ending in a newline unless ``newline=False``.

    The text is built before the file is touched: an object that JSON cannot encode raises
    (TypeError, ValueError) and leaves ``path`` and its folder as they were.
    """
    text = json.dumps(obj, **json_kw)
    atomic_write_text(path, text + "\n" if newline else text)


def atomic_save(obj, path, **save_kw):
    """``torch.save(obj, path, **save_kw)`` atomically."""
    import torch

    with atomic_open(path, "wb") as f:
        torch.save(obj, f, **save_kw)

"""Argument checks shared by the whole package: one exception type per mistake, one message form.

The convention (DESIGN.md, "Tests"):

- a value of the wrong **type** raises :class:`TypeError` (``bool`` is not an ``int``,
  nor a number: ``True`` is refused where a count or a rate is expected);
- a value of the right type but outside its **range**, not among the **choices**,
  or a tensor of the wrong **shape**, raises :class:`ValueError`;
- the message names the argument, the function when ``fn`` is given
  (``"copy_memory: T must be >= 1, got 0"``) and what was expected.

Each check returns the value normalised (a Python ``int``/``float``), so a caller writes
``T = check_int("T", T, minimum=1, fn="copy_memory")``.
"""
import numbers

__all__ = ["check_int", "check_optional_int", "check_float", "check_positive", "check_fraction",
           "check_choice", "check_shape", "check_finite_matrix"]


def _where(fn):
    return f"{fn}: " if fn else ""


def _range_text(minimum, maximum, low_open=False, high_open=False):
    if minimum is not None and maximum is not None:
        return f"lie in {'(' if low_open else '['}{minimum}, {maximum}{')' if high_open else ']'}"
    if minimum is not None:
        return f"be {'>' if low_open else '>='} {minimum}"
    return f"be {'<' if high_open else '<='} {maximum}"


def _in_range(value, minimum, maximum, low_open, high_open):
    if minimum is not None and (value <= minimum if low_open else value < minimum):
        return False
    if maximum is not None and (value >= maximum if high_open else value > maximum):
        return False
    return True


def check_int(name, value, minimum=None, maximum=None, fn=None):
    """``value`` as an ``int``: TypeError unless it is an integer (not a bool), ValueError outside [minimum, maximum].

    NumPy integers are accepted and converted.
    """
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{_where(fn)}{name} must be an int, got {type(value).__name__}")
    value = int(value)
    if not _in_range(value, minimum, maximum, False, False):
        raise ValueError(f"{_where(fn)}{name} must {_range_text(minimum, maximum)}, got {value}")
    return value


def check_optional_int(name, value, minimum=None, maximum=None, fn=None, none_means=None):
    """Like :func:`check_int`, but ``None`` passes through (``none_means`` says what it stands for in messages)."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        extra = f" ({none_means})" if none_means else ""
        raise TypeError(f"{_where(fn)}{name} must be an int or None{extra}, got {type(value).__name__}")
    return check_int(name, value, minimum, maximum, fn)


def check_float(name, value, minimum=None, maximum=None, fn=None, *, low_open=False, high_open=False,
                finite=True):
    """``value`` as a ``float``: TypeError unless it is a real number (not a bool), ValueError outside the range.

    The range is ``[minimum, maximum]``; ``low_open``/``high_open`` exclude an end. NaN (and,
    unless ``finite=False``, ±inf) is a ValueError.
    """
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{_where(fn)}{name} must be a number, got {type(value).__name__}")
    value = float(value)
    if value != value or (finite and value in (float("inf"), float("-inf"))):
        raise ValueError(f"{_where(fn)}{name} must be a finite number, got {value}")
    if not _in_range(value, minimum, maximum, low_open, high_open):
        raise ValueError(f"{_where(fn)}{name} must {_range_text(minimum, maximum, low_open, high_open)}, "
                         f"got {value}")
    return value


def check_positive(name, value, fn=None):
    """``value`` as a ``float`` > 0 (see :func:`check_float`)."""
    return check_float(name, value, 0, None, fn, low_open=True)


def check_fraction(name, value, fn=None, *, low_open=False, high_open=True):
    """``value`` as a ``float`` in [0, 1) (``low_open``/``high_open`` choose the ends)."""
    return check_float(name, value, 0, 1, fn, low_open=low_open, high_open=high_open)


def check_choice(name, value, choices, fn=None):
    """``value`` itself when it is one of ``choices``, else a ValueError listing them."""
    try:
        ok = value in choices
    except TypeError:  # an unhashable value against a set or dict
        ok = False
    if not ok:
        listed = ", ".join(map(repr, choices))
        raise ValueError(f"{_where(fn)}{name} must be one of {listed}; got {value!r}")
    return value


def check_shape(name, tensor, shape, fn=None):
    """``tensor`` itself when its shape matches ``shape`` (``None`` matches any size), else an error.

    TypeError when ``tensor`` has no ``shape`` (not a tensor or array); ValueError naming the
    expected and actual shapes otherwise. ``shape`` may hold strings for the sizes' names in the
    message: ``check_shape("x", x, (B, None, C))``.
    """
    actual = getattr(tensor, "shape", None)
    if actual is None:
        raise TypeError(f"{_where(fn)}{name} must be a tensor, got {type(tensor).__name__}")
    actual = tuple(actual)
    expected = tuple(shape)
    ok = len(actual) == len(expected) and all(
        e is None or isinstance(e, str) or a == e for a, e in zip(actual, expected))
    if not ok:
        sizes = ", ".join("*" if e is None else str(e) for e in expected)
        shown = f"({sizes},)" if len(expected) == 1 else f"({sizes})"
        raise ValueError(f"{_where(fn)}{name} must have shape {shown}, got {actual}")
    return tensor


def check_finite_matrix(name, value, shape, fn=None):
    """``value`` as a float NumPy array of ``shape`` with finite entries (a matrix from a widget or a user).

    TypeError when it is not an array of real numbers; ValueError for another shape or a NaN/inf entry.
    """
    import numpy as np

    try:
        a = np.asarray(value, dtype=float)
    except (TypeError, ValueError):
        raise TypeError(f"{_where(fn)}{name} must be an array of real numbers, got {type(value).__name__}") from None
    size = "x".join(map(str, shape))
    if a.shape != tuple(shape) or not np.all(np.isfinite(a)):
        raise ValueError(f"{_where(fn)}{name} must be a finite {size} matrix, got shape {a.shape}"
                         + ("" if a.shape != tuple(shape) else " with a non-finite entry"))
    return a

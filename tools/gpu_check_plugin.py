"""A pytest plugin of ``tools/gpu_check.py``: every test's outcome as one JSON line, written as it happens.

Loaded with ``-p gpu_check_plugin`` (``tools/`` on ``PYTHONPATH``); the file is
``$RNNLAB_GPU_CHECK_RESULTS``. Lines: ``{"nodeid", "outcome", "when",
"duration", "message"}`` per test (``outcome`` passed/failed/skipped/error;
``collected`` under ``--collect-only``), then ``{"exitstatus": N}``. Written
line by line and flushed, so a run stopped by the check's time limit still
says which tests passed.
"""
import json
import os

_FILE = None


def _write(record):
    global _FILE
    path = os.environ.get("RNNLAB_GPU_CHECK_RESULTS")
    if not path:
        return
    if _FILE is None:
        _FILE = open(path, "a")
    _FILE.write(json.dumps(record) + "\n")
    _FILE.flush()


def _message(report):
    """The failure's last line (e.g. ``AssertionError: h ...``), at most 500 characters."""
    text = getattr(report, "longreprtext", "") or ""
    crash = getattr(getattr(report, "longrepr", None), "reprcrash", None)
    if crash is not None and getattr(crash, "message", None):
        text = crash.message
    elif text:
        text = text.strip().splitlines()[-1]
    return text[:500] or None


def pytest_collection_finish(session):
    if session.config.option.collectonly:
        for item in session.items:
            _write({"nodeid": item.nodeid, "outcome": "collected", "when": "collect", "duration": 0.0,
                    "message": None})


def pytest_runtest_logreport(report):
    if report.when == "call" or (report.when in ("setup", "teardown") and not report.passed):
        outcome = report.outcome
        if report.when != "call" and report.failed:
            outcome = "error"
        _write({"nodeid": report.nodeid, "outcome": outcome, "when": report.when,
                "duration": round(report.duration, 4), "message": None if report.passed else _message(report)})


def pytest_collectreport(report):
    if report.failed:
        _write({"nodeid": report.nodeid or "<collection>", "outcome": "error", "when": "collect", "duration": 0.0,
                "message": _message(report)})


def pytest_sessionfinish(session, exitstatus):
    _write({"exitstatus": int(exitstatus)})

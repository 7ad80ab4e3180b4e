"""Helpers of the browser tests: which Chromium, how to launch it, pages that record what went wrong.

Import them in a test module with ``from pagecheck import ...`` (pytest puts
tests/browser on ``sys.path``); the fixtures that use them are in conftest.py.
"""
from __future__ import annotations

import os
import shutil
import socket
import time
from dataclasses import dataclass, field
from urllib.parse import urlsplit

import pytest

LOCAL_HOSTS = {"127.0.0.1", "localhost", "[::1]", "::1"}

CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    # Without these Chromium hangs on its own refused connections on an offline machine.
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def chromium_path() -> str | None:
    """The Chromium to drive: ``$CHROMIUM``, /usr/bin/chromium, chromium or chromium-browser on PATH, else
    ``None`` (Playwright's own build). The same order as ``ensure_chromium.sh``, which ``make test-browser``
    runs first to install one.
    """
    candidates = [os.environ.get("CHROMIUM"), "/usr/bin/chromium", shutil.which("chromium"),
                  shutil.which("chromium-browser")]
    for candidate in candidates:
        if candidate and os.access(candidate, os.X_OK):
            return candidate
    return None


def is_local(url: str) -> bool:
    """True for URLs that stay on this machine: 127.0.0.1/localhost, file:, data:, blob:, about:."""
    parts = urlsplit(url)
    if parts.scheme in ("file", "data", "blob", "about", "chrome-error"):
        return True
    return parts.hostname in LOCAL_HOSTS


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class WatchedPage:
    """A Playwright page with everything that went wrong on it recorded.

    Requests to hosts other than 127.0.0.1/localhost are aborted and listed
    in ``blocked`` (unless answered locally by a stub, listed in
    ``stubbed``); ``console_errors`` holds console messages of type error
    and uncaught exceptions; ``failed`` holds failed requests and responses
    with an HTTP status of 400 or more.
    """
    page: object
    blocked: list = field(default_factory=list)
    stubbed: list = field(default_factory=list)
    console_errors: list = field(default_factory=list)
    failed: list = field(default_factory=list)
    in_flight: dict = field(default_factory=dict)   # request -> URL, for requests not yet finished or failed

    def settle(self, timeout_ms: float, quiet_ms: float = 500):
        """Wait until no request has been in flight for ``quiet_ms`` (Playwright's "network idle"),
        at most ``timeout_ms``; on timeout raise :class:`TimeoutError` naming the requests still open,
        which ``wait_for_load_state("networkidle")`` does not say."""
        deadline = time.monotonic() + timeout_ms / 1000
        quiet_since = None
        while True:
            now = time.monotonic()
            if self.in_flight:
                quiet_since = None
            elif quiet_since is None:
                quiet_since = now
            elif now - quiet_since >= quiet_ms / 1000:
                return
            if now > deadline:
                pending = sorted(set(self.in_flight.values()))
                raise TimeoutError(f"requests still open after {timeout_ms / 1000:g} s: {len(pending)}: "
                                   + ", ".join(pending[:8]))
            self.page.wait_for_timeout(100)   # lets Playwright deliver the request events meanwhile

    def problems(self) -> list[str]:
        return ([f"request to a non-local host (aborted): {u}" for u in self.blocked]
                + [f"console error: {m}" for m in self.console_errors]
                + [f"failed request: {m}" for m in self.failed])

    def clear(self):
        for records in (self.blocked, self.stubbed, self.console_errors, self.failed):
            records.clear()


def watch(context, stubs: dict[str, tuple[str, str]] | None = None) -> WatchedPage:
    """Open a page in ``context`` that aborts and records non-local requests and records errors.

    ``stubs`` maps URL prefixes of known non-local requests to ``(content type, body)``:
    such requests are answered here, without the network, and listed in ``stubbed``.
    """
    page = context.new_page()
    watched = WatchedPage(page)
    stubs = stubs or {}

    def route(r):
        url = r.request.url
        if is_local(url):
            r.continue_()
            return
        for prefix, (content_type, body) in stubs.items():
            if url.startswith(prefix):
                watched.stubbed.append(url)
                r.fulfill(status=200, content_type=content_type, body=body)
                return
        watched.blocked.append(url)
        r.abort("blockedbyclient")

    page.route("**/*", route)
    page.on("console", lambda m: watched.console_errors.append(
        f"{m.text} ({m.location.get('url', '')}:{m.location.get('lineNumber', '')})") if m.type == "error" else None)
    page.on("pageerror", lambda e: watched.console_errors.append(f"uncaught: {e}"))

    page.on("request", lambda request: watched.in_flight.__setitem__(request, request.url))
    page.on("requestfinished", lambda request: watched.in_flight.pop(request, None))

    def request_failed(request):
        watched.in_flight.pop(request, None)
        if request.url not in watched.blocked:
            watched.failed.append(f"{request.url}: {request.failure}")

    page.on("requestfailed", request_failed)
    page.on("response", lambda r: watched.failed.append(f"{r.url}: HTTP {r.status}") if r.status >= 400 else None)
    return watched


def serve_files(page, url_prefix: str, root) -> list:
    """Answer every request of ``page`` under ``url_prefix`` with the file of the same relative path
    under the folder ``root`` (404 when there is none), without the network: the editions' absolute
    image URLs (the repository's raw files) mapped to this checkout. Returns the list of URLs served.
    Register it after :func:`watch` (Playwright tries the routes registered last first)."""
    from pathlib import Path

    served = []
    root = Path(root).resolve()

    def route(r):
        rel = r.request.url[len(url_prefix):].split("?")[0].split("#")[0]
        path = (root / rel).resolve()
        if root in path.parents and path.is_file():
            served.append(r.request.url)
            r.fulfill(status=200, path=str(path))
        else:
            r.fulfill(status=404, body="not in this checkout")

    page.route(url_prefix + "**", route)
    return served


def wait_until(predicate, timeout=30.0, interval=0.2, message="condition"):
    """Poll ``predicate()`` until it is truthy; return its value, or fail after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            pytest.fail(f"timed out after {timeout:g} s waiting for {message}", pytrace=False)
        time.sleep(interval)

#!/bin/sh
# Make sure a Chromium that Playwright can drive is on this machine, and print its path.
#   1. one already installed: $CHROMIUM, else /usr/bin/chromium (Debian), else chromium/chromium-browser on PATH;
#   2. else Debian's `chromium` package, when apt-get is there and we are root;
#   3. else Playwright's own build (`playwright install chromium`; needs its download host).
# The tests (pagecheck.chromium_path) look in the same order, else use Playwright's own build.
# Usage: tests/browser/ensure_chromium.sh [PYTHON]   (PYTHON: the venv's python, for step 3)
set -eu
PY=${1:-python3}

found() { echo "chromium: $1"; exit 0; }

if [ -n "${CHROMIUM:-}" ] && [ -x "$CHROMIUM" ]; then found "$CHROMIUM"; fi
if [ -x /usr/bin/chromium ]; then found /usr/bin/chromium; fi
for name in chromium chromium-browser; do
    if path=$(command -v "$name" 2>/dev/null); then found "$path"; fi
done

if command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
    echo "chromium: installing Debian's chromium with apt-get"
    if DEBIAN_FRONTEND=noninteractive apt-get update -q >/dev/null \
        && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends chromium >/dev/null \
        && [ -x /usr/bin/chromium ]; then
        found /usr/bin/chromium
    fi
    echo "chromium: apt-get could not install it"
fi

echo "chromium: installing Playwright's own Chromium"
"$PY" -m playwright install chromium
echo "chromium: Playwright's build (no CHROMIUM set; the tests fall back to it)"

#!/bin/sh
# Make sure bubblewrap (bwrap), the sandbox of `python -m rnnlab grade`, is on this machine.
#   1. one already installed: bwrap on PATH;
#   2. else Debian's `bubblewrap` package, when apt-get is there and we are root;
#   3. else say what to do: the grading tests then run the grader with --unsafe only where they say so,
#      and the sandbox tests are skipped.
# Usage: sh tests/ensure_bwrap.sh   (run by `make test-unit`; never fails the build)
set -u

if path=$(command -v bwrap 2>/dev/null); then echo "bwrap: $path"; exit 0; fi
if command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
    echo "bwrap: installing Debian's bubblewrap with apt-get"
    if DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends bubblewrap >/dev/null 2>&1 \
        || { DEBIAN_FRONTEND=noninteractive apt-get update -q >/dev/null 2>&1 \
             && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends bubblewrap >/dev/null; }
    then
        if path=$(command -v bwrap 2>/dev/null); then echo "bwrap: $path"; exit 0; fi
    fi
    echo "bwrap: apt-get could not install it"
fi
echo "bwrap: not found. python -m rnnlab grade needs bubblewrap (Debian/Ubuntu: apt-get install bubblewrap;"
echo "       Fedora: dnf install bubblewrap); without it the sandbox tests are skipped."
exit 0

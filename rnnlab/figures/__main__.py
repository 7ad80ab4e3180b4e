"""``python -m rnnlab.figures [NAME ...] [--check] [--root ROOT]``: regenerate the book's schematics."""
import argparse
import sys

from . import FIGURES, stale, write


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m rnnlab.figures",
                                     description="Regenerate the SVG schematics of the book "
                                                 "(rnnlab.figures.FIGURES).")
    parser.add_argument("names", nargs="*", metavar="NAME",
                        help="figures to write (default: all): " + ", ".join(sorted(FIGURES)))
    parser.add_argument("--check", action="store_true",
                        help="write nothing; list the figures whose SVG is missing or stale")
    parser.add_argument("--root", default=".", help="repository root (default: .)")
    args = parser.parse_args(argv)
    unknown = [n for n in args.names if n not in FIGURES]
    if unknown:
        parser.error(f"unknown figure {', '.join(unknown)}; known: {', '.join(sorted(FIGURES))}")
    if args.check:
        names = stale(args.root)
        for name in names:
            print(f"stale: {FIGURES[name][1]} (python -m rnnlab.figures {name})")
        print(f"{len(FIGURES)} figures, {len(names)} stale")
        return 1 if names else 0
    for path in write(args.root, args.names or None):
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

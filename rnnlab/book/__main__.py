"""``python -m rnnlab.book sync-setup | check | execute NB... | student OUT/``."""
import argparse
import sys

from . import __doc__ as DOC
from .maintenance import check, execute, notebooks, sync_setup
from .student import stale_student_notebooks, write_student_notebooks


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m rnnlab.book", description=DOC.split("\n\n")[0],
                                     epilog=DOC.split("\n\n", 1)[1],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("command", choices=["sync-setup", "check", "execute", "student"])
    parser.add_argument("paths", nargs="*", metavar="PATH",
                        help="execute: the notebooks to run; student: the output folder")
    parser.add_argument("--root", default=".", help="repository root (where _config.yml is)")
    args = parser.parse_args(argv)
    if args.command == "sync-setup":
        for path in sync_setup(args.root):
            print(f"rewrote {path}")
        return 0
    if args.command == "execute":
        if not args.paths:
            parser.error("execute needs at least one notebook")
        for nb in args.paths:
            print(f"{nb}: executed in {execute(nb):.1f} s")
        return 0
    if args.command == "student":
        if len(args.paths) != 1:
            parser.error("student needs one output folder, e.g. `python -m rnnlab.book student student/`")
        written = write_student_notebooks(args.paths[0], args.root)
        print(f"wrote {len(written)} student notebooks under {args.paths[0]}")
        return 0
    problems = check(args.root) + stale_student_notebooks(args.root)
    for p in problems:
        print(p)
    print(f"{len(notebooks(args.root))} notebooks checked, {len(problems)} problems")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())

"""``python -m rnnlab.book sync-setup [--ref REF | --unpin] | check | execute NB... | editions |
student OUT/ | lint [PATH...] | words [PATH...]``."""
import argparse
import sys

from . import __doc__ as DOC
from .maintenance import KEEP, RefDisagreement, check, check_ref, execute, notebooks, sync_setup


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m rnnlab.book", description=DOC.split("\n\n")[0],
                                     epilog=DOC.split("\n\n", 1)[1],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("command", choices=["sync-setup", "check", "execute", "editions", "student", "lint", "words"])
    parser.add_argument("paths", nargs="*", metavar="PATH",
                        help="execute: the notebooks to run; student: the output folder; "
                             "lint, words: notebooks or chapter folders (default: all)")
    parser.add_argument("--root", default=".", help="repository root (where _config.yml is)")
    pin = parser.add_mutually_exclusive_group()
    pin.add_argument("--ref", metavar="REF",
                     help="sync-setup: pin rnnlab at this git tag, branch or commit for the term "
                          "(the install line becomes \"rnnlab @ git+URL@REF\"); without --ref "
                          "sync-setup keeps the ref the notebooks carry")
    pin.add_argument("--unpin", action="store_true",
                     help="sync-setup: remove the pinned ref (install from the default branch)")
    args = parser.parse_args(argv)
    if (args.ref is not None or args.unpin) and args.command != "sync-setup":
        parser.error("--ref and --unpin go with sync-setup")
    if args.command == "sync-setup":
        ref = None if args.unpin else KEEP
        if args.ref is not None:
            try:
                ref = check_ref(args.ref)
            except ValueError as exc:
                parser.error(str(exc))
        try:
            changed = sync_setup(args.root, ref)
        except RefDisagreement as exc:
            print(f"python -m rnnlab.book sync-setup: {exc}", file=sys.stderr)
            return 2
        except ValueError as exc:
            parser.error(str(exc))
        for path in changed:
            print(f"rewrote {path}")
        return 0
    if args.command == "execute":
        if not args.paths:
            parser.error("execute needs at least one notebook")
        for nb in args.paths:
            print(f"{nb}: executed in {execute(nb):.1f} s")
        return 0
    if args.command == "editions":
        from .editions import write_editions

        if args.paths:
            parser.error("editions takes no PATH: it writes full/ and student/ under --root")
        written = write_editions(args.root)
        print(f"wrote {len(written)} edition notebooks under full/ and student/")
        return 0
    if args.command == "student":
        from .editions import write_student_notebooks

        if len(args.paths) != 1:
            parser.error("student needs one output folder, e.g. `python -m rnnlab.book student student/`")
        written = write_student_notebooks(args.paths[0], args.root)
        print(f"wrote {len(written)} student notebooks under {args.paths[0]}")
        return 0
    if args.command == "lint":
        from .lint import conforming, lint, report

        try:
            results = lint(args.root, args.paths or None)
        except ValueError as exc:
            parser.error(str(exc))
        text, failed = report(results, conforming(args.root))
        print(text)
        if args.paths:      # notebooks named on the command line: each must pass
            failed = any(problems for problems, _ in results.values())
        return 1 if failed else 0
    if args.command == "words":
        from .lint import LESSON_WORDS, is_lesson, page_words

        paths = args.paths or notebooks(args.root)
        import pathlib
        files = [q for p in paths for q in (sorted(pathlib.Path(p).glob("*.ipynb")) if pathlib.Path(p).is_dir() else [p])]
        for nb in files:
            n = page_words(nb)
            over = "  (a lesson's main line: at most about %d)" % LESSON_WORDS if n["main"] > LESSON_WORDS and is_lesson(nb) else ""
            print(f"{nb}: main line {n['main']} words, folded {n['folded']}{over}")
        return 0
    from .editions import stale_editions

    from .myst import MystError

    problems = check(args.root)
    try:
        problems += stale_editions(args.root)
    except MystError as exc:
        problems.append(f"the editions cannot be generated: {exc}")
    for p in problems:
        print(p)
    print(f"{len(notebooks(args.root))} notebooks checked, {len(problems)} problems")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())

"""The ``perfmodel`` command: instructor tools for the course's workbooks and lectures.

``perfmodel release`` regenerates the student copies and the Gradescope autograder zips;
``perfmodel student OUT`` writes the student edition a class clones (no answer key);
``perfmodel grade`` grades a folder of submissions locally; ``perfmodel key`` makes the
answer key a workbook test checks against. For lecturers, ``perfmodel demo 04`` presents a
lecture as live slides, ``perfmodel book`` builds the offline site, and ``perfmodel slides``
(re)sets a lecture's slide metadata after an edit.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path

__all__ = ["main"]


def _positive(kind: type[float] | type[int]) -> Callable[[str], float | int]:
    def parse(text: str) -> float | int:
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"must be a {kind.__name__} (got {text!r})") from None
        if value <= 0:
            raise argparse.ArgumentTypeError(f"must be positive (got {text})")
        return value

    return parse


def _parser() -> argparse.ArgumentParser:
    from perfmodel import __version__

    parser = argparse.ArgumentParser(
        prog="perfmodel", description="Instructor tools for the perfmodel course workbooks."
    )
    parser.add_argument("--version", action="version", version=f"perfmodel {__version__}")
    commands = parser.add_subparsers(dest="command", required=True)

    release = commands.add_parser(
        "release", help="regenerate student copies and write autograder zips into dist/"
    )
    release.add_argument("--exercises", type=Path, default=Path("exercises"))
    release.add_argument("--dist", type=Path, default=Path("dist"))

    student = commands.add_parser(
        "student", help="write the student edition: lectures and workbooks, no answer key"
    )
    student.add_argument("out", type=Path, help="a new (or empty) folder to write")
    student.add_argument("--root", type=Path, default=Path(), help="the course's root folder")

    grade = commands.add_parser("grade", help="grade a folder of submitted notebooks")
    grade.add_argument(
        "workbook",
        help="workbook name (00_warmup), its master notebook, or its autograder zip",
    )
    grade.add_argument("submissions", type=Path, help="folder with one notebook per student")
    grade.add_argument("--out", type=Path, default=Path("grades.csv"), help="CSV to write")
    grade.add_argument(
        "--feedback",
        type=Path,
        default=None,
        help="folder for one JSON feedback file per student (default: <out>_feedback)",
    )
    grade.add_argument("--exercises", type=Path, default=Path("exercises"))
    grade.add_argument(
        "--timeout",
        type=_positive(float),
        default=120.0,
        help="wall-clock seconds per submission (default 120)",
    )
    grade.add_argument(
        "--cell-timeout",
        type=_positive(float),
        default=30.0,
        help="seconds one cell may run before it is interrupted (default 30)",
    )
    grade.add_argument(
        "--memory-gib",
        type=_positive(float),
        default=4.0,
        help="memory all of a submission's processes may hold together, GiB (default 4)",
    )
    grade.add_argument(
        "--disk-mib",
        type=_positive(float),
        default=1024.0,
        help="bytes a submission may write, all files together, MiB (default 1024)",
    )
    grade.add_argument("--jobs", type=_positive(int), default=1, help="submissions at once")
    grade.add_argument("--no-progress", action="store_true", help="hide the progress bar")
    grade.add_argument(
        "--no-isolation",
        action="store_true",
        help="UNSAFE: run every submission as your own user, with no sandbox, able to read "
        "the answer keys, the other submissions and your files; the CSV records "
        "`isolation: none` (without it, grading refuses to start where neither bubblewrap "
        "nor an unprivileged user can run the submissions)",
    )

    key = commands.add_parser("key", help="print the answer key of a workbook test")
    key.add_argument("kind", choices=["number", "count", "choice"])
    key.add_argument("expected", help="the right answer: a number, a whole number or a word")
    key.add_argument(
        "--salt", required=True, help="WORKBOOK/QUESTION/VARIABLE, e.g. 00_warmup/q1/x"
    )
    key.add_argument("--rel-tol", type=_positive(float), default=0.01, help="numbers only")

    slips = commands.add_parser("slips", help="print the slips each question of a workbook names")
    slips.add_argument("workbook", help="a workbook's name (09_go_multi_node) or master")
    slips.add_argument("--exercises", type=Path, default=Path("exercises"))

    demo = commands.add_parser("demo", help="present a lecture as live slides (Voilà)")
    demo.add_argument("lecture", help="lecture number (04) or notebook")
    demo.add_argument("--notebooks", type=Path, default=Path("notebooks"))
    demo.add_argument("--folder", type=Path, default=Path("build/demo"), help="deck folder")
    demo.add_argument("--port", type=_positive(int), default=8866)
    demo.add_argument("--no-browser", action="store_true", help="print the URL only")
    demo.add_argument(
        "--rerun",
        action="store_true",
        help="run every cell live (this machine's measurements), not only the explorers",
    )

    book = commands.add_parser("book", help="build the static, offline HTML book")
    book.add_argument("--notebooks", type=Path, default=Path("notebooks"))
    book.add_argument("--out", type=Path, default=Path("build/book"))
    book.add_argument("--pdf", action="store_true", help="also print it to PDF with Chromium")

    slides = commands.add_parser("slides", help="set the slide metadata of lecture notebooks")
    slides.add_argument("notebooks", type=Path, nargs="+")
    return parser


def _demo(args: argparse.Namespace) -> int:
    from perfmodel.present.demo import find_lecture, presenter_copy, serve

    deck = presenter_copy(find_lecture(args.lecture, args.notebooks), args.folder, rerun=args.rerun)
    print(f"slides: http://localhost:{args.port}/ (Ctrl-C stops the server)")
    return serve(deck, port=args.port, open_browser=not args.no_browser)


def _book(args: argparse.Namespace) -> int:
    from perfmodel.present.book import build_book, print_pdf

    index = build_book(args.notebooks, args.out)
    print(f"wrote {index}")
    if args.pdf:
        print(f"wrote {print_pdf(args.out)}")
    return 0


def _slides(args: argparse.Namespace) -> int:
    import nbformat

    from perfmodel.present.slides import annotate, overflowing, split_at_headings

    for path in args.notebooks:
        notebook = nbformat.read(path, as_version=4)  # type: ignore[no-untyped-call]
        split_at_headings(notebook)
        annotate(notebook)
        notebook = nbformat.from_dict(notebook)  # type: ignore[no-untyped-call]
        nbformat.write(notebook, path)  # type: ignore[no-untyped-call]
        tall = overflowing(notebook)
        print(f"{path}: {'fits' if not tall else f'{len(tall)} slides overflow'}")
        for slide in tall:
            print(f"  cell {slide.first_cell} ({slide.title[:50]}): {slide.height_px:.0f} px")
    return 0


def _student(args: argparse.Namespace) -> int:
    from perfmodel.grading import write_student_edition

    written = write_student_edition(args.out, args.root)
    print(
        f"wrote the student edition, {len(written)} files, to {args.out}: no masters, hidden "
        f"tests or autograder zips. Publish it as the class repository (git init there), and "
        f"keep this one private."
    )
    return 0


def _key(args: argparse.Namespace) -> int:
    from perfmodel import exercises

    if args.kind == "choice":
        print(exercises.choice_key(args.expected, salt=args.salt))
    elif args.kind == "count":
        try:
            whole = int(args.expected)
        except ValueError:
            raise ValueError(f"a count must be a whole number (got {args.expected!r})") from None
        print(exercises.count_key(whole, salt=args.salt))
    else:
        try:
            value = float(args.expected)
        except ValueError:
            raise ValueError(f"a number key needs a number (got {args.expected!r})") from None
        print(exercises.number_key(value, rel_tol=args.rel_tol, salt=args.salt))
    return 0


def _tests_for(workbook: str, exercises: Path) -> tuple[str, dict[str, str]]:
    name, tests, _ = _tests_and_source(workbook, exercises)
    return name, tests


def _tests_and_source(workbook: str, exercises: Path) -> tuple[str, dict[str, str], Path]:
    """The workbook's name, its tests (hidden cases included), and the file they came from."""
    from perfmodel.grading import workbooks

    path = Path(workbook)
    if path.suffix == ".zip":
        if not path.is_file():
            raise ValueError(f"`workbook` zip {workbook!r} does not exist.")
        return workbooks.assignment_name(path), workbooks.load_tests(path), path
    found = workbooks.find_workbook(workbook, exercises)
    return found.name, workbooks.assign(found).tests, found.master


def _refuse_readable_keys(
    source: Path, level: str, submissions: Path | None = None, exercises: Path | None = None
) -> None:
    """At the unprivileged level, a submission runs as another user: it must not be able to
    read an answer key (the master or zip, any master beside it, the masters of ``exercises``
    and of the checkout the package is imported from, those checkouts' git history, ``dist/``
    and autograder zips) or another submission."""
    from perfmodel.grading import isolation, private

    if level != "unprivileged":
        return
    checkouts = [Path(isolation.package_parent()).parent]
    checkouts += [exercises.resolve().parent] if exercises is not None else []
    found = private.exposed_checkout(checkouts)
    if found is not None:
        readable, close = found
        kind = {".git": "git history (every master)", "dist": "release folder (hidden tests)"}
        raise ValueError(
            f"grading without bubblewrap runs each submission as another user, who could read "
            f"the course's {kind.get(close.name, 'autograder zip (hidden tests)')} through "
            f"{readable}: make it unreadable to other users (chmod -R o-rwx {close}), or "
            f"install bubblewrap."
        )
    folders = {Path(isolation.package_parent()).parent / "exercises" / "masters"}
    folders |= {exercises / "masters"} if exercises is not None else set()
    keys = [source, source.parent]
    for folder in sorted(path.resolve() for path in folders if path.is_dir()):
        keys += [folder, *sorted(folder.glob("*.ipynb"))]
    exposed = next((path for path in keys if isolation.readable_by_others(path)), None)
    shared = sorted(submissions.iterdir()) if submissions and submissions.is_dir() else []
    shared = [path for path in shared if path.is_file() and not path.is_symlink()]
    copied = next((path for path in shared if isolation.readable_by_others(path)), None)
    if exposed is not None:
        what, folder = f"the answer key {exposed}", exposed if exposed.is_dir() else exposed.parent
    elif copied is not None:
        what, folder = f"a classmate's submission {copied}", copied.parent
    else:
        return
    raise ValueError(
        f"grading without bubblewrap runs each submission as another user, who could read "
        f"{what}: make it unreadable to other users (chmod -R o-rwx {folder}), or install "
        f"bubblewrap."
    )


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``perfmodel`` command; returns the process exit status.

    Parameters
    ----------
    argv : sequence of str or None
        The command's arguments without the program name, e.g. ``["key", "count", "3",
        "--salt", "00_warmup/q1/x"]``; None reads ``sys.argv[1:]``. Arguments argparse
        rejects raise SystemExit (status 2) after printing the usage.

    Returns
    -------
    int
        The exit status: 0 on success; 2 when the command fails with a ValueError,
        TypeError, RuntimeError or OSError (the message goes to stderr); 130 when
        ``perfmodel grade`` is interrupted. ``perfmodel demo`` does not return: Voilà
        replaces the process.
    """
    if argv is None:
        argv = _neutral_argv(sys.argv[1:])
    args = _parser().parse_args(argv)
    try:
        if args.command == "release":
            from perfmodel.grading.workbooks import release

            for path in release(args.exercises, args.dist):
                print(f"wrote {path}")
            return 0
        if args.command == "key":
            return _key(args)
        if args.command == "slips":
            from perfmodel.grading import find_workbook, slip_table

            print(slip_table(find_workbook(args.workbook, args.exercises).master), end="")
            return 0
        if args.command == "student":
            return _student(args)
        if args.command in ("demo", "book", "slides"):
            return {"demo": _demo, "book": _book, "slides": _slides}[args.command](args)
        return _grade(args)
    except (ValueError, TypeError, RuntimeError, OSError) as error:
        print(f"perfmodel {args.command}: error: {error}", file=sys.stderr)
        return 2


def _interrupt(signum: int, frame: object) -> None:
    """Turn SIGTERM into the same orderly stop as Ctrl-C."""
    raise KeyboardInterrupt


#: The flag a re-executed ``perfmodel grade`` reads its arguments through.
_ARGV_FD = "--argv-from-fd"


def _neutral_argv(argv: list[str]) -> list[str]:
    """``perfmodel grade`` as root on Linux re-executes itself with a command line that names
    no path: every other user can read ``/proc/PID/cmdline`` (the unprivileged level's
    sandbox uid too), while the arguments travel in an unlinked file only root can read,
    inherited by descriptor. Any other command's ``argv`` comes back as it is."""
    if len(argv) == 2 and argv[0] == _ARGV_FD:
        with os.fdopen(int(argv[1]), "rb") as inherited:
            return [str(item) for item in json.loads(inherited.read())]
    if not argv or argv[0] != "grade" or os.geteuid() != 0 or sys.platform != "linux":
        return argv
    if {"-h", "--help"} & set(argv):
        return argv
    handle = tempfile.TemporaryFile()  # noqa: SIM115 - the exec'd process reads and closes it
    handle.write(json.dumps(argv).encode())
    handle.seek(0)
    os.set_inheritable(handle.fileno(), True)
    sys.stdout.flush()
    sys.stderr.flush()
    os.execv(
        sys.executable, [sys.executable, "-m", "perfmodel.cli", _ARGV_FD, str(handle.fileno())]
    )
    raise AssertionError("unreachable")  # pragma: no cover - execv does not return


def _grade(args: argparse.Namespace) -> int:
    from perfmodel.grading import levels
    from perfmodel.grading.grade import PartialSheet, grade_folder, write_csv, write_feedback
    from perfmodel.grading.sandbox import Limits

    name, tests, source = _tests_and_source(args.workbook, args.exercises)
    # Before any submission: the level, never none unless asked (a RuntimeError says why).
    level = levels.choose("none" if args.no_isolation else None)
    _refuse_readable_keys(source.resolve(), level, args.submissions, args.exercises)
    if args.timeout < args.cell_timeout:
        args.cell_timeout = args.timeout
    limits = Limits(
        wall_s=args.timeout,
        cell_s=args.cell_timeout,
        memory_bytes=int(args.memory_gib * 1024**3),
        disk_bytes=int(args.disk_mib * 1024**2),
    )
    feedback = args.feedback or args.out.with_name(f"{args.out.stem}_feedback")
    sheet = PartialSheet(args.out, list(tests))
    signal.signal(signal.SIGTERM, _interrupt)
    try:
        grades = grade_folder(
            tests,
            args.submissions,
            assignment=name,
            limits=limits,
            jobs=args.jobs,
            progress=not args.no_progress,
            on_result=sheet.add,
            isolation_level=level,
        )
    except KeyboardInterrupt:
        print(
            f"perfmodel grade: interrupted; the rows graded so far are in {sheet.path}",
            file=sys.stderr,
        )
        return 130
    write_csv(grades, args.out)
    write_feedback(grades, feedback)
    sheet.finish()
    failed = sum(grade.status != "graded" for grade in grades)
    print(
        f"graded {len(grades)} submissions of {name}: {len(grades) - failed} scored, "
        f"{failed} failed; wrote {args.out} and {feedback}/"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

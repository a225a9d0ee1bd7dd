"""Text that prints as it is: file names, reasons and feedback from a hostile batch.

A grade sheet is read by a person, so what a submission controls (its file name, the
messages its exceptions carry) must never print like something else:

* :func:`safe_text` bounds any value's text and writes out what would not print as itself:
  control characters become spaces; format marks (bidi overrides, zero widths), line and
  paragraph separators and default-ignorable code points become ``\\uNNNN`` escapes;
* :func:`display_name` prints a file name one to one: bytes that are not UTF-8, invisible
  or blank characters, default-ignorable code points, combining marks with no letter of their
  own script (or a generic diacritic) to sit on, and every non-ASCII character of a name that
  mixes scripts (``bօb``, Latin and Armenian) are escaped;
* :func:`display_names` does so for a whole batch, and where two names would still look
  alike (the same letters from another script, a precomposed letter against its decomposed
  form, full-width forms) it writes every non-ASCII character of both as an escape;
* :func:`sheet_cell` keeps a spreadsheet from reading a cell as a formula.

The default-ignorable set is Unicode's ``Default_Ignorable_Code_Point`` (DerivedCoreProperties,
Unicode 15.1); the look-alike letters are the Cyrillic and Greek capitals and small letters
that Unicode's confusables list (UTS #39, ``confusables.txt``) maps to a Latin letter.
"""

from __future__ import annotations

import os
import unicodedata
from collections.abc import Iterable
from pathlib import Path

from perfmodel import _validate

__all__ = ["MAX_TEXT", "display_name", "display_names", "safe_text", "sheet_cell"]

#: The longest text a row's reason or a feedback message keeps, characters.
MAX_TEXT = 2000

#: First characters that make a spreadsheet read a cell as a formula.
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")

#: Unicode's Default_Ignorable_Code_Point ranges, inclusive.
_IGNORABLE = (
    (0x00AD, 0x00AD), (0x034F, 0x034F), (0x061C, 0x061C), (0x115F, 0x1160),
    (0x17B4, 0x17B5), (0x180B, 0x180F), (0x200B, 0x200F), (0x202A, 0x202E),
    (0x2060, 0x206F), (0x3164, 0x3164), (0xFE00, 0xFE0F), (0xFEFF, 0xFEFF),
    (0xFFA0, 0xFFA0), (0xFFF0, 0xFFF8), (0x1BCA0, 0x1BCA3), (0x1D173, 0x1D17A),
    (0xE0000, 0xE0FFF),
)  # fmt: skip

#: Letters that print as nothing but are not default-ignorable (the Braille blank).
_BLANK_LETTERS = frozenset("\u2800")

#: Cyrillic and Greek letters UTS #39 confuses with a Latin one, and that Latin letter.
_LOOKALIKE = str.maketrans(
    "аеорсухіјѕԁԛԝһӏАВЕКМНОРСТХУІЈЅԚԜονρΑΒΕΖΗΙΚΜΝΟΡΤΥΧ",
    "aeopcyxijsdqwhlABEKMHOPCTXYIJSQWovpABEZHIKMNOPTYX",
)


def _ignorable(code: int) -> bool:
    return any(low <= code <= high for low, high in _IGNORABLE)


def _invisible(char: str) -> bool:
    """Controls, format marks, separators other than the space, private and unassigned."""
    category = unicodedata.category(char)
    return (
        category in ("Cc", "Cf", "Cs", "Zl", "Zp", "Co", "Cn")
        or (category == "Zs" and char != " ")
        or char in _BLANK_LETTERS
        or _ignorable(ord(char))
    )


#: Marks a base letter may carry and still print plainly; more in a row are written out.
_MAX_MARKS = 2


def _script(char: str) -> str:
    """A letter's or mark's script, as the first word of its Unicode name (``LATIN``,
    ``CYRILLIC``, ``DEVANAGARI``...); ``COMBINING`` for the generic diacritics; ``""`` for
    anything else (digits, punctuation, symbols, unnamed)."""
    if not unicodedata.category(char).startswith(("L", "M")):
        return ""
    return unicodedata.name(char, "").split(" ", 1)[0]


def _rare_latin(char: str) -> bool:
    """A Latin letter from past Latin Extended-B other than Vietnamese's (small capitals,
    IPA and phonetic letters: ``ᴏ`` prints as ``o``); no name needs one."""
    code = ord(char)
    return code > 0x024F and not 0x1E00 <= code <= 0x1EFF and _script(char) == "LATIN"


def _shown_mark(mark: str, base: str, run: int) -> bool:
    """Whether a combining mark prints plainly after ``base``: a generic diacritic or one of
    the base's own script, and no more than :data:`_MAX_MARKS` in a row (else a mark that
    prints as nothing, such as U+16FE4, or a stack of them, could hide in a name)."""
    script = _script(mark)
    return run < _MAX_MARKS and bool(base) and script in ("COMBINING", _script(base))


def _escape(code: int) -> str:
    if code < 0x100:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


def safe_text(value: object, limit: int = MAX_TEXT) -> str:
    """Any object as printable text of at most ``limit`` characters, whatever it holds.

    Lone surrogates and other characters UTF-8 cannot encode become backslash escapes,
    control characters become spaces, format marks (bidi controls, zero widths), line and
    paragraph separators, default-ignorable code points and combining marks past the second
    in a row become ``\\uNNNN`` escapes, and ``str()`` itself failing is survived.

    Parameters
    ----------
    value : object
        Anything; a string is used as it is, anything else through ``str()``.
    limit : int
        The most characters returned, count; a positive integer. Text cut short ends in
        ``"..."``, except below a limit of 3, where it is cut with no room for the dots.

    Returns
    -------
    str
        The printable text.

    Examples
    --------
    >>> safe_text("bad \\udcff byte\\nnext line")
    'bad \\\\udcff byte next line'
    >>> safe_text("total \\u202e01\\u2028x")
    'total \\\\u202e01\\\\u2028x'
    >>> len(safe_text("x" * 10_000))
    2000
    >>> safe_text("abcdef", 5), safe_text("abcdef", 2)
    ('ab...', 'ab')
    """
    limit = _validate.count("limit", limit)
    try:
        text = value if isinstance(value, str) else str(value)
    except Exception:  # noqa: BLE001 - a hostile __str__ must not sink the batch
        text = f"<unprintable {type(value).__name__}>"
    text = text[: limit * 2].encode("utf-8", "backslashreplace").decode("utf-8")
    out, marks = [], 0
    for char in text:
        code = ord(char)
        marks = marks + 1 if unicodedata.category(char).startswith("M") else 0
        if code < 32 or 0x7F <= code < 0xA0:
            out.append(" ")
        elif code > 0xA0 and (_invisible(char) or marks > _MAX_MARKS):
            out.append(_escape(code))  # a stack of marks would smear over the lines around
        else:
            out.append(char)
    text = "".join(out)
    if len(text) <= limit:
        return text
    return text[:limit] if limit < 3 else text[: limit - 3] + "..."


def sheet_cell(text: str) -> str:
    """A text cell a spreadsheet shows as text: formula-like cells get a leading quote.

    Parameters
    ----------
    text : str
        The cell's text.

    Returns
    -------
    str
        ``text``, with a leading ``'`` when it starts with ``=``, ``+``, ``-``, ``@``, a tab
        or a carriage return.

    Examples
    --------
    >>> sheet_cell("=HYPERLINK(1)"), sheet_cell("ok")
    ("'=HYPERLINK(1)", 'ok')
    """
    return "'" + text if text.startswith(_FORMULA_START) else text


def display_name(path: Path, *, ascii_only: bool = False) -> str:
    """A file name as printable text, one to one, so two names never print alike.

    A byte that is not UTF-8 becomes ``\\xNN``, a backslash ``\\\\``; a control character, a
    format mark, a private-use or unassigned code point, a separator other than the space, a
    default-ignorable code point, a combining mark with no visible letter before it, or a
    leading ``'`` becomes its ``\\xNN``, ``\\uNNNN`` or ``\\UNNNNNNNN`` escape.

    Parameters
    ----------
    path : Path
        The file; only its last component is shown.
    ascii_only : bool, optional
        Escape every character outside ASCII too (what :func:`display_names` does to names
        that would look alike).

    Returns
    -------
    str
        The name, escaped.

    Examples
    --------
    >>> display_name(Path(os.fsdecode(b"caf\\xe9.ipynb")))
    'caf\\\\xe9.ipynb'
    >>> display_name(Path("caf\\\\xe9.ipynb"))
    'caf\\\\\\\\xe9.ipynb'
    >>> display_name(Path("bob\\u034f.ipynb")), display_name(Path("\\u0301bob.ipynb"))
    ('bob\\\\u034f.ipynb', '\\\\u0301bob.ipynb')
    """
    text = os.fsdecode(os.fsencode(path.name))
    ascii_only = ascii_only or _mixed_scripts(text)
    out: list[str] = []
    base, run = "", 0  # the letter marks may sit on ("" when none), and marks on it so far
    for char in text:
        code = ord(char)
        mark = unicodedata.category(char) in ("Mn", "Mc", "Me")
        if 0xDC80 <= code <= 0xDCFF:  # a byte that is not UTF-8 (surrogateescape)
            out.append(f"\\x{code - 0xDC00:02x}")
            base, run = "", 0
        elif char == "\\":
            out.append("\\\\")
            base, run = "", 0
        elif (
            _invisible(char)
            or (mark and not _shown_mark(char, base, run))
            or (char == "'" and not out)
            or (ascii_only and code > 0x7E)
            or _rare_latin(char)
        ):
            # Invisible or misleading in a sheet, or a mark with nothing of its own script to
            # sit on (it would print on whatever came before, or as nothing); a leading quote
            # would read as the sheet's own.
            out.append(_escape(code))
            base, run = ("", 0) if not mark else (base, _MAX_MARKS)
        elif mark:
            out.append(char)
            run += 1
        else:
            out.append(char)
            base, run = (char if char != " " else ""), 0
    return "".join(out)


#: Scripts that one word may mix as a matter of course (Japanese, Korean).
_MIXABLE = ({"CJK", "HIRAGANA", "KATAKANA"}, {"CJK", "HANGUL"})


def _mixed_scripts(name: str) -> bool:
    """Whether one word of a name mixes letters of two scripts (``bօb``: Latin and Armenian),
    the usual shape of a look-alike; words in one script each, any script, do not."""
    word: set[str] = set()
    for char in name + " ":
        if unicodedata.category(char)[0] == "L":
            word.add(_script(char))
        elif not unicodedata.category(char).startswith("M"):
            if len(word) > 1 and not any(word <= allowed for allowed in _MIXABLE):
                return True
            word = set()
    return False


def _skeleton(name: str) -> str:
    """What a name looks like: compatibility forms folded, look-alike letters mapped to
    Latin, invisible characters dropped, composed again (UTS #39's skeleton, in small)."""
    text = unicodedata.normalize("NFKD", name).translate(_LOOKALIKE)
    text = "".join(char for char in text if not _invisible(char))
    return unicodedata.normalize("NFC", text)


def display_names(paths: Iterable[Path]) -> dict[Path, str]:
    """Every path's :func:`display_name`, with names that would look alike written apart.

    Two different names whose skeletons match (the same letters from another script, a
    precomposed letter and its decomposed form, full-width letters, invisible characters
    between them) are both shown with every non-ASCII character escaped.

    Parameters
    ----------
    paths : iterable of Path
        The batch's files.

    Returns
    -------
    dict
        Each path to the name its row prints.

    Examples
    --------
    >>> names = display_names([Path("alice.ipynb"), Path("\\u0430lice.ipynb"), Path("bob.ipynb")])
    >>> list(names.values())
    ['alice.ipynb', '\\\\u0430lice.ipynb', 'bob.ipynb']
    """
    names = {path: os.fsdecode(os.fsencode(path.name)) for path in paths}
    skeletons = {path: _skeleton(name) for path, name in names.items()}
    groups: dict[str, set[str]] = {}
    for path, name in names.items():
        groups.setdefault(skeletons[path], set()).add(name)
    return {path: display_name(path, ascii_only=len(groups[skeletons[path]]) > 1) for path in names}

"""blocks: rewrites the generated blocks of a markdown file.

A generated block is the text between a line "<!-- NAME:begin -->" and a line
"<!-- NAME:end -->". The scripts under tools/bench_report own what is between the markers and
replace it on every run; everything outside them is prose written by hand and left alone.
"""

import re


class BlockError(Exception):
    """A file lacks a block's markers, or has them more than once or out of order."""


def markers(name):
    return f"<!-- {name}:begin -->", f"<!-- {name}:end -->"


def replace_block(text, name, lines):
    """Returns `text` with the block `name` holding `lines` (a list of strings)."""
    begin, end = markers(name)
    if text.count(begin) != 1 or text.count(end) != 1:
        raise BlockError(f"markers {begin} ... {end} must each occur exactly once "
                         f"(found {text.count(begin)} and {text.count(end)})")
    head, rest = text.split(begin, 1)
    if end not in rest:
        raise BlockError(f"{end} comes before {begin}")
    _, tail = rest.split(end, 1)
    body = "\n".join(lines)
    return head + begin + "\n" + body + ("\n" if body else "") + end + tail


def block_names(text):
    """The names of the blocks in `text`, in order of appearance."""
    return re.findall(r"<!-- (\S+?):begin -->", text)


def rewrite_file(path, blocks):
    """Replaces, in the file at `path`, each block named in the dict `blocks` (name -> lines).
    Returns the names whose text changed."""
    with open(path) as f:
        text = f.read()
    changed = []
    for name, lines in blocks.items():
        try:
            new = replace_block(text, name, lines)
        except BlockError as e:
            raise BlockError(f"{path}: {e}") from None
        if new != text:
            changed.append(name)
        text = new
    with open(path, "w") as f:
        f.write(text)
    return changed

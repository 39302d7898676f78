#!/usr/bin/env python3
"""check_model_refs: fails when a model step's `code:` reference no longer matches the code.

A step of a Promela or TLA+ model that mirrors a line of the C++ code carries a one-line
comment (see tla/README.md, "Models follow the code"):

    /* code: sched/task.h Wakeup: state_.fetch_or(kWoken, std::memory_order_acq_rel) */
    \\* code: sched/task.h Wakeup: state_.fetch_or(kWoken, std::memory_order_acq_rel)

that is `code: <repo-relative path> <FunctionName>: <text of one line of that file>`. This
checker reports a reference whose path does not exist under the root, whose function name
(its last `::` component, as a whole word) does not occur in that file, or whose text is
not part of one line of the file. Both sides are compared with whitespace runs collapsed to
one space and the ends stripped; the comment's closing `*/` or `*)` is not part of the text.
A comment that starts with `code:` but does not have that shape is reported as malformed,
and a text shorter than MIN_TEXT characters as too short to identify a line.

Usage: check_model_refs.py [--root DIR] MODEL_FILE...
Prints one line per problem ("<model>:<line>: <problem>") and exits 1 if there is any,
else prints how many references it checked and exits 0.
"""

import argparse
import os
import re
import sys

# A reference comment: opened by /* (Promela), \* or (* (TLA+), then `code:`.
REF_START = re.compile(r"(?:/\*|\\\*|\(\*)\s*code:")
REF = re.compile(
    r"(?:/\*|\\\*|\(\*)\s*code:\s+(?P<path>\S+)\s+(?P<func>[A-Za-z_~][\w:~]*):\s+(?P<text>.*)$")
MIN_TEXT = 8


def collapse(text):
    return " ".join(text.split())


def reference_text(raw):
    """The referenced text: the rest of the line without the comment's closing and spaces."""
    text = raw.rstrip()
    for closing in ("*/", "*)"):
        if text.endswith(closing):
            text = text[: -len(closing)]
            break
    return collapse(text)


class CodeFiles:
    """Reads each referenced file once, as collapsed lines plus its whole text."""

    def __init__(self, root):
        self.root = root
        self.cache = {}

    def get(self, path):
        if path not in self.cache:
            full = os.path.join(self.root, path)
            if not os.path.isfile(full):
                self.cache[path] = None
            else:
                with open(full, encoding="utf-8") as f:
                    content = f.read()
                self.cache[path] = (content, [collapse(line) for line in content.splitlines()])
        return self.cache[path]


def check_file(model, label, code):
    """Problems in one model file (`label` names it in messages); also the reference count."""
    problems = []
    count = 0
    with open(model, encoding="utf-8") as f:
        lines = f.read().splitlines()
    for number, line in enumerate(lines, start=1):
        if not REF_START.search(line):
            continue
        where = "%s:%d" % (label, number)
        match = REF.search(line)
        if match is None:
            problems.append("%s: malformed code reference (want 'code: <path> <Function>: "
                            "<text of a line>'): %s" % (where, line.strip()))
            continue
        count += 1
        path, func = match.group("path"), match.group("func")
        text = reference_text(match.group("text"))
        if len(text) < MIN_TEXT:
            problems.append("%s: code reference text '%s' is too short to identify a line "
                            "(at least %d characters)" % (where, text, MIN_TEXT))
            continue
        found = code.get(path)
        if found is None:
            problems.append("%s: %s does not exist" % (where, path))
            continue
        content, code_lines = found
        name = func.split("::")[-1]
        if not re.search(r"(?<![\w~])%s(?!\w)" % re.escape(name), content):
            problems.append("%s: function %s does not occur in %s" % (where, func, path))
        if not any(text in code_line for code_line in code_lines):
            problems.append("%s: no line of %s contains '%s' (%s)" % (where, path, text, func))
    return problems, count


def check(models, root, labels=None):
    """Checks every model; returns (problems, number of references checked)."""
    code = CodeFiles(root)
    problems = []
    total = 0
    for i, model in enumerate(models):
        label = labels[i] if labels else model
        found, count = check_file(model, label, code)
        problems.extend(found)
        total += count
    return problems, total


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--root", default=".", help="the repository root the paths are relative to")
    parser.add_argument("models", nargs="+", help="model files (*.pml, *.tla)")
    args = parser.parse_args(argv)
    problems, total = check(args.models, args.root)
    for problem in problems:
        print(problem)
    if problems:
        print("check_model_refs: %d problem(s) in %d reference(s)" % (len(problems), total))
        return 1
    print("check_model_refs: %d reference(s) in %d file(s) match the code" %
          (total, len(args.models)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

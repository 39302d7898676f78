#!/usr/bin/env python3
"""Fails when a C++ source awaits inside the condition of an if, while or switch.

gcc 12.2 (Debian 12's compiler, the one fairsched supports) miscompiles a coroutine whose
suspension point sits directly in such a condition, e.g. `if (co_await x != y)`: when the
awaiter really suspends, the frame is left marked as finished and the resume jumps to
address 0 (GCC bug 106188; reproduced with a 10-line program and no fairsched code; the
spawned-coroutine runtime reports it as "suspended on an awaitable that is not part of
coro/"). Awaiting into
a named variable first (`const auto r = co_await x; if (r != y)`) or in an if-init statement
(`if (const auto r = co_await x; r != y)`) compiles correctly. This check keeps every
such condition out of the repository's own code and documentation examples, and users run
it over theirs.

Usage: co_await_in_condition.py [ROOT...]   (files or folders; default: the current folder)
       bazel run @fairsched//tools/lint:co_await_in_condition -- [ROOT...]
Under `bazel run` relative paths are taken from the workspace the command was run in.
Scans .h, .cc and .md files. Exit status 1 and one line per finding when any is found.
"""
import os
import re
import sys

SOURCE_SUFFIXES = (".h", ".cc", ".md")
KEYWORD = re.compile(r"\b(if|while|switch)\s*\(")


def condition_at(text, open_paren):
    """The text between the parenthesis at `open_paren` and its match (or to the end)."""
    depth = 0
    for i in range(open_paren, len(text)):
        if text[i] == "(":
            depth += 1
        elif text[i] == ")":
            depth -= 1
            if depth == 0:
                return text[open_paren + 1:i]
    return text[open_paren + 1:]


def findings(path, text):
    for match in KEYWORD.finditer(text):
        condition = condition_at(text, match.end() - 1)
        # An if-init statement (`if (init; condition)`) may await in its init part.
        if match.group(1) == "if" and ";" in condition:
            condition = condition.split(";", 1)[1]
        if re.search(r"\bco_await\b", condition):
            line = text.count("\n", 0, match.start()) + 1
            yield f"{path}:{line}: co_await inside the condition of `{match.group(1)}`"


def scan(roots):
    found = []
    for root in roots:
        if os.path.isfile(root):
            with open(root, encoding="utf-8", errors="replace") as source:
                found.extend(findings(root, source.read()))
            continue
        for directory, subdirectories, files in os.walk(root):
            subdirectories[:] = [d for d in subdirectories
                                 if not d.startswith(("bazel-", ".")) and d != "testdata"]
            for name in sorted(files):
                if name.endswith(SOURCE_SUFFIXES):
                    path = os.path.join(directory, name)
                    with open(path, encoding="utf-8", errors="replace") as source:
                        found.extend(findings(path, source.read()))
    return found


def main(argv):
    # `bazel run` starts the script in its runfiles; the paths given are the user's.
    if "BUILD_WORKSPACE_DIRECTORY" in os.environ:
        os.chdir(os.environ["BUILD_WORKSPACE_DIRECTORY"])
    found = scan(argv[1:] or ["."])
    for line in found:
        print(line)
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

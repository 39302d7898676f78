"""Seeded-bug explore tests of one header-only shipped file (tests/explore/BUILD)."""

load("@rules_cc//cc:defs.bzl", "cc_test")

def seeded_copy(bug, shipped):
    """The genrule `seeded_<bug>`: tests/explore/seeded/<bug>/<file>, a copy of `shipped`
    with seed_bug.py's `bug` (the build fails if the shipped text it replaces is gone)."""
    native.genrule(
        name = "seeded_" + bug,
        srcs = [shipped],
        outs = ["seeded/%s/%s" % (bug, shipped.split(":")[1].split("/")[-1])],
        cmd = "python3 $(location seed_bug.py) %s $< $@" % bug,
        tools = ["seed_bug.py"],
    )

def seeded_header_explore_test(name, bug, shipped, srcs, deps):
    """A scratch copy of `shipped` with seed_bug.py's `bug`, and the test that includes it.

    The genrule `seeded_<bug>` writes tests/explore/seeded/<bug>/<file> (seed_bug.py fails the
    build if the shipped text it replaces is gone); the test `name` lists it first in its
    sources and includes it before the scenario, whose include of the shipped header the
    copy's include guard then keeps out. `deps` must provide the shipped header (header-only)
    so that the scenario's include resolves. The test passes only if the explorer reports the
    bug with the expected message.
    """
    seeded_copy(bug, shipped)
    cc_test(
        name = name,
        size = "small",
        tags = ["seeded"],
        srcs = [":seeded_" + bug, "seeded_bug_util.h", "explore_test_util.h"] + srcs,
        local_defines = ["FAIRSCHED_EXPLORE"],
        deps = deps + [
            "//sync:primitives",
            "@com_google_googletest//:gtest_main",
        ],
    )

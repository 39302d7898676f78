"""fuzz_target: one fuzz target of tests/fuzz and the three rules made from it.

For a target "<name>" (its function registers itself under that name):
  - cc_library "<name>_fuzz": the target (alwayslink, so its registration links in);
    replay_test links them all;
  - cc_binary "<name>_fuzzer": the libFuzzer executable. The fuzz build only
    (`--config=fuzz`): tagged manual, so `//...` never builds it with gcc;
  - sh_test "<name>_fuzz_run": runs the fuzzer for a few seconds on a copy of
    corpus/<name> plus regressions/<name>, failing on any crash. Manual too, and tagged
    "fuzz": the CI fuzz phase runs them (`:fuzz_runs`).
"""

load("@rules_cc//cc:defs.bzl", "cc_binary", "cc_library")

def fuzz_target(name, srcs, deps, seconds = 8):
    cc_library(
        name = name + "_fuzz",
        testonly = True,
        srcs = srcs,
        deps = deps + [":fuzz_target", "//tests/io:scripted_stream"],
        alwayslink = True,
        target_compatible_with = ["@platforms//os:linux"],
    )
    cc_binary(
        name = name + "_fuzzer",
        testonly = True,
        srcs = ["libfuzzer_entry.cc"],
        linkopts = ["-fsanitize=fuzzer"],
        tags = ["manual"],
        deps = [":" + name + "_fuzz", ":fuzz_target"],
    )
    native.sh_test(
        name = name + "_fuzz_run",
        size = "small",
        srcs = ["fuzz_run_test.sh"],
        args = [
            "$(location :%s_fuzzer)" % name,
            "tests/fuzz/corpus/" + name,
            "tests/fuzz/regressions/" + name,
            str(seconds),
        ],
        data = [":" + name + "_fuzzer", ":" + name + "_inputs"],
        tags = ["manual", "fuzz"],
    )
    native.filegroup(
        name = name + "_inputs",
        srcs = native.glob(["corpus/%s/**" % name, "regressions/%s/**" % name]),
    )

"""tlc_check: SANY and one TLC run of a TLA+ specification as a Bazel test (see tlc_check.sh)."""

def tlc_check(name, spec, config, expect = ["pass"], size = "medium", manual = False):
    """Declares a sh_test that checks `spec` with TLC under `config`.

    The test passes without running anything (and says so in its log) when TLA2TOOLS_JAR is
    not set or names no file, unless FAIRSCHED_REQUIRE_TLC=1 (CI), when it fails.

    `spec` must be one of this package's .tla files (all of them are data of the test).

    Args:
      name: test name.
      spec: the specification, e.g. "MpscQueue.tla" (every .tla file of this package is
        available to it, for EXTENDS).
      config: the TLC configuration, e.g. "MpscQueue.cfg".
      expect: ["pass"] (SANY clean, TLC finds no error) or one or more "fail:<text>" (a
        seeded bug: TLC must stop with an error whose report contains every <text>).
      size: Bazel test size (its timeout: small 60 s, medium 300 s, large 900 s).
      manual: if True, only run when named explicitly (not by //...).
    """
    native.sh_test(
        name = name,
        size = size,
        srcs = ["tlc_check.sh"],
        data = [config] + native.glob(["*.tla"]),
        # Bazel splits `args` like a shell: quote each expectation, it may contain spaces.
        args = ["$(location %s)" % spec, "$(location %s)" % config] +
               ["'%s'" % e for e in expect],
        tags = ["tlc"] + (["manual"] if manual else []),
    )

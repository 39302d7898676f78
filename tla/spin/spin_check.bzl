"""spin_check: one exhaustive Spin run of a Promela model as a Bazel test (see check_model.sh)."""

def spin_check(name, model, mode = "safety", expect = "pass", defines = [], size = "small"):
    """Declares a sh_test that model-checks `model` with Spin.

    Args:
      name: test name.
      model: the Promela file.
      mode: "safety" (assertions and invalid end states) or "live:<ltl name>" (the LTL
        formula under weak fairness).
      expect: "pass" (no error, complete search) or "fail:<text>" (a seeded bug: Spin must
        find an error whose report contains <text>, '_' standing for spaces).
      defines: preprocessor switches, e.g. ["-DBUG_NO_NOTIFY"].
      size: Bazel test size.
    """
    native.sh_test(
        name = name,
        size = size,
        srcs = ["check_model.sh"],
        data = [model],
        args = ["$(location %s)" % model, mode, expect] + defines,
        tags = ["spin"],
    )

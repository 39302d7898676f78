"""spin_check: one exhaustive Spin run of a Promela model as a Bazel test (see check_model.sh)."""

def spin_check(name, model, mode = "safety", expect = "pass", defines = [], size = "small", manual = False,
               optimize = False):
    """Declares a sh_test that model-checks `model` with Spin.

    Args:
      name: test name.
      model: the Promela file.
      mode: "safety" (assertions and invalid end states) or "live:<ltl name>" (the LTL
        formula under weak fairness).
      expect: "pass" (no error, complete search) or "fail:<text>" (a seeded bug: pan's error
        line must read exactly <text>, e.g. "invalid end state", "acceptance cycle" or
        "assertion violated (item==claims)"; see check_model.sh).
      defines: preprocessor switches, e.g. ["-DBUG_NO_NOTIFY"].
      size: Bazel test size.
      manual: if True, only run when named explicitly (not by //...).
      optimize: compile pan at -O1 instead of -O0: for a search that runs longer than about
        1.5 s at -O1, where the slower search costs more than the faster compile saves.
    """
    native.sh_test(
        name = name,
        size = size,
        srcs = ["check_model.sh"],
        data = [model],
        # Bazel splits `args` like a shell: quote the expectation, it may contain spaces.
        args = ["$(location %s)" % model, mode, "'%s'" % expect] +
               (["--optimize"] if optimize else []) + defines,
        tags = ["spin"] + (["manual"] if manual else []),
    )

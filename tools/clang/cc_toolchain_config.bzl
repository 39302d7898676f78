"""cc_toolchain_config for Debian's clang 14 on Linux x86-64 (`--config=clang`, `--config=fuzz`).

A toolchain of its own, selected by --crosstool_top/--cpu like the mingw one, so that the
clang builds never re-configure @local_config_cc (the auto-detected gcc every other config
uses, whose cache would otherwise be invalidated). The two configurations use one toolchain
under two cpu names (`k8_clang`, `k8_fuzz`), so each keeps an output tree of its own.

clang++-14 is the driver for every action; it uses gcc 12's libstdc++ (the same headers and
library as the gcc build). The sanitizer and coverage flags are not here (.bazelrc's
`--config=fuzz` and configs.bazelrc add them, and the fuzzer executables add
`-fsanitize=fuzzer` themselves, tests/fuzz/BUILD), except the one that turns UBSan's
function check off after them (see `no_function_sanitizer`). No dynamic libraries: every executable links its objects statically.
"""

load(
    "@rules_cc//cc:cc_toolchain_config_lib.bzl",
    "feature",
    "flag_group",
    "flag_set",
    "tool_path",
)
load("//tools/bazel:cc_toolchain_parts.bzl", "COMPILE_ACTIONS", "LINK_ACTIONS", "flags_feature")

def _impl(ctx):
    tool_paths = [
        tool_path(name = "gcc", path = "/usr/bin/clang++-14"),
        tool_path(name = "cpp", path = "/usr/bin/clang-cpp-14"),
        tool_path(name = "ar", path = "/usr/bin/llvm-ar-14"),
        tool_path(name = "ld", path = "/usr/bin/ld"),
        tool_path(name = "nm", path = "/usr/bin/llvm-nm-14"),
        tool_path(name = "objcopy", path = "/usr/bin/llvm-objcopy-14"),
        tool_path(name = "objdump", path = "/usr/bin/llvm-objdump-14"),
        tool_path(name = "strip", path = "/usr/bin/llvm-strip-14"),
        tool_path(name = "gcov", path = "/usr/bin/llvm-cov-14"),
    ]
    features = [
        # Position-independent code and executables, as Debian's compilers default to.
        flags_feature("default_compile_flags", COMPILE_ACTIONS, ["-fPIC"]),
        # -lm: libFuzzer and the sanitizer runtimes need libm; clang++ adds libstdc++ itself.
        flags_feature("default_link_flags", LINK_ACTIONS, ["-pie", "-lm", "-pthread"]),
        # The compilation modes (`--config=fuzz` itself asks for -O1, see .bazelrc).
        flags_feature("dbg", COMPILE_ACTIONS, ["-g", "-O0"], enabled = False),
        flags_feature("opt", COMPILE_ACTIONS, ["-O2"], enabled = False),
        # --copt and the targets' copts, declared here (Bazel would add this feature itself,
        # after the ones above) so that the next feature comes after them.
        feature(
            name = "user_compile_flags",
            enabled = True,
            flag_sets = [flag_set(
                actions = COMPILE_ACTIONS,
                flag_groups = [flag_group(
                    flags = ["%{user_compile_flags}"],
                    iterate_over = "user_compile_flags",
                    expand_if_available = "user_compile_flags",
                )],
            )],
        ),
        # UBSan's function check off, after every user flag (so `--config=ubsan` or
        # `--config=asan` in any order cannot turn it back on): with it, clang 14 cannot
        # assemble a coroutine's split functions ("Cannot represent a difference across
        # sections"), at -O0 and -O1 alike. It is the one check of -fsanitize=undefined that
        # clang builds leave out; gcc has no such check.
        flags_feature("no_function_sanitizer", COMPILE_ACTIONS, ["-fno-sanitize=function"]),
    ]
    return cc_common.create_cc_toolchain_config_info(
        ctx = ctx,
        features = features,
        toolchain_identifier = "clang14_" + ctx.attr.cpu,
        host_system_name = "x86_64-linux-gnu",
        target_system_name = "x86_64-linux-gnu",
        target_cpu = ctx.attr.cpu,
        target_libc = "glibc",
        compiler = "clang",
        abi_version = "clang-14",
        abi_libc_version = "glibc",
        tool_paths = tool_paths,
        # Where clang++-14 finds its headers (`clang++-14 -E -x c++ -v /dev/null`, normalised:
        # gcc 12's libstdc++ under /usr/include, then clang's own).
        cxx_builtin_include_directories = [
            "/usr/include/c++/12",
            "/usr/include/x86_64-linux-gnu/c++/12",
            "/usr/lib/llvm-14/lib/clang/14.0.6/include",
            "/usr/lib/llvm-14/lib/clang/14.0.6/share",
            "/usr/local/include",
            "/usr/include/x86_64-linux-gnu",
            "/usr/include",
        ],
    )

clang_cc_toolchain_config = rule(
    implementation = _impl,
    attrs = {"cpu": attr.string(mandatory = True)},
    provides = [CcToolchainConfigInfo],
)

"""cc_toolchain_config for Windows x86-64 executables built with Debian's mingw-w64 gcc.

The compiler is `x86_64-w64-mingw32-g++-posix` (package g++-mingw-w64-x86-64-posix): gcc 12
with the POSIX thread model (winpthreads). The win32 thread model of gcc 12 has no
std::thread, std::mutex or std::condition_variable, which fairsched uses everywhere.

g++ (not gcc) is the driver for every action, so a link pulls in libstdc++ after the objects
without a `-lstdc++` flag in the wrong place; a `.c` source would be compiled as C++ (there
is none in the targets built for Windows).

Every executable is linked with `-static`: libstdc++, libgcc and winpthread go into the
`.exe`, which then needs only Windows' own DLLs and runs alone under Wine (no
libstdc++-6.dll / libwinpthread-1.dll next to it). Nothing here builds DLLs: the toolchain
does not declare `supports_dynamic_linker`, so cc_test and cc_binary always link statically.
"""

load("@rules_cc//cc:cc_toolchain_config_lib.bzl", "artifact_name_pattern", "feature", "tool_path")
load("//tools/bazel:cc_toolchain_parts.bzl", "COMPILE_ACTIONS", "LINK_ACTIONS", "flags_feature")

def _impl(ctx):
    prefix = "/usr/bin/x86_64-w64-mingw32-"
    tool_paths = [
        tool_path(name = "gcc", path = prefix + "g++-posix"),
        tool_path(name = "cpp", path = prefix + "cpp-posix"),
        tool_path(name = "ar", path = prefix + "ar"),
        tool_path(name = "ld", path = prefix + "ld"),
        tool_path(name = "nm", path = prefix + "nm"),
        tool_path(name = "objcopy", path = prefix + "objcopy"),
        tool_path(name = "objdump", path = prefix + "objdump"),
        tool_path(name = "strip", path = prefix + "strip"),
        tool_path(name = "gcov", path = prefix + "gcov-posix"),
    ]
    features = [
        # Tells Bazel (and `select`s on it) that the outputs are Windows binaries.
        feature(name = "targets_windows", enabled = True),
        # gcc would otherwise write the resolved (symbolic-link-free) path of headers found
        # through -isystem into its dependency files, and Bazel could not match those with
        # the declared headers of an external repository (their files are symbolic links).
        flags_feature("default_compile_flags", COMPILE_ACTIONS, ["-fno-canonical-system-headers"]),
        flags_feature("default_link_flags", LINK_ACTIONS, ["-static"]),
        # The compilation modes: `--config=opt` adds -O2 -DNDEBUG itself (.bazelrc).
        flags_feature("dbg", COMPILE_ACTIONS, ["-g", "-O0"], enabled = False),
        flags_feature("opt", COMPILE_ACTIONS, ["-O2"], enabled = False),
    ]
    return cc_common.create_cc_toolchain_config_info(
        ctx = ctx,
        features = features,
        toolchain_identifier = "mingw_x86_64",
        host_system_name = "x86_64-linux-gnu",
        target_system_name = "x86_64-w64-mingw32",
        target_cpu = "mingw_x86_64",
        target_libc = "msvcrt",
        compiler = "gcc",
        abi_version = "gcc-12",
        abi_libc_version = "msvcrt",
        tool_paths = tool_paths,
        # Where the cross compiler finds its own headers (`g++-posix -E -v`, normalised;
        # /usr/x86_64-w64-mingw32/include holds symbolic links into mingw-w64/include).
        cxx_builtin_include_directories = [
            "/usr/lib/gcc/x86_64-w64-mingw32/12-posix/include",
            "/usr/lib/gcc/x86_64-w64-mingw32/12-posix/include-fixed",
            "/usr/x86_64-w64-mingw32/include",
            "/usr/share/mingw-w64/include",
        ],
        artifact_name_patterns = [
            artifact_name_pattern(category_name = "executable", prefix = "", extension = ".exe"),
        ],
    )

mingw_cc_toolchain_config = rule(
    implementation = _impl,
    attrs = {},
    provides = [CcToolchainConfigInfo],
)

"""What the repository's own C++ toolchains share (tools/mingw: Windows; tools/clang: clang 14).

Both drive a Debian compiler installed outside the workspace, so their actions need no
input files, and both configure it through a few plain flag features.
"""

load("@bazel_tools//tools/build_defs/cc:action_names.bzl", "ACTION_NAMES")
load("@rules_cc//cc:cc_toolchain_config_lib.bzl", "feature", "flag_group", "flag_set")
load("@rules_cc//cc:defs.bzl", "cc_toolchain")

COMPILE_ACTIONS = [
    ACTION_NAMES.assemble,
    ACTION_NAMES.preprocess_assemble,
    ACTION_NAMES.c_compile,
    ACTION_NAMES.cpp_compile,
    ACTION_NAMES.cpp_header_parsing,
    ACTION_NAMES.cpp_module_compile,
    ACTION_NAMES.cpp_module_codegen,
    ACTION_NAMES.linkstamp_compile,
]

LINK_ACTIONS = [
    ACTION_NAMES.cpp_link_executable,
    ACTION_NAMES.cpp_link_dynamic_library,
    ACTION_NAMES.cpp_link_nodeps_dynamic_library,
]

def flags_feature(name, actions, flags, enabled = True):
    """A feature that adds `flags` to `actions`."""
    return feature(
        name = name,
        enabled = enabled,
        flag_sets = [flag_set(actions = actions, flag_groups = [flag_group(flags = flags)])],
    )

def system_cc_toolchain(name, toolchain_config, toolchain_identifier):
    """A cc_toolchain whose compiler, headers and libraries are all outside the workspace."""
    native.filegroup(name = name + "_no_files")
    no_files = ":" + name + "_no_files"
    cc_toolchain(
        name = name,
        all_files = no_files,
        ar_files = no_files,
        as_files = no_files,
        compiler_files = no_files,
        dwp_files = no_files,
        linker_files = no_files,
        objcopy_files = no_files,
        strip_files = no_files,
        supports_param_files = 1,
        toolchain_config = toolchain_config,
        toolchain_identifier = toolchain_identifier,
    )

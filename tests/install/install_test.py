#!/usr/bin/env python3
"""psflow as a library others build on, checked from outside its tree.

Installs the build tree into a temporary prefix (`cmake --install`), checks
what landed there (no path of the source or build tree and no -Werror in
the packages), runs the installed `psflow version`, then builds
tests/install/project (examples/custom_training_loop.cc, and every
installed header compiled alone) as an outside project with
find_package(psflow CONFIG REQUIRED), runs the example briefly (on a
local cluster, then as the chief of a TF_CONFIG cluster), and builds
and runs a one-file program with `pkg-config --cflags --libs psflow`. The
temporary folder is removed at the end, pass or fail. Run by ctest
(install_test, label install):

  python3 tests/install/install_test.py --build-dir build --cxx c++ [--launcher ccache]
"""

import argparse
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile

SOURCE_DIR = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
HERE = os.path.join(SOURCE_DIR, "tests", "install")

# Seconds: one command of the build, and the example's brief run.
BUILD_TIMEOUT = 600
RUN_TIMEOUT = 120


class Failure(Exception):
    pass


def run(argv, *, cwd=None, env=None, timeout=BUILD_TIMEOUT):
    """Runs argv in its own process group; its output, or Failure."""
    print("+ " + " ".join(argv), flush=True)
    proc = subprocess.Popen(argv, cwd=cwd, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, start_new_session=True)
    try:
        out, _ = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, _ = proc.communicate()
        raise Failure(f"timed out after {timeout} s: {' '.join(argv)}\n{out}")
    if proc.returncode != 0:
        raise Failure(f"exit code {proc.returncode}: {' '.join(argv)}\n{out}")
    return out


def expect(condition, message):
    if not condition:
        raise Failure(message)


def project_version():
    with open(os.path.join(SOURCE_DIR, "CMakeLists.txt")) as f:
        match = re.search(r"project\(psflow VERSION (\S+)", f.read())
    expect(match, "no project(psflow VERSION ...) in CMakeLists.txt")
    return match.group(1)


def layer_names():
    """The layers psflow_layer() declares, bottom first."""
    with open(os.path.join(SOURCE_DIR, "src", "CMakeLists.txt")) as f:
        return re.findall(r"^psflow_layer\(NAME (\w+)", f.read(), re.MULTILINE)


def check_layout(prefix, build_dir, libdir):
    """What the install put under prefix, and what it must not say."""
    layers = layer_names()
    expect(len(layers) > 10, f"layers not found in src/CMakeLists.txt: {layers}")
    libraries = [f"psflow_{layer}" for layer in layers] + ["psflow_proto"]
    expected = ["bin/psflow", "include/psflow/main.h", "include/psflow/tensor.h",
                f"{libdir}/cmake/psflow/psflowConfig.cmake",
                f"{libdir}/cmake/psflow/psflowConfigVersion.cmake",
                f"{libdir}/cmake/psflow/psflowTargets.cmake", f"{libdir}/pkgconfig/psflow.pc"]
    expected += [f"{libdir}/lib{library}.a" for library in libraries]
    missing = [p for p in expected if not os.path.isfile(os.path.join(prefix, p))]
    expect(not missing, f"not installed: {missing}")
    headers = sorted(os.listdir(os.path.join(prefix, "include", "psflow")))
    sources = sorted(f for f in os.listdir(os.path.join(SOURCE_DIR, "include", "psflow"))
                     if f.endswith(".h"))
    expect(headers == sources, f"installed headers {headers} are not include/psflow/ {sources}")

    # The packages name no path of this tree (src/, include/, the build's
    # generated files) and force no warning flags on their users.
    package_files = [os.path.join(prefix, libdir, "pkgconfig", "psflow.pc")]
    cmake_dir = os.path.join(prefix, libdir, "cmake", "psflow")
    package_files += [os.path.join(cmake_dir, f) for f in os.listdir(cmake_dir)]
    forbidden = {os.path.realpath(SOURCE_DIR), os.path.realpath(build_dir), SOURCE_DIR,
                 os.path.abspath(build_dir), "-Werror", "-Wall", "/src"}
    for path in package_files:
        with open(path) as f:
            text = f.read()
        for word in forbidden:
            expect(word not in text, f"{path} says {word!r}:\n{text}")

    with open(os.path.join(cmake_dir, "psflowTargets.cmake")) as f:
        targets = f.read()
    for library in libraries:
        name = library.removeprefix("psflow_")
        expect(f"add_library(psflow::{name} STATIC IMPORTED)" in targets,
               f"psflow::{name} is not exported")
    expect("add_library(psflow::psflow INTERFACE IMPORTED)" in targets,
           "psflow::psflow is not exported")

    # psflow.pc: every library, top layer first, then the proto library.
    with open(package_files[0]) as f:
        pc = f.read()
    libs = re.search(r"^Libs:(.*)$", pc, re.MULTILINE)
    expect(libs, f"no Libs in psflow.pc:\n{pc}")
    order = re.findall(r"-l(psflow_\w+)", libs.group(1))
    want = [f"psflow_{layer}" for layer in reversed(layers)] + ["psflow_proto"]
    expect(order == want, f"psflow.pc links {order}, not {want}")
    print(f"installed: {len(libraries)} libraries, {len(headers)} headers, packages clean",
          flush=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--build-dir", required=True, help="psflow's build tree, built")
    parser.add_argument("--cmake", default="cmake")
    parser.add_argument("--cxx", default="c++", help="the C++ compiler of the build tree")
    parser.add_argument("--launcher", default="", help="its compiler launcher (ccache), if any")
    parser.add_argument("--libdir", default="lib", help="CMAKE_INSTALL_LIBDIR of the build tree")
    parser.add_argument("--generator", default="Ninja")
    parser.add_argument("--jobs", default="2")
    parser.add_argument("--keep", action="store_true", help="keep the temporary folder")
    args = parser.parse_args()
    build_dir = os.path.abspath(args.build_dir)
    launcher = [args.launcher] if args.launcher else []
    version = project_version()

    tmp = tempfile.mkdtemp(prefix="psflow-install-test-")
    prefix = os.path.join(tmp, "prefix")
    env = dict(os.environ)
    env.pop("TF_CONFIG", None)
    # Paths under the temporary folder count relative to it in ccache's
    # keys, so that every run of this test shares the cache's entries.
    env["CCACHE_BASEDIR"] = tmp
    # Nothing of the machine's own pkg-config path may stand in for psflow's.
    env["PKG_CONFIG_PATH"] = os.path.join(prefix, args.libdir, "pkgconfig")
    try:
        run([args.cmake, "--install", build_dir, "--prefix", prefix])
        check_layout(prefix, build_dir, args.libdir)

        out = run([os.path.join(prefix, "bin", "psflow"), "version"], env=env,
                  timeout=RUN_TIMEOUT)
        expect(f"psflow {version}" in out, f"installed psflow version says: {out}")

        # The outside project: find_package(psflow) from the prefix alone.
        project_build = os.path.join(tmp, "project")
        configure = [args.cmake, "-S", os.path.join(HERE, "project"), "-B", project_build,
                     "-G", args.generator, "-DCMAKE_BUILD_TYPE=Release",
                     f"-DCMAKE_CXX_COMPILER={args.cxx}", f"-DCMAKE_PREFIX_PATH={prefix}",
                     f"-DPSFLOW_EXAMPLES_DIR={os.path.join(SOURCE_DIR, 'examples')}",
                     "-DCMAKE_FIND_PACKAGE_NO_PACKAGE_REGISTRY=ON"]
        if args.launcher:
            configure.append(f"-DCMAKE_CXX_COMPILER_LAUNCHER={args.launcher}")
        out = run(configure, cwd=tmp, env=env)
        run([args.cmake, "--build", project_build, "-j", args.jobs], cwd=tmp, env=env)

        # The example, briefly: a local cluster of the outside binary itself
        # (2 ps, 1 worker), 20 steps, a checkpoint every 10.
        example = os.path.join(project_build, "custom_training_loop")
        checkpoints = os.path.join(tmp, "checkpoints")
        out = run([example, "--steps", "20", "--steps-per-checkpoint", "10", "--num-workers",
                   "1", "--checkpoint-dir", checkpoints], cwd=tmp, env=env, timeout=RUN_TIMEOUT)
        expect("done: 20 optimizer steps" in out and "0 ps recoveries" in out,
               f"the example did not train:\n{out}")
        expect(os.path.isdir(os.path.join(checkpoints, "ckpt-20")),
               f"no checkpoint ckpt-20 in {os.listdir(checkpoints)}")

        # The TF_CONFIG path of docs/custom_model.md: ps and worker tasks of
        # the outside binary (`<binary> server` with their TF_CONFIG), the
        # binary as their chief; it removes its own temporary folder.
        out = run([example, "--tf-config-demo", "--steps", "40", "--steps-per-checkpoint", "20",
                   "--demo-timeout", str(RUN_TIMEOUT - 20)], cwd=tmp, env=env, timeout=RUN_TIMEOUT)
        expect("chief of the TF_CONFIG cluster" in out and "loss fell from" in out
               and "tf-config demo: removed" in out, f"the TF_CONFIG demo did not train:\n{out}")

        # A one-file program with pkg-config.
        modversion = run(["pkg-config", "--modversion", "psflow"], env=env).strip()
        expect(modversion == version, f"pkg-config --modversion psflow: {modversion}")
        flags = run(["pkg-config", "--cflags", "--libs", "psflow"], env=env).split()
        program = os.path.join(tmp, "pkg_config_program")
        run(launcher + [args.cxx, "-std=c++20", "-O1", os.path.join(HERE, "pkg_config_program.cc"),
                        "-o", program] + flags, cwd=tmp, env=env)
        out = run([program], cwd=tmp, env=env, timeout=RUN_TIMEOUT)
        expect(out == f"tensor of 2 elements\npsflow {version}\n",
               f"the pkg-config program printed:\n{out}")
    except Failure as e:
        print(f"FAILED: {e}", file=sys.stderr, flush=True)
        return 1
    finally:
        if args.keep:
            print(f"kept {tmp}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)
    print("installed psflow builds a program with CMake and with pkg-config, and it runs")
    return 0


if __name__ == "__main__":
    sys.exit(main())

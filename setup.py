"""`pip install .` (pyproject.toml): setuptools drives the project's own CMake build and packs
what it builds. The package attn/ holds the compiled module attn._attn (python/), its
Python files and stubs (python/attn/) and the attn CLI as attn/bin/attn (app/), which the
`attn` command and `python -m attn` run (attn/__main__.py). Nothing is compiled here and
nothing is downloaded: CMake finds Debian's packages, as for README's build.

A new build is configured in setuptools' build folder (build/temp.*) in the Release
configuration of CMakePresets.json's `gcc` preset (-O3 -DNDEBUG, no tests; warnings are
not errors here); CMAKE_ARGS="-DX=Y ..." adds cache settings to it. ATTN_CMAKE_BUILD_DIR=DIR
(absolute, or relative to this folder) builds in an existing configured CMake build folder
of the same configuration instead (CI: build/gcc, made by scripts/ci.sh's gcc step): only
what is out of date there is rebuilt, so a fresh build folder costs nothing more.
"""
import os
import re
import shlex
import shutil
import subprocess
import sysconfig
import sys

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext
from setuptools.command.build_py import build_py

ROOT = os.path.dirname(os.path.abspath(__file__))
# The configuration a build folder must have to be packed: Release, as the `gcc` preset.
BUILD_TYPE = "Release"


def project_version():
    """CMakeLists.txt's project(attn VERSION x.y.z), the one place the version is written."""
    with open(os.path.join(ROOT, "CMakeLists.txt"), encoding="utf-8") as f:
        match = re.search(r"project\(attn VERSION ([0-9.]+)", f.read())
    if not match:
        sys.exit("setup.py: no project(attn VERSION ...) in CMakeLists.txt")
    return match.group(1)


def cmake_cache(build_dir):
    """The cache of a configured CMake build folder: {name: value}."""
    values = {}
    with open(os.path.join(build_dir, "CMakeCache.txt"), encoding="utf-8") as f:
        for line in f:
            match = re.match(r"([A-Za-z_0-9]+):[A-Z]+=(.*)$", line.rstrip("\n"))
            if match:
                values[match.group(1)] = match.group(2)
    return values


class CleanBuildPy(build_py):
    """build_py into an emptied build/lib*/attn/: pip builds in this folder, and a file a
    former build left there (one no longer listed) would otherwise go into the wheel."""

    def run(self):
        stale = os.path.join(self.build_lib, "attn")
        if os.path.isdir(stale):
            shutil.rmtree(stale)
        super().run()


class CMakeExtension(Extension):
    """An extension that CMake builds (python/CMakeLists.txt): no sources for setuptools."""

    def __init__(self, name):
        super().__init__(name, sources=[])


class CMakeBuild(build_ext):
    """build_ext through CMake: the targets attn (the CLI) and attn_python (attn._attn, which
    also assembles build/.../python/attn/), then their files into the wheel's attn/."""

    def build_extension(self, ext):
        build_dir = self.cmake_build_dir()
        self.run_cmake(["--build", build_dir, "--target", "attn", "attn_python"]
                       + self.parallel_flags())
        module = os.path.join(build_dir, "python", "attn",
                              "_attn" + sysconfig.get_config_var("EXT_SUFFIX"))
        if not os.path.exists(module):
            sys.exit("setup.py: %s has no %s: its module was built for another Python (%s "
                     "in its CMakeCache.txt, this is %s)"
                     % (build_dir, os.path.basename(module),
                        cmake_cache(build_dir).get("Python3_EXECUTABLE"), sys.executable))
        dest = self.get_ext_fullpath(ext.name)
        self.mkpath(os.path.dirname(dest))
        self.copy_file(module, dest)
        # The CLI: a copy of the binary (the build tree holds a symbolic link to it).
        cli = os.path.realpath(os.path.join(build_dir, "app", "attn"))
        self.mkpath(os.path.dirname(self.cli_dest()))
        self.copy_file(cli, self.cli_dest())

    def cli_dest(self):
        return os.path.join(os.path.dirname(self.get_ext_fullpath("attn._attn")), "bin", "attn")

    def get_outputs(self):
        return super().get_outputs() + [self.cli_dest()]

    def parallel_flags(self):
        if os.environ.get("CMAKE_BUILD_PARALLEL_LEVEL"):
            return []
        return ["--parallel", str(self.parallel or os.cpu_count() or 1)]

    def run_cmake(self, args):
        print("setup.py: cmake " + " ".join(shlex.quote(a) for a in args), flush=True)
        subprocess.run(["cmake"] + args, check=True)

    def cmake_build_dir(self):
        reuse = os.environ.get("ATTN_CMAKE_BUILD_DIR")
        if reuse:
            build_dir = os.path.join(ROOT, reuse)  # an absolute reuse stays itself
            self.check_reused(build_dir)
            return build_dir
        # setuptools' build/temp.<platform>-<python>: two levels below this folder, as the
        # presets' build/<name>, so a compiler cache finds the same relative paths.
        build_dir = os.path.abspath(self.build_temp)
        args = ["-S", ROOT, "-B", build_dir,
                "-DCMAKE_BUILD_TYPE=" + BUILD_TYPE,
                "-DCMAKE_CXX_FLAGS_RELEASE=-O3 -DNDEBUG",
                "-DATTN_BUILD_TESTS=OFF",
                "-DATTN_UNITY=ON",
                "-DATTN_BUILD_PYTHON=ON",
                "-DPython3_EXECUTABLE=" + sys.executable]
        if shutil.which("ninja") and not os.path.exists(os.path.join(build_dir, "CMakeCache.txt")):
            args += ["-G", "Ninja"]
        args += shlex.split(os.environ.get("CMAKE_ARGS", ""))
        self.run_cmake(args)
        return build_dir

    @staticmethod
    def check_reused(build_dir):
        """ATTN_CMAKE_BUILD_DIR must be a configured build of the packed configuration:
        Release, no sanitizers (the CI's ASan build cannot load into python3), the module on."""
        if not os.path.exists(os.path.join(build_dir, "CMakeCache.txt")):
            sys.exit("setup.py: ATTN_CMAKE_BUILD_DIR=%s is not a configured CMake build folder "
                     "(no CMakeCache.txt): configure it first, e.g. cmake --preset gcc"
                     % build_dir)
        cache = cmake_cache(build_dir)
        wrong = []
        if cache.get("CMAKE_BUILD_TYPE") != BUILD_TYPE:
            wrong.append("CMAKE_BUILD_TYPE is %r, not %r" % (cache.get("CMAKE_BUILD_TYPE"),
                                                              BUILD_TYPE))
        if cache.get("ATTN_SANITIZE"):
            wrong.append("ATTN_SANITIZE is %r" % cache["ATTN_SANITIZE"])
        if cache.get("ATTN_BUILD_PYTHON", "").upper() not in ("ON", "1", "TRUE", "YES"):
            wrong.append("ATTN_BUILD_PYTHON is %r" % cache.get("ATTN_BUILD_PYTHON"))
        if wrong:
            sys.exit("setup.py: ATTN_CMAKE_BUILD_DIR=%s is not the configuration pip packs: %s"
                     % (build_dir, "; ".join(wrong)))


setup(
    version=project_version(),
    ext_modules=[CMakeExtension("attn._attn")],
    cmdclass={"build_py": CleanBuildPy, "build_ext": CMakeBuild},
)

#!/usr/bin/python3
"""`pip install .` and `pip wheel .` from this tree, reusing a built Release folder (CI's
build/gcc, ATTN_CMAKE_BUILD_DIR) so that nothing is compiled again, into a fresh venv
(--system-site-packages: Debian's numpy, setuptools and wheel; no index, nothing
downloaded). Then, from another folder: `import attn` is the venv's copy; the venv's
`attn --version` and `python -m attn compute SAMPLE` print what the built binary prints,
byte for byte, with its exit code; the installed files and the wheel hold the module,
its stubs, the CLI and the `attn` entry point.

    /usr/bin/python3 tests/python/pip_install_test.py build/gcc

Run by scripts/ci.sh's `pip` step after its `gcc` step. Prints one line per check and
exits 1 at the first failure.
"""
import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import zipfile

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
VERSION = "0.1.0"
EXT_SUFFIX = sysconfig.get_config_var("EXT_SUFFIX")
# What the package must hold (paths inside site-packages, as in the wheel and RECORD).
PACKAGE_FILES = ["attn/__init__.py", "attn/__main__.py", "attn/_progress.py", "attn/__init__.pyi",
                 "attn/py.typed",
                 "attn/_attn" + EXT_SUFFIX, "attn/bin/attn"]


def fail(message):
    print("FAIL", message)
    sys.exit(1)


def check(what, ok, detail=""):
    if not ok:
        fail(what + (": " + detail if detail else ""))
    print("ok  ", what)


def run(args, cwd, env=None, expect=0):
    p = subprocess.run(args, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    if expect is not None and p.returncode != expect:
        fail("%s exited %d (expected %d)\n%s%s" % (" ".join(args), p.returncode, expect,
                                                  p.stdout.decode(errors="replace"),
                                                  p.stderr.decode(errors="replace")))
    return p


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: pip_install_test.py BUILD_DIR (a built Release folder: build/gcc)")
    build = os.path.abspath(sys.argv[1])
    if not os.path.exists(os.path.join(build, "CMakeCache.txt")):
        sys.exit(build + " is not a configured build: run `bash scripts/ci.sh gcc` first")
    binary = os.path.join(build, "app", "attn")
    tmp = tempfile.mkdtemp(prefix="attn-pip-")
    try:
        test(build, binary, tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print("pip install and pip wheel: every check passed")
    return 0


def test(build, binary, tmp):
    venv = os.path.join(tmp, "venv")
    # No pip of its own in the venv: Debian's pip (a system site package) runs in it and
    # installs into it, and venv creation stays well under a second.
    run(["/usr/bin/python3", "-m", "venv", "--system-site-packages", "--without-pip", venv],
        cwd=tmp)
    python = os.path.join(venv, "bin", "python3")
    env = dict(os.environ, ATTN_CMAKE_BUILD_DIR=build, PIP_NO_INDEX="1")
    env.pop("PYTHONPATH", None)
    pip = [python, "-m", "pip", "--disable-pip-version-check", "--no-input"]
    run(pip + ["install", "--no-build-isolation", "--no-deps", ROOT], cwd=tmp, env=env)
    print("ok   pip install --no-build-isolation --no-deps . (ATTN_CMAKE_BUILD_DIR=%s)" % build)

    elsewhere = os.path.join(tmp, "elsewhere")  # no attn/ folder that could be imported
    os.mkdir(elsewhere)
    site = run([python, "-c", "import sysconfig; print(sysconfig.get_path('platlib'))"],
               cwd=elsewhere, env=env).stdout.decode().strip()
    check("the venv's site-packages is in the venv", site.startswith(venv + os.sep), site)

    # import attn: the venv's copy, its version, a computation.
    probe = ("import attn, sys; r = attn.compute(sys.argv[1]); "
             "print(attn.__file__); print(attn.__version__); print(attn._attn.__file__); "
             "print(type(r).__module__, type(r).__name__, r.output.shape)")
    lines = run([python, "-c", probe, os.path.join(ROOT, "samples", "seed_dot.json")],
                cwd=elsewhere, env=env).stdout.decode().splitlines()
    check("import attn is the venv's package",
          lines[0] == os.path.join(site, "attn", "__init__.py"), lines[0])
    check("attn.__version__ is " + VERSION, lines[1] == VERSION, lines[1])
    check("attn._attn is the venv's compiled module",
          lines[2] == os.path.join(site, "attn", "_attn" + EXT_SUFFIX), lines[2])
    check("attn.compute works", lines[3] == "attn Result (2, 2)", lines[3])

    # The CLI: the entry point and python -m attn, against the built binary.
    want = run([binary, "--version"], cwd=elsewhere)
    got = run([os.path.join(venv, "bin", "attn"), "--version"], cwd=elsewhere, env=env)
    check("the venv's bin/attn --version prints what the built binary prints",
          got.stdout == want.stdout and got.stdout.startswith(b"attn " + VERSION.encode()),
          repr((got.stdout, want.stdout)))
    sample = os.path.join(ROOT, "samples", "seed_dot.json")
    want = run([binary, "compute", sample], cwd=elsewhere)
    got = run([python, "-m", "attn", "compute", sample], cwd=elsewhere, env=env)
    check("python -m attn compute SAMPLE prints the built binary's bytes",
          got.stdout == want.stdout and got.stderr == want.stderr and want.stdout,
          repr((got.stdout, want.stdout)))
    bad = os.path.join(elsewhere, "missing.json")
    want = run([binary, "compute", bad], cwd=elsewhere, expect=2)
    got = run([python, "-m", "attn", "compute", bad], cwd=elsewhere, env=env, expect=2)
    check("python -m attn passes the exit code and stderr through (2, bad input)",
          got.stderr == want.stderr and want.stderr.startswith(b"attn: error: "),
          repr((got.stderr, want.stderr)))

    # What was installed: the package's files, the stubs as written, the entry point.
    dist_info = os.path.join(site, "attn-%s.dist-info" % VERSION)
    with open(os.path.join(dist_info, "RECORD"), encoding="utf-8") as f:
        record = {line.split(",")[0] for line in f}
    for path in PACKAGE_FILES:
        check("installed: " + path,
              path in record and os.path.isfile(os.path.join(site, path)), path)
    check("installed: attn/bin/attn is executable",
          os.access(os.path.join(site, "attn", "bin", "attn"), os.X_OK))
    with open(os.path.join(site, "attn", "__init__.pyi"), "rb") as f, \
            open(os.path.join(ROOT, "python", "attn", "__init__.pyi"), "rb") as g:
        check("installed: the stubs are python/attn/__init__.pyi", f.read() == g.read())
    with open(os.path.join(dist_info, "entry_points.txt"), encoding="utf-8") as f:
        entry_points = f.read()
    check("installed: the console entry point attn = attn.__main__:main",
          "[console_scripts]\nattn = attn.__main__:main" in entry_points, entry_points)
    check("installed: the venv's bin/attn is in RECORD",
          os.path.relpath(os.path.join(venv, "bin", "attn"), site) in record)

    # pip wheel: one wheel for this Python, with the same files, the CLI executable.
    wheels = os.path.join(tmp, "wheels")
    run(pip + ["wheel", "--no-build-isolation", "--no-deps", "-w", wheels, ROOT], cwd=tmp,
        env=env)
    names = os.listdir(wheels)
    tag = "cp%d%d" % sys.version_info[:2]
    check("pip wheel . gives one wheel for this Python",
          len(names) == 1 and names[0].startswith("attn-%s-%s-%s-" % (VERSION, tag, tag))
          and names[0].endswith(".whl"), str(names))
    with zipfile.ZipFile(os.path.join(wheels, names[0])) as z:
        infos = {i.filename: i for i in z.infolist()}
        print("     " + names[0] + ":")
        for name in sorted(infos):
            print("       %9d  %s" % (infos[name].file_size, name))
        for path in PACKAGE_FILES:
            check("wheel: " + path, path in infos)
        check("wheel: attn/bin/attn is executable",
              (infos["attn/bin/attn"].external_attr >> 16) & 0o111 != 0)
        check("wheel: the console entry point",
              "attn = attn.__main__:main" in z.read(
                  "attn-%s.dist-info/entry_points.txt" % VERSION).decode())


if __name__ == "__main__":
    sys.exit(main())

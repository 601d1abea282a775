"""The one harness of the CLI tests: run the binary, check exit code / stderr / outputs,
temp dirs, and the table of cases that CTest registers one test per case.

A test script (tests/cli/<topic>_test.py) imports this module, fills the table with
`case(...)` (one run of attn, all data) and `@test("name")` (a function, for a flow of
several runs that belong together), and ends with `main()`:

    /usr/bin/python3 tests/cli/X_test.py PATH/TO/attn              every case, in table order
    /usr/bin/python3 tests/cli/X_test.py PATH/TO/attn --case NAME  one case (what CTest runs)
    /usr/bin/python3 tests/cli/X_test.py --list                    the case names, one a line

tests/CMakeLists.txt calls `--list` at configure time and adds one CTest per name
("<topic>: <name>"), so one failing case shows as one failed test. Each process has its own
temp dir (TMP); with --case a case sees only the files that the script's module level and
its own body wrote, so every case must write what it reads.

Folding an old-style script (its own run/check/case, top-level code, one CTest) into the
table: import run/check/expect/write/path/TMP from here instead of defining them, move the
top-level code into `@test` functions (one per "# ---" section, or `case(...)` entries for
single runs), end with `main()`, and check `ctest -N -R '^<topic>:'` lists the cases.
"""
import atexit
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import traceback

from leak_rule import leak_env

_argv = sys.argv[1:]
LISTING = "--list" in _argv
ATTN = None if LISTING or not _argv else os.path.abspath(_argv[0])
ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
SAMPLES = os.path.join(ROOT, "samples")
# An ASan build (CTest's ci preset sets ASAN_OPTIONS): its shadow memory and quarantine make
# peak RSS figures meaningless, so RSS bounds are skipped there.
SANITIZED = "ASAN_OPTIONS" in os.environ
TMP = tempfile.mkdtemp(prefix="attn-cli-")
atexit.register(shutil.rmtree, TMP, True)

# name -> function; insertion order is the table order.
CASES = {}
_passed = 0
_failures = []
_skipped = []
# A CTest name is a CMake list element: none of these characters.
_UNSAFE = re.compile(r'[;\[\]\\$"\n]')


def _register(name, fn):
    name = _UNSAFE.sub("_", name)
    base, n = name, 2
    while name in CASES:
        name, n = f"{base} #{n}", n + 1
    CASES[name] = fn
    return name


def test(name):
    """Decorator: the function is one case of the table."""
    def add(fn):
        _register(name, fn)
        return fn
    return add


def case(name, args, **kw):
    """One case of the table: a single run of attn, checked by expect(**kw)."""
    _register(name, lambda: expect(args, name=name, **kw))


def path(name):
    return os.path.join(TMP, name)


def write(name, obj, metadata=None):
    """Writes obj to TMP/name: a numpy array as .npy; for .safetensors, a dict of name ->
    array as float32 tensors (with `metadata`, through tests/oracle/reference.py's one
    writer); a str as is; anything else as JSON."""
    if name.endswith(".npy"):
        import numpy as np
        np.save(path(name), obj)
    elif name.endswith(".safetensors"):
        sys.path.insert(0, os.path.join(ROOT, "tests", "oracle"))
        import reference
        reference.write_safetensors(path(name), [(k, "F32", a) for k, a in obj.items()],
                                    metadata)
    else:
        with open(path(name), "w") as f:
            f.write(obj if isinstance(obj, str) else json.dumps(obj))
    return path(name)


# A small launcher forks attn and reports its peak: a child's ru_maxrss starts at its
# parent's resident size (fork copies it, exec keeps it), so attn's own peak shows only
# when its parent is smaller than attn, unlike a test script with numpy loaded.
_PEAK_LAUNCHER = """import json, os, sys
pid = os.fork()
if pid == 0:
    fd = os.open(os.devnull, os.O_WRONLY)
    os.dup2(fd, 1)
    os.execv(sys.argv[1], sys.argv[1:])
_, status, usage = os.wait4(pid, 0)
print(json.dumps([os.waitstatus_to_exitcode(status), usage.ru_maxrss * 1024]))
"""


def peak_rss(args, timeout=600):
    """(exit code, peak resident bytes, stderr) of `attn ARGS` run in TMP, stdout discarded."""
    p = subprocess.run(["/usr/bin/python3", "-S", "-c", _PEAK_LAUNCHER, ATTN] + args, cwd=TMP,
                       capture_output=True, text=True, timeout=timeout)
    code, rss = json.loads(p.stdout)
    return code, rss, p.stderr


def with_env(env):
    """This process's environment with env's entries added (None removes one)."""
    e = dict(os.environ)
    for k, v in (env or {}).items():
        if v is None:
            e.pop(k, None)
        else:
            e[k] = v
    return e


def run(args, stdin=None, cwd=None, env=None, timeout=120):
    """Runs attn with args in cwd (TMP by default); returns (exit code, stdout bytes,
    stderr text). env entries are added to the environment (None removes one); leak_rule.py
    says which runs check for leaks."""
    e = leak_env(args, cwd or TMP, stdin, with_env(env))
    p = subprocess.run([ATTN] + list(args), input=stdin, capture_output=True,
                       cwd=cwd or TMP, env=e, timeout=timeout)
    return p.returncode, p.stdout, p.stderr.decode("utf-8", "replace")


def check(name, cond, detail=""):
    """One assertion: counted, and printed with its detail when it fails."""
    global _passed
    if cond:
        _passed += 1
    else:
        _failures.append(f"{name}: {detail}")
        print(f"FAIL {name}: {detail}")
    return cond


def skip(reason):
    """Notes that (part of) a case could not run here; printed as SKIP at the end."""
    _skipped.append(reason)


def one_error_line(stderr):
    """Exit 2's stderr: exactly one line, starting 'attn: error: '."""
    lines = stderr.strip().splitlines()
    return len(lines) == 1 and lines[0].startswith("attn: error: ")


def expect(args, code=0, err=None, stdin=None, out=None, cwd=None, env=None, name=None,
           timeout=120):
    """Runs attn; checks the exit code, that stderr matches the regex `err`, that an exit 2
    is exactly one 'attn: error:' line, and that out(stdout_bytes) returns True or None.
    Returns stdout."""
    rc, so, se = run(args, stdin, cwd, env, timeout)
    ok = rc == code
    detail = f"exit {rc} (want {code}); stderr={se.strip()[:300]!r}"
    if ok and err is not None:
        ok = re.search(err, se) is not None
        detail += f"; stderr !~ {err!r}"
    if ok and code == 2:
        ok = one_error_line(se)
        detail += "; error must be one 'attn: error:' line"
    if ok and out is not None:
        try:
            r = out(so)
            ok = r is None or r is True
            detail += f"; output check returned {r!r}; stdout={so[:300]!r}"
        except Exception as e:  # noqa: BLE001 - report any checker failure
            ok = False
            detail += f"; output check raised {e!r}; stdout={so[:300]!r}"
    check(name or " ".join(args), ok, detail)
    return so


_kept = set()


def keep(path):
    """Marks a file or folder in TMP as a shared input that cases made on first use and
    later cases reuse (a model folder, a pristine copy): it outlives the case that made it.
    Returns path."""
    _kept.add(os.path.relpath(path, TMP).split(os.sep)[0])
    return path


def _run_case(name):
    """Runs one case. When a script runs all its cases in one process (CTest's way, one
    process per script), what a case leaves in TMP is removed after it, so that no case
    sees another's files: the inputs the script wrote at import time, and those marked by
    keep(), stay, as they would in a process of its own."""
    before = set(os.listdir(TMP)) | _kept
    cwd = os.getcwd()
    try:
        CASES[name]()
    except Exception:  # noqa: BLE001 - a case that raises has failed
        check(name, False, "raised\n" + traceback.format_exc())
    finally:
        os.chdir(cwd)
        for entry in set(os.listdir(TMP)) - before - _kept:
            p = os.path.join(TMP, entry)
            if os.path.isdir(p) and not os.path.islink(p):
                shutil.rmtree(p, ignore_errors=True)
            else:
                os.remove(p)


def main():
    if LISTING:
        for name in CASES:
            print(name)
        return
    if ATTN is None:
        sys.exit(f"usage: {sys.argv[0]} PATH/TO/attn [--case NAME] | --list")
    if "--case" in _argv:
        name = _argv[_argv.index("--case") + 1]
        if name not in CASES:
            sys.exit(f"no case named {name!r} (see --list)")
        _run_case(name)
    else:
        for name in CASES:
            _run_case(name)
    for reason in _skipped:
        print(f"SKIP {reason}")
    print(f"{_passed} passed, {len(_failures)} failed")
    # A run that checked nothing and skipped nothing is a broken table, not a pass.
    sys.exit(1 if _failures or (_passed == 0 and not _skipped) else 0)


def run_case(name, args, **kw):
    """expect() with the case's name first, as the old scripts wrote it."""
    return expect(args, name=name, **kw)

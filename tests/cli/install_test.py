#!/usr/bin/env python3
"""`cmake --install` into a temp prefix: attn, its man page and the bash/zsh/fish
completions (written at build time from the CLI11 definitions, so they list every command
and flag `--help` does), `attn --version` naming the commit, and the .deb CPack makes.

/usr/bin/python3 tests/cli/install_test.py PATH/TO/attn [--case NAME] | --list
"""
import os
import re
import shutil
import subprocess

import harness
from harness import ROOT, TMP, check, main, run, skip, test


def build_dir():
    """The build folder of the attn under test (BUILD/app/attn)."""
    return os.path.dirname(os.path.dirname(harness.ATTN))


def install(prefix):
    """Installs the build of the attn under test (which wrote the shell files after its
    link) into `prefix`."""
    p = subprocess.run(["cmake", "--install", build_dir(), "--prefix", prefix],
                       capture_output=True, text=True)
    check("cmake --install exit 0", p.returncode == 0, p.stdout[-500:] + p.stderr[-500:])
    return p.returncode == 0


FILES = ["bin/attn", "share/man/man1/attn.1", "share/bash-completion/completions/attn",
         "share/zsh/vendor-completions/_attn", "share/fish/vendor_completions.d/attn.fish"]


@test("install into a prefix: attn, man page, completions; attn runs from there")
def _():
    prefix = os.path.join(TMP, "prefix")
    if not install(prefix):
        return
    for f in FILES:
        check(f"installed {f}", os.path.isfile(os.path.join(prefix, f)), f)
    attn = os.path.join(prefix, "bin", "attn")
    p = subprocess.run([attn, "--help"], capture_output=True, text=True)
    check("installed attn --help runs", p.returncode == 0 and "compute" in p.stdout, p.stderr)
    bash = os.path.join(prefix, FILES[2])
    p = subprocess.run(["bash", "-c", f"source {bash} && complete -p attn"],
                       capture_output=True, text=True)
    check("the bash completion loads", p.returncode == 0 and "_attn" in p.stdout,
          p.stdout + p.stderr)
    if shutil.which("man"):
        p = subprocess.run(["man", "-l", os.path.join(prefix, FILES[1])], capture_output=True,
                           text=True, env=dict(os.environ, MANPAGER="cat", MANWIDTH="100"))
        check("the man page renders", p.returncode == 0 and "--hidden-states" in
              p.stdout.replace("\u2010", "-"), p.stderr[-300:])


@test("install into a prefix: the Python package attn/, its bin/attn links to the CLI")
def _():
    if not os.path.isdir(os.path.join(build_dir(), "python", "attn")):
        skip("no Python module in this build")
        return
    prefix = os.path.join(TMP, "prefix_python")
    if not install(prefix):
        return
    inits = [os.path.join(d, "__init__.py") for d, _, files in os.walk(prefix)
             if os.path.basename(d) == "attn" and "__init__.py" in files]
    check("one attn/ package under the prefix", len(inits) == 1, str(inits))
    if len(inits) != 1:
        return
    package = os.path.dirname(inits[0])
    names = os.listdir(package)
    for f in ("__main__.py", "__init__.pyi", "py.typed"):
        check(f"installed attn/{f}", f in names, str(names))
    check("installed attn/_attn*.so", any(n.startswith("_attn.") and n.endswith(".so")
                                          for n in names), str(names))
    link = os.path.join(package, "bin", "attn")
    check("attn/bin/attn is a relative link to the prefix's bin/attn (python -m attn runs it)",
          os.path.islink(link) and not os.path.isabs(os.readlink(link)) and
          os.path.exists(link) and os.path.samefile(link, os.path.join(prefix, "bin", "attn")),
          os.readlink(link) if os.path.islink(link) else link)


def complete_bash(line):
    """What the installed-style bash completion offers for `line` (the cursor at its end)."""
    script = run(["--completions", "bash"])[1].decode()
    words = line.split(" ")
    quoted = " ".join("'" + w + "'" for w in words)
    prog = (script + "\nCOMP_WORDS=(" + quoted + ")\nCOMP_CWORD=" + str(len(words) - 1) +
            "\n_attn\nprintf '%s\\n' \"${COMPREPLY[@]}\"\n")
    p = subprocess.run(["bash", "-c", prog], capture_output=True, text=True, cwd=TMP)
    return p.stdout.split()


@test("bash completion: commands, every flag of --help, choices")
def _():
    check("commands", {"compute", "heatmap", "batch", "info", "diff", "explain"} <=
          set(complete_bash("attn ")), complete_bash("attn "))
    for cmd in ("compute", "heatmap", "batch", "info", "diff", "explain"):
        helped = set(re.findall(r"^ +(?:-\w, )?(--[a-z][\w-]*)", run([cmd, "--help"])[1].decode(),
                                re.M))
        check(f"{cmd}: --help lists flags", len(helped) >= 2, sorted(helped))
        offered = set(complete_bash(f"attn {cmd} --"))
        check(f"{cmd}: every flag of --help completes", helped - {"--help"} <= offered,
              sorted(helped - offered))
    check("--precision completes its values", complete_bash("attn compute --precision ") ==
          ["f32", "f64"], complete_bash("attn compute --precision "))


@test("zsh and fish completions are valid scripts, when the shells are here")
def _():
    for shell, flag in (("zsh", "-n"), ("fish", "--no-execute")):
        rc, out, err = run(["--completions", shell])
        check(f"{shell}: written", rc == 0 and b"compute" in out, err)
        if not shutil.which(shell):
            skip(f"{shell} not installed: its syntax not checked")
            continue
        f = os.path.join(TMP, "completion." + shell)
        open(f, "wb").write(out)
        p = subprocess.run([shell, flag, f], capture_output=True, text=True)
        check(f"{shell} {flag}", p.returncode == 0, p.stderr)


@test("--completions of an unknown shell: one error line")
def _():
    harness.expect(["--completions", "tcsh"], code=2, err=r"expected bash, zsh or fish")


@test("attn --version names the commit")
def _():
    rc, out, _ = run(["--version"])
    last = out.decode().splitlines()[-1]
    head = subprocess.run(["git", "-C", ROOT, "rev-parse", "--short=12", "HEAD"],
                          capture_output=True, text=True)
    if head.returncode != 0:
        check("no git: unknown", last == "Built from commit unknown", last)
        return
    # The commit of the last build: HEAD, or an ancestor when commits came after it.
    m = re.fullmatch(r"Built from commit ([0-9a-f]{12})(-dirty)?", last)
    check("a commit line", m is not None, last)
    if m:
        a = subprocess.run(["git", "-C", ROOT, "merge-base", "--is-ancestor", m.group(1), "HEAD"],
                           capture_output=True, text=True)
        check("the commit is HEAD or an ancestor", a.returncode == 0, last + a.stderr)


@test("cpack makes a .deb of the installed files")
def _():
    if not shutil.which("dpkg-deb"):
        skip("dpkg-deb not installed")
        return
    if not install(os.path.join(TMP, "prefix0")):
        return
    out = os.path.join(TMP, "deb")
    p = subprocess.run(["cpack", "-G", "DEB", "--config",
                        os.path.join(build_dir(), "CPackConfig.cmake"), "-B", out],
                       capture_output=True, text=True)
    debs = [f for f in os.listdir(out) if f.endswith(".deb")] if os.path.isdir(out) else []
    check("cpack exit 0, one .deb", p.returncode == 0 and len(debs) == 1,
          p.stdout[-500:] + p.stderr[-500:])
    if debs:
        listing = subprocess.run(["dpkg-deb", "-c", os.path.join(out, debs[0])],
                                 capture_output=True, text=True).stdout
        for f in FILES:
            check(f".deb holds usr/{f}", f"./usr/{f}" in listing, listing[-500:])


main()

"""Which runs of a sanitized attn check for leaks: LeakSanitizer's scan at exit costs about a
fifth of a small run's CPU under ASan (docs/testing.md), and the test scripts start attn
about 2,300 times. The rule, in one place for every script that runs attn (the CLI
harness, the oracle harness, the scripts with a runner of their own):

  the first run of each subcommand over each kind of input, in each test process, checks
  for leaks (ASAN_OPTIONS detect_leaks=1); the runs after it with the same subcommand and
  kinds do not (detect_leaks=0).

The kinds of a run are the extensions of its path arguments (.json, .npy, .npz,
.safetensors, .gguf, ...), "-" (stdin), "stdin" when the test feeds it bytes and "folder"
for an existing directory; so `compute -q q.npy ...` and `compute p.json` are two first runs.
The unit tests and the fuzz targets keep the leak check on every run (their own CTests), and
the preset's ASAN_OPTIONS stays detect_leaks=1 for every run that does not come through
here. A run through here that leaks, or any other report of ASan's, exits 23 (ASan's
`exitcode`; its default, 1, is also what `attn diff` and `attn batch` return for a
difference or a failed line), which every caller's exit code check reports.
"""
import os

_seen = set()


def _kinds(args, cwd, stdin):
    kinds = set()
    if stdin is not None and stdin is not False:
        kinds.add("stdin")
    for a in args[1:]:
        if not isinstance(a, str):
            continue
        if a == "-":
            kinds.add("-")
            continue
        if a.startswith("-"):
            continue
        for part in a.split(","):
            base = os.path.basename(part.rstrip("/"))
            ext = os.path.splitext(base)[1].lower()
            if ext[1:2].isalpha() and ext[1:].isalnum():
                kinds.add(ext)
            elif part and os.path.isdir(os.path.join(cwd or ".", part)):
                kinds.add("folder")
    return tuple(sorted(kinds))


def leak_env(args, cwd=None, stdin=None, env=None):
    """The environment for one run of attn ARGS (env: the caller's, else os.environ's), with
    ASAN_OPTIONS' detect_leaks set by the rule above."""
    e = dict(os.environ if env is None else env)
    args = [str(a) for a in args]
    command = next((a for a in args if not a.startswith("-")), "")
    key = (command, _kinds(args[args.index(command):] if command else args, cwd, stdin))
    first = key not in _seen
    _seen.add(key)
    opts = [o for o in e.get("ASAN_OPTIONS", "").split(":") if o]
    if "detect_leaks=0" in opts:
        return e  # the caller turned the check off (a sanitized module in python3)
    opts = [o for o in opts if not o.startswith("detect_leaks=")]
    opts.append("detect_leaks=%d" % (1 if first else 0))
    if not any(o.startswith("exitcode=") for o in opts):
        opts.append("exitcode=23")  # a sanitizer's report is never taken for attn's exit 1
    e["ASAN_OPTIONS"] = ":".join(opts)
    return e

"""`python -m attn ARGS...` and the `attn` command that `pip install .` puts on PATH: both
run the attn command-line binary shipped inside the package (attn/bin/attn) with the same
arguments, by exec, so its output, exit code and signals are the process's own. Nothing of
the command line is reimplemented here.
"""
import os
import sys


def cli_path():
    """The attn binary of this installation: attn/bin/attn beside this file (a copy in a
    pip install, a symbolic link to the built or installed CLI in a CMake build tree or a
    `cmake --install` prefix)."""
    return os.path.join(os.path.dirname(os.path.abspath(__file__)), "bin", "attn")


def main():
    path = cli_path()
    if not os.access(path, os.X_OK):
        sys.stderr.write("attn: error: the attn command-line binary is missing from this "
                         "installation of the module: expected " + path + "\n")
        return 1
    sys.stdout.flush()
    sys.stderr.flush()
    os.execv(path, [path] + sys.argv[1:])
    return 1  # not reached: execv returns only by raising OSError


if __name__ == "__main__":
    sys.exit(main())

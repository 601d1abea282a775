"""progress=True: the built-in progress bar of attn.compute, attn.run_model and attn.census.

The compiled module calls bar(unit) once per call and then the bar as bar(done, total) after
each step (a layer, a group of texts); nothing is shown before the first step. tqdm draws it when it is installed (tqdm.auto: a
widget in a notebook); otherwise a notebook gets one line of text updated in place
(IPython.display) and a terminal one line on stderr rewritten with a carriage return.
"""
import sys
import time


def _in_notebook():
    shell = sys.modules.get("IPython")
    if shell is None:
        return False
    try:
        ip = shell.get_ipython()
    except AttributeError:
        return False
    return ip is not None and type(ip).__name__ == "ZMQInteractiveShell"


def _line(unit, done, total, start):
    width = 30
    filled = width * done // total if total else width
    elapsed = time.monotonic() - start
    left = ""
    if 0 < done < total:
        left = ", %.1f s left" % (elapsed / done * (total - done))
    return "attn: [%s%s] %d/%d %ss, %.1f s%s" % ("#" * filled, "." * (width - filled), done,
                                               total, unit, elapsed, left)


class _TextBar:
    """One line, rewritten in place: IPython's display handle in a notebook, '\\r' on
    stderr elsewhere; a newline (or the final update) when done reaches total."""

    def __init__(self, unit):
        self.unit = unit
        self.start = time.monotonic()
        self.notebook = _in_notebook()
        self.handle = None

    def __call__(self, done, total):
        text = _line(self.unit, done, total, self.start)
        if self.notebook:
            if self.handle is None:
                from IPython.display import display  # noqa: PLC0415 (only in a notebook)
                self.handle = display(text, display_id=True)
            else:
                self.handle.update(text)
            return
        sys.stderr.write("\r" + text + ("\n" if done >= total else ""))
        sys.stderr.flush()


class _TqdmBar:
    def __init__(self, unit):
        self.unit = unit
        self.bar = None

    def __call__(self, done, total):
        if self.bar is None:
            from tqdm.auto import tqdm  # noqa: PLC0415 (optional)
            self.bar = tqdm(unit=self.unit, desc="attn", total=total)
        if self.bar.total != total:
            self.bar.total = total
        self.bar.update(done - self.bar.n)
        if done >= total:
            self.bar.close()


def bar(unit):
    """A progress(done, total) callable for progress=True, counting `unit`s."""
    try:
        import tqdm.auto  # noqa: F401,PLC0415 (optional)
    except ImportError:
        return _TextBar(unit)
    return _TqdmBar(unit)

"""attn: attention computed and drawn by the attn library (the engine of the `attn` command
line), numpy arrays in and out. The compiled module is attn._attn (python/*.cpp); this file
only re-exports it, so `attn.compute`, `attn.InputError`, ... are its names. `python -m attn`
runs the command line (__main__.py). Type stubs: __init__.pyi.
"""
from . import _attn
from ._attn import *  # noqa: F401,F403 (compute, heatmap, view, ..., InputError, Result)
from ._attn import __version__  # noqa: F401

__doc__ = _attn.__doc__
__all__ = [name for name in dir(_attn) if not name.startswith("_")]

# The classes and the exception are shown as attn.X (tracebacks, repr), not attn._attn.X.
for _name in __all__:
    _value = getattr(_attn, _name)
    if isinstance(_value, type):
        _value.__module__ = __name__
del _name, _value

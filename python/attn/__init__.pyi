# Type stubs of the `attn` package: the compiled module attn._attn (python/*.cpp), which
# attn/__init__.py re-exports, is what editors and type checkers see here (py.typed marks
# the package as typed). The docstrings (help(attn.compute)) hold the full text.
from os import PathLike
from typing import Any, Callable, Mapping, Optional, Sequence, Union

import numpy as np
import numpy.typing as npt

__version__: str

ArrayLike = npt.ArrayLike
Tokens = Union[Sequence[str], str, None]

class InputError(ValueError):
    """Bad input (the CLI's exit 2): the message is the CLI's error line."""

class Result:
    """The result of attn.compute: numpy arrays in the shapes of the CLI's result document."""
    @property
    def output(self) -> np.ndarray: ...
    @property
    def weights(self) -> Optional[np.ndarray]: ...
    @property
    def lse(self) -> Optional[np.ndarray]: ...
    @property
    def entropy(self) -> Optional[np.ndarray]: ...
    @property
    def argmax(self) -> Optional[np.ndarray]: ...
    @property
    def top_k_indices(self) -> Optional[np.ndarray]: ...
    @property
    def top_k_weights(self) -> Optional[np.ndarray]: ...
    @property
    def hidden_states(self) -> Optional[np.ndarray]: ...
    @property
    def token_ids(self) -> Optional[np.ndarray]: ...
    @property
    def query_tokens(self) -> Optional[list[str]]: ...
    @property
    def key_tokens(self) -> Optional[list[str]]: ...
    @property
    def tokens(self) -> Union[list[str], list[list[str]], None]: ...
    @property
    def layers(self) -> Optional[list[int]]: ...
    @property
    def id(self) -> Any: ...
    @property
    def rows_fully_masked(self) -> int: ...
    @property
    def warnings(self) -> list[str]: ...

def compute(
    problem: Union[Mapping[str, Any], str, PathLike[str], None] = None,
    *,
    threads: int = 0,
    no_weights: bool = False,
    check_finite: bool = False,
    simd: str = "best",
    max_memory: int = 0,
    progress: Union[bool, Callable[[int, int], Any], None] = None,
    query: Optional[ArrayLike] = None,
    key: Optional[ArrayLike] = None,
    value: Optional[ArrayLike] = None,
    input: Optional[ArrayLike] = None,
    context: Optional[ArrayLike] = None,
    params: Union[Mapping[str, Any], str, None] = None,
    init: Optional[Mapping[str, Any]] = None,
    num_heads: Optional[int] = None,
    num_kv_heads: Optional[int] = None,
    scale: Optional[float] = None,
    causal: Union[bool, str, None] = None,
    mask: Optional[ArrayLike] = None,
    bias: Optional[ArrayLike] = None,
    key_padding_mask: Optional[ArrayLike] = None,
    returns: Optional[Sequence[str]] = None,
    top_k: Optional[int] = None,
    average_heads: Optional[bool] = None,
    select_heads: Union[Sequence[int], str, None] = None,
    query_rows: Union[Sequence[Optional[int]], str, None] = None,
    precision: Optional[str] = None,
    weights_dtype: Optional[str] = None,
    activations: Optional[str] = None,
    **fields: Any,
) -> Result:
    """Computes attention for one problem, as `attn compute` does (see help(attn.compute))."""

def run_model(
    path: Union[str, PathLike[str]],
    text: Union[str, Sequence[str], None] = None,
    token_ids: Optional[ArrayLike] = None,
    layers: Optional[Sequence[int]] = None,
    *,
    threads: int = 0,
    no_weights: bool = False,
    simd: str = "best",
    max_memory: int = 0,
    progress: Union[bool, Callable[[int, int], Any], None] = None,
    returns: Optional[Sequence[str]] = None,
    special_tokens: Optional[bool] = None,
    key_padding_mask: Optional[ArrayLike] = None,
    select_heads: Union[Sequence[int], str, None] = None,
    query_rows: Union[Sequence[Optional[int]], str, None] = None,
    precision: Optional[str] = None,
    weights_dtype: Optional[str] = None,
    activations: Optional[str] = None,
    **fields: Any,
) -> Result:
    """A whole model's forward pass, as `attn compute --params MODEL --text ...`."""

def tokenize(
    path: Union[str, PathLike[str]],
    text: Union[str, Sequence[str]],
    special_tokens: bool = True,
) -> Union[dict[str, Any], list[dict[str, Any]]]:
    """A model's own tokenizer, as `attn tokenize MODEL --text ...`: a dict with "token_ids"
    (np.int64) and "tokens", or a list of them for a list of texts."""

class Census:
    """A head census (attn.census): each statistic pooled over the texts, [layers, H]."""
    @property
    def layers(self) -> int: ...
    @property
    def heads(self) -> int: ...
    @property
    def texts(self) -> int: ...
    @property
    def sink_threshold(self) -> float: ...
    @property
    def stats(self) -> list[str]: ...
    @property
    def means(self) -> dict[str, np.ndarray]: ...
    @property
    def sums(self) -> dict[str, np.ndarray]: ...
    @property
    def rows(self) -> dict[str, np.ndarray]: ...
    @property
    def sink(self) -> np.ndarray: ...
    def __getitem__(self, name: str) -> np.ndarray: ...
    def save(self, path: Union[str, PathLike[str]]) -> None: ...
    def _repr_html_(self) -> str: ...

def census(
    model: Union[str, PathLike[str]],
    texts: Union[str, PathLike[str], Sequence[Union[str, Sequence[int]]], None] = None,
    *,
    probe: Optional[str] = None,
    probes: int = 1,
    seed: int = 0,
    sink_threshold: float = 0.3,
    threads: int = 0,
    jobs: int = 1,
    html: Union[str, PathLike[str], None] = None,
    progress: Union[bool, Callable[[int, int], Any], None] = None,
) -> Census:
    """A head census, as `attn census MODEL TEXTS` (see help(attn.census))."""

def compare(
    a: Union[str, PathLike[str], ArrayLike],
    b: Union[str, PathLike[str], ArrayLike],
    text: Optional[Union[str, Sequence[str]]] = None,
    token_ids: Optional[ArrayLike] = None,
    *,
    top_k: int = 5,
    special_tokens: bool = True,
    threads: int = 0,
) -> dict[str, Any]:
    """Two models on the same text or token ids (or two weights arrays of one shape) per
    layer and head, as `attn compare A B`: {"js", "tv", "max_abs", "top1", "topk": float64
    arrays of the grid's shape, "top_k": K, "rows": query rows per cell}."""

class Figure:
    """A heatmap's bytes, shown inline by Jupyter."""
    @property
    def data(self) -> bytes: ...
    @property
    def format(self) -> str: ...
    @property
    def warnings(self) -> list[str]: ...
    def save(self, path: Union[str, PathLike[str]]) -> None: ...
    def _repr_png_(self) -> Optional[bytes]: ...
    def _repr_svg_(self) -> Optional[str]: ...
    def _repr_html_(self) -> Optional[str]: ...

def heatmap(
    weights: Union[ArrayLike, Result],
    tokens: Tokens = None,
    *,
    format: str = "png",
    query_tokens: Tokens = None,
    key_tokens: Tokens = None,
    head: Optional[int] = None,
    batch: Optional[int] = None,
    layers: Optional[Sequence[int]] = None,
    axes: Optional[str] = None,
    title: Optional[str] = None,
    colormap: str = "viridis",
    vmin: Optional[float] = None,
    vmax: Optional[float] = None,
    scale: str = "linear",
    clip: Optional[float] = None,
    pool: str = "max",
    annotate: Optional[bool] = None,
    decimals: int = 2,
    dpi: float = 100.0,
    font_size: float = 10.0,
    cols: int = 0,
) -> Figure:
    """Draws attention weights as a heatmap (PNG, SVG or the HTML view)."""

def view(weights: Union[ArrayLike, Result], tokens: Tokens = None, **options: Any) -> Figure:
    """The interactive HTML view, inline: heatmap(weights, tokens, format="html", ...)."""

def model_view(
    attentions: Union[Sequence[ArrayLike], ArrayLike, Result],
    tokens: Tokens = None,
    **options: Any,
) -> Figure:
    """Every layer and head (Hugging Face's outputs.attentions), as BertViz's model_view."""

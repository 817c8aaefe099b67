"""The published, parameterised GPSS kernels of the 13 TSDL series, in our grammar and units.

``../shared/data/tsdl/gpss_kernels.md`` lists, for every series, the kernel the GPSS
"orig" rerun of gpss-research (``results/2014-03-19-GPSS-orig``) used for its published
test predictions, with its hyperparameters, e.g.::

    RQ[len=0.622,alp=-9.83,sf=-0.833] × Lin[loc=1942.25,invsf=-2.11,offset=1.64]
        × (SE[len=3.65,sf=2.29] + Per[len=-0.425,per=0.00241,sf=-1.11]
           × Lin[loc=1948.75,invsf=1.42,offset=0.668])

:func:`parse_gpss` reads such a string into a tree; :func:`convert` writes it in our
grammar (the base kernels of :data:`evocov_core.language.library.BASE_KERNELS`, composed exactly as
:func:`evocov_core.language.library.compose` composes them, so slot ``k`` of the result is slot
``k`` of ``compose(structure)``) **with the published values converted to model units**.

GPSS parameterisation (GPML covariance functions; every value a natural log, x in years,
y in original units, zero mean function)::

    SE[len, sf]             sf² exp(−Δ²/(2ℓ²))                          ℓ = e^len
    Per[len, per, sf]       sf² exp(−2 sin²(πΔ/p)/ℓ²)   (PeriodicKernelOLD) p = e^per
    RQ[len, alp, sf]        sf² (1 + Δ²/(2αℓ²))^(−α)                    α = e^alp
    Lin[loc, invsf, offset] e^(2·offset) + (x − loc)(x' − loc)/e^(2·invsf)
                            (LinearKernelOLD = covSum{covConst, covLINscaleshift})

Model units (:mod:`evocov_core.data`): ``x̃ = 1 + (x − x_min)/s_x`` with ``s_x`` the
training x-span, ``ỹ = (y − ȳ)/s_y``. So ``Δ = s_x Δ̃`` and
``(x − loc)(x' − loc) = s_x² (x̃ − c)(x̃' − c)`` with ``c = 1 + (loc − x_min)/s_x``, and a
covariance in original units is ``s_y²`` times the model-unit covariance. Slot by slot:

====================  ======================================================================
SE  amplitude         ``e^sf`` (÷ ``s_y`` on the factor that carries the output scale)
SE  lengthscale       ``e^len / s_x``
PER lengthscale       ``e^len`` (acts on ``sin``, no unit)
PER frequency         ``ω = 2π s_x / e^per``  (our PER has ``sin²(ωΔ̃/2)``)
RQ  alpha             ``e^alp``
LIN offset (c)        ``e^offset`` (÷ ``s_y`` on the scale-carrying factor)
LIN shift             ``1 + (loc − x_min)/s_x``; clipped to :data:`MIN_SHIFT` when ≤ 0
LIN scale (θl)        ``e^(2·invsf) / s_x²`` (× ``s_y²`` on the scale-carrying factor)
noise variance        ``e^(2·lik_sf) / s_y²``
====================  ======================================================================

The output scale ``1/s_y²`` is applied **once per product term**: a sum passes it to every
summand, a product only to its first factor (every base kernel has its own ``sf``; only
the product of them matters).

The md file gives no likelihood noise; :data:`GPSS_LIK_SF` transcribes it (the
``LikGauss(sf=…)`` of the last level of each ``*_result.txt``; same files, full
precision). GPSS used a **zero mean on raw y** where our models centre y, so the
verification (:func:`verify`) reports both conventions.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from numpy.typing import NDArray

from evocov_core.data import Dataset
from evocov_core.language.kernel import Kernel
from evocov_core.language.library import compose

__all__ = [
    "GPSS_LIK_SF",
    "GPSS_PRECISE_PERIODS",
    "MIN_SHIFT",
    "Conversion",
    "GpssEntry",
    "GpssParseError",
    "Verification",
    "convert",
    "parse_gpss",
    "read_gpss_entries",
    "structure",
    "verify",
]

Array = NDArray[np.float64]

#: Smallest LIN shift slot value (model units) when GPSS's ``loc`` lies one x-span or more
#: before the first training point (our slots must be positive).
MIN_SHIFT = 1e-6

#: log noise standard deviation ``LikGauss(sf=…)`` of GPSS's final model per series
#: (original units), from ``results/2014-03-19-GPSS-orig/*_result.txt`` of
#: github.com/jamesrobertlloyd/gpss-research (last level). The md file omits it.
GPSS_LIK_SF: dict[str, float] = {
    "01-airline": -6.779456164,
    "02-solar": -2.83840134693,
    "03-mauna": -1.59752608619,
    "04-wheat": -4.53603029045,
    "05-temperature": -1.6682888226,
    "06-internet": 7.32769969166,
    "07-call-centre": 2.09547082151,
    "08-radio": -1.79950034152,
    "09-gas-production": -3.1587518728,
    "10-sulphuric": -4.95439333849,
    "11-unemployment": -56.3962220606,
    "12-births": 2.96960998107,
    "13-wages": -1.4961197259,
}

#: Full-precision ``per`` values (log periods) where the md file's 3-significant-digit
#: rounding matters: an error δ in a log period drifts the phase by δ·(x-span/period)
#: cycles, i.e. up to 4 cycles of the weekly period of ``12-births`` (per=-3.95) and a
#: quarter cycle of the daily periods of ``06-internet``. Keyed by series, then by the
#: index of the ``Per`` leaf in left-to-right order. Same result files as
#: :data:`GPSS_LIK_SF`.
GPSS_PRECISE_PERIODS: dict[str, dict[int, float]] = {
    "06-internet": {0: -6.03606847972, 1: -5.90005662549},
    "12-births": {0: -3.95469030828},
}

# GPSS base-kernel names -> ours, and the parameters each takes.
_BASES = {
    "SE": ("SE", ("len", "sf")),
    "Per": ("PER", ("len", "per", "sf")),
    "RQ": ("RQ", ("len", "alp", "sf")),
    "Lin": ("LIN", ("loc", "invsf", "offset")),
    "C": ("C", ("sf",)),
}


class GpssParseError(ValueError):
    """A GPSS kernel string could not be read or has no equivalent in our grammar."""


@dataclass(frozen=True)
class Leaf:
    """A GPSS base kernel with its published parameters."""

    name: str  # GPSS name: SE, Per, RQ, Lin, C
    params: dict[str, float]


#: A parsed GPSS kernel: a :class:`Leaf`, or ``("+" | "*", [children])``.
Node = Leaf | tuple


# --- parsing --------------------------------------------------------------------------

_TOKEN = re.compile(r"(?P<name>[A-Za-z]+)|(?P<params>\[[^\]]*\])|(?P<op>[×*+()])")


def _tokens(text: str) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    pos = 0
    while pos < len(text):
        if text[pos].isspace():
            pos += 1
            continue
        m = _TOKEN.match(text, pos)
        if m is None:
            raise GpssParseError(f"cannot read GPSS kernel at position {pos}: {text[pos:pos + 30]!r}")
        kind = m.lastgroup or ""
        out.append((kind, m.group(kind)))
        pos = m.end()
    return out


def _params(text: str, name: str) -> dict[str, float]:
    body = text[1:-1].strip()
    out: dict[str, float] = {}
    for part in body.split(","):
        if "=" not in part:
            raise GpssParseError(f"{name}: expected key=value, got {part!r}")
        k, v = part.split("=", 1)
        try:
            out[k.strip()] = float(v)
        except ValueError:
            raise GpssParseError(f"{name}: {k.strip()} is not a number ({v!r})") from None
    return out


def parse_gpss(text: str) -> Node:
    """Parse a GPSS parameterised kernel string (``×`` binds tighter than ``+``).

    Raises
    ------
    GpssParseError
        For syntax errors, and for kernels our grammar cannot write (change points and
        windows ``CP``/``CW``, white noise ``WN``, spectral ``SM``, ``PerF``, ``PureLin``).
    """
    toks = _tokens(text)
    pos = 0

    def peek() -> tuple[str, str] | None:
        return toks[pos] if pos < len(toks) else None

    def take() -> tuple[str, str]:
        nonlocal pos
        if pos >= len(toks):
            raise GpssParseError("unexpected end of the kernel string")
        pos += 1
        return toks[pos - 1]

    def atom() -> Node:
        kind, val = take()
        if kind == "op" and val == "(":
            node = expr()
            k2, v2 = take()
            if v2 != ")":
                raise GpssParseError(f"expected ')', got {v2!r}")
            return node
        if kind != "name":
            raise GpssParseError(f"expected a base kernel, got {val!r}")
        if val not in _BASES:
            raise GpssParseError(f"base kernel {val!r} has no equivalent in our grammar "
                                 f"(supported: {', '.join(_BASES)})")
        k2, v2 = take()
        if k2 != "params":
            raise GpssParseError(f"{val}: expected [parameters], got {v2!r}")
        params = _params(v2, val)
        want = set(_BASES[val][1])
        if set(params) != want:
            raise GpssParseError(f"{val}: expected parameters {sorted(want)}, got {sorted(params)}")
        return Leaf(val, params)

    def term() -> Node:
        items = [atom()]
        while (p := peek()) is not None and p[0] == "op" and p[1] in ("×", "*"):
            take()
            items.append(atom())
        return items[0] if len(items) == 1 else ("*", items)

    def expr() -> Node:
        items = [term()]
        while (p := peek()) is not None and p[0] == "op" and p[1] == "+":
            take()
            items.append(term())
        return items[0] if len(items) == 1 else ("+", items)

    node = expr()
    if pos != len(toks):
        raise GpssParseError(f"unexpected {toks[pos][1]!r} after the end of the kernel")
    return _flatten(node)


def _flatten(node: Node) -> Node:
    if isinstance(node, Leaf):
        return node
    op, kids = node
    out: list[Node] = []
    for c in (_flatten(k) for k in kids):
        if not isinstance(c, Leaf) and c[0] == op:
            out.extend(c[1])
        else:
            out.append(c)
    return (op, out)


def structure(node: Node) -> str | list:
    """The :func:`evocov_core.language.library.compose` structure of a parsed kernel."""
    if isinstance(node, Leaf):
        return _BASES[node.name][0]
    op, kids = node
    return [op, *(structure(k) for k in kids)]


def leaves(node: Node) -> list[Leaf]:
    """Base kernels in left-to-right order (the order :func:`compose` numbers slots in)."""
    if isinstance(node, Leaf):
        return [node]
    return [leaf for k in node[1] for leaf in leaves(k)]


# --- the md file -------------------------------------------------------------------------


@dataclass(frozen=True)
class GpssEntry:
    """One ``**GPSS**`` entry of ``gpss_kernels.md``."""

    series: str
    text: str
    nll: float
    ndata: int
    test_rmse: float
    source: str

    @property
    def tree(self) -> Node:
        """The kernel exactly as printed in the md file."""
        return parse_gpss(self.text)

    @property
    def precise_tree(self) -> Node:
        """The kernel with :data:`GPSS_PRECISE_PERIODS` replacing the rounded periods."""
        fixes = GPSS_PRECISE_PERIODS.get(self.series, {})
        count = [0]

        def fix(n: Node) -> Node:
            if isinstance(n, Leaf):
                if n.name != "Per":
                    return n
                k = count[0]
                count[0] += 1
                return Leaf(n.name, {**n.params, "per": fixes[k]}) if k in fixes else n
            return (n[0], [fix(c) for c in n[1]])

        return fix(self.tree) if fixes else self.tree


_ENTRY = re.compile(
    r"- \*\*GPSS\*\* — `(?P<src>[^`]+)` \(level \d+, nll=(?P<nll>[-0-9.eE+]+), ndata=(?P<nd>\d+)\), "
    r"test RMSE (?P<rmse>[-0-9.eE+]+)\s*\n\s*- `(?P<expr>[^`]+)`")


def read_gpss_entries(path: str | Path) -> dict[str, GpssEntry]:
    """The 13 GPSS entries of ``gpss_kernels.md``, by series name (e.g. ``01-airline``)."""
    text = Path(path).read_text(encoding="utf-8")
    out: dict[str, GpssEntry] = {}
    sections = re.split(r"^### ", text, flags=re.MULTILINE)[1:]
    for sec in sections:
        series = sec.split("\n", 1)[0].strip()
        m = _ENTRY.search(sec)
        if m is None:
            continue
        out[series] = GpssEntry(series, m.group("expr").strip(), float(m.group("nll")), int(m.group("nd")),
                                float(m.group("rmse")), m.group("src"))
    return out


# --- conversion ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Conversion:
    """A GPSS kernel in our grammar with its published values in model units.

    Attributes
    ----------
    kernel : Kernel
        ``compose(structure)``.
    structure : str or list
    theta : tuple of float
        Log slot values (model units), ordered as ``kernel.slots``.
    log_noise : float
        Log noise variance (model units) from :data:`GPSS_LIK_SF`, or NaN when unknown.
    notes : tuple of str
        Values that had to be changed (clipped shifts).
    """

    kernel: Kernel
    structure: str | list
    theta: tuple[float, ...]
    log_noise: float
    notes: tuple[str, ...] = field(default=())


def _leaf_values(leaf: Leaf, carry_scale: bool, x_min: float, x_span: float, log_ystd: float,
                 notes: list[str]) -> list[float]:
    """Log slot values of one base kernel, in the slot order of its builder."""
    p = leaf.params
    ly = log_ystd if carry_scale else 0.0
    lx = math.log(x_span)
    if leaf.name == "SE":  # (amplitude, lengthscale)
        return [p["sf"] - ly, p["len"] - lx]
    if leaf.name == "Per":  # (amplitude, lengthscale, frequency)
        return [p["sf"] - ly, p["len"], math.log(2.0 * math.pi) + lx - p["per"]]
    if leaf.name == "RQ":  # (amplitude, lengthscale, alpha)
        return [p["sf"] - ly, p["len"] - lx, p["alp"]]
    if leaf.name == "Lin":  # (offset c, shift, scale)
        shift = 1.0 + (p["loc"] - x_min) / x_span
        if shift <= 0:
            notes.append(f"Lin[loc={p['loc']:g}]: shift {shift:.4g} <= 0 clipped to {MIN_SHIFT:g}")
            shift = MIN_SHIFT
        return [p["offset"] - ly, math.log(shift), 2.0 * p["invsf"] - 2.0 * lx + 2.0 * ly]
    if leaf.name == "C":  # (c)
        return [p["sf"] - ly]
    raise GpssParseError(f"no conversion for {leaf.name}")  # pragma: no cover - parse refuses these


def convert(node: Node | str, ds: Dataset, *, lik_sf: float | None = None) -> Conversion:
    """Our kernel and model-unit values for a parsed (or textual) GPSS kernel on ``ds``.

    Parameters
    ----------
    node : parsed kernel or str
    ds : Dataset
        The series with its published split: the normalisation is fitted on its training part.
    lik_sf : float, optional
        GPSS's log noise standard deviation (original units).
    """
    if isinstance(node, str):
        node = parse_gpss(node)
    nm = ds.norm
    x_min, x_span = nm.x_offset[0], nm.x_scale[0]
    log_ystd = math.log(nm.y_std)
    notes: list[str] = []
    values: list[float] = []

    def walk(n: Node, carry: bool) -> None:
        if isinstance(n, Leaf):
            values.extend(_leaf_values(n, carry, x_min, x_span, log_ystd, notes))
            return
        op, kids = n
        for i, k in enumerate(kids):
            walk(k, carry if op == "+" else (carry and i == 0))

    walk(node, True)
    struct = structure(node)
    kernel = compose(struct)
    if kernel.n_params != len(values):  # pragma: no cover - builders and converters agree
        raise AssertionError(f"{kernel.n_params} slots but {len(values)} values")
    log_noise = 2.0 * lik_sf - 2.0 * log_ystd if lik_sf is not None else math.nan
    return Conversion(kernel, struct, tuple(values), log_noise, tuple(notes))


# --- verification ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Verification:
    """Our evaluation of a converted GPSS kernel against the published numbers.

    ``lml_gpss_convention`` is our LML on GPSS's data convention (zero mean on ``y/s_y``,
    not centred), directly comparable with ``expected_lml = −nll + n·log s_y``;
    ``lml_model`` is the LML on our centred model units. The RMSEs use the published
    values and noise; ``rmse_gpss_convention`` predicts with a zero mean on raw y (as GPSS
    did), ``rmse_model`` as our models do (centred y).
    """

    series: str
    n: int
    nll_published: float
    expected_lml: float
    lml_gpss_convention: float
    lml_model: float
    rmse_published: float
    rmse_gpss_convention: float
    rmse_model: float
    q: int
    notes: tuple[str, ...]

    @property
    def lml_difference(self) -> float:
        """Our LML minus the published one (GPSS convention), nats."""
        return self.lml_gpss_convention - self.expected_lml

    @property
    def rmse_ratio(self) -> float:
        """Our test RMSE with the published values over the published test RMSE."""
        return self.rmse_gpss_convention / self.rmse_published


def verify(entry: GpssEntry, ds: Dataset, *, precise: bool = True) -> Verification:
    """Evaluate the converted published kernel on ``ds`` and compare with GPSS's numbers.

    ``LML_model = −nll + n·log s_y``: the density of ``ỹ = (y − ȳ)/s_y`` is ``s_yⁿ``
    times that of y (the shift does not change densities; zero-mean GPSS and centred
    models differ, hence the two conventions, see :class:`Verification`). ``precise``
    uses :attr:`GpssEntry.precise_tree`, else the md file's rounded values.
    """
    from evocov_core.fitting.gp import lml as gp_lml
    from evocov_core.fitting.gp import posterior
    from evocov_core.fitting.metrics import rmse
    from evocov_core.language.evaluate import Inputs

    conv = convert(entry.precise_tree if precise else entry.tree, ds, lik_sf=GPSS_LIK_SF.get(entry.series))
    nm = ds.norm
    X = nm.x_to_model(ds.X_train)
    Xt = nm.x_to_model(ds.X_test)
    inputs = Inputs(X)
    theta = np.asarray(conv.theta)
    log_noise = conv.log_noise if math.isfinite(conv.log_noise) else math.log(1e-6)
    y_raw = ds.y_train / nm.y_std  # GPSS: zero mean, raw y (scaled)
    y_model = nm.y_to_model(ds.y_train)
    n = ds.n_train
    lml_raw, jit_raw = gp_lml(conv.kernel, inputs, y_raw, theta, log_noise)
    lml_mod, jit_mod = gp_lml(conv.kernel, inputs, y_model, theta, log_noise)
    post_raw = posterior(conv.kernel, inputs, y_raw, theta, log_noise, Xt, jitter=jit_raw)
    post_mod = posterior(conv.kernel, inputs, y_model, theta, log_noise, Xt, jitter=jit_mod)
    r_raw = rmse(ds.y_test, post_raw.mean * nm.y_std)
    r_mod = rmse(ds.y_test, nm.y_from_model(post_mod.mean))
    return Verification(entry.series, n, entry.nll, -entry.nll + n * math.log(nm.y_std), float(lml_raw),
                        float(lml_mod), entry.test_rmse, r_raw, r_mod, conv.kernel.q, conv.notes)

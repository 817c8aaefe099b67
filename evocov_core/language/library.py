"""Well-known kernels (the paper's Table 1) and GPSS/ABCD base kernels, written in the grammar.

Each builder returns a :class:`Kernel` whose slots it names, so that compositions can
be built with fresh slots (:func:`compose`). Hyperparameters follow Table 1::

    CON   θc                                       hp(c)
    WN    θc δ(x, x')                              the model's noise term (see below)
    E     θ0² exp(−r)                              r = ||x − x'|| / θl
    γ-E   θ0² exp(−r^γ)
    SE    θ0² exp(−r²/2)
    M12   θ0² exp(−r)
    M32   θ0² (1 + √3 r) exp(−√3 r)
    M52   θ0² (1 + √5 r + 5r²/3) exp(−√5 r)
    RQ    θ0² (1 + r²/(2α))^(−α)
    PER   θ0² exp(−2 sin²(π ||x − x'|| / p) / θl²)   spectral frequency ω = 2π/p
    LIN   (x − θs)·(x' − θs) / θl
    W     θ0² min(t, t')                             local level (Wiener process from the first input)
    IW    θ0² (m²M/2 − m³/6)                          local trend (integrated Wiener process)
    DT    θ0² θτ² [φ(t/θτ) + φ(t'/θτ) − φ(|t − t'|/θτ)]   damped trend (integrated OU slope)

``t`` is the time since the first training input; W, IW and DT are the state-space forms of the
grammar's family ``statespace`` (:mod:`evocov_core.language.grammar`). :data:`ETS_FORMS` writes with them the
Gaussian-process forms of the exponential-smoothing models (simple, Holt, damped Holt, and their
Holt-Winters versions with a periodic term).

White noise needs a Kronecker delta, which the grammar does not have: as in the paper,
every model adds a white-noise variance to K(X, X). :func:`white_noise` returns the zero
kernel ``add(1, -1)``, so the model ``zero + noise`` *is* WN.

scikit-learn equivalents (tested to 1e-10 in ``tests/language/test_library.py``)::

    SE  = C(θ0²)·RBF(θl)            M12/E = C(θ0²)·Matern(θl, ν=0.5)
    M32 = C(θ0²)·Matern(θl, ν=1.5)  M52   = C(θ0²)·Matern(θl, ν=2.5)
    RQ  = C(θ0²)·RationalQuadratic(θl, α)
    PER = C(θ0²)·ExpSineSquared(θl, p = 2π/ω)
    LIN = DotProduct(σ0=0) on X − θs, divided by θl
    CON = ConstantKernel(θc)        WN = WhiteKernel(θc) (noise term)
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

from evocov_core.language.kernel import Kernel

__all__ = ["BASE_KERNELS", "ETS_FORMS", "GPSS_PUBLISHED", "WELL_KNOWN", "compose", "constant", "damped_trend",
           "exponential", "gamma_exponential", "linear", "local_level", "local_trend", "matern12", "matern32",
           "matern52", "periodic", "rational_quadratic", "squared_exponential", "structure_text", "white_noise"]

Tokens = list[str]


def _amp(s: str) -> Tokens:
    # θ0² written as square(hp(θ0)), as in Table 1.
    return ["square", "hp", s]


def _r2(lengthscale: str) -> Tokens:
    return ["sq_dist", "euc", "x", lengthscale]


def _times(a: Tokens, b: Tokens) -> Tokens:
    return ["multiply", *a, *b]


def constant(c: str = "hp0") -> Kernel:
    """CON: ``θc``."""
    return Kernel(("hp", c))


def white_noise() -> Kernel:
    """WN: the zero kernel ``1 + (−1)``; the model's noise variance supplies ``θc δ``."""
    return Kernel(("add", "1", "-1"))


def squared_exponential(amplitude: str = "hp0", lengthscale: str = "hp1") -> Kernel:
    """SE: ``θ0² exp(−½ ||x − x'||²/θl²)``."""
    return Kernel(tuple(_times(_amp(amplitude), ["exp", "multiply", "-0.5", *_r2(lengthscale)])))


def exponential(amplitude: str = "hp0", lengthscale: str = "hp1") -> Kernel:
    """E (= M12): ``θ0² exp(−||x − x'||/θl)``."""
    r = ["sqrt", *_r2(lengthscale)]
    return Kernel(tuple(_times(_amp(amplitude), ["exp", "multiply", "-1", *r])))


matern12 = exponential


def gamma_exponential(amplitude: str = "hp0", lengthscale: str = "hp1", gamma: str = "hp2") -> Kernel:
    """γ-E: ``θ0² exp(−r^γ)``, PSD for 0 < γ ≤ 2."""
    r_g = ["power", "sqrt", *_r2(lengthscale), gamma]
    return Kernel(tuple(_times(_amp(amplitude), ["exp", "multiply", "-1", *r_g])))


def matern32(amplitude: str = "hp0", lengthscale: str = "hp1") -> Kernel:
    """M32: ``θ0² (1 + u) exp(−u)`` with ``u = √3 r = sqrt(3 r²)``."""
    u = ["sqrt", "multiply", "3", *_r2(lengthscale)]
    body = ["multiply", "add", "1", *u, "exp", "multiply", "-1", *u]
    return Kernel(tuple(_times(_amp(amplitude), body)))


def matern52(amplitude: str = "hp0", lengthscale: str = "hp1") -> Kernel:
    """M52: ``θ0² (1 + v + v²/3) exp(−v)`` with ``v = √5 r`` (so ``5r²/3 = v²/3``)."""
    v = ["sqrt", "multiply", "5", *_r2(lengthscale)]
    poly = ["add", "add", "1", *v, "multiply", "square", *v, "div", "3"]
    body = ["multiply", *poly, "exp", "multiply", "-1", *v]
    return Kernel(tuple(_times(_amp(amplitude), body)))


def rational_quadratic(amplitude: str = "hp0", lengthscale: str = "hp1", alpha: str = "hp2") -> Kernel:
    """RQ: ``θ0² (1 + r²/(2α))^(−α)``; α is one slot used twice."""
    base = ["add", "1", "multiply", *_r2(lengthscale), "div", "multiply", "2", "hp", alpha]
    return Kernel(tuple(_times(_amp(amplitude), ["div", "power", *base, alpha])))


def periodic(amplitude: str = "hp0", lengthscale: str = "hp1", frequency: str = "hp2") -> Kernel:
    """PER: ``θ0² exp(−2 sin²(π||x − x'||/p)/θl²)`` with the slot holding ``ω = 2π/p``.

    ``sq_dist(spectral(x, ω), θl) = 4 sin²(ω Δ/2)/θl²``, so ``−½`` of it is the exponent.
    """
    d = ["sq_dist", "spectral", "x", frequency, lengthscale]
    return Kernel(tuple(_times(_amp(amplitude), ["exp", "multiply", "-0.5", *d])))


def linear(shift: str = "hp0", scale: str = "hp1") -> Kernel:
    """LIN: ``(x − θs)·(x' − θs)/θl``."""
    return Kernel(("dot_prod", "euc", "x", shift, scale))


def local_level(amplitude: str = "hp0") -> Kernel:
    """W: ``θ0² min(t, t')``, a level that wanders as a random walk from the first training input."""
    return Kernel(tuple(_times(_amp(amplitude), ["wiener", "x"])))


def local_trend(amplitude: str = "hp0") -> Kernel:
    """IW: ``θ0²`` times the integrated Wiener process, a slope that wanders as a random walk."""
    return Kernel(tuple(_times(_amp(amplitude), ["iwiener", "x"])))


def damped_trend(amplitude: str = "hp0", timescale: str = "hp1") -> Kernel:
    """DT: ``θ0²`` times the integral of a slope that reverts to zero within about ``θτ``."""
    return Kernel(tuple(_times(_amp(amplitude), ["damped", "x", timescale])))


#: Table 1 kernels by name, with default slots.
WELL_KNOWN: dict[str, Callable[[], Kernel]] = {
    "CON": constant,
    "WN": white_noise,
    "E": exponential,
    "gamma-E": gamma_exponential,
    "SE": squared_exponential,
    "M12": matern12,
    "M32": matern32,
    "M52": matern52,
    "RQ": rational_quadratic,
    "PER": periodic,
    "LIN": linear,
}


def _gpss_lin(offset: str, shift: str, scale: str) -> Kernel:
    # GPSS's LinOLD is covSum{covConst, covLINscaleshift}: c² + (x − loc)(x' − loc)/ℓ².
    return Kernel(("add", "square", "hp", offset, *linear(shift, scale).tokens))


#: GPSS/ABCD base kernels and their slot counts: builders taking fresh slot names.
BASE_KERNELS: dict[str, tuple[int, Callable[..., Kernel]]] = {
    "SE": (2, squared_exponential),
    "PER": (3, periodic),
    "LIN": (3, _gpss_lin),
    "RQ": (3, rational_quadratic),
    "C": (1, lambda c: Kernel(("square", "hp", c))),
    "M12": (2, matern12),
    "W": (1, local_level),
    "IW": (1, local_trend),
    "DT": (2, damped_trend),
    # 1 + PER: a seasonal factor about one, for the multiplicative Holt-Winters forms.
    "SF": (3, lambda a, l_, f: Kernel(("add", "1", *periodic(a, l_, f).tokens))),
}

#: The Gaussian-process forms of the exponential-smoothing models ETS chooses among, in ETS's
#: notation (error, trend, season: N none, A additive, Ad damped, M multiplicative), as
#: :func:`compose` structures. The initial level is the constant C, Holt's initial level and slope
#: GPSS's LIN (a constant plus a line of random slope); the seasonal forms add a periodic term, or
#: multiply the level by a seasonal factor about one. The seasonal ones need the series' period.
ETS_FORMS: dict[str, list | str] = {
    "ANN": ["+", "C", "W"],
    "AAN": ["+", "LIN", "W", "IW"],
    "AAdN": ["+", "C", "W", "DT"],
    "ANA": ["+", "C", "W", "PER"],
    "AAA": ["+", "LIN", "W", "IW", "PER"],
    "AAdA": ["+", "C", "W", "DT", "PER"],
    "ANM": ["*", ["+", "C", "W"], "SF"],
    "AAdM": ["*", ["+", "C", "W", "DT"], "SF"],
}


def _fresh(start: int) -> Iterator[str]:
    k = start
    while True:
        yield f"hp{k}"
        k += 1


def compose(expr: str | list, start: int = 0) -> Kernel:
    """Build a GPSS-style sum/product of base kernels with fresh slots.

    Parameters
    ----------
    expr : str or nested list
        A base-kernel name (``"SE"``, ``"PER"``, ``"LIN"``, ``"RQ"``, ``"C"``), or
        ``["+", a, b, ...]`` / ``["*", a, b, ...]`` of such expressions.
    start : int
        First slot number to use.

    Examples
    --------
    >>> compose(["+", "SE", ["*", "PER", "SE"]]).q
    8
    """
    slots = _fresh(start)

    def build(e: str | list) -> list[str]:
        if isinstance(e, str):
            if e not in BASE_KERNELS:
                raise ValueError(f"unknown base kernel {e!r}; expected one of {sorted(BASE_KERNELS)}")
            n, make = BASE_KERNELS[e]
            return list(make(*[next(slots) for _ in range(n)]).tokens)
        if not e or e[0] not in ("+", "*") or len(e) < 3:
            raise ValueError(f"expected ['+' or '*', operand, operand, ...], got {e!r}")
        op = "add" if e[0] == "+" else "multiply"
        acc = build(e[1])
        for operand in e[2:]:
            acc = [op, *acc, *build(operand)]
        return acc

    return Kernel(tuple(build(expr)))


#: Kernel structures GPSS found on the 13 TSDL extrapolation series (Duvenaud et al. 2013,
#: the "GPSS-orig" rerun of github.com/jamesrobertlloyd/gpss-research, results/2014-03-19;
#: listed in ../shared/data/tsdl/gpss_kernels.md). Facts, offered as presets; the
#: hyperparameters are refitted on whatever data they are applied to.
GPSS_PUBLISHED: dict[str, list | str] = {
    "01-airline": ["*", "RQ", "LIN", ["+", "SE", ["*", "PER", "LIN"]]],
    "02-solar": ["*", "SE", ["+", "RQ", ["*", "PER", ["+", "SE", "SE"]]]],
    "03-mauna": ["*", ["+", "SE", "PER"], ["+", "SE", "RQ"]],
    "04-wheat": ["*", "RQ", "LIN"],
    "05-temperature": ["*", "SE", ["+", "RQ", "PER"]],
    "06-internet": ["*", "PER", ["+", "SE", ["*", "PER", ["+", "RQ", "RQ"]]]],
    "07-call-centre": ["*", "RQ", ["+", "PER", ["*", "RQ", "LIN", "LIN", "LIN"]]],
    "08-radio": ["*", "PER", ["+", "SE", "RQ"]],
    "09-gas-production": ["*", ["+", "LIN", ["*", "SE", "LIN", ["+", "RQ", "LIN"]]], ["+", "RQ", "PER"]],
    "10-sulphuric": ["*", "SE", "LIN", ["+", "SE", ["*", "RQ", "PER", "PER"]]],
    "11-unemployment": ["*", "RQ", "RQ", "LIN", ["+", "SE", "PER"]],
    "12-births": ["+", "SE", ["*", "RQ", ["+", "SE", "PER"]]],
    "13-wages": ["*", "LIN", "LIN", ["+", "RQ", "RQ"]],
}


def structure_text(expr: str | list) -> str:
    """GPSS-style text of a nested structure, e.g. ``RQ × LIN × (SE + PER × LIN)``."""
    if isinstance(expr, str):
        return expr
    parts = [structure_text(e) for e in expr[1:]]
    if expr[0] == "*":
        parts = [f"({p})" if isinstance(e, list) and e[0] == "+" else p for p, e in zip(parts, expr[1:], strict=True)]
        return " × ".join(parts)
    return " + ".join(parts)

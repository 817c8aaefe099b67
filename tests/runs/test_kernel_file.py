"""Versioned JSON kernel files: round trip, and the safe parser against hostile input."""

from __future__ import annotations

import builtins
import json
import math
import pickle

import numpy as np
import pytest
from deap import gp

from evocov_core.data import Dataset
from evocov_core.fitting.metrics import FitData
from evocov_core.fitting.optimize import FitResult, OptimConfig, fit_kernel
from evocov_core.language import library
from evocov_core.language.evaluate import covariance
from evocov_core.language.kernel import Kernel
from evocov_core.runs.kernel_file import (
    FORMAT,
    MAX_FILE_BYTES,
    VERSION,
    KernelFileError,
    dump_kernel_file,
    kernel_file_dict,
    load_kernel_file,
    parse_expression,
    parse_kernel_file,
)

# --- helpers -------------------------------------------------------------------------------------


def _valid_doc(**changes):
    """A minimal valid kernel-file document for SE (hp0 amplitude, hp1 lengthscale)."""
    doc = {
        "format": FORMAT,
        "version": VERSION,
        "expression": library.squared_exponential().prefix,
        "hyperparameters": {"hp0": {"value": 1.5}, "hp1": {"value": 0.25}},
        "noise_variance": 0.01,
        "jitter": 0.0,
        "q": 3,
    }
    for key, value in changes.items():
        if value is _DROP:
            doc.pop(key)
        else:
            doc[key] = value
    return doc


_DROP = object()


def _text(doc):
    return json.dumps(doc, allow_nan=True)


@pytest.fixture
def no_code_execution(monkeypatch):
    """Make eval, exec, pickle.loads and DEAP's from_string raise if anything calls them."""

    def forbidden(*_args, **_kwargs):
        raise AssertionError("code execution / unpickling was attempted while parsing")

    for name in ("eval", "exec"):
        monkeypatch.setattr(builtins, name, forbidden)
    monkeypatch.setattr(pickle, "loads", forbidden)
    monkeypatch.setattr(pickle, "load", forbidden)
    monkeypatch.setattr(gp.PrimitiveTree, "from_string", classmethod(forbidden))
    monkeypatch.setattr(gp, "compile", forbidden)


@pytest.fixture(scope="module")
def fitted():
    """An SE kernel fitted on small synthetic data, with its dataset."""
    rng = np.random.default_rng(0)
    x = np.sort(rng.uniform(1950, 1960, 40))
    y = 3.0 * np.sin(x) + 0.1 * rng.standard_normal(40) + 100
    ds = Dataset.from_arrays(x, y, name="synthetic")
    data = FitData.from_dataset(ds)
    kernel = library.compose(["+", "SE", ["*", "PER", "C"]])
    fit = fit_kernel(kernel, data, OptimConfig(n_restarts=2, max_evals=40), np.random.default_rng(1))
    assert fit.ok
    return fit, ds, data


# --- round trip ----------------------------------------------------------------------------------


def test_round_trip_identical_covariance(fitted, no_code_execution):
    """fit -> dict -> JSON text -> parse gives the same expression, q and exactly the same covariance."""
    fit, ds, data = fitted
    doc = kernel_file_dict(fit, ds.norm, dataset=ds.name, n_test=ds.n_test, test_fraction=ds.test_fraction)
    text = dump_kernel_file(doc)
    kf = parse_kernel_file(text)
    assert kf.kernel == fit.kernel
    assert kf.kernel.prefix == doc["expression"]
    assert kf.q == fit.q == doc["q"]
    np.testing.assert_array_equal(covariance(kf.kernel, data.X, kf.theta), covariance(fit.kernel, data.X, fit.theta))
    np.testing.assert_allclose(kf.theta, fit.theta, rtol=0, atol=1e-15)
    assert kf.log_noise == pytest.approx(fit.log_noise, abs=1e-15)
    assert kf.jitter == fit.jitter
    assert kf.normalisation == ds.norm
    assert kf.scores["bic"] == pytest.approx(fit.bic) and kf.scores["dataset"] == "synthetic"
    # Bytes and a file on disk parse the same.
    assert parse_kernel_file(text.encode("utf-8")) == kf


def test_round_trip_via_file(fitted, tmp_path):
    """load_kernel_file reads what dump_kernel_file wrote."""
    fit, ds, _ = fitted
    path = tmp_path / "k.json"
    path.write_text(dump_kernel_file(kernel_file_dict(fit, ds.norm)), encoding="utf-8")
    kf = load_kernel_file(path)
    assert kf.kernel == fit.kernel and kf.q == fit.q
    with pytest.raises(KernelFileError, match="no such file"):
        load_kernel_file(tmp_path / "missing.json")
    big = tmp_path / "big.json"
    big.write_bytes(b" " * (MAX_FILE_BYTES + 1))
    with pytest.raises(KernelFileError, match="above the limit"):
        load_kernel_file(big)


def test_dump_is_strict_json(fitted):
    """dump_kernel_file refuses NaN/Infinity rather than writing non-standard JSON."""
    fit, ds, _ = fitted
    doc = kernel_file_dict(fit, ds.norm)
    doc["noise_variance"] = math.nan
    with pytest.raises(ValueError):
        dump_kernel_file(doc)


def test_document_fields(fitted):
    """The document holds format, version, readable forms, roles and natural (not log) values."""
    fit, ds, _ = fitted
    doc = kernel_file_dict(fit, ds.norm)
    assert doc["format"] == FORMAT and doc["version"] == VERSION
    assert doc["canonical"] == fit.kernel.canonical and doc["infix"] == fit.kernel.infix
    for s, t in zip(fit.kernel.slots, fit.theta, strict=True):
        assert doc["hyperparameters"][s]["value"] == pytest.approx(math.exp(t))
    assert doc["hyperparameters"]["hp4"]["roles"] == ["frequency"]
    assert doc["noise_variance"] == pytest.approx(math.exp(fit.log_noise))


def test_round_trip_exact_for_every_theta():
    """For any fitted log value t, the file reproduces K exactly (t chosen where log∘exp drifts by an ulp)."""
    rng = np.random.default_rng(0)
    candidates = rng.uniform(-5, 5, 20_000)
    drift = np.exp([math.log(math.exp(v)) for v in candidates]) != np.exp(candidates)
    # Such values exist with most libm builds (about 1 % of them); where none does, any value will do.
    t = float(candidates[np.flatnonzero(drift)[0]] if drift.any() else candidates[0])
    kernel = Kernel(("hp", "hp0"))
    fit = FitResult(kernel, (t,), math.log(0.1), 0.0, "ok", "", "lml", 0.0, 0.0, 1.0, 2, 10, 1, 0.0)
    kf = parse_kernel_file(dump_kernel_file(kernel_file_dict(fit, None)))
    X = np.arange(3.0)
    np.testing.assert_array_equal(covariance(kf.kernel, X, kf.theta), covariance(kernel, X, fit.theta))


def test_plain_number_hyperparameters_and_optional_fields():
    """A hyperparameter may be a bare number; jitter, q, normalisation and scores are optional."""
    doc = _valid_doc(hyperparameters={"hp0": 2.0, "hp1": {"value": 0.5}}, q=_DROP, jitter=_DROP)
    kf = parse_kernel_file(_text(doc))
    assert kf.theta == (math.log(2.0), math.log(0.5))
    assert kf.jitter == 0.0 and kf.normalisation is None and kf.scores == {}


# --- parse_expression ------------------------------------------------------------------------------


def test_parse_expression_reads_every_library_kernel(no_code_execution):
    """The prefix form of every library kernel and composition parses back to the same tree."""
    kernels = [make() for make in library.WELL_KNOWN.values()]
    kernels.append(library.compose(["+", "SE", ["*", "PER", ["+", "LIN", "RQ"]]]))
    kernels.append(Kernel(("dot_prod", "spectral", "x", "hp0", "hp1", "hp2")))
    for k in kernels:
        assert parse_expression(k.prefix) == k
        assert parse_expression("  " + k.prefix.replace(", ", " ,\n\t") + "  ") == k


HOSTILE_EXPRESSIONS = [
    ("__import__('os').system('echo hi')", "unknown symbol '__import__'"),
    ("foo(x)", "unknown symbol 'foo'"),
    ("eval(hp(hp0))", "unknown symbol 'eval'"),
    ("exec('import os')", "unknown symbol 'exec'"),
    ("lambda: 1", "unknown symbol 'lambda'"),
    ("(lambda x: x)(1)", r"unexpected '\('"),
    ("hp(hp0); import os", "unexpected character ';'"),
    ("hp(hp0).__class__", "unexpected character '.'"),
    ("add(hp(hp0),", "incomplete"),
    ("add(hp(hp0), ", "incomplete"),
    ("add(", "incomplete"),
    ("hp(hp0))", "after the end of the expression"),
    ("hp(hp0) hp(hp1)", "after the end of the expression"),
    ("hp(hp0(", r"unexpected '\('"),
    ("sq_dist(euc(x()), hp0)", r"unexpected '\('"),
    ("1(2)", r"unexpected '\('"),
    ("exp(hp(hp0), 1)", "too many arguments for 'exp'"),
    ("add(1)", "'add' takes 2 arguments"),
    ("exp()", r"unexpected '\)'"),
    ("add(1,,2)", "unexpected ','"),
    ("exp 1", "must be followed by '\\('"),
    ("sq_dist(hp(hp0), hp1)", "ill-typed"),
    ("hp0", "ill-typed"),
    ("x", "ill-typed"),
    ("power(hp(hp0), 2)", "ill-typed"),
    ("hp(hp10000)", "unknown symbol"),
    ("exp(1e999)", "missing ',' or '\\)'"),
    ("exp(4)", "unknown symbol '4'"),
    ("", "empty"),
    ("   ", "empty"),
]


@pytest.mark.parametrize(("text", "message"), HOSTILE_EXPRESSIONS, ids=[t for t, _ in HOSTILE_EXPRESSIONS])
def test_hostile_expressions_refused(text, message, no_code_execution):
    """Each malformed or hostile expression is refused with a KernelFileError naming the problem."""
    with pytest.raises(KernelFileError, match=message):
        parse_expression(text)
    # The same expression inside a file is refused the same way.
    with pytest.raises(KernelFileError, match=message):
        parse_kernel_file(_text(_valid_doc(expression=text)))


@pytest.mark.parametrize("bad", [None, 3, ["hp", "hp0"], {"a": 1}])
def test_expression_must_be_a_string(bad):
    """A non-string expression is refused."""
    with pytest.raises(KernelFileError, match="expression must be a string"):
        parse_kernel_file(_text(_valid_doc(expression=bad)))


def test_deep_nesting_refused_without_recursion(no_code_execution):
    """10^5 nested ``exp(`` and a 1000-deep chain are refused quickly, without RecursionError."""
    with pytest.raises(KernelFileError, match="characters long"):
        parse_expression("exp(" * 100_000 + "1" + ")" * 100_000)
    with pytest.raises(KernelFileError, match="deeper than the limit of 40"):
        parse_expression("exp(" * 1000 + "1" + ")" * 1000)
    with pytest.raises(KernelFileError, match="deeper than the limit of 40"):
        parse_kernel_file(_text(_valid_doc(expression="exp(" * 1000 + "1" + ")" * 1000)))
    # 40 levels is the limit itself and is accepted.
    k = parse_expression("exp(" * 40 + "1" + ")" * 40)
    assert k.depth == 40


def test_node_limit():
    """A wide expression with too many nodes is refused."""
    text = "add(" * 1500 + "1" + ", 1)" * 1500  # 3001 nodes, depth 1500
    with pytest.raises(KernelFileError, match="more than 2000 nodes"):
        parse_expression(text, max_depth=10_000)


def test_slot_pool_bound():
    """n_hyper bounds the slot numbers."""
    assert parse_expression("hp(hp9999)").slots == ("hp9999",)
    with pytest.raises(KernelFileError, match="outside the pool"):
        parse_expression("hp(hp20)", n_hyper=20)


# --- parse_kernel_file: hostile documents ----------------------------------------------------------


@pytest.mark.parametrize("as_bytes", [False, True])
def test_ten_megabyte_input_refused(as_bytes, no_code_execution):
    """A 10 MB document (str or bytes) is refused by size before JSON parsing."""
    text = '{"expression": "' + "a" * 10_000_000 + '"}'
    with pytest.raises(KernelFileError, match="above the limit"):
        parse_kernel_file(text.encode() if as_bytes else text)


@pytest.mark.parametrize("literal", ["NaN", "Infinity", "-Infinity"])
@pytest.mark.parametrize("where", ["hp0", "noise_variance", "jitter", "q"])
def test_non_finite_literals_refused(literal, where):
    """NaN / Infinity / -Infinity anywhere a number is read are refused, naming the literal."""
    text = _text(_valid_doc()).replace(
        {"hp0": '"hp0": {"value": 1.5}', "noise_variance": '"noise_variance": 0.01',
         "jitter": '"jitter": 0.0', "q": '"q": 3'}[where],
        {"hp0": f'"hp0": {{"value": {literal}}}', "noise_variance": f'"noise_variance": {literal}',
         "jitter": f'"jitter": {literal}', "q": f'"q": {literal}'}[where],
    )
    assert literal in text
    with pytest.raises(KernelFileError, match=f"{literal} is not allowed"):
        parse_kernel_file(text)


@pytest.mark.parametrize(
    ("old", "new", "message"),
    [
        ('"hp0": {"value": 1.5}', '"hp0": {"value": 1e999}', "hyperparameter hp0 must be finite"),
        ('"hp0": {"value": 1.5}', '"hp0": {"value": -1e999}', "hyperparameter hp0 must be finite"),
        ('"noise_variance": 0.01', '"noise_variance": 1e999', "noise_variance must be finite"),
        ('"jitter": 0.0', '"jitter": 1E400', "jitter must be finite"),
    ],
)
def test_overflowing_float_literals_refused(old, new, message):
    """1e999 parses as an infinite float; it is refused as not finite."""
    text = _text(_valid_doc())
    assert old in text
    with pytest.raises(KernelFileError, match=message):
        parse_kernel_file(text.replace(old, new))


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"hyperparameters": {"hp0": {"value": -1.0}, "hp1": 0.5}}, "hyperparameter hp0 must be positive"),
        ({"hyperparameters": {"hp0": 0, "hp1": 0.5}}, "hyperparameter hp0 must be positive"),
        ({"noise_variance": 0.0}, "noise_variance must be positive"),
        ({"noise_variance": -0.1}, "noise_variance must be positive"),
        ({"jitter": -1e-9}, "jitter must not be negative"),
        ({"hyperparameters": {"hp0": {"value": "1.5"}, "hp1": 0.5}}, "must be a number, not str"),
        ({"hyperparameters": {"hp0": {"value": True}, "hp1": 0.5}}, "must be a number, not bool"),
        ({"hyperparameters": {"hp0": {"value": [1.5]}, "hp1": 0.5}}, "must be a number, not list"),
        ({"hyperparameters": {"hp0": {"value": None}, "hp1": 0.5}}, "must be a number, not NoneType"),
        ({"hyperparameters": {"hp0": {}, "hp1": 0.5}}, "must be a number, not NoneType"),
        ({"noise_variance": "0.01"}, "noise_variance must be a number, not str"),
        ({"noise_variance": False}, "noise_variance must be a number, not bool"),
        ({"noise_variance": _DROP}, "noise_variance must be a number, not NoneType"),
        ({"q": "3"}, "q must be a number, not str"),
        ({"q": True}, "q must be a number, not bool"),
        ({"format": "pickle"}, "'format' must be 'evocov-kernel'"),
        ({"format": _DROP}, "'format' must be"),
        ({"version": 3}, "unsupported version 3; this program reads versions 1, 2"),
        ({"version": True}, "unsupported version True"),
        ({"version": "1"}, "unsupported version '1'"),
        ({"version": _DROP}, "unsupported version"),
        ({"hyperparameters": {"hp0": 1.5}}, "no value for hyperparameter 'hp1'"),
        ({"hyperparameters": {"hp0": 1.5, "hp1": 0.5, "hp2": 1.0}}, "'hp2' does not appear in the expression"),
        ({"hyperparameters": {"hp0": 1.5, "hp1": 0.5, "__class__": 1.0}}, "'__class__' does not appear"),
        ({"hyperparameters": [1.5, 0.5]}, "'hyperparameters' must be an object"),
        ({"hyperparameters": _DROP}, "'hyperparameters' must be an object"),
        ({"q": 4}, "q is 4 but the expression has q = 3"),
        ({"q": 2}, "q is 2 but the expression has q = 3"),
        ({"normalisation": [1, 2]}, "'normalisation' must be an object"),
        ({"normalisation": {"x_offset": [1.0], "x_scale": [2.0], "y_mean": 0.0}}, "normalisation lacks 'y_std'"),
        ({"normalisation": {"x_offset": [1.0], "x_scale": [], "y_mean": 0.0, "y_std": 1.0}}, "equal, non-zero"),
        ({"normalisation": {"x_offset": [1.0], "x_scale": [0.0], "y_mean": 0.0, "y_std": 1.0}},
         "x_scale must be positive"),
        ({"normalisation": {"x_offset": ["a"], "x_scale": [1.0], "y_mean": 0.0, "y_std": 1.0}},
         "x_offset must be a number"),
        ({"scores": [1, 2]}, "'scores' must be an object"),
    ],
)
def test_bad_documents_refused(changes, message, no_code_execution):
    """Each invalid field is refused with a KernelFileError whose message names it."""
    with pytest.raises(KernelFileError, match=message):
        parse_kernel_file(_text(_valid_doc(**changes)))


@pytest.mark.parametrize("text", ["[]", '"evocov-kernel"', "1", "null", "true", '[{"format": "evocov-kernel"}]'])
def test_non_object_json_refused(text):
    """The top level must be a JSON object."""
    with pytest.raises(KernelFileError, match="top level must be a JSON object"):
        parse_kernel_file(text)


@pytest.mark.parametrize("text", ["", "{", "{'format': 1}", "not json", '{"a": 1,}', "[" * 100_000])
def test_invalid_json_refused(text):
    """Text that is not JSON (including deeply nested arrays) is refused, without RecursionError."""
    with pytest.raises(KernelFileError, match="not valid JSON"):
        parse_kernel_file(text)


@pytest.mark.parametrize("data", [b"\xff\xfe\x00{", b'{"format": "\xc3\x28"}', b"\x80" * 10])
def test_invalid_utf8_refused(data):
    """Bytes that are not UTF-8 are refused."""
    with pytest.raises(KernelFileError, match="not UTF-8"):
        parse_kernel_file(data)


def test_hostile_inputs_never_execute_code(no_code_execution, tmp_path):
    """With eval/exec/pickle/from_string booby-trapped, valid files parse and hostile ones are refused cleanly."""
    assert parse_kernel_file(_text(_valid_doc())).q == 3
    hostile = [
        _text(_valid_doc(expression="__import__('os').system('echo hi')")),
        _text(_valid_doc(expression="eval('1')")),
        pickle.dumps({"format": FORMAT}),
        b"\x80\x04\x95",  # the start of a pickle stream
    ]
    for doc in hostile:
        with pytest.raises(KernelFileError):
            parse_kernel_file(doc)
    path = tmp_path / "evil.json"
    path.write_bytes(pickle.dumps([1, 2, 3]))
    with pytest.raises(KernelFileError):
        load_kernel_file(path)


def test_scores_are_sanitised():
    """Scores keep numbers (non-finite -> None), strings (truncated) and None; other values are dropped."""
    doc = _valid_doc(scores={"bic": 12.5, "metric": "lml", "test_rmse": None, "nested": {"a": 1},
                             "flag": True, "long": "x" * 500, "k" * 100: 1})
    scores = parse_kernel_file(_text(doc)).scores
    assert scores["bic"] == 12.5 and scores["metric"] == "lml" and scores["test_rmse"] is None
    assert "nested" not in scores and "flag" not in scores
    assert len(scores["long"]) == 200
    assert all(len(k) <= 40 for k in scores)


@pytest.mark.parametrize("field", ["hp0", "noise_variance", "q"])
def test_huge_integer_literal_refused(field):
    """A 400-digit integer where a number is expected is refused with KernelFileError, not OverflowError."""
    huge = "1" + "0" * 400
    doc = _valid_doc()
    text = _text(doc).replace(
        {"hp0": '"hp0": {"value": 1.5}', "noise_variance": '"noise_variance": 0.01', "q": '"q": 3'}[field],
        {"hp0": f'"hp0": {{"value": {huge}}}', "noise_variance": f'"noise_variance": {huge}',
         "q": f'"q": {huge}'}[field],
    )
    with pytest.raises(KernelFileError):
        parse_kernel_file(text)


def test_overlong_integer_literal_refused():
    """A 5000-digit integer literal (Python's int-parsing limit) is refused with KernelFileError."""
    text = _text(_valid_doc()).replace('"q": 3', '"q": 1' + "0" * 5000)
    try:
        parse_kernel_file(text)
    except KernelFileError:
        return
    except ValueError as exc:  # KernelFileError is a ValueError too: demand the precise type
        pytest.fail(f"{type(exc).__name__}: {exc}")
    pytest.fail("accepted a 5000-digit q")


@pytest.mark.parametrize("value", [1e101, 1e308, 1e-101, 1e-300])
def test_hyperparameters_no_search_could_write_are_refused(value):
    """A lengthscale of 1e-300 squares to 0 and one of 1e200 overflows: the file is refused on load,
    naming the slot, instead of failing inside predict, report or compare."""
    doc = _valid_doc(hyperparameters={"hp0": {"value": 1.5}, "hp1": {"value": value}})
    with pytest.raises(KernelFileError, match=r"hyperparameter hp1 = .* is outside 1e-100 to 1e100"):
        parse_kernel_file(_text(doc))
    ok = _valid_doc(hyperparameters={"hp0": {"value": 1.5}, "hp1": {"value": 1e-99}})
    assert parse_kernel_file(_text(ok)).theta[1] == pytest.approx(math.log(1e-99))


def test_scores_read_typed_and_keep_the_rest():
    """A kernel file's scores: the known ones typed (a wrong type or a split no data can take reads as absent),
    every stored one still listed."""
    from evocov_core.runs.scores import Scores

    sc = Scores({"bic": -12.5, "lml": True, "test_fraction": 0.7, "seconds": 3, "algorithm": "gpss", "note": "x",
                 "test_rmse": float("nan")})
    assert sc.bic == -12.5 and math.isnan(sc.lml) and sc.test_fraction is None and sc.seconds == 3.0
    assert sc.algorithm == "gpss" and sc.dataset is None and sc.test_rmse is None and sc.number("note") is None
    assert dict(sc) == {"bic": -12.5, "lml": True, "test_fraction": 0.7, "seconds": 3, "algorithm": "gpss",
                        "note": "x", "test_rmse": sc["test_rmse"]}
    assert Scores({"test_fraction": 0.2}).test_fraction == 0.2 and math.isnan(Scores().bic)

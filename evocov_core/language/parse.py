"""The safe parser of kernel expressions: text such as ``add(hp(hp0), sq_dist(euc(x), hp1))`` to a
:class:`~evocov_core.language.kernel.Kernel`.

Expressions come from kernel files, uploads and the command line: untrusted input. They are never
passed to ``eval``, ``pickle`` or DEAP's ``PrimitiveTree.from_string``; they are tokenised and parsed
here against the primitive set, iteratively, with bounds on length, node count and depth, and anything
else is refused with a :class:`KernelFileError` that names the problem.
"""

from __future__ import annotations

import re
from typing import Any

from evocov_core.language.grammar import TreeError, check_tree, symbol
from evocov_core.language.kernel import Kernel

__all__ = ["MAX_DEPTH", "MAX_EXPRESSION_CHARS", "MAX_NODES", "KernelFileError", "clipped", "parse_expression"]

#: The bloat limit o_max of the paper: deeper trees are refused.
MAX_DEPTH = 40
MAX_NODES = 2000
MAX_EXPRESSION_CHARS = 50_000

_TOKEN = re.compile(r"\s*(?:(?P<name>[A-Za-z_][A-Za-z0-9_]*)|(?P<num>-?[0-9]+(?:\.[0-9]+)?)|(?P<punct>[(),]))")


class KernelFileError(ValueError):
    """A kernel file or expression was refused; the message names the problem."""


def clipped(s: str, n: int = 40) -> str:
    """``s``, cut to ``n`` characters with an ellipsis: how a message quotes untrusted text."""
    return s if len(s) <= n else s[:n] + "…"


def parse_expression(text: str, *, n_hyper: int = 10000, max_depth: int = MAX_DEPTH,
                     max_nodes: int = MAX_NODES) -> Kernel:
    """Parse a prefix expression such as ``add(hp(hp0), sq_dist(euc(x), hp1))``.

    Only grammar symbols are accepted, operators must be followed by their
    parenthesised arguments and terminals must not be. Types, arity, depth and size are
    checked. Iterative: hostile nesting cannot exhaust the stack.

    Raises
    ------
    KernelFileError
    """
    if not isinstance(text, str):
        raise KernelFileError(f"expression must be a string, not {type(text).__name__}")
    if len(text) > MAX_EXPRESSION_CHARS:
        raise KernelFileError(f"expression is {len(text)} characters long, above the limit of {MAX_EXPRESSION_CHARS}")
    tokens: list[str] = []
    # Each open call: [symbol name, arguments still expected].
    open_calls: list[list[Any]] = []
    pos = 0
    expect_value = True  # a symbol is expected (start, after '(' or ',')
    closed_root = False
    while True:
        m = _TOKEN.match(text, pos)
        if m is None:
            rest = text[pos:].strip()
            if not rest:
                break
            raise KernelFileError(f"unexpected character {rest[0]!r} at position {pos + len(text[pos:]) - len(rest)}")
        pos = m.end()
        kind = m.lastgroup
        tok = m.group(kind)
        if closed_root:
            raise KernelFileError(f"unexpected {clipped(tok)!r} after the end of the expression")
        if kind in ("name", "num"):
            if not expect_value:
                raise KernelFileError(f"missing ',' or ')' before {clipped(tok)!r}")
            try:
                s = symbol(tok)
            except TreeError:
                raise KernelFileError(f"unknown symbol {clipped(tok)!r}: not part of the kernel grammar") from None
            tokens.append(tok)
            if len(tokens) > max_nodes:
                raise KernelFileError(f"expression has more than {max_nodes} nodes")
            if s.arity:
                m2 = _TOKEN.match(text, pos)
                if m2 is None or m2.group("punct") != "(":
                    raise KernelFileError(f"operator {tok!r} must be followed by '(' and {s.arity} arguments")
                pos = m2.end()
                open_calls.append([tok, s.arity])
                if len(open_calls) > max_depth:
                    raise KernelFileError(f"expression is nested deeper than the limit of {max_depth}")
                expect_value = True
            else:
                expect_value = False
                if not open_calls:
                    closed_root = True
        else:  # punctuation
            if tok == "(":
                raise KernelFileError(f"unexpected '(' at position {pos - 1}")
            if expect_value or not open_calls:
                raise KernelFileError(f"unexpected {tok!r} at position {pos - 1}")
            call = open_calls[-1]
            call[1] -= 1
            if tok == ",":
                if call[1] <= 0:
                    raise KernelFileError(f"too many arguments for {call[0]!r}")
                expect_value = True
            else:
                if call[1] != 0:
                    raise KernelFileError(f"{call[0]!r} takes {symbol(call[0]).arity} arguments")
                open_calls.pop()
                if not open_calls:
                    closed_root = True
    if not tokens:
        raise KernelFileError("expression is empty")
    if open_calls or not closed_root:
        raise KernelFileError("expression is incomplete: a ')' or an argument is missing")
    try:
        check_tree(tokens, n_hyper=n_hyper, max_depth=max_depth, max_nodes=max_nodes)
    except TreeError as exc:
        raise KernelFileError(f"ill-typed expression: {exc}") from None
    return Kernel(tuple(tokens))

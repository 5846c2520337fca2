"""Kubernetes label selectors: metav1.LabelSelector and the ``labelSelector`` query syntax.

Semantics follow ``k8s.io/apimachinery/pkg/labels``: requirements are ANDed; ``NotIn`` and
``!=`` match objects that lack the key; a nil selector matches nothing, an empty one everything.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, NoReturn, TypeGuard

from . import errors
from .errors import FieldError
from .validation import (
    invalid_value,
    label_value_errors,
    qualified_name_errors,
    type_invalid,
    validate_labels,
)

IN, NOT_IN, EXISTS, DOES_NOT_EXIST = "In", "NotIn", "Exists", "DoesNotExist"
EQUALS, NOT_EQUALS = "Equals", "NotEquals"
EXPRESSION_OPERATORS = (IN, NOT_IN, EXISTS, DOES_NOT_EXIST)
OPERATORS = EXPRESSION_OPERATORS + (EQUALS, NOT_EQUALS)
_SELECTOR_FIELDS = ("matchLabels", "matchExpressions")
_EXPRESSION_FIELDS = ("key", "operator", "values")


class LabelSelectorError(ValueError):
    def __init__(self, field: str, message: str, causes: list[FieldError] | None = None):
        super().__init__(f"{field}: {message}")
        self.field = field
        self.message = message
        self.causes = list(causes or [errors.invalid(field, message)])


@dataclass(frozen=True)
class Requirement:
    key: str
    operator: str
    values: frozenset[str] = frozenset()

    def __post_init__(self) -> None:
        # Guards hand-built requirements; parsed/compiled ones are already valid.
        if self.operator not in OPERATORS:
            raise ValueError(f"unknown selector operator {self.operator!r}")
        object.__setattr__(self, "values", frozenset(self.values))
        n = len(self.values)
        if (
            (self.operator in (EXISTS, DOES_NOT_EXIST) and n)
            or (self.operator in (EQUALS, NOT_EQUALS) and n != 1)
            or (self.operator in (IN, NOT_IN) and not n)
        ):
            raise ValueError(f"wrong number of values for operator {self.operator}")

    def matches(self, labels: Mapping[str, str]) -> bool:
        present = self.key in labels
        if self.operator == EXISTS:
            return present
        if self.operator == DOES_NOT_EXIST:
            return not present
        if self.operator in (IN, EQUALS):
            return present and labels[self.key] in self.values
        # NotIn / NotEquals: an absent key is "not equal".
        return not present or labels[self.key] not in self.values

    def sort_key(self) -> tuple[str, int, tuple[str, ...]]:
        return (self.key, OPERATORS.index(self.operator), tuple(sorted(self.values)))

    def to_string(self) -> str:
        values = sorted(self.values)
        if self.operator == EXISTS:
            return self.key
        if self.operator == DOES_NOT_EXIST:
            return "!" + self.key
        if self.operator == EQUALS:
            return f"{self.key}={values[0]}"
        if self.operator == NOT_EQUALS:
            return f"{self.key}!={values[0]}"
        word = "in" if self.operator == IN else "notin"
        return f"{self.key} {word} ({','.join(values)})"


@dataclass(frozen=True)
class Selector:
    """An immutable, hashable compiled selector; equal selectors compare and hash equal."""

    requirements: tuple[Requirement, ...] = ()
    match_nothing: bool = False

    def __post_init__(self) -> None:
        # Canonical order, so equivalent selectors are equal cache keys.
        ordered = tuple(sorted(set(self.requirements), key=Requirement.sort_key))
        object.__setattr__(self, "requirements", ordered)

    @property
    def is_empty(self) -> bool:
        """True for the match-everything selector (as labels.Selector.Empty())."""
        return not self.match_nothing and not self.requirements

    def matches(self, labels: Mapping[str, str] | None) -> bool:
        if self.match_nothing:
            return False
        labels = labels or {}
        return all(r.matches(labels) for r in self.requirements)

    def to_string(self) -> str:
        if self.match_nothing:
            # Upstream renders Nothing() as "", which would parse back as Everything().
            raise ValueError("a match-nothing selector has no query-string form")
        return ",".join(r.to_string() for r in self.requirements)


EVERYTHING = Selector()
NOTHING = Selector(match_nothing=True)


def _validate_expression(expr: Any, path: str) -> list[FieldError]:
    if not isinstance(expr, dict):
        return [type_invalid(path, expr, "object")]
    errs = [
        errors.forbidden(f"{path}.{k}", "Forbidden: unknown field")
        for k in expr
        if k not in _EXPRESSION_FIELDS
    ]
    key, op, values = expr.get("key"), expr.get("operator"), expr.get("values")
    if key is None or key == "":
        errs.append(errors.required(f"{path}.key"))
    elif not isinstance(key, str):
        errs.append(type_invalid(f"{path}.key", key, "string"))
    else:
        errs.extend(invalid_value(f"{path}.key", key, m) for m in qualified_name_errors(key))
    if values is not None and not (
        isinstance(values, list) and all(isinstance(v, str) for v in values)
    ):
        # Already reported; don't also call the values missing.
        return errs + [type_invalid(f"{path}.values", values, "array of strings")]
    values = values or []
    if op is None or op == "":
        errs.append(errors.required(f"{path}.operator"))
    elif op not in EXPRESSION_OPERATORS:
        errs.append(errors.not_supported(f"{path}.operator", op, EXPRESSION_OPERATORS))
    elif op in (IN, NOT_IN) and not values:
        errs.append(
            errors.required(
                f"{path}.values",
                "Required value: must be specified when `operator` is 'In' or 'NotIn'",
            )
        )
    elif op in (EXISTS, DOES_NOT_EXIST) and values:
        errs.append(
            errors.forbidden(
                f"{path}.values",
                "Forbidden: may not be specified when `operator` is 'Exists' or 'DoesNotExist'",
            )
        )
    for i, v in enumerate(values):
        errs.extend(invalid_value(f"{path}.values[{i}]", v, m) for m in label_value_errors(v))
    return errs


def validate_label_selector(selector: Any, path: str) -> list[FieldError]:
    """metav1 ValidateLabelSelector, plus shape checks a typed Go struct gets for free."""
    if selector is None:
        return []
    if not isinstance(selector, dict):
        return [type_invalid(path, selector, "object")]
    errs = [
        errors.forbidden(f"{path}.{k}", "Forbidden: unknown field")
        for k in selector
        if k not in _SELECTOR_FIELDS
    ]
    errs.extend(validate_labels(selector.get("matchLabels"), f"{path}.matchLabels"))
    exprs = selector.get("matchExpressions")
    if exprs is None:
        return errs
    if not isinstance(exprs, list):
        return errs + [type_invalid(f"{path}.matchExpressions", exprs, "array")]
    for i, expr in enumerate(exprs):
        errs.extend(_validate_expression(expr, f"{path}.matchExpressions[{i}]"))
    return errs


def compile_selector(selector: dict[str, Any] | None, path: str = "labelSelector") -> Selector:
    """metav1.LabelSelectorAsSelector: None matches nothing, ``{}`` matches everything."""
    if selector is None:
        return NOTHING
    errs = validate_label_selector(selector, path)
    if errs:
        raise LabelSelectorError(errs[0].field, errs[0].message, errs)
    reqs = [
        Requirement(k, EQUALS, frozenset([v]))
        for k, v in (selector.get("matchLabels") or {}).items()
    ]
    reqs += [
        Requirement(e["key"], e["operator"], frozenset(e.get("values") or ()))
        for e in selector.get("matchExpressions") or ()
    ]
    return Selector(tuple(reqs))


# --- query-string syntax -------------------------------------------------------------------

_SPECIAL = "!=(),<>"
_OPERATOR_TOKENS = ("!=", "==", "=", "!", "(", ")", ",", "<", ">")


def _tokenize(text: str) -> list[str]:
    """Identifiers and operator symbols; whitespace only separates (as the upstream lexer)."""
    tokens, i = [], 0
    while i < len(text):
        c = text[i]
        if c.isspace():
            i += 1
        elif c in _SPECIAL:
            tok = next(t for t in _OPERATOR_TOKENS if text.startswith(t, i))
            tokens.append(tok)
            i += len(tok)
        else:
            j = i
            while j < len(text) and not text[j].isspace() and text[j] not in _SPECIAL:
                j += 1
            tokens.append(text[i:j])
            i = j
    return tokens


def _is_ident(tok: str | None) -> TypeGuard[str]:
    return tok is not None and tok not in _OPERATOR_TOKENS


class _Parser:
    def __init__(self, text: str):
        self.tokens = _tokenize(text)
        self.pos = 0

    def peek(self) -> str | None:
        return self.tokens[self.pos] if self.pos < len(self.tokens) else None

    def take(self) -> str | None:
        tok = self.peek()
        self.pos += 1
        return tok

    @staticmethod
    def fail(message: str) -> NoReturn:
        raise LabelSelectorError("labelSelector", message)

    def ident(self, what: str) -> str:
        tok = self.take()
        if not _is_ident(tok):
            self.fail(f"found '{tok or ''}', expected: {what}")
        return tok

    def value(self, value: str) -> str:
        msgs = label_value_errors(value)
        if msgs:
            self.fail(f'invalid label value: "{value}": {msgs[0]}')
        return value

    def requirement(self) -> Requirement:
        negated = self.peek() == "!"
        if negated:
            self.take()
        key = self.ident("identifier")
        msgs = qualified_name_errors(key)
        if msgs:
            self.fail(f'invalid label key "{key}": {msgs[0]}')
        if self.peek() in (None, ","):
            return Requirement(key, DOES_NOT_EXIST if negated else EXISTS)
        if negated:
            self.fail(f"found '{self.peek()}', expected: ',' or end of string after '!{key}'")
        op = self.take()
        if op in ("=", "==", "!="):
            # "k=" selects the empty value, as upstream.
            val = "" if self.peek() in (None, ",") else self.ident("identifier")
            return Requirement(
                key, NOT_EQUALS if op == "!=" else EQUALS, frozenset([self.value(val)])
            )
        if op not in ("in", "notin"):
            self.fail(f"found '{op}', expected: '=', '!=', '==', 'in', notin'")
        if self.take() != "(":
            self.fail("expected: '(' after 'in' or 'notin'")
        # Empty items ("()" or "(a,)") stand for the empty value, as upstream.
        values, item = set(), ""
        while True:
            tok = self.take()
            if tok in (",", ")"):
                values.add(self.value(item))
                item = ""
                if tok == ")":
                    break
            elif _is_ident(tok) and not item:
                item = tok
            else:
                self.fail(f"found '{tok or ''}', expected: ',', ')' or identifier")
        return Requirement(key, IN if op == "in" else NOT_IN, frozenset(values))


def parse_selector_string(text: str) -> Selector:
    """Parse ``?labelSelector=``: ``k=v``, ``k!=v``, ``k in (a,b)``, ``k notin (a)``, ``k``, ``!k``."""
    if not isinstance(text, str):
        raise LabelSelectorError("labelSelector", "must be a string")
    parser = _Parser(text)
    if parser.peek() is None:
        return EVERYTHING
    reqs = []
    while True:
        reqs.append(parser.requirement())
        tok = parser.take()
        if tok is None:
            return Selector(tuple(reqs))
        if tok != ",":
            parser.fail(f"found '{tok}', expected: ',' or end of string")


def selector_parameter(params: Mapping[str, str]) -> Selector:
    """A request's ``labelSelector`` query parameter (a 400 Status naming it when malformed)."""
    try:
        return parse_selector_string(params.get("labelSelector", ""))
    except LabelSelectorError as exc:
        raise errors.bad_request(
            f"unable to parse labelSelector: {exc.message}",
            [errors.invalid("labelSelector", exc.message)],
        ) from None

"""CEL abstract syntax tree, parsed with lark from a grammar derived from cel-python's.

cel-python 0.5.0's grammar (celpy/cel.lark, Apache-2.0) lacks the optional-value syntax
(``a.?b``, ``a[?b]``, ``[?x]``) that the Kubernetes base environment enables, and folds signs
into number literals; the grammar below is that grammar with those two things changed, so it is
kept here instead of patching celpy. Parsing stays in lark, as in celpy.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, Final

import lark
from lark import Lark, Token, Tree
from lark.exceptions import UnexpectedCharacters, UnexpectedEOF, UnexpectedInput, UnexpectedToken

__all__ = [
    "Call",
    "Comprehension",
    "CreateList",
    "CreateMap",
    "Ident",
    "Index",
    "Literal",
    "Node",
    "ParseFailure",
    "Select",
    "parse",
]

_GRAMMAR = r"""
?start: expr

?expr: conditionalor
     | conditionalor "?" conditionalor ":" expr    -> ternary

?conditionalor: conditionaland
              | conditionalor "||" conditionaland   -> or_
?conditionaland: relation
               | conditionaland "&&" relation       -> and_

?relation: addition
         | relation RELOP addition                  -> relop

?addition: multiplication
         | addition ADDOP multiplication            -> binop
?multiplication: unary
               | multiplication MULOP unary         -> binop

?unary: member
      | NOT unary                                   -> unary_op
      | MINUS unary                                 -> unary_op

?member: primary
       | member "." IDENT                           -> select
       | member "." "?" IDENT                       -> opt_select
       | member "." IDENT "(" [exprlist] ")"        -> member_call
       | member "[" expr "]"                        -> index
       | member "[" "?" expr "]"                    -> opt_index
       | member "{" [fieldinits] "}"                -> struct

?primary: IDENT                                     -> ident
        | DOT IDENT                                 -> ident
        | IDENT "(" [exprlist] ")"                  -> global_call
        | DOT IDENT "(" [exprlist] ")"              -> global_call
        | "(" expr ")"
        | "[" [listelems] "]"                       -> list_lit
        | "{" [mapinits] "}"                        -> map_lit
        | literal

exprlist: expr ("," expr)*
listelems: listelem ("," listelem)* [","]
listelem: expr | OPTMARK expr
fieldinits: fieldinit ("," fieldinit)* [","]
fieldinit: IDENT ":" expr | OPTMARK IDENT ":" expr
mapinits: mapinit ("," mapinit)* [","]
mapinit: expr ":" expr | OPTMARK expr ":" expr

literal: FLOAT_LIT | UINT_LIT | INT_LIT | STRING_LIT | BYTES_LIT | TRUE | FALSE | NULL

RELOP: "<=" | ">=" | "==" | "!=" | "<" | ">" | /in(?![_a-zA-Z0-9])/
ADDOP: "+" | "-"
MULOP: "*" | "/" | "%"
NOT: "!"
MINUS: "-"
DOT: "."
OPTMARK: "?"

FLOAT_LIT.2: /([0-9]+\.[0-9]+([eE][+-]?[0-9]+)?|[0-9]+[eE][+-]?[0-9]+|\.[0-9]+([eE][+-]?[0-9]+)?)/
UINT_LIT.2: /(0x[0-9a-fA-F]+|[0-9]+)[uU]/
INT_LIT.1: /0x[0-9a-fA-F]+|[0-9]+/
STRING_LIT: /[rR]"{3}(.|\n)*?"{3}/ | /[rR]'{3}(.|\n)*?'{3}/
          | /"{3}(\\(.|\n)|[^\\])*?"{3}/ | /'{3}(\\(.|\n)|[^\\])*?'{3}/
          | /[rR]"[^"\r\n]*"/ | /[rR]'[^'\r\n]*'/
          | /"(\\.|[^"\\\r\n])*"/ | /'(\\.|[^'\\\r\n])*'/
BYTES_LIT: /[bB]("{3}(\\(.|\n)|[^\\])*?"{3}|'{3}(\\(.|\n)|[^\\])*?'{3}|"(\\.|[^"\\\r\n])*"|'(\\.|[^'\\\r\n])*')/
         | /([bB][rR]|[rR][bB])("{3}(.|\n)*?"{3}|'{3}(.|\n)*?'{3}|"[^"\r\n]*"|'[^'\r\n]*')/
TRUE.3: /true(?![_a-zA-Z0-9])/
FALSE.3: /false(?![_a-zA-Z0-9])/
NULL.3: /null(?![_a-zA-Z0-9])/
IDENT: /[_a-zA-Z][_a-zA-Z0-9]*/

%ignore /[\t\n\f\r ]+/
%ignore /\/\/[^\n]*/
"""

RESERVED = frozenset(
    [
        "as",
        "break",
        "const",
        "continue",
        "else",
        "for",
        "function",
        "if",
        "import",
        "let",
        "loop",
        "package",
        "namespace",
        "return",
        "var",
        "void",
        "while",
        "in",
    ]
)


@dataclass(eq=False)
class Node:
    """Base AST node; ``pos`` is the 1-based (line, column) of the node's operator or first token."""

    pos: tuple[int, int]


@dataclass(eq=False)
class Literal(Node):
    value: Any
    kind: str  # int uint double string bytes bool null


@dataclass(eq=False)
class Ident(Node):
    name: str


@dataclass(eq=False)
class Select(Node):
    operand: Node
    field: str
    test_only: bool = False  # has()
    optional: bool = False  # a.?b


@dataclass(eq=False)
class Index(Node):
    operand: Node
    index: Node
    optional: bool = False  # a[?b]


@dataclass(eq=False)
class Call(Node):
    """A function or operator call. Operators use cel-go names (``_+_``, ``_&&_``, ``!_``...)."""

    function: str
    args: list[Node]
    target: Node | None = None


@dataclass(eq=False)
class CreateList(Node):
    elements: list[Node]
    optional: list[bool] = field(default_factory=list)


@dataclass(eq=False)
class CreateMap(Node):
    entries: list[tuple[Node, Node, bool]]


@dataclass(eq=False)
class Comprehension(Node):
    """A macro, kept high level: all, exists, exists_one, map, filter, transformList, transformMap,
    transformMapEntry, sortBy, bind, optMap, optFlatMap."""

    kind: str
    iter_range: Node
    var: str
    var2: str | None
    args: list[Node]


def _int_literal(text: str) -> int:
    """The literal's value; one far out of any 64-bit range comes back as such without being
    converted (Python refuses to convert decimal strings of more than 4,300 digits)."""
    hexa = text.startswith("0x")
    digits = text[2:].lstrip("0") if hexa else text.lstrip("0")
    if len(digits) > (17 if hexa else 21):
        return 1 << 65
    return int(text, 16) if hexa else int(text)


class ParseFailure(Exception):
    """A syntax error at a 1-based position."""

    def __init__(self, message: str, pos: tuple[int, int]) -> None:
        super().__init__(message)
        self.message = message
        self.pos = pos


@lru_cache(maxsize=1)
def _parser() -> Lark:
    return Lark(_GRAMMAR, parser="lalr", start="start", propagate_positions=True, maybe_placeholders=False)


_ESCAPES = {
    "a": "\a",
    "b": "\b",
    "f": "\f",
    "n": "\n",
    "r": "\r",
    "t": "\t",
    "v": "\v",
    "\\": "\\",
    "'": "'",
    '"': '"',
    "`": "`",
    "?": "?",
}
_ESC_RE = re.compile(
    r"\\(?:([abfnrtv\\'\"`?])|x([0-9a-fA-F]{2})|u([0-9a-fA-F]{4})|U([0-9a-fA-F]{8})|([0-3][0-7]{2})|(.))", re.S
)


def _unescape(body: str, as_bytes: bool, pos: tuple[int, int]) -> str | bytes:
    """CEL escape sequences (cel-spec "String and Bytes Values")."""
    out: list[bytes] = []
    i = 0
    for m in _ESC_RE.finditer(body):
        out.append(body[i : m.start()].encode("utf-8"))
        i = m.end()
        simple, hx, u4, u8, octal, bad = m.groups()
        if simple:
            out.append(_ESCAPES[simple].encode())
        elif hx or octal:
            v = int(hx, 16) if hx else int(octal, 8)
            out.append(bytes([v]) if as_bytes else chr(v).encode("utf-8"))
        elif u4 or u8:
            if as_bytes:
                raise ParseFailure("unicode escape in bytes literal", pos)
            cp = int(u4 or u8, 16)
            if cp > 0x10FFFF or 0xD800 <= cp <= 0xDFFF:
                raise ParseFailure("invalid unicode code point in escape sequence", pos)
            out.append(chr(cp).encode("utf-8"))
        else:
            raise ParseFailure(f"invalid escape sequence '\\{bad}'", pos)
    out.append(body[i:].encode("utf-8"))
    raw = b"".join(out)
    if as_bytes:
        return raw
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise ParseFailure("invalid UTF-8 in string literal", pos) from e


def _string_literal(text: str, pos: tuple[int, int]) -> str | bytes:
    as_bytes = False
    raw = False
    while text[0] in "rRbB":
        if text[0] in "bB":
            as_bytes = True
        else:
            raw = True
        text = text[1:]
    q = 3 if text[:3] in ('"""', "'''") else 1
    body = text[q:-q]
    if raw:
        return body.encode("utf-8") if as_bytes else body
    return _unescape(body, as_bytes, pos)


_MAX_INT64 = (1 << 63) - 1
_MAX_UINT64 = (1 << 64) - 1


def _pos_of(meta_or_tok: Any) -> tuple[int, int]:
    return (getattr(meta_or_tok, "line", 1) or 1, getattr(meta_or_tok, "column", 1) or 1)


def _first_token(t: Tree | Token) -> Token | None:
    while isinstance(t, Tree) and t.children:
        t = t.children[0]
    return t if isinstance(t, Token) else None


class _Builder:
    """Turns the lark tree into :class:`Node` objects (macros stay calls; the checker expands them).

    Positions are cel-go's: an operator's token, a select's ``.``, a call's ``(``.
    """

    def __init__(self, source: str = "") -> None:
        self._source = source

    def _at(self, offset: int) -> tuple[int, int]:
        line_start = self._source.rfind("\n", 0, offset) + 1
        return (self._source.count("\n", 0, offset) + 1, offset - line_start + 1)

    def _dot_before(self, name: Any) -> tuple[int, int]:
        i = (name.start_pos or 0) - 1
        while i >= 0 and self._source[i] in " \t\r\n?":
            i -= 1
        return self._at(i) if i >= 0 and self._source[i] == "." else _pos_of(name)

    def _paren_after(self, name: Any) -> tuple[int, int]:
        i = name.end_pos or 0
        while i < len(self._source) and self._source[i] in " \t\r\n":
            i += 1
        return self._at(i) if i < len(self._source) and self._source[i] == "(" else _pos_of(name)

    def build(self, t: Tree | Token) -> Node:
        if isinstance(t, Token):
            raise ParseFailure(f"unexpected token {t!s}", _pos_of(t))
        meth = getattr(self, "t_" + str(t.data))
        node: Node = meth(t)
        return node

    # -- operators
    def t_ternary(self, t: Tree) -> Node:
        c, a, b = (self.build(x) for x in t.children)
        return Call(c.pos, "_?_:_", [c, a, b])

    def t_or_(self, t: Tree) -> Node:
        a, b = (self.build(x) for x in t.children)
        return Call(a.pos, "_||_", [a, b])

    def t_and_(self, t: Tree) -> Node:
        a, b = (self.build(x) for x in t.children)
        return Call(a.pos, "_&&_", [a, b])

    def t_relop(self, t: Tree) -> Node:
        a_t, op, b_t = t.children
        a, b = self.build(a_t), self.build(b_t)
        name = "@in" if str(op) == "in" else f"_{op}_"
        return Call(_pos_of(op), name, [a, b])

    def t_binop(self, t: Tree) -> Node:
        a_t, op, b_t = t.children
        return Call(_pos_of(op), f"_{op}_", [self.build(a_t), self.build(b_t)])

    def t_unary_op(self, t: Tree) -> Node:
        op, x_t = t.children
        if isinstance(x_t, Tree) and x_t.data == "unary_op":
            inner = x_t.children[0]
            if str(inner) == str(op):
                # cel-go's parser drops an even run of the same operator: `!!x` is `x`.
                return self.build(x_t.children[1])
            # its grammar has no `!-x` or `-!x` (a run of one operator, then a member), but a
            # number literal may carry a sign: `!-1` is `!` applied to the literal -1
            nxt = _first_token(x_t.children[1])
            if str(op) == "-":
                raise ParseFailure(f"Syntax error: no viable alternative at input '-{inner}'", _pos_of(inner))
            operand = x_t.children[1]
            signed_number = (isinstance(operand, Tree) and operand.data == "literal" and nxt is not None
                             and nxt.type in ("INT_LIT", "FLOAT_LIT"))
            if not signed_number:
                pos = _pos_of(nxt) if nxt is not None else _pos_of(inner)
                raise ParseFailure(f"Syntax error: no viable alternative at input '{inner}{nxt or ''}'", pos)
        if str(op) == "-" and isinstance(x_t, Tree) and x_t.data == "literal":
            tok = x_t.children[0]
            if isinstance(tok, Token) and tok.type in ("INT_LIT", "FLOAT_LIT"):  # fold the sign as cel-go's parser does
                return self._literal(tok, negate=True, pos=_pos_of(op))
        x = self.build(x_t)
        return Call(_pos_of(op), "!_" if str(op) == "!" else "-_", [x])

    # -- member access
    def t_select(self, t: Tree) -> Node:
        operand, name = t.children
        return Select(self._dot_before(name), self.build(operand), str(name))

    def t_opt_select(self, t: Tree) -> Node:
        operand, name = t.children
        return Select(self._dot_before(name), self.build(operand), str(name), optional=True)

    def t_member_call(self, t: Tree) -> Node:
        operand, name, *rest = t.children
        args = self._args(rest)
        return Call(self._paren_after(name), str(name), args, target=self.build(operand))

    def _bracket_before(self, t: Tree, idx: Tree | Token) -> tuple[int, int]:
        start = idx.start_pos if isinstance(idx, Token) else getattr(idx.meta, "start_pos", None)
        i = (start or 0) - 1
        while i >= 0 and self._source[i] in " \t\r\n?":
            i -= 1
        return self._at(i) if start is not None and i >= 0 and self._source[i] == "[" else _pos_of(t.meta)

    def t_index(self, t: Tree) -> Node:
        operand, idx = t.children
        o = self.build(operand)
        return Index(self._bracket_before(t, idx), o, self.build(idx))

    def t_opt_index(self, t: Tree) -> Node:
        operand, idx = t.children
        return Index(self._bracket_before(t, idx), self.build(operand), self.build(idx), optional=True)

    def t_struct(self, t: Tree) -> Node:
        raise ParseFailure("message construction is not supported in this environment", _pos_of(t.meta))

    # -- primaries
    def t_ident(self, t: Tree) -> Node:
        tok = t.children[-1]
        name = str(tok)
        if name in RESERVED:
            raise ParseFailure(f"reserved identifier: {name}", _pos_of(tok))
        if len(t.children) == 2:
            name = "." + name
        return Ident(_pos_of(tok), name)

    def t_global_call(self, t: Tree) -> Node:
        ch = list(t.children)
        lead = ""
        if isinstance(ch[0], Token) and ch[0].type == "DOT":
            lead = "."
            ch = ch[1:]
        name, *rest = ch
        if str(name) in RESERVED:
            raise ParseFailure(f"reserved identifier: {name}", _pos_of(name))
        return Call(self._paren_after(name), lead + str(name), self._args(rest))

    def _args(self, rest: list[Any]) -> list[Node]:
        if not rest:
            return []
        (exprlist,) = rest
        return [self.build(x) for x in exprlist.children]

    def t_list_lit(self, t: Tree) -> Node:
        elems: list[Node] = []
        opts: list[bool] = []
        for ch in t.children:
            if isinstance(ch, Tree) and ch.data == "listelems":
                for le in ch.children:
                    parts = le.children
                    opt = isinstance(parts[0], Token) and parts[0].type == "OPTMARK"
                    elems.append(self.build(parts[-1]))
                    opts.append(opt)
        return CreateList(_pos_of(t.meta), elems, opts)

    def t_map_lit(self, t: Tree) -> Node:
        entries: list[tuple[Node, Node, bool]] = []
        for ch in t.children:
            if isinstance(ch, Tree) and ch.data == "mapinits":
                for mi in ch.children:
                    parts = mi.children
                    opt = isinstance(parts[0], Token) and parts[0].type == "OPTMARK"
                    k, v = parts[-2], parts[-1]
                    entries.append((self.build(k), self.build(v), opt))
        return CreateMap(_pos_of(t.meta), entries)

    def t_literal(self, t: Tree) -> Node:
        tok = t.children[0]
        assert isinstance(tok, Token)
        return self._literal(tok)

    def _literal(self, tok: Token, negate: bool = False, pos: tuple[int, int] | None = None) -> Node:
        p = pos or _pos_of(tok)
        text = str(tok)
        kind = tok.type
        if kind == "INT_LIT":
            v = _int_literal(text)
            if negate:
                v = -v
            if not -_MAX_INT64 - 1 <= v <= _MAX_INT64:
                raise ParseFailure(f"invalid int literal: {'-' if negate else ''}{text}", p)
            return Literal(p, v, "int")
        if kind == "UINT_LIT":
            v = _int_literal(text[:-1])
            if v > _MAX_UINT64:
                raise ParseFailure(f"invalid uint literal: {text}", p)
            return Literal(p, v, "uint")
        if kind == "FLOAT_LIT":
            f = float(text)
            return Literal(p, -f if negate else f, "double")
        if kind == "STRING_LIT":
            return Literal(p, _string_literal(text, p), "string")
        if kind == "BYTES_LIT":
            return Literal(p, _string_literal(text, p), "bytes")
        if kind == "TRUE":
            return Literal(p, True, "bool")
        if kind == "FALSE":
            return Literal(p, False, "bool")
        return Literal(p, None, "null")


#: What ANTLR's CEL grammar lists when an expression must start here (cel-go's message).
_EXPRESSION_START: Final = (" expecting {'[', '{', '(', '.', '-', '!', 'true', 'false', 'null', NUM_FLOAT, NUM_INT, "
                            "NUM_UINT, STRING, BYTES, IDENTIFIER}")


_EXPRESSION_START_TERMINALS: Final = frozenset(
    {"BYTES_LIT", "DOT", "FALSE", "FLOAT_LIT", "IDENT", "INT_LIT", "LBRACE", "LPAR", "LSQB", "MINUS", "NOT", "NULL",
     "STRING_LIT", "TRUE", "UINT_LIT"}
)


_CLOSERS: Final = {"RPAR": ")", "RSQB": "]", "RBRACE": "}"}


def _eof_error(expected: Any) -> str:
    """ANTLR's wording (cel-go's parser) for an expression that ends too early, where known."""
    wanted = set(expected or ())
    if len(wanted) == 1 and next(iter(wanted)) in _CLOSERS:
        return f"Syntax error: missing '{_CLOSERS[next(iter(wanted))]}' at '<EOF>'"
    if wanted == {"IDENT", "OPTMARK"}:
        return "Syntax error: no viable alternative at input '.'"
    return f"Syntax error: mismatched input '<EOF>'{_expecting(expected)}"


def _expecting(expected: Any) -> str:
    """cel-go's " expecting {...}" where lark wanted exactly the start of an expression (other
    expected sets are not spelled out)."""
    return _EXPRESSION_START if expected and set(expected) == _EXPRESSION_START_TERMINALS else ""


def parse(text: str) -> Node:
    """Parse CEL source into an AST; raises :class:`ParseFailure` with a 1-based position."""
    try:
        tree = _parser().parse(text)
    except UnexpectedCharacters as e:
        raise ParseFailure(
            f"Syntax error: token recognition error at: '{text[e.pos_in_stream or 0]}'", (e.line, e.column)
        ) from None
    except UnexpectedEOF as e:
        line = text.count("\n") + 1
        col = len(text) - (text.rfind("\n") + 1) + 1
        raise ParseFailure(_eof_error(e.expected), (line, col)) from e
    except UnexpectedToken as e:
        tok = e.token
        shown = "<EOF>" if tok.type == "$END" else str(tok)
        if tok.type == "$END":
            line = text.count("\n") + 1
            col = len(text) - (text.rfind("\n") + 1) + 1
            raise ParseFailure(_eof_error(e.expected), (line, col)) from None
        pos = (tok.line or 1, tok.column or 1)
        raise ParseFailure(f"Syntax error: mismatched input '{shown}'{_expecting(e.expected)}", pos) from None
    except UnexpectedInput as e:  # pragma: no cover - other lark errors
        raise ParseFailure(f"Syntax error: {e}", (getattr(e, "line", 1), getattr(e, "column", 1))) from None
    if isinstance(tree, Token):
        if tree.type in ("IDENT",):
            return _Builder(text).t_ident(Tree("ident", [tree]))
        raise ParseFailure(f"unexpected token {tree!s}", _pos_of(tree))
    return _Builder(text).build(tree)


_ = lark  # keep the import visible: lark is the parser, as in celpy

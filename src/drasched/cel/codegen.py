"""Generate Python source from a checked CEL AST.

Interpreting CEL node by node costs about a thousand times a hand-written predicate; the
generated function runs at hand-written speed because each CEL node becomes one Python
expression where CEL and Python agree, and a helper call only where they do not (dyn
operands, overflow, error absorption). ``&&``/``||`` keep CEL's commutative error semantics
(``error || true`` is true) with try/except, which costs nothing when nothing fails.
"""

from __future__ import annotations

import math
from typing import Any

from drasched.cel import runtime as rt
from drasched.cel.ast import Call, Comprehension, CreateList, CreateMap, Ident, Index, Literal, Node, Select
from drasched.cel.checker import (
    BOOL,
    BYTES,
    DEVICE,
    DOUBLE,
    GENERIC,
    INT,
    STRING,
    TYPE_IDENTS,
    UINT,
    Checker,
    Info,
    Overload,
    Type,
    is_dyn,
)

_IND = "    "
_MAX_BLOCK_DEPTH = 12  # Python allows 20 statically nested blocks per function
_MAX_PAREN_DEPTH = 40  # and about 200 nested parentheses per expression
_DEVICE_ATTR = {
    "driver": "driver",
    "attributes": "attributes",
    "capacity": "capacity",
    "allowMultipleAllocations": "allow_multiple_allocations",
}

Code = tuple[list[str], str]  # statements (relative indentation), expression


def _indent(lines: list[str], n: int = 1) -> list[str]:
    return [_IND * n + ln for ln in lines]


def _is_map(t: Type, key: Type | None = None) -> bool:
    return isinstance(t, tuple) and t[0] == "map" and (key is None or t[1] == key)


def _is_dmap(t: Type) -> bool:
    return isinstance(t, tuple) and t[0] == "dmap"


class CodeGen:
    """One generator per expression; ``namespace`` holds helpers and hoisted constants."""

    def __init__(self, checker: Checker) -> None:
        self.info = checker.info
        self.namespace: dict[str, Any] = dict(rt.HELPERS)
        self.namespace["_EMPTY"] = {}
        self.namespace["Opt"] = rt.Opt
        self._consts: dict[tuple[str, str], str] = {}
        self._n = 0
        self.uses_cost = False
        self.toplevel: list[str] = []  # hoisted local functions (comprehensions, deep constructs)
        self.live: list[str] = []  # Python locals of enclosing comprehensions/binds, passed along

    def _tmp(self, prefix: str = "_t") -> str:
        self._n += 1
        return f"{prefix}{self._n}"

    def const(self, value: Any) -> str:
        key = (type(value).__name__, repr(value))
        name = self._consts.get(key)
        if name is None:
            name = f"_k{len(self._consts)}"
            self._consts[key] = name
            self.namespace[name] = value
        return name

    def _i(self, node: Node) -> Info:
        return self.info[id(node)]

    # ------------------------------------------------------------------------- entry point

    def function(self, root: Node) -> str:
        stmts, expr = self.gen(root, 0)
        body = []
        if self.uses_cost:
            body.append("_c = [0]")
        body += stmts
        body.append(f"return {expr}")
        main = "def _selector(device):\n" + "\n".join(_indent(body)) + "\n"
        return "".join(self.toplevel) + main

    def gen(self, node: Node, depth: int) -> Code:
        meth = getattr(self, "g_" + type(node).__name__)
        stmts, expr = meth(node, depth)
        if len(expr) > 120 and _paren_depth(expr) > _MAX_PAREN_DEPTH:
            tmp = self._tmp("_h")  # Python's parser caps nesting; a statement resets it
            return [*stmts, f"{tmp} = {expr}"], tmp
        return stmts, expr

    def _local_function(self, name: str, extra: list[str], lines: list[str]) -> str:
        """Add ``def name(device, _c, <live locals>, <extra>)`` at top level; return the call."""
        self.uses_cost = True
        params = ["device", "_c", *self.live]
        self.toplevel.append(
            f"def {name}({', '.join(params + [p for p, _ in _split(extra)])}):\n" + "\n".join(_indent(lines)) + "\n"
        )
        return f"{name}({', '.join(params + [a for _, a in _split(extra)])})"

    # ------------------------------------------------------------------------- leaves

    def g_Literal(self, n: Literal, depth: int) -> Code:
        v = n.value
        if n.kind == "uint":
            return [], self.const(rt.UInt(v))
        if n.kind == "double" and (math.isnan(v) or math.isinf(v)):
            return [], self.const(v)
        return [], repr(v)

    def g_Ident(self, n: Ident, depth: int) -> Code:
        info = self._i(n)
        if info.pyname:
            return [], info.pyname
        return [], self.const(rt.TYPE_VALUES[TYPE_IDENTS[n.name.lstrip(".")]])

    # ------------------------------------------------------------------------- access

    def g_Select(self, n: Select, depth: int) -> Code:
        stmts, o = self.gen(n.operand, depth)
        t = self._i(n.operand).type
        f = n.field
        if n.optional:
            return stmts, f"opt_select({o}, {f!r})"
        if n.test_only:
            if t == DEVICE or _is_dmap(t):
                return stmts, "True"  # upstream's default map reports every key as present
            if _is_map(t, STRING):
                return stmts, f"({f!r} in {o})"
            return stmts, f"has_field({o}, {f!r})"
        if t == DEVICE:
            return stmts, f"{o}.{_DEVICE_ATTR[f]}"
        if _is_dmap(t):
            return stmts, f"{o}.get({f!r}, _EMPTY)"
        if _is_map(t, STRING):
            return stmts, f"{o}[{f!r}]"
        return stmts, f"select({o}, {f!r})"

    def g_Index(self, n: Index, depth: int) -> Code:
        s1, o = self.gen(n.operand, depth)
        s2, k = self.gen(n.index, depth)
        t = self._i(n.operand).type
        kt = self._i(n.index).type
        if n.optional:
            return s1 + s2, f"opt_index({o}, {k})"
        if _is_dmap(t):
            return s1 + s2, f"{o}.get({k}, _EMPTY)"
        if _is_map(t, STRING) and kt == STRING:
            return s1 + s2, f"{o}[{k}]"
        return s1 + s2, f"index({o}, {k})"

    # ------------------------------------------------------------------------- literals

    def g_CreateList(self, n: CreateList, depth: int) -> Code:
        stmts: list[str] = []
        exprs: list[str] = []
        for e in n.elements:
            s, x = self.gen(e, depth)
            stmts += s
            exprs.append(x)
        body = "[" + ", ".join(exprs) + "]"
        literals = [e for e in n.elements if isinstance(e, Literal)]
        if literals and len(literals) == len(n.elements) and not any(n.optional):
            # CEL values are immutable and no helper changes a list in place: share one constant
            # instead of building the list again on every evaluation or loop iteration.
            return stmts, self.const([rt.UInt(e.value) if e.kind == "uint" else e.value for e in literals])
        if any(n.optional):
            return stmts, f"list_with_optionals({body}, {tuple(n.optional)!r})"
        return stmts, body

    def g_CreateMap(self, n: CreateMap, depth: int) -> Code:
        stmts: list[str] = []
        triples: list[tuple[str, str, bool]] = []
        simple = True
        seen: set[str] = set()
        for k, v, opt in n.entries:
            sk, ek = self.gen(k, depth)
            sv, ev = self.gen(v, depth)
            stmts += sk + sv
            triples.append((ek, ev, opt))
            if opt or not (isinstance(k, Literal) and k.kind == "string") or k.value in seen:
                simple = False
            else:
                seen.add(k.value)
        if simple:
            return stmts, "{" + ", ".join(f"{k}: {v}" for k, v, _ in triples) + "}"
        return stmts, "make_map([" + ", ".join(f"({k}, {v}, {o})" for k, v, o in triples) + "])"

    # ------------------------------------------------------------------------- calls

    def g_Call(self, n: Call, depth: int) -> Code:
        fn = n.function
        if fn in ("_&&_", "_||_"):
            return self._logic(n, depth)
        if fn == "_?_:_":
            return self._ternary(n, depth)
        info = self._i(n)
        args = ([n.target] if n.target is not None else []) + list(n.args)
        folded = self._fold(fn, args)
        if folded is not None:
            return [], folded
        stmts: list[str] = []
        exprs: list[str] = []
        for a in args:
            s, x = self.gen(a, depth)
            stmts += s
            exprs.append(x)
        types = [self._i(a).type for a in args]
        if fn in ("_==_", "_!=_"):
            op = "==" if fn == "_==_" else "!="
            if _inline_eq(types[0], types[1]):
                return stmts, f"({exprs[0]} {op} {exprs[1]})"
        if fn == "matches" and isinstance(args[1], Literal) and isinstance(args[1].value, str):
            rx = self.const(rt.compile_regex(args[1].value))
            if types[0] == STRING:
                return stmts, f"({rx}.search({exprs[0]}) is not None)"
        impl = self._impl(fn, info.overloads)
        if impl.startswith("t:") and any(is_dyn(x) for x in types) and fn != "dyn":
            impl = GENERIC[fn]  # inline code assumes the declared types; dyn needs the checks
        return stmts, self._apply(impl, exprs)

    def _impl(self, fn: str, overloads: tuple[Overload, ...]) -> str:
        impls = {ov.impl for ov in overloads}
        if len(impls) == 1:
            return impls.pop()
        generic = GENERIC.get(fn)
        if generic is not None:
            return generic
        hs = {i for i in impls if not i.startswith("t:")}
        if len(hs) == 1:
            return hs.pop()
        raise AssertionError(f"no generic implementation for {fn}: {impls}")  # pragma: no cover

    def _apply(self, impl: str, exprs: list[str]) -> str:
        kind, _, what = impl.partition(":")
        if kind == "t":
            return what.format(*exprs)
        if kind == "hc":
            self.uses_cost = True
            return f"{what}(_c, {', '.join(exprs)})"
        return f"{what}({', '.join(exprs)})"

    def _fold(self, fn: str, args: list[Node]) -> str | None:
        """Constant-fold quantity("..."), semver("..."), ip/cidr/url("...") so selectors do not reparse per device."""
        if not args or not all(isinstance(a, Literal) for a in args):
            return None
        vals = [a.value for a in args]  # type: ignore[attr-defined]
        try:
            if fn == "quantity" and len(vals) == 1 and isinstance(vals[0], str):
                return self.const(rt.quantity(vals[0]))
            if fn == "semver" and isinstance(vals[0], str) and (len(vals) == 1 or isinstance(vals[1], bool)):
                return self.const(rt.semver(*vals))
            if fn in _NET_PARSERS and len(vals) == 1 and isinstance(vals[0], str):
                return self.const(_NET_PARSERS[fn](vals[0]))
        except rt.EvalError:
            return None  # fails at runtime, as upstream
        return None

    # ------------------------------------------------------------------------- control flow

    def _flatten(self, n: Node, fn: str) -> list[Node]:
        if isinstance(n, Call) and n.function == fn:
            out: list[Node] = []
            for a in n.args:
                out += self._flatten(a, fn)
            return out
        return [n]

    def _logic(self, n: Call, depth: int) -> Code:
        fn = n.function
        if depth >= _MAX_BLOCK_DEPTH:
            return self._wrap(n)
        is_and = fn == "_&&_"
        operands = self._flatten(n, fn)
        codes = [self.gen(o, depth + 2) for o in operands]
        infos = [self._i(o) for o in operands]
        plain = [not s for s, _ in codes]
        bools = [i.type == BOOL for i in infos]
        raising = [i.raises for i in infos]
        if all(plain) and all(bools):
            order = list(range(len(operands)))
            risky = [i for i in order if raising[i]]
            # CEL lets us move the one failing operand last; not one that may run out of budget,
            # since upstream aborts the whole evaluation when it is evaluated first.
            if len(risky) == 1 and _costly(operands[risky[0]]) and risky[0] != order[-1]:
                risky = [*risky, -1]
            if len(risky) <= 1:
                order = [i for i in order if not raising[i]] + risky
                joiner = " and " if is_and else " or "
                return [], "(" + joiner.join(codes[i][1] for i in order) + ")"
        r, e, t, x = self._tmp("_r"), self._tmp("_e"), self._tmp("_t"), self._tmp("_x")
        stop, go = ("False", "True") if is_and else ("True", "False")
        body = [f"{e} = None"]
        for (s, expr), info, ok in zip(codes, infos, plain):
            if ok and not info.raises and info.type == BOOL:
                cond = f"not {expr}" if is_and else expr
                body += [f"if {cond}:", f"{_IND}{r} = {stop}", f"{_IND}break"]
                continue
            body += ["try:", *_indent(s), f"{_IND}{t} = {expr}", f"except Exception as {x}:"]
            body += [f"{_IND}if {e} is None:", f"{_IND * 2}{e} = {x}", "else:"]
            body += [f"{_IND}if {t} is {stop}:", f"{_IND * 2}{r} = {stop}", f"{_IND * 2}break"]
            if info.type != BOOL:
                body += [f"{_IND}if {t} is not {go} and {e} is None:", f"{_IND * 2}{e} = bad_logic({fn!r}, {t})"]
        body += [f"if {e} is not None:", f"{_IND}raise {e}", f"{r} = {go}", "break"]
        return ["while True:", *_indent(body)], r

    def _ternary(self, n: Call, depth: int) -> Code:
        if depth >= _MAX_BLOCK_DEPTH:
            return self._wrap(n)
        c, a, b = n.args
        sc, ec = self.gen(c, depth + 1)
        sa, ea = self.gen(a, depth + 1)
        sb, eb = self.gen(b, depth + 1)
        ct = self._i(c).type
        test = ec if ct == BOOL else f"cond({ec})"
        if not sa and not sb:
            return sc, f"({ea} if {test} else {eb})"
        r = self._tmp("_r")
        lines = [*sc, f"if {test}:", *_indent(sa), f"{_IND}{r} = {ea}", "else:", *_indent(sb), f"{_IND}{r} = {eb}"]
        return lines, r

    def _wrap(self, n: Node) -> Code:
        """Move a construct into a local function so Python's block-nesting limit never bites."""
        f = self._tmp("_f")
        stmts, expr = self.gen(n, 0)
        return [], self._local_function(f, [], [*stmts, f"return {expr}"])

    # ------------------------------------------------------------------------- comprehensions

    def g_Comprehension(self, n: Comprehension, depth: int) -> Code:
        if n.kind == "bind":
            s0, e0 = self.gen(n.iter_range, depth)
            self.live.append(n.var)
            try:
                s1, e1 = self.gen(n.args[0], depth)
            finally:
                self.live.pop()
            return [*s0, f"{n.var} = {e0}", *s1], e1
        if n.kind in ("optMap", "optFlatMap"):
            return self._opt_map(n, depth)
        s0, rng = self.gen(n.iter_range, depth)
        self.uses_cost = True
        rtype = self._i(n.iter_range).type
        two = n.var2 is not None
        rng_param = self._tmp("_rng")
        if two:
            it = f"iter_pairs({rng_param})"
            loop = f"for {n.var}, {n.var2} in {it}:"
        else:
            static = isinstance(rtype, tuple) and rtype[0] in ("list", "map", "dmap")
            it = rng_param if static else f"iter_range({rng_param})"
            loop = f"for {n.var} in {it}:"
        step = 1 + sum(_count(a) for a in n.args)
        head = [loop, f"{_IND}_c[0] += {step}", f"{_IND}if _c[0] > {rt.COST_LIMIT}:", f"{_IND * 2}cost_exceeded()"]
        outer_live = list(self.live)
        self.live += [n.var] + ([n.var2] if n.var2 else [])
        try:
            bodies = [self.gen(a, 2) for a in n.args]
        finally:
            self.live = outer_live
        f = self._tmp("_f")
        kind = n.kind
        lines: list[str]
        if kind in ("all", "exists"):
            e, t, x = self._tmp("_e"), self._tmp("_t"), self._tmp("_x")
            stop, go = ("False", "True") if kind == "all" else ("True", "False")
            s, p = bodies[0]
            lines = [f"{e} = None", *head]
            lines += _indent(["try:", *_indent(s), f"{_IND}{t} = {p}", f"except Exception as {x}:"])
            lines += _indent([f"{_IND}if {e} is None:", f"{_IND * 2}{e} = {x}", f"{_IND}continue"])
            lines += _indent([f"if {t} is {stop}:", f"{_IND}return {stop}"])
            lines += _indent([f"if {t} is not {go} and {e} is None:", f"{_IND}{e} = bad_logic({kind!r}, {t})"])
            lines += [f"if {e} is not None:", f"{_IND}raise {e}", f"return {go}"]
        elif kind in ("exists_one", "existsOne"):
            cnt = self._tmp("_n")
            s, p = bodies[0]
            lines = [f"{cnt} = 0", *head, *_indent(s)]
            lines += _indent([f"if pred({p}, {kind!r}):", f"{_IND}{cnt} += 1"])
            lines += [f"return {cnt} == 1"]
        elif kind in ("map", "filter", "transformList"):
            out = self._tmp("_l")
            lines = [f"{out} = []", *head]
            if kind == "filter":
                s, p = bodies[0]
                elem = n.var2 if two else n.var
                lines += _indent([*s, f"if pred({p}, 'filter'):", f"{_IND}{out}.append({elem})"])
            elif len(bodies) == 2:
                (sp, p), (sv, v) = bodies
                lines += _indent([*sp, f"if pred({p}, {kind!r}):", *_indent(sv), f"{_IND}{out}.append({v})"])
            else:
                sv, v = bodies[0]
                lines += _indent([*sv, f"{out}.append({v})"])
            lines += [f"return {out}"]
        elif kind == "transformMap":
            out = self._tmp("_m")
            lines = [f"{out} = {{}}", *head]
            if len(bodies) == 2:
                (sp, p), (sv, v) = bodies
                lines += _indent([*sp, f"if pred({p}, {kind!r}):", *_indent(sv), f"{_IND}{out}[{n.var}] = {v}"])
            else:
                sv, v = bodies[0]
                lines += _indent([*sv, f"{out}[{n.var}] = {v}"])
            lines += [f"return {out}"]
        elif kind == "sortBy":
            keys = self._tmp("_l")
            sv, v = bodies[0]
            lines = [f"{keys} = []", *head, *_indent([*sv, f"{keys}.append({v})"])]
            lines += [f"return sort_by(_c, list({it}), {keys})"]
        else:  # pragma: no cover - the checker only produces the kinds above
            raise AssertionError(kind)
        return s0, self._local_function(f, [f"{rng_param}={rng}"], lines)

    def _opt_map(self, n: Comprehension, depth: int) -> Code:
        s0, o = self.gen(n.iter_range, depth)
        tmp, r = self._tmp("_o"), self._tmp("_r")
        self.live.append(n.var)
        try:
            s, v = self.gen(n.args[0], depth + 1)
        finally:
            self.live.pop()
        wrap = f"Opt(True, {v})" if n.kind == "optMap" else f"as_opt({v})"
        lines = [*s0, f"{tmp} = as_opt({o})", f"if {tmp}.has:", f"{_IND}{n.var} = {tmp}.val"]
        lines += [*_indent(s), f"{_IND}{r} = {wrap}", "else:", f"{_IND}{r} = {tmp}"]
        return lines, r


def _costly(n: Node) -> bool:
    """Whether evaluating ``n`` can charge the cost budget (loops, size-dependent helpers)."""
    if isinstance(n, Comprehension) and n.kind != "bind":
        return True
    if isinstance(n, Call) and n.function in _COSTLY_FUNCTIONS:
        return True
    return any(_costly(c) for c in _children(n))


_NET_PARSERS: dict[str, Any] = {"ip": rt.ip_of, "cidr": rt.cidr_of, "url": rt.url_of}

_COSTLY_FUNCTIONS = frozenset({"_+_", "lists.range", "flatten", "distinct", "sort"})


def _split(extra: list[str]) -> list[tuple[str, str]]:
    return [tuple(e.split("=", 1)) for e in extra]  # type: ignore[misc]


def _paren_depth(s: str) -> int:
    depth = best = 0
    for ch in s:
        if ch in "([{":
            depth += 1
            if depth > best:
                best = depth
        elif ch in ")]}":
            depth -= 1
    return best


def _inline_eq(a: Type, b: Type) -> bool:
    """Python ``==`` equals CEL ``==`` here: a string or bytes side, or two equal scalar types."""
    if a in (STRING, BYTES) or b in (STRING, BYTES):
        return True
    return a == b and a in (INT, DOUBLE, BOOL, UINT) and not is_dyn(a)


def _count(n: Node) -> int:
    """Static cost of one evaluation of ``n`` (one unit per non-literal node)."""
    if isinstance(n, Literal):
        return 0
    # cel-go charges a base cost for creating a list (10) or a map (30), not one unit.
    total = 10 if isinstance(n, CreateList) else 30 if isinstance(n, CreateMap) else 1
    for child in _children(n):
        total += _count(child)
    return total


def _children(n: Node) -> list[Node]:
    if isinstance(n, Select):
        return [n.operand]
    if isinstance(n, Index):
        return [n.operand, n.index]
    if isinstance(n, Call):
        return ([n.target] if n.target is not None else []) + list(n.args)
    if isinstance(n, CreateList):
        return list(n.elements)
    if isinstance(n, CreateMap):
        return [x for k, v, _ in n.entries for x in (k, v)]
    if isinstance(n, Comprehension):
        return [n.iter_range, *n.args]
    return []

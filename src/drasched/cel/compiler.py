"""compile_selector: parse, check, generate Python, compile once; evaluate many times."""

from __future__ import annotations

import sys
from collections.abc import Callable
from functools import lru_cache
from typing import Any, Final

from drasched.cel import runtime as rt
from drasched.cel.ast import ParseFailure, parse
from drasched.cel.checker import ANY, BOOL, DEVICE, Checker, CheckError, Type, fmt
from drasched.cel.codegen import CodeGen
from drasched.cel.cost import estimate_cost
from drasched.cel.device import DeviceView
from drasched.cel.errors import CELCompileError, CELRuntimeError

__all__ = ["MAX_EXPRESSION_LENGTH", "CompiledSelector", "compile_expression", "compile_selector"]

#: resource.k8s.io CELSelectorExpressionMaxLength (validation counts bytes, as Go's len does).
MAX_EXPRESSION_LENGTH: Final = 10 * 1024
#: resource.k8s.io CELSelectorExpressionMaxCost, the runtime budget of one evaluation.
COST_LIMIT: Final = rt.COST_LIMIT
_MAX_NESTING: Final = 250  # cel-go's default parser recursion limit


class CompiledSelector:
    """A compiled DRA device selector; ``evaluate`` is safe to call from many threads."""

    __slots__ = ("_fn", "expression", "max_cost", "output_type", "source")

    def __init__(
        self,
        expression: str,
        fn: Callable[[DeviceView | None], Any],
        output_type: Type,
        source: str,
        max_cost: float = 0,
    ) -> None:
        self.expression = expression
        self._fn = fn
        self.output_type = output_type
        self.source = source  # the generated Python, for debugging
        self.max_cost = max_cost  # worst-case cost of one evaluation (cel.cost), inf if unbounded

    def evaluate(self, device: DeviceView) -> bool:
        """Whether ``device`` matches. Raises CELRuntimeError when evaluation fails (not False)."""
        try:
            r = self._fn(device)
        except rt.CostLimitExceeded as e:
            raise CELRuntimeError(str(e), self.expression) from None
        except KeyError as e:
            raise CELRuntimeError(f"no such key: {e.args[0] if e.args else ''}", self.expression) from None
        except rt.EvalError as e:
            raise CELRuntimeError(str(e), self.expression) from None
        except IndexError as e:
            raise CELRuntimeError(f"index out of bounds: {e}", self.expression) from None
        except RecursionError:
            raise CELRuntimeError("evaluation nested too deeply", self.expression) from None
        except Exception as e:
            raise CELRuntimeError(f"{type(e).__name__}: {e}", self.expression) from None
        if r is True:
            return True
        if r is False:
            return False
        raise CELRuntimeError(f"CEL result of type {rt.type_name(r)} could not be converted to bool", self.expression)

    def __repr__(self) -> str:
        return f"CompiledSelector({self.expression!r})"


def _compile_error(
    message: str, expression: str, pos: tuple[int, int] | None, internal: bool = False
) -> CELCompileError:
    if pos is None:
        return CELCompileError(f"compile error: {message}", expression, None, message, internal)
    line, col = pos
    lines = expression.split("\n")
    src = lines[line - 1] if 0 < line <= len(lines) else ""
    text = f"compile error at {line}:{col}: {message}\n | {src}\n | {'.' * (col - 1)}^"
    return CELCompileError(text, expression, pos, message, internal)


def _nesting(expression: str) -> int:
    depth = best = 0
    for ch in expression:
        if ch in "([{":
            depth += 1
            best = max(best, depth)
        elif ch in ")]}":
            depth -= 1
    return best


@lru_cache(maxsize=4096)
def _compile(expression: str, require_bool: bool = True) -> CompiledSelector | CELCompileError:
    size = len(expression.encode("utf-8"))
    if size > MAX_EXPRESSION_LENGTH:
        return _compile_error(
            f"expression is {size} bytes long, more than the limit of {MAX_EXPRESSION_LENGTH}", expression, None
        )
    if _nesting(expression) > _MAX_NESTING:
        return _compile_error(f"max recursion depth exceeded ({_MAX_NESTING})", expression, None)
    old = sys.getrecursionlimit()
    try:
        sys.setrecursionlimit(max(old, 20_000))
        root = parse(expression)
        checker = Checker()
        root, info = checker.check(root, {})
        out = info.type
        if require_bool and out not in (BOOL, ANY):  # upstream: bool or the unknown type (not dyn)
            shown = fmt(out)
            return _compile_error(f"must evaluate to bool or the unknown type, not {shown}", expression, root.pos)
        max_cost = estimate_cost(root, checker.info)
        gen = CodeGen(checker)
        source = gen.function(root)
        code = compile(source, f"<cel {expression[:60]!r}>", "exec")
    except ParseFailure as e:
        return _compile_error(e.message, expression, e.pos)
    except CheckError as e:
        return _compile_error(e.message, expression, e.pos, e.internal)
    except (RecursionError, MemoryError, SyntaxError):
        return _compile_error("expression is nested too deeply", expression, None)
    finally:
        sys.setrecursionlimit(old)
    ns = gen.namespace
    exec(code, ns)
    return CompiledSelector(expression, ns["_selector"], out, source, max_cost)


def compile_expression(expression: str) -> Callable[[DeviceView | None], Any]:
    """Compile any CEL expression of this environment to a function returning its raw value.

    For tests and tools; selectors use :func:`compile_selector`. Runtime errors surface as the
    underlying Python/runtime exceptions.
    """
    r = _compile(expression, False)
    if isinstance(r, CELCompileError):
        raise CELCompileError(r.message, r.expression, r.position, r.detail, r.internal)
    return r._fn


def compile_selector(expression: str) -> CompiledSelector:
    """Compile a DRA device selector (cached per expression string).

    Raises CELCompileError with the 1-based position and a caret under the source.
    """
    r = _compile(expression)
    if isinstance(r, CELCompileError):
        raise CELCompileError(r.message, r.expression, r.position, r.detail, r.internal)
    return r


_ = DEVICE

"""All SQL in ``hivekeep/store`` is parameterised: data reaches a statement only as a bound value.

The rule, checked on the source with ``ast``: the SQL argument of every ``execute``,
``executemany`` and ``executescript`` call, and of every store helper that hands one of its
parameters on to them (``_read``, ``_execute``, ...: found by following the calls), is text the
store writes itself. It may be a literal, or be assembled (f-strings, ``+``, ``%``, ``.format``,
``str.join``, psycopg's ``sql.SQL(...).format``) only from:

* literals and UPPER_CASE module constants (column lists, table names, settings);
* numbers (``int(...)``, ``len(...)``, a literal string repeated ``"?" * n``);
* psycopg's quoting constructs ``sql.Identifier``, ``sql.Literal``, ``sql.Placeholder``;
* local variables, loop variables and helper results that are themselves built only this way
  (``where``, ``clauses``, ``marks``, a column picked from two literals, ...), followed through
  assignments, ``.append``/``.extend``, tuple unpacking and the return values of the store's own
  functions called with such arguments.

Anything else (a parameter of a public method, a value read from a record, a user's text) fails
the test with its file and line: it must become a bound parameter (``?``, ``:name``, ``%s``).
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field
from pathlib import Path

import pytest

STORE = Path(__file__).parents[2] / "hivekeep" / "store"
SINKS = {"execute": 0, "executemany": 0, "executescript": 0}  # method name -> SQL argument index
CONSTANT = re.compile(r"^_?[A-Z][A-Z0-9_]*$")
NUMBERS = {"int", "len", "float", "bool"}  # a number or a truth value: never SQL text
ITERATORS = {"range", "enumerate", "zip", "sorted", "reversed", "list", "tuple"}  # of safe: safe
SQL_QUOTED = {"Identifier", "Literal", "Placeholder"}  # psycopg.sql: quoted or bound by psycopg
TEXT_METHODS = {"replace", "strip", "lower", "upper", "format", "join"}

Function = ast.FunctionDef | ast.AsyncFunctionDef


def _parameters(function: Function) -> list[str]:
    names = [a.arg for a in (*function.args.posonlyargs, *function.args.args)]
    return [n for n in names if n not in {"self", "cls"}] + [
        a.arg for a in function.args.kwonlyargs
    ]


def _own_nodes(function: Function) -> list[ast.AST]:
    """The nodes of ``function``'s body, without those of functions nested in it."""
    nodes: list[ast.AST] = []
    stack: list[ast.AST] = list(function.body)
    while stack:
        node = stack.pop()
        nodes.append(node)
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            stack.extend(ast.iter_child_nodes(node))
    return nodes


@dataclass
class Scope:
    """What a function (or a module) assigns to each local name."""

    function: Function | None
    nodes: list[ast.AST]
    given: dict[str, bool] = field(default_factory=dict)  # parameter -> whether its value is safe

    def sources(self, name: str) -> list[tuple[ast.expr, int | None]]:
        """Every expression assigned to ``name`` (with the tuple index when unpacked)."""
        found: list[tuple[ast.expr, int | None]] = []
        for node in self.nodes:
            if isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)) and node.value:
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                for target in targets:
                    found += _bound(target, name, node.value)
                    if (  # fields["key"] = value: iterating ``fields`` yields the keys
                        isinstance(target, ast.Subscript)
                        and isinstance(target.value, ast.Name)
                        and target.value.id == name
                    ):
                        found.append((target.slice, None))
            elif isinstance(node, (ast.For, ast.comprehension)):
                found += [(node.iter, -1)] if _binds(node.target, name) else []
            elif isinstance(node, ast.withitem) and node.optional_vars is not None:
                found += _bound(node.optional_vars, name, node.context_expr)
            elif (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and isinstance(node.func.value, ast.Name)
                and node.func.value.id == name
                and node.func.attr in {"append", "extend", "insert"}
            ):
                found += [(arg, None) for arg in node.args[-1:]]
        return found


def _binds(target: ast.expr, name: str) -> bool:
    return any(isinstance(n, ast.Name) and n.id == name for n in ast.walk(target))


def _bound(target: ast.expr, name: str, value: ast.expr) -> list[tuple[ast.expr, int | None]]:
    if isinstance(target, ast.Name):
        return [(value, None)] if target.id == name else []
    if isinstance(target, ast.Tuple):
        for index, element in enumerate(target.elts):
            if isinstance(element, ast.Name) and element.id == name:
                if isinstance(value, ast.Tuple):
                    return [(value.elts[index], None)]
                return [(value, index)]
    return []


class Audit:
    """Decides, for SQL arguments found in the store's modules, whether they are internal text."""

    def __init__(self, modules: dict[str, ast.Module]) -> None:
        self.modules = modules
        self.functions: dict[str, list[Function]] = {}
        for tree in modules.values():
            for node in ast.walk(tree):
                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    self.functions.setdefault(node.name, []).append(node)
        self.sinks = dict(SINKS)
        self._active: set[tuple[int, str]] = set()
        self._find_wrappers()

    def _find_wrappers(self) -> None:
        """Functions that pass one of their parameters on as SQL are sinks too."""
        changed = True
        while changed:
            changed = False
            for name, functions in self.functions.items():
                for function in functions:
                    parameters = _parameters(function)
                    for call in self._sink_calls(_own_nodes(function)):
                        argument = self._sql_argument(call)
                        if isinstance(argument, ast.Name) and argument.id in parameters:
                            index = parameters.index(argument.id)
                            if self.sinks.get(name) != index:
                                self.sinks[name] = index
                                changed = True

    def _sink_calls(self, nodes: list[ast.AST]) -> list[ast.Call]:
        return [n for n in nodes if isinstance(n, ast.Call) and _called(n) in self.sinks]

    def _sql_argument(self, call: ast.Call) -> ast.expr | None:
        index = self.sinks[_called(call)]
        return call.args[index] if len(call.args) > index else None

    def problems(self) -> list[str]:
        found = []
        for path, tree in self.modules.items():
            module_scope = Scope(None, [n for n in tree.body if not isinstance(n, ast.ClassDef)])
            scopes = [module_scope] + [
                Scope(f, _own_nodes(f))
                for f in ast.walk(tree)
                if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef))
            ]
            for scope in scopes:
                parameters = _parameters(scope.function) if scope.function else []
                for call in self._sink_calls(scope.nodes):
                    argument = self._sql_argument(call)
                    if argument is None:
                        continue
                    if isinstance(argument, ast.Name) and argument.id in parameters:
                        continue  # a wrapper: its callers' arguments are checked instead
                    if not self.safe(argument, scope):
                        found.append(
                            f"{path}:{call.lineno}: {_called(call)}(...) builds its SQL from "
                            f"{ast.unparse(argument)[:200]}"
                        )
        return found

    # -- safety of one expression ---------------------------------------------------------------
    def safe(self, node: ast.expr, scope: Scope) -> bool:
        if isinstance(node, ast.Constant):
            return True
        if isinstance(node, ast.Name):
            return self._safe_name(node.id, scope)
        if isinstance(node, ast.Attribute):
            return bool(CONSTANT.match(node.attr))
        if isinstance(node, ast.JoinedStr):
            return all(
                self.safe(p.value, scope) for p in node.values if isinstance(p, ast.FormattedValue)
            )
        if isinstance(node, ast.BinOp):
            if isinstance(node.op, ast.Mult):  # "?" * n: a literal repeated
                return any(
                    isinstance(s, ast.Constant) and isinstance(s.value, str)
                    for s in (node.left, node.right)
                )
            return self.safe(node.left, scope) and self.safe(node.right, scope)
        if isinstance(node, ast.IfExp):
            return self.safe(node.body, scope) and self.safe(node.orelse, scope)
        if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
            return all(self.safe(e, scope) for e in node.elts)
        if isinstance(node, ast.Starred):
            return self.safe(node.value, scope)
        if isinstance(node, (ast.GeneratorExp, ast.ListComp, ast.SetComp, ast.DictComp)):
            inner = Scope(scope.function, [*scope.nodes, *node.generators], scope.given)
            return self.safe(node.key if isinstance(node, ast.DictComp) else node.elt, inner)
        if isinstance(node, ast.Dict):  # only its keys are ever iterated into SQL
            return all(k is None or self.safe(k, scope) for k in node.keys)
        if isinstance(node, ast.Subscript):
            return self.safe(node.value, scope)
        if isinstance(node, ast.Call):
            return self._safe_call(node, scope)
        return False

    def _safe_name(self, name: str, scope: Scope) -> bool:
        if CONSTANT.match(name):
            return True
        if name in scope.given:
            return scope.given[name]
        key = (id(scope.function), name)
        if key in self._active:
            return True  # a name built from itself (x += ...): judged by its other parts
        sources = scope.sources(name)
        if not sources:
            return False  # a parameter, or a value from elsewhere: data
        self._active.add(key)
        try:
            return all(self._safe_source(value, index, scope) for value, index in sources)
        finally:
            self._active.discard(key)

    def _safe_source(self, value: ast.expr, index: int | None, scope: Scope) -> bool:
        if index is None or index == -1:  # assigned, or a loop variable over ``value``
            return self.safe(value, scope)
        if isinstance(value, ast.Call):  # a, b = helper(...): element ``index`` of its returns
            return self._safe_call(value, scope, element=index)
        return self.safe(value, scope)

    def _safe_call(self, call: ast.Call, scope: Scope, element: int | None = None) -> bool:
        func = call.func
        arguments = [*call.args, *(k.value for k in call.keywords)]
        if isinstance(func, ast.Name) and func.id in NUMBERS:
            return True
        if isinstance(func, ast.Name) and func.id in ITERATORS:
            return all(self.safe(a, scope) for a in arguments)
        if isinstance(func, ast.Attribute):
            receiver = func.value
            if isinstance(receiver, ast.Name) and receiver.id == "sql":
                if func.attr in SQL_QUOTED:
                    return True
                if func.attr == "SQL":
                    return all(self.safe(a, scope) for a in arguments)
            if func.attr in TEXT_METHODS and not (
                isinstance(receiver, ast.Name) and receiver.id == "self"
            ):
                return self.safe(receiver, scope) and all(self.safe(a, scope) for a in arguments)
        name = _called(call)
        functions = self.functions.get(name, [])
        return bool(functions) and all(
            self._safe_returns(f, call, scope, element) for f in functions
        )

    def _safe_returns(
        self, function: Function, call: ast.Call, scope: Scope, element: int | None
    ) -> bool:
        """Whether everything ``function`` returns (element ``element`` of it) is safe text,
        its parameters being as safe as the call's arguments."""
        parameters = _parameters(function)
        given = {p: True for p in parameters}  # defaults are literals in the store
        for p, arg in zip(parameters, call.args, strict=False):
            given[p] = self.safe(arg, scope)
        for keyword in call.keywords:
            if keyword.arg in given:
                given[keyword.arg] = self.safe(keyword.value, scope)
        inner = Scope(function, _own_nodes(function), given)
        returns = [n.value for n in inner.nodes if isinstance(n, ast.Return) and n.value]
        key = (id(function), "<return>")
        if key in self._active:
            return True
        self._active.add(key)
        try:
            for value in returns:
                if element is not None and isinstance(value, ast.Tuple):
                    value = value.elts[element]
                if not self.safe(value, inner):
                    return False
            return bool(returns)
        finally:
            self._active.discard(key)


def _called(call: ast.Call) -> str:
    func = call.func
    return func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")


def sql_problems(sources: dict[str, str]) -> list[str]:
    return Audit({path: ast.parse(text, path) for path, text in sources.items()}).problems()


def test_all_sql_in_the_store_is_parameterised() -> None:
    files = sorted(STORE.rglob("*.py"))
    assert len(files) >= 10
    problems = sql_problems({str(p.relative_to(STORE.parent.parent)): p.read_text() for p in files})
    assert problems == [], "\n".join(problems)


def test_the_wrappers_are_followed() -> None:
    files = sorted(STORE.rglob("*.py"))
    audit = Audit({str(p): ast.parse(p.read_text()) for p in files})
    assert {"_read", "_execute"} <= set(audit.sinks)


SAFE = """
COLUMNS = "id, content"
def _marks(count):
    return ", ".join("?" * count)
def _where(prefix, column):
    clauses = []
    clauses.append(f"{prefix}category = :category")
    clauses.append(f"{column} = :subject")
    return " AND ".join(clauses), {}
class Store:
    def _read(self, sql, params=()):
        return list(self.conn.execute(sql, params))
    def get(self, ids, manual, filters):
        where, params = _where("m.", column="lower(m.subject)")
        stamp = "manually_edited_at" if manual else "last_rewrite_at"
        self._read(f"SELECT {COLUMNS} FROM m WHERE {where} AND id IN ({_marks(len(ids))})", ids)
        self.conn.execute(f"UPDATE p SET {stamp} = ?", (1,))
        for statement in ["CREATE TABLE a (x)", "CREATE TABLE b (y)"]:
            self.conn.execute(statement)
        self.conn.execute(sql.SQL("SELECT {} FROM {}").format(sql.Literal(5), sql.Identifier(t)))
"""


@pytest.mark.parametrize(
    "unsafe",
    [
        "self.conn.execute(f\"SELECT * FROM m WHERE content = '{content}'\")",
        "self.conn.execute('SELECT * FROM m WHERE name = ' + filters.name)",
        "self.conn.execute('SELECT * FROM m WHERE name = %s' % content)",
        "self.conn.execute('SELECT * FROM m WHERE name = {}'.format(content))",
        "self._read(f'SELECT * FROM m LIMIT {limit}')",
        "self.conn.execute(f'SELECT * FROM m WHERE {_where(content, \"c\")[0]}')",
        "self.conn.execute(sql.SQL(content))",
    ],
)
def test_the_rule_tells_internal_text_from_data(unsafe: str) -> None:
    assert sql_problems({"safe.py": SAFE}) == []
    method = f"    def leak(self, content, filters, limit):\n        {unsafe}\n"
    problems = sql_problems({"unsafe.py": SAFE + method})
    assert len(problems) == 1 and "unsafe.py" in problems[0], problems

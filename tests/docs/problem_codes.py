"""The registry of problem ``code`` values the API can answer, collected from the code.

There is no hand-kept list to drift: the codes are read from the source (``ast``, nothing is
imported or run):

* the ``code`` (and DRF ``default_code``) of every class derived from
  :class:`synthorg.errors.DomainError` or DRF's ``APIException``;
* every ``code=`` given to such a class, to the problem builders of ``synthorg/api/``
  (``problem_response``, ``problem_http_response``, ``problem_body``) or to a function that
  hands its own ``code`` parameter on to one of them (``require_operator``, ``_invalid``…),
  as a string literal, a module constant, or ``SomeError.code``;
* the DRF exception → code table of ``synthorg/api/errors.py`` and the API key problems
  (``persistence.selectors.identity``), which reach the handler as data.

A ``code=`` the collector cannot resolve (``exc.code``: a code carried by another
exception) must be named in :data:`FORWARDED` with where its codes come from; a new one
fails the test until it is, so the registry cannot silently miss a code. Console pages,
the admin and management commands answer HTML or text, not problem+json: not scanned.
"""

from __future__ import annotations

import ast
import functools
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("synthorg", "persistence", "orgmemory", "memory")
#: parts of a path that hold no problem+json answer (HTML pages, text commands, schema history)
NOT_API = {"migrations", "console", "admin", "admin.py", "management", "templates"}

BUILDERS = {"problem_response", "problem_http_response", "problem_body"}
DRF_BASES = {
    "APIException",
    "ParseError",
    "AuthenticationFailed",
    "NotAuthenticated",
    "PermissionDenied",
    "NotFound",
    "MethodNotAllowed",
    "NotAcceptable",
    "UnsupportedMediaType",
    "Throttled",
}
#: DRF's own default codes, answered as the code of ``_DRF_CODES`` (synthorg/api/errors.py)
DRF_DEFAULT_CODES = {
    "parse_error": "malformed_request",
    "authentication_failed": "authentication_failed",
    "not_authenticated": "not_authenticated",
    "permission_denied": "permission_denied",
    "not_found": "not_found",
    "method_not_allowed": "method_not_allowed",
    "not_acceptable": "not_acceptable",
    "unsupported_media_type": "unsupported_media_type",
    "throttled": "throttled",
}
#: ``code=`` expressions that forward a code another exception carries: (file, expression)
#: → the classes whose ``code=`` values flow there (collected like the problem classes').
FORWARDED = {
    ("synthorg/api/parsers.py", "exc.code"): {"UnsafeInputError"},
    ("synthorg/tools.py", "exc.code"): {"UnsafeInputError"},
    ("persistence/services/portability.py", "exc.code"): {"NamespaceError"},
    ("memory/interfaces/service/base.py", "exc.code"): {"NamespaceError"},
    ("memory/finetune/services.py", "first['code']"): {"preflight problems"},
    ("persistence/api/authentication.py", "result.error.code"): {"KeyProblem"},
    ("synthorg/api/middleware.py", "_GENERIC_CODE.get(status_code, 'error')"): {"_GENERIC_CODE"},
    # the handler answering a domain error with its code (every one is collected above)
    ("synthorg/api/errors.py", "exc.code"): set(),
}


@dataclass
class Registry:
    """``codes``: code → the files that raise it; ``unresolved``: (file, line, expression)."""

    codes: dict[str, set[str]] = field(default_factory=dict)
    unresolved: list[tuple[str, int, str]] = field(default_factory=list)

    statuses: dict[str, set[int]] = field(default_factory=dict)

    def add(self, code: str, where: str, status: int | None = None) -> None:
        self.codes.setdefault(code, set()).add(where)
        if status is not None:
            self.statuses.setdefault(code, set()).add(status)


def _modules() -> list[tuple[str, ast.Module]]:
    return _parsed(ROOT)


#: id(tree) → (tree, every node of it): each parsed module is walked once (the tree is kept,
#: so its id is never reused for another)
_NODES: dict[int, tuple[ast.AST, list[ast.AST]]] = {}


def _walk(tree: ast.AST) -> list[ast.AST]:
    """``ast.walk(tree)`` as a list, computed once per tree (the registry walks each module
    several times)."""
    entry = _NODES.get(id(tree))
    if entry is None:
        entry = _NODES[id(tree)] = (tree, list(ast.walk(tree)))
    return entry[1]


@functools.cache
def _parsed(root: Path) -> list[tuple[str, ast.Module]]:
    """The API modules under ``root``, parsed once per tree."""
    out = []
    for package in PACKAGES:
        for path in sorted((root / package).rglob("*.py")):
            relative = path.relative_to(root)
            if NOT_API & set(relative.parts):
                continue
            out.append((relative.as_posix(), ast.parse(path.read_text(), str(relative))))
    return out


def _name(node: ast.AST) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return None


def _problem_classes(modules) -> dict[str, str | None]:
    """Class name → its own ``code``/``default_code`` (None: inherited), to a fixpoint."""
    classes: dict[str, str | None] = {"DomainError": "domain_error"}
    classes.update(dict.fromkeys(DRF_BASES))
    changed = True
    while changed:
        changed = False
        for _, tree in modules:
            for node in _walk(tree):
                if not isinstance(node, ast.ClassDef) or node.name in classes:
                    continue
                if {_name(b) for b in node.bases} & set(classes):
                    classes[node.name] = _own_code(node)
                    changed = True
    return classes


#: DRF's exceptions' statuses (rest_framework/exceptions.py)
DRF_STATUS = {
    "APIException": 500,
    "ParseError": 400,
    "AuthenticationFailed": 401,
    "NotAuthenticated": 401,
    "PermissionDenied": 403,
    "NotFound": 404,
    "MethodNotAllowed": 405,
    "NotAcceptable": 406,
    "UnsupportedMediaType": 415,
    "Throttled": 429,
}


def _statuses(modules, classes) -> dict[str, int]:
    """Class name → its HTTP status (its own ``status``/``status_code`` or its first base's)."""
    own: dict[str, int | None] = {}
    bases: dict[str, list[str]] = {}
    for _, tree in modules:
        for node in _walk(tree):
            if isinstance(node, ast.ClassDef) and node.name in classes:
                bases[node.name] = [n for b in node.bases if (n := _name(b)) is not None]
                own[node.name] = None
                for st in node.body:
                    if not isinstance(st, ast.Assign) or not any(
                        _name(t) in ("status", "status_code") for t in st.targets
                    ):
                        continue
                    if isinstance(st.value, ast.Constant) and isinstance(st.value.value, int):
                        own[node.name] = st.value.value
                    elif isinstance(st.value, ast.Attribute):  # status = ConflictError.status
                        bases[node.name] = [_name(st.value.value) or ""]
    resolved: dict[str, int] = dict(DRF_STATUS)

    def status_of(name: str, seen: frozenset = frozenset()) -> int | None:
        if name in resolved:
            return resolved[name]
        if name in seen:
            return None
        found = own.get(name)
        for base in bases.get(name, []) if found is None else []:
            found = status_of(base, seen | {name})
            if found is not None:
                break
        if found is not None:
            resolved[name] = found
        return found

    for name in classes:
        status_of(name)
    resolved.setdefault("DomainError", 400)
    return resolved


def _own_code(node: ast.ClassDef) -> str | None:
    for statement in node.body:
        if (
            isinstance(statement, ast.Assign)
            and isinstance(statement.value, ast.Constant)
            and isinstance(statement.value.value, str)
            and any(_name(t) in ("code", "default_code") for t in statement.targets)
        ):
            return statement.value.value
    return None


def _constants(modules) -> dict[str, dict[str, str]]:
    """File → its module-level string constants; ``"*"`` → names with one value project-wide."""
    per_file: dict[str, dict[str, str]] = {}
    values: dict[str, set[str]] = {}
    for where, tree in modules:
        own = per_file.setdefault(where, {})
        for node in tree.body:
            if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant):
                if not isinstance(node.value.value, str):
                    continue
                for target in node.targets:
                    if isinstance(target, ast.Name):
                        own[target.id] = node.value.value
                        values.setdefault(target.id, set()).add(node.value.value)
    per_file["*"] = {name: next(iter(v)) for name, v in values.items() if len(v) == 1}
    return per_file


def _module_file(dotted: str) -> str | None:
    for candidate in (dotted.replace(".", "/") + ".py", dotted.replace(".", "/") + "/__init__.py"):
        if (ROOT / candidate).exists():
            return candidate
    return None


def _imports(tree: ast.Module) -> dict[str, tuple[str, str | None]]:
    """Local name → (the file it comes from, the name there; None: the module itself)."""
    found: dict[str, tuple[str, str | None]] = {}
    for node in _walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            for alias in node.names:
                local = alias.asname or alias.name
                module = _module_file(f"{node.module}.{alias.name}")
                if module is not None:
                    found[local] = (module, None)
                elif (source := _module_file(node.module)) is not None:
                    found[local] = (source, alias.name)
    return found


def _forwarders(modules, callables: set[str]) -> dict[tuple[str, str], int | None]:
    """Functions with a ``code`` parameter they pass on as ``code=code`` to one of
    ``callables``: (file, name) → the parameter's position (None: keyword-only)."""
    found: dict[tuple[str, str], int | None] = {}
    for where, tree in modules:
        for node in _walk(tree):
            if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                continue
            positional = [a.arg for a in node.args.posonlyargs + node.args.args]
            keyword_only = [a.arg for a in node.args.kwonlyargs]
            if "code" not in positional + keyword_only or node.name in ("__init__",):
                continue
            # a problem class, or one the function is handed (``cls=MemoryStoreError``)
            targets = callables | set(positional + keyword_only)
            for call in ast.walk(node):
                if (
                    isinstance(call, ast.Call)
                    and _name(call.func) in targets
                    and any(
                        k.arg == "code" and isinstance(k.value, ast.Name) and k.value.id == "code"
                        for k in call.keywords
                    )
                ):
                    found[(where, node.name)] = (
                        positional.index("code") if "code" in positional else None
                    )
    return found


def collect() -> Registry:
    """The registry of the tree at :data:`ROOT` (collected once per tree)."""
    return _collect(ROOT)


@functools.cache
def _collect(root: Path) -> Registry:
    modules = _parsed(root)
    classes = _problem_classes(modules)
    constants = _constants(modules)
    statuses = _statuses(modules, classes)
    registry = Registry()
    for where, tree in modules:
        for node in _walk(tree):
            if isinstance(node, ast.ClassDef) and classes.get(node.name):
                code = classes[node.name]
                assert code is not None
                registry.add(DRF_DEFAULT_CODES.get(code, code), where, statuses.get(node.name))
    callables = set(classes) | BUILDERS
    forwarders = _forwarders(modules, callables)
    drf = set(DRF_BASES) | {
        name for name in classes if name not in DRF_BASES and _is_drf(name, modules)
    }
    for where, tree in modules:
        imports = _imports(tree)
        for node in _walk(tree):
            if not isinstance(node, ast.Call):
                continue
            callee = _name(node.func)
            forwarder = _forwarder(where, callee, imports, forwarders)
            if callee not in callables and forwarder is False:
                continue
            position = None if forwarder is False else forwarder
            expression = _code_argument(node, position, forwarder is not False)
            if expression is None or (isinstance(expression, ast.Name) and expression.id == "code"):
                continue  # no code given, or a forwarder handing its own on (callers count)
            code = _resolve(expression, where, constants, classes, imports)
            if code is None:
                text = ast.unparse(expression)
                if (where, text) not in FORWARDED:
                    registry.unresolved.append((where, node.lineno, text))
                continue
            if callee in drf:
                code = DRF_DEFAULT_CODES.get(code, code)
            registry.add(code, where, _call_status(node, callee, statuses))
    return registry


def _call_status(node: ast.Call, callee: str | None, statuses: dict[str, int]) -> int | None:
    """The status a call answers: its class's, or a builder's literal ``status_code``; None
    for a forwarder (its callee's class decides; ``cls=`` may be given)."""
    if callee in statuses:
        return statuses[callee]
    for keyword in node.keywords:
        if keyword.arg == "status_code" and isinstance(keyword.value, ast.Constant):
            return keyword.value.value
        if keyword.arg == "status_code" and isinstance(keyword.value, ast.Attribute):
            digits = keyword.value.attr.split("_")[1:2]  # status.HTTP_413_…
            return int(digits[0]) if digits and digits[0].isdigit() else None
    return None


def _forwarder(where, callee, imports, forwarders) -> int | bool | None:
    """The ``code`` position of the forwarder ``callee`` names in ``where`` (defined there
    or imported), None when keyword-only; False when it names none."""
    if callee is None:
        return False
    if (where, callee) in forwarders:
        return forwarders[(where, callee)]
    source = imports.get(callee)
    if source is not None and source[1] is not None and (source[0], source[1]) in forwarders:
        return forwarders[(source[0], source[1])]
    return False


def _is_drf(name: str, modules) -> bool:
    """Whether the first class named ``name`` derives directly from a DRF exception."""
    for _, tree in modules:
        for node in _class_defs(tree):
            if node.name == name:
                return any(_name(b) in DRF_BASES for b in node.bases)
    return False


def _class_defs(tree: ast.AST) -> list[ast.ClassDef]:
    return [node for node in _walk(tree) if isinstance(node, ast.ClassDef)]


def _code_argument(call: ast.Call, position: int | None, forwarder: bool) -> ast.AST | None:
    for keyword in call.keywords:
        if keyword.arg == "code":
            return keyword.value
    if forwarder and position is not None and len(call.args) > position:
        return call.args[position]
    return None


def _resolve(expression: ast.AST, where: str, constants, classes, imports=None) -> str | None:
    imports = imports or {}
    if isinstance(expression, ast.Constant) and isinstance(expression.value, str):
        return expression.value
    if isinstance(expression, ast.Name):
        if expression.id in constants[where]:
            return constants[where][expression.id]
        source = imports.get(expression.id)
        if source is not None and source[1] is not None:
            return constants.get(source[0], {}).get(source[1])
        return constants["*"].get(expression.id)
    if isinstance(expression, ast.Attribute):
        if expression.attr == "code" and _name(expression.value) in classes:
            return _class_code(_name(expression.value), classes)
        if isinstance(expression.value, ast.Name):
            source = imports.get(expression.value.id)
            if source is not None and source[1] is None:
                return constants.get(source[0], {}).get(expression.attr)
            return constants["*"].get(expression.attr)
    return None


def _class_code(name: str | None, classes) -> str | None:
    return classes.get(name) if name else None


def carried_codes(class_name: str) -> set[str]:
    """The literal ``code=`` values given to ``class_name`` (a non-problem exception whose
    code a problem forwards, see :data:`FORWARDED`)."""
    modules = _modules()
    constants = _constants(modules)
    found = set()
    for where, tree in modules:
        for node in _walk(tree):
            if isinstance(node, ast.Call) and _name(node.func) == class_name:
                expression = _code_argument(node, None, False)
                if expression is not None:
                    code = _resolve(expression, where, constants, {})
                    if code is not None:
                        found.add(code)
    return found


def _literal_dict_values(path: str, name: str) -> set[str]:
    """The string values of the module-level dict ``name`` in ``path``."""
    tree = ast.parse((ROOT / path).read_text())
    for node in tree.body:
        target = node.target if isinstance(node, ast.AnnAssign) else None
        if isinstance(node, ast.Assign):
            target = node.targets[0]
        if _name(target) == name and isinstance(node.value, ast.Dict):
            return {v.value for v in node.value.values if isinstance(v, ast.Constant)}
    raise AssertionError(f"{path} has no dict {name}")


def _first_arguments(class_name: str) -> set[str]:
    """The literal first arguments of every ``class_name(...)`` (codes given positionally)."""
    found = set()
    for _, tree in _modules():
        for node in _walk(tree):
            if (
                isinstance(node, ast.Call)
                and _name(node.func) == class_name
                and node.args
                and isinstance(node.args[0], ast.Constant)
            ):
                found.add(node.args[0].value)
    return found


def _code_members(path: str) -> set[str]:
    """The literal ``"code": "…"`` members of the dicts in ``path``."""
    found = set()
    for node in ast.walk(ast.parse((ROOT / path).read_text())):
        if isinstance(node, ast.Dict):
            for key, value in zip(node.keys, node.values, strict=True):
                if (
                    isinstance(key, ast.Constant)
                    and key.value == "code"
                    and isinstance(value, ast.Constant)
                ):
                    found.add(value.value)
    return found


#: where the codes named in :data:`FORWARDED` come from
SOURCES = {
    "UnsafeInputError": lambda: carried_codes("UnsafeInputError"),
    "NamespaceError": lambda: carried_codes("NamespaceError"),
    "KeyProblem": lambda: _first_arguments("KeyProblem"),
    "preflight problems": lambda: (
        _code_members("memory/finetune/services.py") | _first_arguments("EvaluationFileProblem")
    ),
    "_GENERIC_CODE": lambda: (
        _literal_dict_values("synthorg/api/middleware.py", "_GENERIC_CODE") | {"error"}
    ),
}


def every_code() -> set[str]:
    """Every problem ``code`` the API can answer (see the module docstring)."""
    codes = set(collect().codes)
    codes |= _literal_dict_values("synthorg/api/errors.py", "_DRF_CODES")
    for sources in FORWARDED.values():
        for source in sources:
            codes |= SOURCES[source]()
    return codes

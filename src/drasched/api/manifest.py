"""Reading and writing manifests: multi-document YAML/JSON, directories, List kinds, stdin.

Every error names the file, the document index, the object and the field, so a user can
find the line to fix.
"""

from __future__ import annotations

import copy
import json
import sys
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from drasched.api import foreign, kinds, validation
from drasched.api.conversion import ConversionError, to_storage_version
from drasched.api.decode import decode_object
from drasched.api.defaults import apply_builtin_defaults, apply_crd_defaults
from drasched.api.errors import ApiError, Invalid
from drasched.api.foreign_shapes import decode_foreign

Obj = dict[str, Any]

try:  # the C loader is 5-10x faster when libyaml is present
    _SafeLoader: Any = yaml.CSafeLoader
    _Dumper: Any = yaml.CSafeDumper
except AttributeError:  # pragma: no cover - depends on the PyYAML build
    _SafeLoader, _Dumper = yaml.SafeLoader, yaml.SafeDumper


class _Loader(_SafeLoader):
    """Safe YAML, with timestamps kept as the strings they were written as (as kubectl's
    YAML-to-JSON conversion does): ``creationTimestamp: 2024-01-01T00:00:00Z`` is a string."""


_Loader.add_constructor("tag:yaml.org,2002:timestamp", _SafeLoader.construct_yaml_str)

MANIFEST_SUFFIXES = (".yaml", ".yml", ".json")


class ManifestError(Exception):
    """A manifest could not be read; the message says where and why."""


@dataclass
class Loaded:
    """One object read from a manifest, with where it came from."""

    obj: Obj
    source: str
    index: int

    @property
    def where(self) -> str:
        return f"{self.source}: document {self.index}"


def _describe(obj: Obj) -> str:
    """``Kind namespace/name`` for an error message, whatever types those fields hold."""
    md = obj.get("metadata")
    if not isinstance(md, dict):
        md = {}
    kind = _short(obj.get("kind")) or "<no kind>"
    name = _short(md.get("name")) or _short(md.get("generateName")) or "<unnamed>"
    ns = _short(md.get("namespace"))
    return f"{kind} {f'{ns}/' if ns else ''}{name}"


def _short(value: Any, limit: int = 80) -> str:
    """A string field as it is (cut at ``limit``), or ``<json type>`` when it is not a string."""
    if value is None or value == "":
        return ""
    if not isinstance(value, str):
        return f"<{type(value).__name__}>"
    return value if len(value) <= limit else f"{value[:limit]}...({len(value)} characters)"


def parse_documents(text: str, source: str) -> list[Loaded]:
    """Parse one file's text into objects, expanding ``List`` kinds."""
    json_error: json.JSONDecodeError | None = None
    try:
        if source.endswith(".json") or text.lstrip().startswith(("{", "[")):
            try:
                raw_docs: Iterable[Any] = [json.loads(text)]
            except json.JSONDecodeError as exc:
                json_error = exc
                raw_docs = list(yaml.load_all(text, Loader=_Loader))
        else:
            raw_docs = list(yaml.load_all(text, Loader=_Loader))
    except RecursionError:
        raise ManifestError(f"{source}: nested too deeply to read (JSON or YAML nesting of more than "
                            "about 1,000 levels)") from None
    except yaml.YAMLError as exc:
        if json_error is not None and source.endswith(".json"):
            raise ManifestError(f"{source}: line {json_error.lineno} column {json_error.colno}: "
                                f"malformed JSON: {json_error.msg}") from None
        raise ManifestError(f"{source}:{_yaml_where(exc, text)}: malformed YAML: "
                            f"{getattr(exc, 'problem', None) or getattr(exc, 'reason', None) or exc}") from None
    if "&" in text and "*" in text:  # anchors and aliases: refuse what expands without bound
        for index, doc in enumerate(raw_docs):
            problem = _aliasing_problem(doc)
            if problem:
                raise ManifestError(f"{source}: document {index}: {problem}")
    out: list[Loaded] = []
    for index, doc in enumerate(raw_docs):
        if doc is None:
            continue
        docs = doc if isinstance(doc, list) else [doc]
        for item in docs:
            if not isinstance(item, dict):
                raise ManifestError(f"{source}: document {index}: expected a Kubernetes object (a mapping), "
                                    f"got {type(item).__name__}")
            if isinstance(item.get("kind"), str) and item["kind"].endswith("List") and "items" in item:
                for j, sub in enumerate(item.get("items") or []):
                    if not isinstance(sub, dict):
                        raise ManifestError(f"{source}: document {index}: items[{j}]: expected an object")
                    out.append(_loaded(sub, source, index))
            else:
                out.append(_loaded(item, source, index))
    return out


def _loaded(obj: Obj, source: str, index: int) -> Loaded:
    """An object as the API server would store it: older resource.k8s.io versions converted to v1."""
    try:
        return Loaded(to_storage_version(obj), source, index)
    except ConversionError as exc:
        raise ManifestError(f"{source}: document {index}: {_describe(obj)}: {exc}") from None


MAX_EXPANDED_NODES = 1_000_000
"""Values a document may hold once its YAML aliases are expanded (as kubectl's conversion to
JSON expands them); go-yaml refuses such documents as "excessive aliasing" too."""


def _aliasing_problem(doc: Any) -> str | None:
    """Why a parsed document cannot be expanded to JSON (an alias cycle, or too many values
    once expanded: a "billion laughs"), or None. Shared objects are counted once per use."""
    sizes: dict[int, int] = {}
    on_path: set[int] = set()
    stack: list[tuple[Any, bool]] = [(doc, False)]
    while stack:
        node, children_done = stack.pop()
        if not isinstance(node, dict | list):
            continue
        key = id(node)
        if children_done:
            on_path.discard(key)
            items = node.values() if isinstance(node, dict) else node
            sizes[key] = 1 + sum(sizes.get(id(c), 1) for c in items)
            if sizes[key] > MAX_EXPANDED_NODES:
                return (f"YAML aliases expand to more than {MAX_EXPANDED_NODES:,} values "
                        "(document contains excessive aliasing)")
            continue
        if key in sizes:
            continue
        if key in on_path:
            return "a YAML alias refers to its own ancestor (a recursive document cannot be JSON)"
        on_path.add(key)
        stack.append((node, True))
        stack.extend((c, False) for c in (node.values() if isinstance(node, dict) else node))
    return None


def _yaml_where(exc: yaml.YAMLError, text: str) -> str:
    """`` line L column C`` of a YAML error: from its mark, or from a reader error's offset."""
    mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
    if mark is not None:
        return f" line {mark.line + 1} column {mark.column + 1}"
    position = getattr(exc, "position", None)
    if isinstance(position, int):
        line = text.count("\n", 0, position) + 1
        column = position - (text.rfind("\n", 0, position) + 1) + 1
        return f" line {line} column {column}"
    return ""


def _files(path: Path) -> list[Path]:
    if path.is_dir():
        return sorted(p for p in path.rglob("*") if p.is_file() and p.suffix in MANIFEST_SUFFIXES)
    return [path]


def load_paths(paths: Iterable[str], *, validate: bool = True, translate: bool = True) -> list[Loaded]:
    """Read manifests from files, directories (recursively) and ``-`` (stdin).

    With ``translate``, other schedulers' objects become drasched's (:mod:`drasched.api.foreign`);
    each field with no meaning here is a warning on stderr, and the run goes on.
    """
    loaded: list[Loaded] = []
    for p in paths:
        if p == "-":
            loaded += parse_documents(sys.stdin.read(), "<stdin>")
            continue
        path = Path(p)
        if not path.exists():
            raise ManifestError(f"{p}: no such file or directory")
        for f in _files(path):
            try:
                text = f.read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError) as exc:
                raise ManifestError(f"{f}: cannot read: {exc}") from None
            loaded += parse_documents(text, str(f))
    if translate:
        for item in loaded:
            _decode_if_known(item)  # translation reads the kinds drasched knows: well typed first
        loaded = _translated(loaded)
    if validate:
        for item in loaded:
            check_object(item)
    return loaded


def _translated(loaded: list[Loaded]) -> list[Loaded]:
    result = foreign.translate(item.obj for item in loaded)
    for line in result.warnings:
        print(f"warning: {line}", file=sys.stderr)
    return [Loaded(obj, item.source, item.index) for item, obj in zip(loaded, result.objects, strict=True)
            if obj is not None]


def _decode_if_known(item: Loaded) -> None:
    """Decode an object of a kind drasched serves or translates; refuse any other kind."""
    try:
        try:
            rt = kinds.for_object(item.obj)
        except ApiError:
            if decode_foreign(item.obj):
                return
            raise
        decode_object(item.obj, rt)
    except ApiError as exc:
        raise _refusal(item, exc) from None


def check_object(item: Loaded) -> None:
    """Raise ManifestError if the object's kind is unknown or a field is invalid."""
    try:
        # the API server's order: decode (types), then defaults, then validation
        rt = decode_object(item.obj)
        defaulted = copy.deepcopy(item.obj)
        apply_crd_defaults(rt.kind, defaulted)
        apply_builtin_defaults(rt.kind, defaulted)
        validation.validate(defaulted, rt)
    except ApiError as exc:
        raise _refusal(item, exc) from None


def _refusal(item: Loaded, exc: ApiError) -> ManifestError:
    """The API server's refusal, with the file, document and object in front."""
    detail = "; ".join(str(c) for c in exc.causes) or exc.message if isinstance(exc, Invalid) else exc.message
    return ManifestError(f"{item.where}: {_describe(item.obj)}: {detail}")


_TOP_ORDER = ("apiVersion", "kind", "metadata", "spec", "status")


def _ordered(obj: Obj) -> Obj:
    head = {k: obj[k] for k in _TOP_ORDER if k in obj}
    head.update({k: v for k, v in obj.items() if k not in head})
    return head


def dump_yaml(objects: Iterable[Obj]) -> str:
    """Multi-document YAML, byte-stable for the same input."""
    return "".join(
        "---\n" + yaml.dump(_ordered(o), Dumper=_Dumper, sort_keys=False, default_flow_style=False, width=120)
        for o in objects
    )

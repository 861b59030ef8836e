"""Reading and writing manifests: multi-document YAML/JSON, directories, List kinds, stdin.

Every error names the file, the document index, the object and the field, so a user can
find the line to fix; every refusal of one read is reported at once, so one run lists all
there is to fix. An object repeated unchanged is read once (as ``kubectl apply`` leaves it
"unchanged"), and Kubernetes built-in kinds drasched does not model are left out with a
warning.
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
from drasched.api.unknown_fields import unknown_fields

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
    """Manifests could not be read: ``errors`` holds every refusal, one line each, saying
    where and why; ``unread`` of them are files refused whole (missing, unreadable, malformed)."""

    def __init__(self, *errors: str, unread: int = 0) -> None:
        super().__init__("\n".join(errors))
        self.errors = list(errors)
        self.unread = unread

    def summary(self) -> str:
        """How much was refused, for the last line: ``2 object(s) rejected``."""
        rejected = len(self.errors) - self.unread
        parts = [f"{self.unread} file(s) not read"] if self.unread else []
        if rejected or not parts:
            parts.append(f"{rejected} object(s) rejected")
        return ", ".join(parts)


class _Refusals:
    """The refusals of one read, reported in input order (file, then document) whatever step
    found them."""

    WHOLE_FILE = -1

    def __init__(self) -> None:
        self._files: dict[str, int] = {}
        self._lines: list[tuple[int, int, str]] = []

    def file(self, source: str) -> None:
        """Note that ``source`` is read now: its refusals come after those of earlier files."""
        self._files.setdefault(source, len(self._files))

    def add(self, source: str, index: int, line: str) -> None:
        """Refuse document ``index`` of ``source`` (WHOLE_FILE: all of it) with ``line``."""
        self.file(source)
        self._lines.append((self._files[source], index, line))

    def refused(self, item: Loaded, line: str) -> None:
        """Refuse the document ``item`` came from."""
        self.add(item.source, item.index, line)

    def raise_any(self) -> None:
        """Raise every refusal together, if there is one."""
        if self._lines:
            ordered = sorted(self._lines, key=lambda t: (t[0], t[1]))  # stable: steps in order within a document
            unread = sum(1 for _, index, _ in ordered if index == self.WHOLE_FILE)
            raise ManifestError(*(line for _, _, line in ordered), unread=unread)


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
    cut = value if len(value) <= limit else f"{value[:limit]}...({len(value)} characters)"
    # a kind or name with blanks or line breaks is no real one: quoted, the message stays one line
    return json.dumps(cut) if any(c.isspace() for c in cut) else cut


def parse_documents(text: str, source: str) -> list[Loaded]:
    """Parse one file's text into objects, expanding ``List`` kinds; raise every refusal."""
    refusals = _Refusals()
    out = _parse(text, source, refusals)
    refusals.raise_any()
    return out


def _parse(text: str, source: str, refusals: _Refusals) -> list[Loaded]:
    """The objects of one file; a document that is not one is refused and the rest are still
    read. A file that is not YAML or JSON is refused whole (its syntax error stops its reading)."""
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
        refusals.add(source, _Refusals.WHOLE_FILE, f"{source}: nested too deeply to read (JSON or YAML "
                                                   "nesting of more than about 1,000 levels)")
        return []
    except yaml.YAMLError as exc:
        if json_error is not None and source.endswith(".json"):
            refusals.add(source, _Refusals.WHOLE_FILE, f"{source}: line {json_error.lineno} column "
                                                       f"{json_error.colno}: malformed JSON: {json_error.msg}")
        else:
            why = getattr(exc, "problem", None) or getattr(exc, "reason", None) or exc
            refusals.add(source, _Refusals.WHOLE_FILE, f"{source}:{_yaml_where(exc, text)}: malformed YAML: {why}")
        return []
    out: list[Loaded] = []
    for index, doc in enumerate(raw_docs):
        if doc is None:
            continue
        if "&" in text and "*" in text:  # anchors and aliases: refuse what expands without bound
            problem = _aliasing_problem(doc)
            if problem:
                refusals.add(source, index, f"{source}: document {index}: {problem}")
                continue
        docs = doc if isinstance(doc, list) else [doc]
        for item in docs:
            if not isinstance(item, dict):
                refusals.add(source, index, f"{source}: document {index}: expected a Kubernetes object "
                                            f"(a mapping), got {type(item).__name__}")
            elif isinstance(item.get("kind"), str) and item["kind"].endswith("List") and "items" in item:
                for j, sub in enumerate(item.get("items") or []):
                    if not isinstance(sub, dict):
                        refusals.add(source, index, f"{source}: document {index}: items[{j}]: expected an object")
                    else:
                        _add_loaded(out, refusals, sub, source, index)
            else:
                _add_loaded(out, refusals, item, source, index)
    return out


def _add_loaded(out: list[Loaded], refusals: _Refusals, obj: Obj, source: str, index: int) -> None:
    """Add an object as the API server would store it (older resource.k8s.io versions
    converted to v1) to ``out``, or refuse it."""
    try:
        out.append(Loaded(to_storage_version(obj), source, index))
    except ConversionError as exc:
        refusals.add(source, index, f"{source}: document {index}: {_describe(obj)}: {exc}")


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


def manifest_files(paths: Iterable[str]) -> list[str]:
    """Each manifest file the paths name, in the order :func:`load_paths` reads them (a
    directory's files by name, recursively; ``-`` and paths that do not exist as given, for
    ``load_paths`` to read or refuse)."""
    out: list[str] = []
    for p in paths:
        out += [str(f) for f in _files(Path(p))] if p != "-" and Path(p).exists() else [p]
    return out


def load_paths(paths: Iterable[str], *, validate: bool = True, translate: bool = True) -> list[Loaded]:
    """Read manifests from files, directories (recursively) and ``-`` (stdin).

    Every refusal of every file is collected and raised together (one ManifestError), so a
    user fixes them in one go. An object repeated unchanged, in one file or two, is read
    once; repeated with different content, it is refused naming both places. With
    ``translate`` or ``validate``, a Kubernetes built-in kind drasched does not model
    (:data:`kinds.UNMODELED`) is left out with a warning on stderr, one line per kind. With
    ``translate``, other schedulers' objects become drasched's (:mod:`drasched.api.foreign`),
    except the upstream gang API's PodGroups and Workloads, kept as written (the scheduler reads
    them translated); each field with no meaning here is a warning on stderr, and the run goes on.
    """
    refusals = _Refusals()
    loaded: list[Loaded] = []
    for source, text in _texts(paths, refusals):
        loaded += _parse(text, source, refusals)
    if translate or validate:  # first: nothing about an object left out stops a run
        loaded = _without_unmodeled(loaded)
    loaded = _without_repeats(loaded, refusals)
    if translate or validate:
        for item in loaded:
            _warn_unknown_fields(item)  # as written: before an older version is converted
    if translate:
        # translation reads the kinds drasched knows: well typed first
        loaded = _translated([item for item in loaded if _decoded_if_known(item, refusals)])
    if validate:
        for item in loaded:
            try:
                check_object(item)
            except ManifestError as exc:
                refusals.refused(item, str(exc))
    refusals.raise_any()
    if translate or validate:  # (only about a run that goes ahead)
        for item in loaded:
            _warn_node_without_allocatable(item)
    return loaded


RETIRED_FIELDS = {
    "spec.workloadRef": ": Kubernetes 1.35's reference from a pod to its Workload's pod group, gone since 1.36; "
                        "the pod joins no gang. Make the group a scheduling.k8s.io/v1beta1 PodGroup and name it in "
                        "spec.schedulingGroup.podGroupName"}
"""The path (or path suffix: a pod template's ``spec.template.spec.workloadRef``) of a field some published
manifests still write that the server dropped, and what replaced it: the warning for that unknown field says so
(a pod's ``spec.workloadRef: {name, podGroup}``, 1.35's alpha gang API, KEP-4671, replaced in 1.36 by
``spec.schedulingGroup``). Where such a path is a declared field (an upstream PodGroup's own
``spec.workloadRef``) it is never reported unknown."""


def _warn_unknown_fields(item: Loaded) -> None:
    """A field a built-in kind does not declare is a warning naming it (the server's
    ``fieldValidation=Warn``): a misspelt ``allocationMode`` or ``nodeSelector`` would
    otherwise silently mean the default (:mod:`drasched.api.unknown_fields`)."""
    for path in unknown_fields(item.obj):
        why = next((w for suffix, w in RETIRED_FIELDS.items() if path == suffix or path.endswith("." + suffix)), "")
        print(f'warning: {item.where}: {_describe(item.obj)}: unknown field "{path}" (ignored{why})', file=sys.stderr)
    spec = item.obj.get("spec")
    if (item.obj.get("kind") == kinds.JOB_SET.kind and item.obj.get("apiVersion") in kinds.JOB_SET_ALSO_SERVED
            and isinstance(spec, dict) and "startupPolicy" in spec):
        print(f'warning: {item.where}: {_describe(item.obj)}: unknown field "spec.startupPolicy" (ignored: '
              f'{item.obj["apiVersion"]} has no startupPolicy; use dependsOn, or {kinds.JOB_SET.api_version})',
              file=sys.stderr)


def _warn_node_without_allocatable(item: Loaded) -> None:
    """A Node with neither ``status.allocatable`` nor ``status.capacity`` (which the API server
    copies into a missing allocatable) has nothing allocatable, not even pods: kube-scheduler's
    NodeResourcesFit rejects every pod there ("Too many pods"), and so does drasched. One whose
    allocatable lists resources but not ``pods`` allows no pod either (upstream's NodeInfo:
    ``AllowedPodNumber`` 0; a kubelet always reports it). A node written by hand without them
    usually means a forgotten one, so say so."""
    obj = item.obj
    if obj.get("kind") != kinds.NODE.kind or obj.get("apiVersion") != kinds.NODE.api_version:
        return
    status = obj.get("status")
    if not isinstance(status, dict):
        status = {}
    field = "allocatable" if status.get("allocatable") else "capacity"
    raw = status.get(field)
    if isinstance(raw, dict) and raw and "pods" not in raw:
        print(f"warning: {item.where}: {_describe(obj)}: status.{field} has no pods: it allows no pod, so no "
              'pod is scheduled there ("Too many pods"), as with kube-scheduler; add pods (a kubelet\'s '
              "default is '110') to use it", file=sys.stderr)
        return
    if raw:
        return
    print(f"warning: {item.where}: {_describe(obj)}: no status.allocatable (nor status.capacity): nothing "
          'is allocatable on it, not even pods, so no pod is scheduled there ("Too many pods"), as with '
          "kube-scheduler; give it status.allocatable (cpu, memory, pods) to use it", file=sys.stderr)


def _texts(paths: Iterable[str], refusals: _Refusals) -> Iterable[tuple[str, str]]:
    """Each readable file's name and text, in order; one that cannot be read is refused whole."""
    for p in paths:
        if p == "-":
            refusals.file("<stdin>")
            yield "<stdin>", sys.stdin.read()
            continue
        path = Path(p)
        if not path.exists():
            refusals.add(p, _Refusals.WHOLE_FILE, f"{p}: no such file or directory")
            continue
        for f in _files(path):
            refusals.file(str(f))
            try:
                text = f.read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError) as exc:
                refusals.add(str(f), _Refusals.WHOLE_FILE, f"{f}: cannot read: {exc}")
                continue
            yield str(f), text


def _identity(obj: Obj) -> tuple[str, str, str, str] | None:
    """apiVersion, kind, namespace and name of an object that has them all (the namespace of
    a namespaced kind given without one is ``default``, where kubectl puts it); else None."""
    md = obj.get("metadata")
    api_version, kind = obj.get("apiVersion"), obj.get("kind")
    if not (isinstance(md, dict) and isinstance(api_version, str) and isinstance(kind, str)
            and isinstance(md.get("name"), str) and md["name"]):
        return None
    namespace = md.get("namespace")
    if not isinstance(namespace, str | None):
        return None
    return api_version, kind, namespace or _default_namespace(obj), md["name"]


def _default_namespace(obj: Obj) -> str:
    """``default`` for a kind known to be namespaced, else the empty string."""
    try:
        namespaced = kinds.for_object(obj).namespaced
    except ApiError:  # other schedulers' kinds: as their servers serve them
        namespaced = any(rt.namespaced for rt in kinds.FOREIGN
                         if (rt.api_version, rt.kind) == (obj.get("apiVersion"), obj.get("kind")))
    return "default" if namespaced else ""


def _without_repeats(loaded: list[Loaded], refusals: _Refusals) -> list[Loaded]:
    """``loaded`` with each object once: a repeat with the same content is dropped silently
    (``kubectl apply`` says "unchanged"); one with other content is a refusal naming both
    places (applying one over the other would hide which the user meant)."""
    first: dict[tuple[str, str, str, str], Loaded] = {}
    kept: list[Loaded] = []
    for item in loaded:
        key = _identity(item.obj)
        if key is None:
            kept.append(item)
            continue
        earlier = first.setdefault(key, item)
        if earlier is item:
            kept.append(item)
            continue
        difference = _difference(_with_namespace(earlier.obj, key[2]), _with_namespace(item.obj, key[2]))
        if difference is not None:
            refusals.refused(item, f"{item.where}: {_describe(item.obj)}: defined again with different content "
                                   f"(first at {earlier.where}; they differ at {difference}): give each object "
                                   "once, or repeat it unchanged")
    return kept


def _with_namespace(obj: Obj, namespace: str) -> Obj:
    """``obj`` with the namespace it is created in written out, for comparing two definitions."""
    md = obj["metadata"]
    if not namespace or md.get("namespace") == namespace:
        return obj
    return {**obj, "metadata": {**md, "namespace": namespace}}


def _difference(a: Any, b: Any, path: str = "") -> str | None:
    """The path of the first field where ``a`` and ``b`` differ (``spec.x[0].y``), or None.
    Strict about types, as the JSON is: ``1``, ``1.0`` and ``true`` differ."""
    if isinstance(a, dict) and isinstance(b, dict):
        for k in sorted({*a, *b}, key=str):
            sub = f"{path}.{k}" if path else str(k)
            if k not in a or k not in b:
                return sub
            found = _difference(a[k], b[k], sub)
            if found is not None:
                return found
        return None
    if isinstance(a, list) and isinstance(b, list):
        for i, (x, y) in enumerate(zip(a, b, strict=False)):
            found = _difference(x, y, f"{path}[{i}]")
            if found is not None:
                return found
        return None if len(a) == len(b) else f"{path}[{min(len(a), len(b))}]"
    if type(a) is type(b) and a == b:
        return None
    return path or "<the whole object>"


def _without_unmodeled(loaded: list[Loaded]) -> list[Loaded]:
    """``loaded`` less the Kubernetes built-in kinds drasched does not model, with one
    warning on stderr per kind: where the first is, how many more, what leaving them out
    changes. A chart carries many such objects beside the ones that matter to scheduling."""
    left_out: dict[kinds.Unmodeled, list[Loaded]] = {}
    kept: list[Loaded] = []
    for item in loaded:
        entry = kinds.unmodeled(item.obj)
        if entry is None:
            kept.append(item)
        else:
            left_out.setdefault(entry, []).append(item)
    for entry, items in left_out.items():
        more = f" and {len(items) - 1} more {entry.kind} object(s)" if len(items) > 1 else ""
        print(f"warning: {items[0].where}: {_describe(items[0].obj)}{more}: {entry.why}; left out", file=sys.stderr)
    for item in kept:  # the pods name their claims (upstream updateStorage), but no claim is made
        if item.obj.get("kind") == "StatefulSet" and (item.obj.get("spec") or {}).get("volumeClaimTemplates"):
            why = kinds.UNMODELED[("", "PersistentVolumeClaim")].why
            print(f"warning: {item.where}: {_describe(item.obj)}: spec.volumeClaimTemplates: the pods get their "
                  f"volumes, but no PersistentVolumeClaim is created ({why})", file=sys.stderr)
    return kept


def _translated(loaded: list[Loaded]) -> list[Loaded]:
    """``loaded`` as drasched reads it, each field with no meaning here a warning on stderr.

    An upstream gang API PodGroup or Workload is kept as written (the embedded store serves the
    gang API, and the scheduler reads it translated, as ``serve`` reads a server's); its
    translation here only says, before the run, what it cannot use. KAI's and scheduler-plugins'
    objects become drasched's."""
    result = foreign.translate(item.obj for item in loaded)
    for line in result.warnings:
        print(f"warning: {line}", file=sys.stderr)
    out: list[Loaded] = []
    for item, obj in zip(loaded, result.objects, strict=True):
        if foreign.is_upstream_gang(item.obj):
            out.append(item)
        elif obj is not None:
            out.append(Loaded(obj, item.source, item.index))
    return out


def _decoded_if_known(item: Loaded, refusals: _Refusals) -> bool:
    """Decode an object of a kind drasched serves or translates and say whether it was;
    refuse any other kind, or a malformed object."""
    try:
        try:
            rt = kinds.for_object(item.obj)
        except ApiError:
            if decode_foreign(item.obj):
                return True
            raise
        decode_object(item.obj, rt)
    except ApiError as exc:
        refusals.refused(item, str(_refusal(item, exc)))
        return False
    return True


def check_object(item: Loaded) -> None:
    """Raise ManifestError if the object's kind is unknown or a field is invalid."""
    try:
        # the API server's order: decode (types), then defaults, then validation
        rt = decode_object(item.obj)
        defaulted = copy.deepcopy(item.obj)
        if rt.group == kinds.DRASCHED:  # (an upstream PodGroup shares the kind's name, not its schema)
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

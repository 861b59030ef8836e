"""Where a client finds its API server and credentials, as client-go's loading rules do.

Order (client-go ``clientcmd`` deferred loading, as kube-scheduler uses it): an explicit
``--kubeconfig`` file; else the files listed in ``KUBECONFIG`` (merged: the first file
that sets a map entry or the current context wins); else ``~/.kube/config``; else, when
none of these exists, the in-cluster configuration of a pod (``KUBERNETES_SERVICE_HOST``
and ``KUBERNETES_SERVICE_PORT``, the ServiceAccount token and CA bundle mounted under
``/var/run/secrets/kubernetes.io/serviceaccount``).

Credentials come as a static token, a token file (re-read as kubelet rotates it: a
projected ServiceAccount token lives an hour), a client certificate (file or inline
data), basic auth, or an exec credential plugin (``client.authentication.k8s.io`` v1 or
v1beta1: what managed clusters use), whose token is cached until its
``expirationTimestamp`` or until the server answers 401.
"""

from __future__ import annotations

import base64
import json
import os
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import yaml

SERVICE_ACCOUNT_DIR = Path("/var/run/secrets/kubernetes.io/serviceaccount")
TOKEN_FILE_REREAD_SECONDS = 60.0
"""client-go's cachingTokenSource re-reads a token file at most once a minute."""
EXEC_API_VERSIONS = ("client.authentication.k8s.io/v1", "client.authentication.k8s.io/v1beta1")
EXEC_TIMEOUT_SECONDS = 60.0


class CredentialsError(ValueError):
    """No usable API server or credentials; the message says which file or source and why."""


class TokenSource:
    """A bearer token that may change over time; ``invalidate`` after a 401 forces a refresh."""

    def token(self) -> str | None:
        raise NotImplementedError

    def invalidate(self) -> bool:
        """Drop a cached token; return whether a new one may differ (worth one retry)."""
        return False


@dataclass
class StaticToken(TokenSource):
    value: str

    def token(self) -> str | None:
        return self.value


@dataclass
class FileToken(TokenSource):
    """A token file, re-read at most every ``reread`` seconds (and at once after a 401)."""

    path: str
    reread: float = TOKEN_FILE_REREAD_SECONDS
    clock: Callable[[], float] = time.monotonic
    _value: str | None = field(default=None, init=False)
    _read_at: float = field(default=float("-inf"), init=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, init=False)

    def token(self) -> str | None:
        with self._lock:
            now = self.clock()
            if self._value is None or now - self._read_at >= self.reread:
                try:
                    value = Path(self.path).read_text().strip()
                except OSError as exc:
                    if self._value is None:
                        raise CredentialsError(f"token file {self.path}: {exc.strerror or exc}") from exc
                    return self._value  # keep the last good token while the file is being replaced
                self._value, self._read_at = value, now
            return self._value

    def invalidate(self) -> bool:
        with self._lock:
            old = self._value
            self._read_at = float("-inf")
        return old is not None and self.token() != old


@dataclass
class ExecCredential:
    """What an exec plugin returned: a token or a client certificate, and when it expires."""

    token: str | None
    client_certificate_data: str | None
    client_key_data: str | None
    expires: datetime | None


def _parse_time(value: str) -> datetime:
    return datetime.fromisoformat(value.replace("Z", "+00:00"))


@dataclass
class ExecPlugin(TokenSource):
    """``users[].user.exec`` of a kubeconfig: run the command, read an ExecCredential."""

    api_version: str
    command: str
    args: list[str] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)
    install_hint: str = ""
    cluster_info: dict[str, Any] | None = None
    base_dir: str = "."
    now: Callable[[], datetime] = lambda: datetime.now(UTC)
    _cached: ExecCredential | None = field(default=None, init=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, init=False)

    def _exec_info(self) -> str:
        spec: dict[str, Any] = {"interactive": False}
        if self.cluster_info is not None:
            spec["cluster"] = self.cluster_info
        return json.dumps({"apiVersion": self.api_version, "kind": "ExecCredential", "spec": spec})

    def _command_path(self) -> str:
        # client-go resolves a relative path containing a separator against the kubeconfig's dir
        if os.sep in self.command and not os.path.isabs(self.command):
            return os.path.join(self.base_dir, self.command)
        return self.command

    def run(self) -> ExecCredential:
        env = {**os.environ, **self.env, "KUBERNETES_EXEC_INFO": self._exec_info()}
        where = f"exec credential plugin {self.command!r}"
        try:
            done = subprocess.run([self._command_path(), *self.args], env=env, capture_output=True,
                                  timeout=EXEC_TIMEOUT_SECONDS, check=False, stdin=subprocess.DEVNULL)
        except FileNotFoundError as exc:
            hint = f" ({self.install_hint.strip()})" if self.install_hint else ""
            raise CredentialsError(f"{where}: executable not found{hint}") from exc
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise CredentialsError(f"{where}: {exc}") from exc
        if done.returncode != 0:
            err = done.stderr.decode(errors="replace").strip()[-500:]
            raise CredentialsError(f"{where}: exit status {done.returncode}: {err}")
        return self._parse(done.stdout, where)

    def _parse(self, out: bytes, where: str) -> ExecCredential:
        try:
            doc = json.loads(out)
        except ValueError as exc:
            raise CredentialsError(f"{where}: output is not an ExecCredential in JSON: {exc}") from exc
        if not isinstance(doc, dict) or doc.get("kind") != "ExecCredential":
            raise CredentialsError(f"{where}: output is not an ExecCredential")
        if doc.get("apiVersion") != self.api_version:
            raise CredentialsError(f"{where}: returned apiVersion {doc.get('apiVersion')!r}, "
                                   f"the kubeconfig asks for {self.api_version!r}")
        status = doc.get("status")
        if not isinstance(status, dict):
            raise CredentialsError(f"{where}: ExecCredential has no status")
        token = status.get("token") or None
        cert, key = status.get("clientCertificateData") or None, status.get("clientKeyData") or None
        if token is None and (cert is None or key is None):
            raise CredentialsError(f"{where}: status has neither a token nor clientCertificateData and clientKeyData")
        if (cert is None) != (key is None):
            raise CredentialsError(f"{where}: status has only one of clientCertificateData and clientKeyData")
        expires = None
        if status.get("expirationTimestamp"):
            try:
                expires = _parse_time(str(status["expirationTimestamp"]))
            except ValueError as exc:
                raise CredentialsError(f"{where}: status.expirationTimestamp: {exc}") from exc
        return ExecCredential(token, cert, key, expires)

    def credential(self) -> ExecCredential:
        with self._lock:
            c = self._cached
            if c is None or (c.expires is not None and c.expires <= self.now()):
                c = self._cached = self.run()
            return c

    def token(self) -> str | None:
        return self.credential().token

    def invalidate(self) -> bool:
        with self._lock:
            self._cached = None
        return True


@dataclass
class ClientConfig:
    """Everything needed to talk to one API server as one identity."""

    server: str
    ca_file: str | None = None
    ca_data: str | None = None
    insecure: bool = False
    tls_server_name: str | None = None
    cert_file: str | None = None
    key_file: str | None = None
    token_source: TokenSource | None = None
    username: str | None = None
    password: str | None = None
    source: str = ""
    """Where it came from, for messages: a kubeconfig path and context, or ``in-cluster``."""
    tempfiles: list[str] = field(default_factory=list)
    """Inline certificate data written out for ``ssl`` (it wants files); delete on close."""


def in_cluster_config(environ: Mapping[str, str] | None = None,
                      sa_dir: Path = SERVICE_ACCOUNT_DIR) -> ClientConfig:
    """A pod's own identity: rest.InClusterConfig's rules."""
    env = os.environ if environ is None else environ
    host, port = env.get("KUBERNETES_SERVICE_HOST", ""), env.get("KUBERNETES_SERVICE_PORT", "")
    if not host or not port:
        raise CredentialsError("not running in a cluster: KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT "
                               "must be set (or give --kubeconfig)")
    token_file = sa_dir / "token"
    if not token_file.exists():
        raise CredentialsError(f"in-cluster configuration: no ServiceAccount token at {token_file}")
    if ":" in host and not host.startswith("["):
        host = f"[{host}]"  # IPv6, as net.JoinHostPort writes it
    ca = sa_dir / "ca.crt"
    return ClientConfig(server=f"https://{host}:{port}", ca_file=str(ca) if ca.exists() else None,
                        token_source=FileToken(str(token_file)), source="in-cluster")


def _read_yaml(path: str) -> dict[str, Any]:
    try:
        with open(path) as f:
            doc = yaml.safe_load(f) or {}
    except OSError as exc:
        raise CredentialsError(f"kubeconfig {path}: {exc.strerror or exc}") from exc
    except yaml.YAMLError as exc:
        raise CredentialsError(f"kubeconfig {path}: not YAML: {exc}") from exc
    if not isinstance(doc, dict):
        raise CredentialsError(f"kubeconfig {path}: not a Config object")
    return doc


@dataclass
class _Merged:
    """KUBECONFIG files merged as clientcmd merges them: the first to set a value wins."""

    current_context: str | None = None
    entries: dict[str, dict[str, tuple[dict[str, Any], str]]] = field(
        default_factory=lambda: {"clusters": {}, "users": {}, "contexts": {}})

    def add(self, path: str, doc: dict[str, Any]) -> None:
        if self.current_context is None and doc.get("current-context"):
            self.current_context = str(doc["current-context"])
        base = os.path.dirname(os.path.abspath(path))
        for section, entries in self.entries.items():
            items = doc.get(section) or []
            if not isinstance(items, list):
                raise CredentialsError(f"kubeconfig {path}: {section} must be a list")
            for i, entry in enumerate(items):
                if not isinstance(entry, dict) or not isinstance(entry.get("name"), str):
                    raise CredentialsError(f"kubeconfig {path}: {section}[{i}] has no name")
                body = entry.get(section[:-1]) or {}
                if not isinstance(body, dict):
                    raise CredentialsError(f"kubeconfig {path}: {section}[{i}].{section[:-1]} must be a map")
                entries.setdefault(entry["name"], (body, base))

    def get(self, section: str, name: str, where: str) -> tuple[dict[str, Any], str]:
        found = self.entries[section].get(name)
        if found is None:
            raise CredentialsError(f"{where}: no {section[:-1]} named {name!r}")
        return found


def kubeconfig_paths(explicit: str | None, environ: Mapping[str, str] | None = None) -> list[str]:
    """The kubeconfig files to read, in precedence order (existing ones only, except an explicit one)."""
    env = os.environ if environ is None else environ
    if explicit:
        return [explicit]
    listed = [p for p in env.get("KUBECONFIG", "").split(os.pathsep) if p]
    if listed:
        return [p for p in listed if os.path.exists(p)]
    home = os.path.expanduser("~/.kube/config")
    return [home] if os.path.exists(home) else []


def load_client_config(kubeconfig: str | None = None, context: str | None = None,
                       environ: Mapping[str, str] | None = None, sa_dir: Path = SERVICE_ACCOUNT_DIR) -> ClientConfig:
    """Resolve server and credentials by client-go's rules (see the module docstring)."""
    paths = kubeconfig_paths(kubeconfig, environ)
    if not paths:
        if context:
            raise CredentialsError(f"--context {context}: no kubeconfig found (KUBECONFIG unset, no ~/.kube/config)")
        return in_cluster_config(environ, sa_dir)
    merged = _Merged()
    for p in paths:
        merged.add(p, _read_yaml(p))
    where = "kubeconfig " + os.pathsep.join(paths)
    ctx_name = context or merged.current_context
    if not ctx_name:
        raise CredentialsError(f"{where}: no current-context (give --context)")
    ctx, _ = merged.get("contexts", ctx_name, where)
    if not ctx.get("cluster"):
        raise CredentialsError(f"{where}: context {ctx_name!r} names no cluster")
    cluster, cluster_dir = merged.get("clusters", str(ctx["cluster"]), where)
    user, user_dir = merged.get("users", str(ctx["user"]), where) if ctx.get("user") else ({}, ".")
    if not cluster.get("server"):
        raise CredentialsError(f"{where}: cluster {ctx['cluster']!r} has no server")
    cfg = ClientConfig(server=str(cluster["server"]), source=f"{where} (context {ctx_name})")
    _apply_cluster(cfg, cluster, cluster_dir)
    _apply_user(cfg, user, user_dir, cluster, where)
    return cfg


def _rel(base: str, p: str) -> str:
    return p if os.path.isabs(p) else os.path.join(base, p)


def _data_file(cfg: ClientConfig, b64: str, suffix: str, what: str) -> str:
    try:
        raw = base64.b64decode(b64, validate=True)
    except ValueError as exc:
        raise CredentialsError(f"{cfg.source}: {what} is not base64: {exc}") from exc
    fd, name = tempfile.mkstemp(prefix="drasched-kubeconfig-", suffix=suffix)
    with os.fdopen(fd, "wb") as f:
        f.write(raw)
    cfg.tempfiles.append(name)
    return name


def _apply_cluster(cfg: ClientConfig, cluster: dict[str, Any], base: str) -> None:
    cfg.insecure = bool(cluster.get("insecure-skip-tls-verify"))
    cfg.tls_server_name = cluster.get("tls-server-name") or None
    if cluster.get("certificate-authority"):
        cfg.ca_file = _rel(base, str(cluster["certificate-authority"]))
    elif cluster.get("certificate-authority-data"):
        try:
            cfg.ca_data = base64.b64decode(str(cluster["certificate-authority-data"]), validate=True).decode()
        except ValueError as exc:
            raise CredentialsError(f"{cfg.source}: certificate-authority-data is not base64 PEM: {exc}") from exc


def _apply_user(cfg: ClientConfig, user: dict[str, Any], base: str, cluster: dict[str, Any], where: str) -> None:
    if user.get("token"):
        cfg.token_source = StaticToken(str(user["token"]))
    elif user.get("tokenFile"):
        cfg.token_source = FileToken(_rel(base, str(user["tokenFile"])))
    if user.get("client-certificate"):
        cfg.cert_file = _rel(base, str(user["client-certificate"]))
    elif user.get("client-certificate-data"):
        cfg.cert_file = _data_file(cfg, str(user["client-certificate-data"]), ".crt", "client-certificate-data")
    if user.get("client-key"):
        cfg.key_file = _rel(base, str(user["client-key"]))
    elif user.get("client-key-data"):
        cfg.key_file = _data_file(cfg, str(user["client-key-data"]), ".key", "client-key-data")
    if user.get("username") or user.get("password"):
        cfg.username, cfg.password = str(user.get("username") or ""), str(user.get("password") or "")
    if user.get("auth-provider"):
        name = (user["auth-provider"] or {}).get("name", "?")
        raise CredentialsError(f"{where}: auth-provider {name!r} was removed from client-go; "
                               "use an exec credential plugin")
    if user.get("exec"):
        if cfg.token_source is not None or cfg.cert_file:
            return  # client-go: explicit credentials win over the plugin
        cfg.token_source = _exec_plugin(user["exec"], base, cluster, where)
        _exec_certificate(cfg)


def _exec_plugin(spec: Any, base: str, cluster: dict[str, Any], where: str) -> ExecPlugin:
    if not isinstance(spec, dict) or not spec.get("command"):
        raise CredentialsError(f"{where}: user.exec needs a command")
    api_version = spec.get("apiVersion")
    if api_version not in EXEC_API_VERSIONS:
        raise CredentialsError(f"{where}: user.exec.apiVersion {api_version!r} is not supported "
                               f"(supported: {', '.join(EXEC_API_VERSIONS)})")
    env = {str(e.get("name")): str(e.get("value", "")) for e in spec.get("env") or [] if isinstance(e, dict)}
    info = None
    if spec.get("provideClusterInfo"):
        info = {k: v for k, v in {
            "server": cluster.get("server"),
            "tls-server-name": cluster.get("tls-server-name"),
            "insecure-skip-tls-verify": cluster.get("insecure-skip-tls-verify"),
            "certificate-authority-data": cluster.get("certificate-authority-data"),
            "config": (cluster.get("extensions") or [{}])[0].get("extension") if cluster.get("extensions") else None,
        }.items() if v}
    return ExecPlugin(api_version=str(api_version), command=str(spec["command"]),
                      args=[str(a) for a in spec.get("args") or []], env=env,
                      install_hint=str(spec.get("installHint") or ""), cluster_info=info, base_dir=base)


def _exec_certificate(cfg: ClientConfig) -> None:
    """A plugin that hands out a client certificate: run it now (ssl wants the files up front)."""
    plugin = cfg.token_source
    assert isinstance(plugin, ExecPlugin)
    cred = plugin.credential()
    if cred.client_certificate_data and cred.client_key_data:
        cfg.cert_file = _write_pem(cfg, cred.client_certificate_data, ".crt")
        cfg.key_file = _write_pem(cfg, cred.client_key_data, ".key")
        if cred.token is None:
            cfg.token_source = None


def _write_pem(cfg: ClientConfig, pem: str, suffix: str) -> str:
    fd, name = tempfile.mkstemp(prefix="drasched-exec-", suffix=suffix)
    with os.fdopen(fd, "w") as f:
        f.write(pem)
    cfg.tempfiles.append(name)
    return name


class RateLimiter:
    """client-go's token bucket (``flowcontrol.NewTokenBucketRateLimiter``): ``qps`` tokens a
    second, at most ``burst`` saved up; ``qps <= 0`` turns it off."""

    def __init__(self, qps: float, burst: int, clock: Callable[[], float] = time.monotonic,
                 sleep: Callable[[float], None] = time.sleep) -> None:
        self.qps, self.burst = qps, max(1, burst)
        self._clock, self._sleep = clock, sleep
        self._tokens = float(self.burst)
        self._last = clock()
        self._lock = threading.Lock()
        self.waited = 0.0
        """Seconds callers spent waiting (exported as a metric by serve)."""

    def wait(self) -> None:
        if self.qps <= 0:
            return
        with self._lock:
            now = self._clock()
            self._tokens = min(float(self.burst), self._tokens + (now - self._last) * self.qps)
            self._last = now
            self._tokens -= 1.0
            delay = -self._tokens / self.qps if self._tokens < 0 else 0.0
            self.waited += delay
        if delay > 0:
            self._sleep(delay)

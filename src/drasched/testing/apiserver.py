"""A throwaway control plane: etcd + upstream kube-apiserver on loopback, for tests.

Why a real API server at all: the memory store is only trustworthy if it behaves like
the real one, and the contract suite proves that by running the same tests on both.
``LocalCluster`` starts exactly what those tests need and nothing else (no
controller-manager, no scheduler, no kubelet), in a temp dir that it removes afterwards.
See docs/testing.md for the flags and why each is there.
"""

from __future__ import annotations

import base64
import contextlib
import ctypes
import fcntl
import functools
import glob
import os
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from types import TracebackType
from typing import Any

import httpx
import yaml

from drasched.api.errors import AlreadyExists, NotFound
from drasched.store.kube import KubeStore
from drasched.testing.served import ServedApis, served_apis

KUBE_VERSION = os.environ.get("DRASCHED_KUBE_VERSION", "v1.37.2")
ETCD_VERSION = os.environ.get("DRASCHED_ETCD_VERSION", "v3.6.8")
ADMIN_TOKEN = "drasched-admin-token"
CRD_PATH = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"

# The DRA features drasched targets, valid on 1.36 and 1.37 alike. In 1.36 most are beta and on by
# default (listing them documents the intent and fails loudly if one disappears: the binary
# refuses an unknown gate); in 1.37 DRAExtendedResource, DRADeviceTaints, DRADeviceTaintRules and
# DRAResourceClaimDeviceStatus are GA (DRAAdminAccess and DRAPrioritizedList since 1.36), which a
# gate set to its default accepts with a warning. GenericWorkload (alpha in 1.36, beta and off by
# default in 1.37) serves the gang API; DRAWorkloadResourceClaims depends on it (the binary refuses
# to start without it). See pkg/features/kube_features.go of each release.
FEATURE_GATES = (
    "DRAExtendedResource",
    "DRAPartitionableDevices",
    "DRADeviceTaints",
    "DRADeviceTaintRules",  # 1.36: beta, off by default, serves v1beta2 DeviceTaintRule; 1.37: GA, v1
    "DRAConsumableCapacity",
    "DRADeviceBindingConditions",
    "DRAResourceClaimDeviceStatus",
    "DRAAdminAccess",
    "DRAPrioritizedList",
    "GenericWorkload",
    "DRAWorkloadResourceClaims",
)

REPO_ROOT = Path(__file__).resolve().parents[3]


def cache_dir() -> Path:
    return Path(os.environ.get("DRASCHED_CACHE", Path.home() / ".cache" / "drasched"))


def _cached_binary(name: str, binary: Path, script_name: str, *args: str) -> Path:
    """Build ``binary`` with a scripts/ build script unless it is cached already.

    A file lock keeps two test processes from building at once.
    """
    if binary.exists():
        return binary
    script = REPO_ROOT / "scripts" / script_name
    if not script.exists():
        raise RuntimeError(f"{binary} is missing and {script} is not there to build it")
    binary.parent.mkdir(parents=True, exist_ok=True)
    with open(binary.parent.parent / ".build.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not binary.exists():
            print(f"drasched: building {name} into {binary} ...", file=sys.stderr)
            subprocess.run([str(script), *args], check=True, stdout=sys.stderr)
    return binary


def kube_apiserver_binary() -> Path:
    """The cached kube-apiserver, built by scripts/build-kube.sh if missing (20-30 min).

    ``DRASCHED_KUBE_APISERVER`` points at a binary built elsewhere.
    """
    override = os.environ.get("DRASCHED_KUBE_APISERVER")
    if override:
        return Path(override)
    binary = cache_dir() / f"kube-{KUBE_VERSION}" / "bin" / "kube-apiserver"
    return _cached_binary(f"kube-apiserver {KUBE_VERSION}", binary, "build-kube.sh", "kube-apiserver")


@functools.cache
def binary_version(binary: Path) -> str:
    """The Kubernetes version a kube-apiserver binary reports (``Kubernetes v1.37.2``): a binary
    named by ``DRASCHED_KUBE_APISERVER`` need not be ``KUBE_VERSION``."""
    out = subprocess.run([str(binary), "--version"], check=True, capture_output=True, text=True).stdout
    return out.split()[-1]


def etcd_binary() -> Path:
    """etcd 3.6, built by scripts/build-etcd.sh if missing (about 30 s).

    Debian's etcd 3.4.23 lacks RequestWatchProgress, which kube-apiserver 1.36 needs to
    serve reads at a resourceVersion from its watch cache (see docs/testing.md).
    ``DRASCHED_ETCD`` points at a binary built elsewhere.
    """
    override = os.environ.get("DRASCHED_ETCD")
    if override:
        return Path(override)
    binary = cache_dir() / f"etcd-{ETCD_VERSION}" / "bin" / "etcd"
    return _cached_binary(f"etcd {ETCD_VERSION}", binary, "build-etcd.sh")


HELM_VERSION = "v3.22.0"


def helm_binary() -> Path:
    """helm, built by scripts/build-helm.sh if missing (a few minutes); ``DRASCHED_HELM`` overrides."""
    override = os.environ.get("DRASCHED_HELM")
    if override:
        return Path(override)
    binary = cache_dir() / f"helm-{HELM_VERSION}" / "bin" / "helm"
    return _cached_binary(f"helm {HELM_VERSION}", binary, "build-helm.sh")


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _openssl(*args: str, cwd: Path) -> None:
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True)


def make_pki(d: Path) -> None:
    """CA, serving cert for 127.0.0.1, admin client cert, service-account key pair (openssl CLI)."""
    ec = ("-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes")
    _openssl(
        "req", "-x509", *ec, "-keyout", "ca.key", "-out", "ca.crt", "-days", "3650",
        "-subj", "/CN=drasched-test-ca",
        "-addext", "basicConstraints=critical,CA:TRUE",
        "-addext", "keyUsage=critical,keyCertSign,cRLSign",
        cwd=d,
    )  # fmt: skip
    leaves = {
        "serving": (
            "/CN=kube-apiserver",
            "subjectAltName=IP:127.0.0.1,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default.svc\n"
            "extendedKeyUsage=serverAuth\n",
        ),
        "admin": ("/O=system:masters/CN=drasched-admin", "extendedKeyUsage=clientAuth\n"),
    }
    for name, (subject, ext) in leaves.items():
        (d / f"{name}.ext").write_text(
            "basicConstraints=critical,CA:FALSE\nkeyUsage=critical,digitalSignature,keyEncipherment\n" + ext
        )
        _openssl("req", *ec, "-keyout", f"{name}.key", "-out", f"{name}.csr", "-subj", subject, cwd=d)
        _openssl(
            "x509", "-req", "-in", f"{name}.csr", "-CA", "ca.crt", "-CAkey", "ca.key",
            "-CAcreateserial", "-days", "3650", "-out", f"{name}.crt", "-extfile", f"{name}.ext",
            cwd=d,
        )  # fmt: skip
    _openssl("genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048", "-out", "sa.key", cwd=d)
    _openssl("pkey", "-in", "sa.key", "-pubout", "-out", "sa.pub", cwd=d)


class PortTaken(RuntimeError):
    """A process could not bind the port picked for it."""


def _die_with_parent() -> None:
    """In the child: get SIGKILL when the test process dies, even by SIGKILL (Linux only),
    so that a killed pytest run leaves no etcd or kube-apiserver behind."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG: throwaway state, no need to be graceful
    except (OSError, AttributeError):
        pass


def _remove_orphaned_dirs(base: Path) -> None:
    """Delete cluster dirs of test processes that died without cleaning up (tmpfs is RAM)."""
    for d in base.glob("drasched-cluster-*"):
        try:
            pid = int((d / "owner.pid").read_text())
        except (OSError, ValueError):
            continue
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            shutil.rmtree(d, ignore_errors=True)
        except PermissionError:
            pass


def _tail(path: Path, lines: int = 40) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except FileNotFoundError:
        return "(no log)"


class LocalCluster:
    """etcd + kube-apiserver on free loopback ports; a context manager.

    ``url``, ``token`` (admin, group system:masters), ``ca_file``, ``kubeconfig_path``,
    ``served`` (the versions the binary serves for kinds that moved between releases) and
    ``store()`` are valid between ``__enter__`` and ``__exit__``. CRDs from
    ``deploy/crds/*.yaml`` are installed and Established before ``__enter__`` returns.
    """

    def __init__(
        self,
        crd_dir: str | os.PathLike[str] | None = None,
        extra_args: list[str] | None = None,
        startup_timeout: float = 120.0,
        users: dict[str, str] | None = None,
    ) -> None:
        """``users``: extra user name -> bearer token, each in group system:masters, so that
        several clients can run as distinct identities (the audit log tells their writes apart)."""
        self.crd_dir = Path(crd_dir) if crd_dir is not None else REPO_ROOT / "deploy" / "crds"
        self.extra_args = list(extra_args or [])
        self.startup_timeout = startup_timeout
        self.token = ADMIN_TOKEN
        self.url = ""
        self.etcd_url = ""
        self.dir = Path()
        self.users = dict(users or {})
        self._procs: list[subprocess.Popen[bytes]] = []
        self._apiserver_args: list[str] = []
        self._stores: list[KubeStore] = []
        self.served: ServedApis = served_apis(KUBE_VERSION)

    def pids(self) -> list[int]:
        """Process ids of etcd and kube-apiserver (benchmarks read their CPU time)."""
        return [p.pid for p in self._procs if p.poll() is None]

    # -- paths -------------------------------------------------------------------------

    @property
    def ca_file(self) -> str:
        return str(self.dir / "pki" / "ca.crt")

    @property
    def kubeconfig_path(self) -> str:
        return str(self.dir / "kubeconfig")

    @property
    def client_cert_kubeconfig_path(self) -> str:
        """A kubeconfig that authenticates with the admin client certificate, not the token."""
        return str(self.dir / "kubeconfig-cert")

    @property
    def apiserver_log(self) -> Path:
        return self.dir / "kube-apiserver.log"

    @property
    def etcd_log(self) -> Path:
        return self.dir / "etcd.log"

    def store(self) -> KubeStore:
        """A new KubeStore as the admin user; closed with the cluster."""
        s = KubeStore(self.url, token=self.token, ca_file=self.ca_file)
        self._stores.append(s)
        return s

    # -- lifecycle -----------------------------------------------------------------------

    def __enter__(self) -> LocalCluster:
        binary = kube_apiserver_binary()
        self.served = served_apis(binary_version(binary))
        etcd = etcd_binary()
        # tmpfs when there is one: etcd fsyncs every write, and tests write a lot.
        base = "/dev/shm" if os.access("/dev/shm", os.W_OK) else None
        _remove_orphaned_dirs(Path(base or tempfile.gettempdir()))
        self.dir = Path(tempfile.mkdtemp(prefix="drasched-cluster-", dir=base))
        (self.dir / "owner.pid").write_text(str(os.getpid()))
        try:
            for attempt in range(3):
                try:
                    self._start(binary, etcd)
                    break
                except PortTaken:
                    # Another process took a port between free_port() and bind: try others.
                    self._stop_processes()
                    if attempt == 2:
                        raise
                    for child in ("pki", "etcd", "certs"):
                        shutil.rmtree(self.dir / child, ignore_errors=True)
        except BaseException:
            self.__exit__(None, None, None)
            raise
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        for s in self._stores:
            s.close()
        self._stores.clear()
        self._stop_processes()
        if os.environ.get("DRASCHED_KEEP_CLUSTER_DIR"):
            print(f"drasched: cluster files kept in {self.dir}", file=sys.stderr)
        elif self.dir != Path():
            shutil.rmtree(self.dir, ignore_errors=True)

    def _stop_processes(self) -> None:
        for p in reversed(self._procs):  # apiserver first, then etcd
            if p.poll() is None:
                p.terminate()
                try:
                    p.wait(10)
                except subprocess.TimeoutExpired:
                    p.kill()
                    p.wait()
        self._procs.clear()

    def _spawn(self, args: list[str], log: Path) -> subprocess.Popen[bytes]:
        with open(log, "wb") as f:
            p = subprocess.Popen(
                args,
                stdout=f,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                preexec_fn=_die_with_parent,
            )
        self._procs.append(p)
        return p

    def _start(self, binary: Path, etcd_bin: Path) -> None:
        pki = self.dir / "pki"
        pki.mkdir()
        make_pki(pki)
        (self.dir / "tokens.csv").write_text("".join(
            f'{token},{user},{user},"system:masters"\n'
            for user, token in {"drasched-admin": self.token, **self.users}.items()))

        etcd_port, peer_port, api_port = free_port(), free_port(), free_port()
        etcd_url = self.etcd_url = f"http://127.0.0.1:{etcd_port}"
        peer_url = f"http://127.0.0.1:{peer_port}"
        etcd = self._spawn(
            [
                str(etcd_bin),
                "--name=drasched",
                f"--data-dir={self.dir / 'etcd'}",
                f"--listen-client-urls={etcd_url}",
                f"--advertise-client-urls={etcd_url}",
                f"--listen-peer-urls={peer_url}",
                f"--initial-advertise-peer-urls={peer_url}",
                f"--initial-cluster=drasched={peer_url}",
                "--log-level=warn",
            ],
            self.etcd_log,
        )
        self._wait(etcd, self.etcd_log, f"{etcd_url}/health", "etcd", verify=False)

        self.url = f"https://127.0.0.1:{api_port}"
        args = [
            str(binary),
            f"--etcd-servers={etcd_url}",
            "--bind-address=127.0.0.1",
            "--advertise-address=127.0.0.1",
            f"--secure-port={api_port}",
            f"--tls-cert-file={pki / 'serving.crt'}",
            f"--tls-private-key-file={pki / 'serving.key'}",
            f"--client-ca-file={pki / 'ca.crt'}",
            f"--token-auth-file={self.dir / 'tokens.csv'}",
            "--authorization-mode=Node,RBAC",
            f"--service-account-key-file={pki / 'sa.pub'}",
            f"--service-account-signing-key-file={pki / 'sa.key'}",
            "--service-account-issuer=https://kubernetes.default.svc.cluster.local",
            "--api-audiences=https://kubernetes.default.svc.cluster.local",
            "--service-cluster-ip-range=10.0.0.0/24",
            "--endpoint-reconciler-type=none",
            "--enable-priority-and-fairness=false",
            "--profiling=false",
            # ConfigMaps bypass the watch cache so that compact() can make an old
            # resourceVersion really expire (410) for them; every other kind is cached.
            "--watch-cache-sizes=configmaps#0",
            f"--cert-dir={self.dir / 'certs'}",
            f"--runtime-config={','.join(self.served.runtime_config)}",
            f"--feature-gates={','.join(f'{g}=true' for g in (*FEATURE_GATES, *self.served.gang_gates))}",
            *self.extra_args,
        ]
        self._apiserver_args = args
        api = self._spawn(args, self.apiserver_log)
        self._wait(api, self.apiserver_log, f"{self.url}/readyz", "kube-apiserver", verify=True)

        self._write_kubeconfigs()
        store = self.store()
        self._install_crds(store)
        ensure_namespace(store, "default")

    def restart_apiserver(self, down_seconds: float = 0.0) -> None:
        """Stop kube-apiserver (SIGTERM, as a rolling update does), keep it down for
        ``down_seconds``, then start it again on the same port over the same etcd data.

        Clients see their connections and watches end and requests refused meanwhile;
        every object, resourceVersion and uid survives, as in a control-plane upgrade.
        """
        api = self._procs.pop()
        api.terminate()
        try:
            api.wait(30)
        except subprocess.TimeoutExpired:
            api.kill()
            api.wait()
        time.sleep(down_seconds)
        with open(self.apiserver_log, "ab") as f:
            f.write(b"\n--- restarted by the test ---\n")
        log = self.dir / "kube-apiserver.restarted.log"
        new = self._spawn(self._apiserver_args, log)
        self._wait(new, log, f"{self.url}/readyz", "kube-apiserver", verify=True)

    def kubeconfig_for(self, user: str, server: str | None = None) -> str:
        """Write (once) and return a kubeconfig for one of ``users``, optionally pointing at
        another ``server`` (a proxy in front of this one that serves the same certificate)."""
        path = self.dir / (f"kubeconfig-{user}" + ("-proxied" if server else ""))
        cfg = {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [{"name": "local", "cluster": {"server": server or self.url,
                                                       "certificate-authority": self.ca_file}}],
            "users": [{"name": user, "user": {"token": self.users[user]}}],
            "contexts": [{"name": "local", "context": {"cluster": "local", "user": user}}],
            "current-context": "local",
        }
        path.write_text(yaml.safe_dump(cfg, sort_keys=False))
        return str(path)

    def compact(self) -> int:
        """Compact etcd so that every resourceVersion handed out so far is too old.

        Watches of ConfigMaps (served straight from etcd, see ``--watch-cache-sizes``) from
        any earlier resourceVersion then get 410 Gone, as on a long-running cluster. A
        marker key outside /registry is written first so that the compacted revision is
        newer than the last object's: compacting exactly at it would leave a watch from
        the previous revision half-valid (etcd answers with a 500 "PrevKv=nil" instead).
        Milliseconds; waiting for ``--etcd-compaction-interval`` would take minutes.
        """
        key = base64.b64encode(b"/drasched-test/compaction-marker").decode()
        # etcd listens on plain HTTP: no CA bundle is read (a system bundle that fails to load,
        # as one did on a CI machine, must not fail a compaction that needs no TLS).
        with httpx.Client(base_url=self.etcd_url, timeout=10.0, verify=False) as c:
            put = c.post("/v3/kv/put", json={"key": key, "value": key})
            put.raise_for_status()
            rev = int(put.json()["header"]["revision"])
            r = c.post("/v3/kv/compaction", json={"revision": rev, "physical": True})
            r.raise_for_status()
        return rev

    def _wait(self, proc: subprocess.Popen[bytes], log: Path, url: str, what: str, verify: bool) -> None:
        """Poll a health URL until 200; fail fast (with the log tail) if the process dies."""
        deadline = time.monotonic() + self.startup_timeout
        headers = {"Authorization": f"Bearer {self.token}"}
        last = ""
        tls = ssl.create_default_context(cafile=self.ca_file) if verify else False
        with httpx.Client(verify=tls, timeout=5.0, headers=headers) as c:
            while time.monotonic() < deadline:
                if proc.poll() is not None:
                    tail = _tail(log)
                    error = PortTaken if "address already in use" in tail else RuntimeError
                    raise error(f"{what} exited with {proc.returncode}:\n{tail}")
                try:
                    r = c.get(url)
                    if r.status_code == 200:
                        return
                    failing = [ln for ln in r.text.splitlines() if ln.startswith("[-]")]
                    last = f"HTTP {r.status_code}: {' '.join(failing) or r.text[-300:]}"
                except httpx.HTTPError as e:
                    last = repr(e)
                time.sleep(0.25)
        raise RuntimeError(f"{what} not ready after {self.startup_timeout}s ({last}):\n{_tail(log)}")

    def _write_kubeconfigs(self) -> None:
        pki = self.dir / "pki"
        for path, user in (
            (self.kubeconfig_path, {"token": self.token}),
            (
                self.client_cert_kubeconfig_path,
                {"client-certificate": str(pki / "admin.crt"), "client-key": str(pki / "admin.key")},
            ),
        ):
            cfg = {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [{"name": "local", "cluster": {"server": self.url, "certificate-authority": self.ca_file}}],
                "users": [{"name": "admin", "user": user}],
                "contexts": [{"name": "local", "context": {"cluster": "local", "user": "admin"}}],
                "current-context": "local",
            }
            Path(path).write_text(yaml.safe_dump(cfg, sort_keys=False))

    def _install_crds(self, store: KubeStore) -> None:
        """Create every CRD in ``crd_dir`` and wait until each is Established and served."""
        docs: list[dict[str, Any]] = []
        for path in sorted(glob.glob(str(self.crd_dir / "*.yaml"))):
            with open(path) as f:
                docs.extend(d for d in yaml.safe_load_all(f) if d)
        names = []
        for crd in docs:
            if crd.get("kind") != "CustomResourceDefinition":
                continue
            with contextlib.suppress(AlreadyExists):
                store.request("POST", CRD_PATH, crd, params={"fieldValidation": "Strict"})
            names.append(crd["metadata"]["name"])
        deadline = time.monotonic() + 60
        pending = {n: next(d for d in docs if d["metadata"]["name"] == n) for n in names}
        while pending:
            for name, crd in list(pending.items()):
                got = store.request("GET", f"{CRD_PATH}/{name}")
                conds = {c["type"]: c["status"] for c in (got.get("status") or {}).get("conditions") or []}
                if conds.get("Established") != "True":
                    continue
                spec = crd["spec"]
                served = [v["name"] for v in spec["versions"] if v.get("served", True)]
                path = f"/apis/{spec['group']}/{served[0]}/{spec['names']['plural']}"
                try:
                    store.request("GET", path, params={"limit": "1"})
                except NotFound:
                    continue
                del pending[name]
            if pending and time.monotonic() > deadline:
                raise RuntimeError(f"CRDs not established after 60s: {sorted(pending)}")
            if pending:
                time.sleep(0.1)


def ensure_namespace(store: Any, name: str) -> None:
    """Create a namespace and its ``default`` ServiceAccount on any ClusterStore (idempotent).

    Pods are refused by the ServiceAccount admission plugin until the account exists; in
    a real cluster kube-controller-manager creates it, here nobody does.
    """
    for obj in (
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}},
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "default", "namespace": name}},
    ):
        with contextlib.suppress(AlreadyExists):
            store.create(obj)

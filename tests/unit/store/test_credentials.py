"""Client configuration as client-go loads it: kubeconfig merging and contexts, in-cluster
config, rotating token files, exec credential plugins, the 401 retry and the rate limiter."""

from __future__ import annotations

import base64
import json
import stat
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import yaml

from drasched.store.credentials import (
    CredentialsError,
    ExecPlugin,
    FileToken,
    RateLimiter,
    in_cluster_config,
    load_client_config,
)
from drasched.store.kube import KubeStore
from drasched.store.transport import MockTransport, Request, Response, json_response


def _kubeconfig(path: Path, *, current: str | None, clusters: dict[str, Any], users: dict[str, Any],
                contexts: dict[str, tuple[str, str]]) -> Path:
    doc: dict[str, Any] = {
        "apiVersion": "v1", "kind": "Config",
        "clusters": [{"name": n, "cluster": c} for n, c in clusters.items()],
        "users": [{"name": n, "user": u} for n, u in users.items()],
        "contexts": [{"name": n, "context": {"cluster": c, "user": u}} for n, (c, u) in contexts.items()],
    }
    if current:
        doc["current-context"] = current
    path.write_text(yaml.safe_dump(doc))
    return path


def test_kubeconfig_env_lists_files_merged_first_one_wins(tmp_path: Path) -> None:
    """clientcmd's merge: the first file that sets current-context or a named entry wins."""
    a = _kubeconfig(tmp_path / "a.yaml", current="prod", clusters={"c": {"server": "https://first:6443"}},
                    users={"u": {"token": "first-token"}}, contexts={"prod": ("c", "u")})
    b = _kubeconfig(tmp_path / "b.yaml", current="dev",
                    clusters={"c": {"server": "https://second:6443"}, "d": {"server": "https://dev:6443"}},
                    users={"u": {"token": "second"}, "v": {"token": "dev-token"}},
                    contexts={"dev": ("d", "v"), "prod": ("d", "v")})
    env = {"KUBECONFIG": f"{a}:{tmp_path / 'missing.yaml'}:{b}"}
    cfg = load_client_config(environ=env)
    assert cfg.server == "https://first:6443"
    assert cfg.token_source is not None and cfg.token_source.token() == "first-token"
    dev = load_client_config(context="dev", environ=env)
    assert dev.server == "https://dev:6443"
    assert dev.token_source is not None and dev.token_source.token() == "dev-token"


def test_explicit_kubeconfig_beats_env_and_unknown_context_is_named(tmp_path: Path) -> None:
    a = _kubeconfig(tmp_path / "a.yaml", current="x", clusters={"c": {"server": "https://a"}}, users={},
                    contexts={"x": ("c", "")})
    b = _kubeconfig(tmp_path / "b.yaml", current="y", clusters={"c": {"server": "https://b"}}, users={},
                    contexts={"y": ("c", "")})
    assert load_client_config(str(b), environ={"KUBECONFIG": str(a)}).server == "https://b"
    with pytest.raises(CredentialsError, match=r"no context named 'nope'"):
        load_client_config(str(a), context="nope")


def test_relative_paths_resolve_against_the_kubeconfig_directory(tmp_path: Path) -> None:
    (tmp_path / "conf").mkdir()
    (tmp_path / "conf" / "token").write_text("from-file\n")
    path = _kubeconfig(tmp_path / "conf" / "config", current="x",
                       clusters={"c": {"server": "https://a", "certificate-authority": "ca.crt"}},
                       users={"u": {"tokenFile": "token"}}, contexts={"x": ("c", "u")})
    cfg = load_client_config(str(path))
    assert cfg.ca_file == str(tmp_path / "conf" / "ca.crt")
    assert cfg.token_source is not None and cfg.token_source.token() == "from-file"


def test_inline_client_certificate_data_is_written_to_private_files(tmp_path: Path) -> None:
    pem = b"-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"
    path = _kubeconfig(tmp_path / "k", current="x", clusters={"c": {"server": "https://a"}},
                       users={"u": {"client-certificate-data": base64.b64encode(pem).decode(),
                                    "client-key-data": base64.b64encode(b"key").decode()}},
                       contexts={"x": ("c", "u")})
    cfg = load_client_config(str(path))
    assert cfg.cert_file is not None and Path(cfg.cert_file).read_bytes() == pem
    assert stat.S_IMODE(Path(cfg.cert_file).stat().st_mode) == 0o600
    assert cfg.tempfiles == [cfg.cert_file, cfg.key_file]


def test_no_kubeconfig_falls_back_to_in_cluster(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    (tmp_path / "token").write_text("sa-token")
    (tmp_path / "ca.crt").write_text("ca")
    env = {"KUBERNETES_SERVICE_HOST": "10.96.0.1", "KUBERNETES_SERVICE_PORT": "443"}
    cfg = load_client_config(environ=env, sa_dir=tmp_path)
    assert (cfg.server, cfg.ca_file, cfg.source) == ("https://10.96.0.1:443", str(tmp_path / "ca.crt"), "in-cluster")
    assert cfg.token_source is not None and cfg.token_source.token() == "sa-token"
    v6 = in_cluster_config({"KUBERNETES_SERVICE_HOST": "fd00::1", "KUBERNETES_SERVICE_PORT": "443"}, tmp_path)
    assert v6.server == "https://[fd00::1]:443"


def test_outside_a_cluster_without_kubeconfig_the_error_says_what_to_give(tmp_path: Path,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    with pytest.raises(CredentialsError, match=r"KUBERNETES_SERVICE_HOST.*--kubeconfig"):
        load_client_config(environ={}, sa_dir=tmp_path)


def test_token_file_is_reread_as_it_rotates(tmp_path: Path) -> None:
    """A projected ServiceAccount token is replaced by the kubelet; client-go re-reads it."""
    now = [0.0]
    f = tmp_path / "token"
    f.write_text("one")
    src = FileToken(str(f), reread=60.0, clock=lambda: now[0])
    assert src.token() == "one"
    f.write_text("two")
    now[0] = 59.0
    assert src.token() == "one"  # cached within the minute
    now[0] = 61.0
    assert src.token() == "two"
    f.write_text("three")
    assert src.invalidate() is True  # a 401 forces the re-read at once
    assert src.token() == "three"


def _plugin_script(tmp_path: Path, body: str) -> Path:
    script = tmp_path / "plugin.py"
    script.write_text(f"#!{sys.executable}\nimport json, os, sys, pathlib\n{body}\n")
    script.chmod(0o755)
    return script


def test_exec_plugin_gets_exec_info_and_its_token_is_cached_until_expiry(tmp_path: Path) -> None:
    calls = tmp_path / "calls"
    script = _plugin_script(tmp_path, f"""
info = json.loads(os.environ["KUBERNETES_EXEC_INFO"])
p = pathlib.Path({str(calls)!r}); n = len(p.read_text()) if p.exists() else 0; p.write_text("x" * (n + 1))
print(json.dumps({{"apiVersion": info["apiVersion"], "kind": "ExecCredential",
  "status": {{"token": "tok-%d-%s-%s" % (n, info["spec"]["cluster"]["server"], os.environ["EXTRA"]),
             "expirationTimestamp": "2030-01-01T00:00:00Z"}}}}))
""")
    path = _kubeconfig(tmp_path / "k", current="x", clusters={"c": {"server": "https://eks"}},
                       users={"u": {"exec": {"apiVersion": "client.authentication.k8s.io/v1", "command": str(script),
                                             "env": [{"name": "EXTRA", "value": "e"}],
                                             "provideClusterInfo": True, "interactiveMode": "Never"}}},
                       contexts={"x": ("c", "u")})
    cfg = load_client_config(str(path))
    assert isinstance(cfg.token_source, ExecPlugin)
    assert cfg.token_source.token() == "tok-0-https://eks-e"
    assert cfg.token_source.token() == "tok-0-https://eks-e"
    assert calls.read_text() == "x"  # one run while the credential is valid
    cfg.token_source.now = lambda: datetime(2031, 1, 1, tzinfo=UTC)
    assert cfg.token_source.token() == "tok-1-https://eks-e"  # expired: the plugin runs again


@pytest.mark.parametrize(("body", "message"), [
    ("sys.stderr.write('no session'); sys.exit(3)", "exit status 3: no session"),
    ("print('not json')", "not an ExecCredential in JSON"),
    ("print(json.dumps({'apiVersion': 'client.authentication.k8s.io/v1beta1', 'kind': 'ExecCredential', "
     "'status': {'token': 't'}}))", "returned apiVersion 'client.authentication.k8s.io/v1beta1'"),
    ("print(json.dumps({'apiVersion': 'client.authentication.k8s.io/v1', 'kind': 'ExecCredential', "
     "'status': {}}))", "neither a token nor clientCertificateData"),
])
def test_exec_plugin_failures_say_what_went_wrong(tmp_path: Path, body: str, message: str) -> None:
    plugin = ExecPlugin("client.authentication.k8s.io/v1", str(_plugin_script(tmp_path, body)))
    with pytest.raises(CredentialsError, match=message):
        plugin.token()


def test_missing_exec_plugin_shows_the_install_hint(tmp_path: Path) -> None:
    path = _kubeconfig(tmp_path / "k", current="x", clusters={"c": {"server": "https://a"}},
                       users={"u": {"exec": {"apiVersion": "client.authentication.k8s.io/v1beta1",
                                             "command": "no-such-plugin-xyz", "installHint": "install it"}}},
                       contexts={"x": ("c", "u")})
    # the plugin runs when the configuration loads: a serve that cannot authenticate stops at once
    with pytest.raises(CredentialsError, match=r"executable not found \(install it\)"):
        load_client_config(str(path))


def test_unsupported_exec_api_version_is_refused(tmp_path: Path) -> None:
    path = _kubeconfig(tmp_path / "k", current="x", clusters={"c": {"server": "https://a"}},
                       users={"u": {"exec": {"apiVersion": "client.authentication.k8s.io/v1alpha1",
                                             "command": "x"}}}, contexts={"x": ("c", "u")})
    with pytest.raises(CredentialsError, match="v1alpha1' is not supported"):
        load_client_config(str(path))


def test_a_401_refreshes_the_exec_token_and_retries_once(tmp_path: Path) -> None:
    counter = tmp_path / "n"
    script = _plugin_script(tmp_path, f"""
p = pathlib.Path({str(counter)!r}); n = int(p.read_text()) if p.exists() else 0; p.write_text(str(n + 1))
print(json.dumps({{"apiVersion": "client.authentication.k8s.io/v1", "kind": "ExecCredential",
  "status": {{"token": "t%d" % n}}}}))
""")
    seen: list[str] = []

    def handler(request: Request) -> Response:
        auth = request.headers.get("Authorization", "")
        seen.append(auth)
        if auth != "Bearer t1":
            return json_response(401, {"kind": "Status", "reason": "Unauthorized", "code": 401})
        return json_response(200, {"kind": "Namespace", "apiVersion": "v1", "metadata": {"name": "default"}})

    path = _kubeconfig(tmp_path / "k", current="x", clusters={"c": {"server": "http://api.test"}},
                       users={"u": {"exec": {"apiVersion": "client.authentication.k8s.io/v1", "command": str(script)}}},
                       contexts={"x": ("c", "u")})
    with KubeStore(kubeconfig=str(path), transport=MockTransport(handler)) as store:
        ns = store.request("GET", "/api/v1/namespaces/default")
    assert ns["metadata"]["name"] == "default"
    assert seen == ["Bearer t0", "Bearer t1"]


def test_rate_limiter_is_a_token_bucket() -> None:
    """client-go's token bucket: ``burst`` requests at once, then ``qps`` a second."""
    now, slept = [0.0], []

    def sleep(d: float) -> None:
        slept.append(d)
        now[0] += d

    rl = RateLimiter(qps=10.0, burst=3, clock=lambda: now[0], sleep=sleep)
    for _ in range(3):
        rl.wait()
    assert slept == []
    rl.wait()
    assert slept == [pytest.approx(0.1)]
    now[0] += 1.0  # a second idle refills the bucket up to the burst, not beyond
    for _ in range(3):
        rl.wait()
    assert len(slept) == 1
    off = RateLimiter(qps=0.0, burst=0, sleep=lambda d: pytest.fail("must not wait"))
    for _ in range(100):
        off.wait()


def test_expiration_in_the_past_runs_the_plugin_every_time(tmp_path: Path) -> None:
    past = (datetime.now(UTC) - timedelta(minutes=1)).strftime("%Y-%m-%dT%H:%M:%SZ")
    counter = tmp_path / "n"
    script = _plugin_script(tmp_path, f"""
p = pathlib.Path({str(counter)!r}); n = int(p.read_text()) if p.exists() else 0; p.write_text(str(n + 1))
print(json.dumps({{"apiVersion": "client.authentication.k8s.io/v1", "kind": "ExecCredential",
  "status": {{"token": "t", "expirationTimestamp": {past!r}}}}}))
""")
    plugin = ExecPlugin("client.authentication.k8s.io/v1", str(script))
    plugin.token()
    plugin.token()
    assert counter.read_text() == "2"


def test_exec_plugin_is_not_run_when_a_token_is_given(tmp_path: Path) -> None:
    """client-go: explicit credentials in the user entry win over its exec plugin."""
    path = _kubeconfig(tmp_path / "k", current="x", clusters={"c": {"server": "https://a"}},
                       users={"u": {"token": "static", "exec": {"apiVersion": "client.authentication.k8s.io/v1",
                                                                 "command": "no-such-plugin-xyz"}}},
                       contexts={"x": ("c", "u")})
    cfg = load_client_config(str(path))
    assert cfg.token_source is not None and cfg.token_source.token() == "static"
    assert json.dumps(cfg.server) == '"https://a"'

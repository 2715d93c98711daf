"""Prometheus credentials: a bearer token read from a file before each query (a rotated token is used at
once), fixed headers (a tenant), a CA bundle; every bad setting one line naming its flag, and a token file
that goes missing at run time a counted source error, not an exception."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import pytest
from click.testing import CliRunner
from hypothesis import given
from hypothesis import strategies as st

from autoscaler.backtest.prom_range import PrometheusRange
from autoscaler.cli import main
from autoscaler.sources.prom_api import PrometheusAPI, SourceError
from autoscaler.sources.prom_auth import MAX_TOKEN_BYTES, AuthError, PromAuth, parse_header

VECTOR = {"status": "success", "data": {"resultType": "vector", "result": []}}


def _recording_api(auth: PromAuth) -> tuple[PrometheusAPI, list[httpx.Headers]]:
    seen: list[httpx.Headers] = []

    def handler(req: httpx.Request) -> httpx.Response:
        seen.append(req.headers)
        return httpx.Response(200, json=VECTOR)

    return PrometheusAPI("http://prom", client=httpx.Client(transport=httpx.MockTransport(handler)), auth=auth), seen


def test_the_token_and_headers_go_with_every_query_and_a_rotated_token_is_used_at_once(tmp_path: Path) -> None:
    token = tmp_path / "token"
    token.write_text("first-token\n")
    auth = PromAuth.from_settings(str(token), None, ["X-Scope-OrgID: team-a", "X-Extra:  spaced value "])
    api, seen = _recording_api(auth)
    api.query("up", 0.0)
    token.write_text("second-token")  # the kubelet rotates a projected ServiceAccount token in place
    api.query("up", 0.0)
    assert [h["authorization"] for h in seen] == ["Bearer first-token", "Bearer second-token"]
    assert all(h["x-scope-orgid"] == "team-a" and h["x-extra"] == "spaced value" for h in seen)
    assert all(h["accept-encoding"] == "identity" for h in seen)  # the size cap still bounds what is parsed


def test_without_settings_nothing_is_added() -> None:
    api, seen = _recording_api(PromAuth())
    api.query("up", 0.0)
    assert "authorization" not in seen[0] and PromAuth().request_headers() == {}


def test_a_token_file_gone_at_run_time_is_a_source_error_of_its_own_kind(tmp_path: Path) -> None:
    token = tmp_path / "token"
    token.write_text("t")
    api, seen = _recording_api(PromAuth.from_settings(str(token)))
    token.unlink()
    with pytest.raises(SourceError) as e:
        api.query("up", 0.0)
    assert e.value.kind == "auth" and "--prometheus-bearer-token-file" in e.value.detail and not seen


@pytest.mark.parametrize(("content", "why"), [
    (None, "cannot read it"),
    (b"", "empty"),
    (b"  \n", "empty"),
    (b"two\nlines", "not one line"),
    (b"t\x00ken", "not one line"),
    (b"x" * (MAX_TOKEN_BYTES + 1), f"over {MAX_TOKEN_BYTES} bytes"),
])
def test_a_bad_token_file_is_refused_at_start_in_one_line(tmp_path: Path, content: bytes | None, why: str) -> None:
    token = tmp_path / "token"
    if content is not None:
        token.write_bytes(content)
    with pytest.raises(AuthError, match=why) as e:
        PromAuth.from_settings(str(token))
    assert str(e.value).startswith("--prometheus-bearer-token-file ") and "\n" not in str(e.value)


@pytest.mark.parametrize(("raw", "why"), [
    ("X-Scope-OrgID team-a", "give 'Name: value'"),
    (": value", "give 'Name: value'"),
    ("Bad Name: v", "give 'Name: value'"),
    ("Authorization: Bearer x", "use --prometheus-bearer-token-file"),
    ("accept-encoding: gzip", "set by the client itself"),
    ("Host: evil", "set by the client itself"),
    ("X-Tenant: a\r\nX-Injected: b", "visible ASCII on one line"),
    ("X-Tenant: " + "v" * 5000, "at most 4096"),
])
def test_a_bad_header_is_refused_in_one_line(raw: str, why: str) -> None:
    with pytest.raises(AuthError, match=why) as e:
        parse_header(raw)
    assert str(e.value).startswith("--prometheus-header") and "\n" not in str(e.value)


@given(st.text(max_size=200))
def test_any_header_text_is_a_header_or_one_line(raw: str) -> None:
    try:
        name, value = parse_header(raw)
    except AuthError as e:
        assert "\n" not in str(e)
    else:
        assert httpx.Headers({name: value})[name] == value  # httpx accepts what was accepted here


def test_a_ca_file_that_is_not_a_bundle_is_refused(tmp_path: Path) -> None:
    bad = tmp_path / "ca.pem"
    bad.write_text("not a certificate")
    with pytest.raises(AuthError, match=r"--prometheus-ca-file .*not a readable PEM"):
        PromAuth.from_settings(ca_file=str(bad))
    with pytest.raises(AuthError, match="not a readable PEM"):
        PromAuth.from_settings(ca_file=str(tmp_path / "missing.pem"))


def test_the_backtest_sends_the_same_credentials(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    token = tmp_path / "token"
    token.write_text("bt-token")
    seen: list[dict[str, Any]] = []

    def send(self: Any, request: Any, **kwargs: Any) -> Any:
        seen.append(dict(request.headers))
        raise SourceError("connect", "recorded")

    monkeypatch.setattr("requests.Session.send", send)
    api = PrometheusRange("http://prom", auth=PromAuth.from_settings(str(token), None, ["X-Scope-OrgID: b"]))
    with pytest.raises(SourceError, match="recorded"):
        api.query_range("up", 0.0, 60.0, 15.0)
    assert seen[0]["Authorization"] == "Bearer bt-token" and seen[0]["X-Scope-OrgID"] == "b"


@pytest.mark.parametrize("command", ["run", "backtest"])
@pytest.mark.parametrize(("flags", "why"), [
    (["--prometheus-bearer-token-file", "/nonexistent/token"], "--prometheus-bearer-token-file /nonexistent/token"),
    (["--prometheus-header", "Authorization: Bearer x"], "use --prometheus-bearer-token-file"),
])
def test_the_commands_refuse_bad_credentials_before_any_work(tmp_path: Path, command: str, flags: list[str],
                                                             why: str) -> None:
    policy = tmp_path / "p.yaml"
    policy.write_text((Path(__file__).resolve().parents[3] / "policies" / "chat-deployment.yaml").read_text())
    args = (["run", "--once", "--kubeconfig", str(tmp_path / "none")] if command == "run" else
            ["backtest", "--prometheus", "http://127.0.0.1:1", "--policy", str(policy), "--start", "0", "--end", "60"])
    result = CliRunner().invoke(main, [*args, *flags])
    assert result.exit_code == 2, result.output
    last = result.output.strip().splitlines()[-1]
    assert last.startswith("Error: ") and why in last, result.output


def test_describe_never_holds_the_token(tmp_path: Path) -> None:
    token = tmp_path / "token"
    token.write_text("secret-value")
    described = json.dumps(dict(PromAuth.from_settings(str(token), None, ["X-Scope-OrgID: t"]).describe()))
    assert "secret-value" not in described and "X-Scope-OrgID" in described


def test_the_charts_schema_reserves_the_same_header_names() -> None:
    """values.schema.json refuses at `helm install` the header names the controller refuses at start."""
    import re

    from autoscaler.sources.prom_auth import _RESERVED

    schema = json.loads((Path(__file__).resolve().parents[3] / "charts" / "inference-autoscaler" /
                         "values.schema.json").read_text())
    names = schema["properties"]["prometheusAuth"]["properties"]["headers"]["propertyNames"]
    reserved = re.compile(names["not"]["pattern"])
    for name in _RESERVED:
        for spelling in (name, name.upper(), name.title()):
            assert reserved.search(spelling), spelling
            with pytest.raises(AuthError):
                parse_header(f"{spelling}: x")
    for fine in ("X-Scope-OrgID", "X-Authorization-Hint", "Hostname"):
        assert not reserved.search(fine) and parse_header(f"{fine}: x")[0] == fine

"""Every API answer is read with a size limit: a whole body, and each line of a watch stream."""

from __future__ import annotations

import io
from typing import Any

import pytest

from autoscaler.targets import api
from autoscaler.targets.api import API_ERRORS, ResponseTooLarge, call_json, iter_lines_bounded


class _Resp:
    """What the client returns with `_preload_content=False`: read() in chunks, stream(), headers."""

    def __init__(self, body: bytes, headers: dict[str, str] | None = None) -> None:
        self._io = io.BytesIO(body)
        self.headers = headers or {}
        self.released = False

    def read(self, amt: int | None = None) -> bytes:
        return self._io.read(amt)

    def stream(self, amt: int = 65536, decode_content: bool = False) -> Any:
        while chunk := self._io.read(amt):
            yield chunk

    def release_conn(self) -> None:
        self.released = True


@pytest.fixture
def small_limit() -> Any:
    before = api.max_response_bytes()
    api.set_max_response_bytes(2048)
    yield
    api.set_max_response_bytes(before)


def test_a_body_within_the_limit_is_decoded_and_the_connection_released(small_limit: None) -> None:
    resp = _Resp(b'{"items": [1, 2]}')
    assert call_json(lambda **kw: resp) == {"items": [1, 2]} and resp.released


def test_a_body_over_the_limit_is_refused_while_reading_and_the_connection_released(small_limit: None) -> None:
    resp = _Resp(b'{"x": "' + b"a" * 1_000_000 + b'"}')
    with pytest.raises(ResponseTooLarge, match="2048-byte limit"):
        call_json(lambda **kw: resp)
    assert resp.released and resp._io.tell() <= 65536  # stopped at the first chunk past the limit


def test_a_declared_length_over_the_limit_is_refused_before_reading(small_limit: None) -> None:
    resp = _Resp(b"{}", {"Content-Length": "999999"})
    with pytest.raises(ResponseTooLarge):
        call_json(lambda **kw: resp)
    assert resp._io.tell() == 0


def test_too_large_is_an_api_error_the_control_loops_survive() -> None:
    assert isinstance(ResponseTooLarge("x"), API_ERRORS)


def test_watch_lines_split_across_chunks_and_a_cut_last_line_is_dropped(small_limit: None) -> None:
    body = b'{"type": "ADDED"}\n\n{"type": "MODIFIED"}\n{"type": "DEL'
    resp = _Resp(body)
    resp.stream = lambda amt=0, decode_content=False: iter([body[i:i + 5] for i in range(0, len(body), 5)])  # type: ignore[method-assign]
    assert list(iter_lines_bounded(resp)) == ['{"type": "ADDED"}', "", '{"type": "MODIFIED"}']


def test_a_watch_line_that_never_ends_is_refused(small_limit: None) -> None:
    resp = _Resp(b"a" * 10_000)
    with pytest.raises(ResponseTooLarge, match="watch event"):
        list(iter_lines_bounded(resp))


def test_the_limit_itself_is_bounded() -> None:
    with pytest.raises(ValueError, match="response limit"):
        api.set_max_response_bytes(10)

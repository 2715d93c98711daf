"""The SSE parser and event reader: exact on well-formed streams however they are chunked, bounded on huge
lines, and failing only with SSEError (one line) on anything malformed."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from autoscaler.profile.sse import SSEError, SSEParser, read_event

payloads = st.lists(st.text(st.characters(blacklist_characters="\r\n", blacklist_categories=["Cs"]),
                            min_size=1, max_size=40), min_size=0, max_size=8)


def encode(events: list[list[str]], eol: str, comments: bool) -> bytes:
    out = []
    for ev in events:
        if comments:
            out.append(f": keep-alive{eol}")
        out.extend(f"data: {line}{eol}" for line in ev)
        out.append(eol)
    return "".join(out).encode()


def feed_in_pieces(p: SSEParser, raw: bytes, cuts: list[int]) -> list[str]:
    got, last = [], 0
    for c in sorted({min(len(raw), c) for c in cuts}):
        got += p.feed(raw[last:c])
        last = c
    return got + p.feed(raw[last:]) + p.close()


@settings(max_examples=200, deadline=None)
@given(st.lists(payloads.filter(bool), max_size=6), st.sampled_from(["\n", "\r\n"]), st.booleans(),
       st.lists(st.integers(0, 2000), max_size=10))
def test_events_survive_any_chunking(events: list[list[str]], eol: str, comments: bool, cuts: list[int]) -> None:
    raw = encode(events, eol, comments)
    got = feed_in_pieces(SSEParser(), raw, cuts)
    assert got == ["\n".join(ev) for ev in events]


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=3000), st.lists(st.integers(0, 3000), max_size=6))
def test_garbage_never_raises_anything_but_sse_error(raw: bytes, cuts: list[int]) -> None:
    p = SSEParser(max_line_bytes=512)
    try:
        events = feed_in_pieces(p, raw, cuts)
    except SSEError:
        return
    for data in events:
        try:
            ev = read_event(data)
        except SSEError as e:
            assert "\n" not in str(e)
            continue
        assert isinstance(ev.content, str)


def test_a_huge_line_is_refused_without_buffering_it_all() -> None:
    p = SSEParser(max_line_bytes=1000)
    p.feed(b"data: " + b"x" * 900)
    with pytest.raises(SSEError, match="over 1000 bytes"):
        for _ in range(100):
            p.feed(b"y" * 100)
    assert len(p._buf) <= 1100  # never grew past the limit and one piece


def test_a_huge_line_ending_in_the_same_chunk_is_refused() -> None:
    with pytest.raises(SSEError):
        SSEParser(max_line_bytes=100).feed(b"data: " + b"x" * 200 + b"\n\n")


def test_multi_line_data_joins_and_other_fields_are_ignored() -> None:
    p = SSEParser()
    assert p.feed(b"event: x\nid: 3\ndata:a\ndata: b\nretry: 5\n\n") == ["a\nb"]


@pytest.mark.parametrize("data,content,usage", [
    ('{"choices":[{"index":0,"text":" hi","finish_reason":null}]}', " hi", None),
    ('{"choices":[{"index":0,"delta":{"content":"yo"}}]}', "yo", None),
    ('{"choices":[{"index":0,"delta":{"role":"assistant"}}]}', "", None),
    ('{"choices":[],"usage":{"prompt_tokens":7,"completion_tokens":3,"total_tokens":10}}', "", (7, 3)),
    ('{"choices":[],"usage":{"prompt_tokens":"7","completion_tokens":-1}}', "", (None, None)),
    ('{"choices":"nope"}', "", None),
])
def test_read_event_extracts_content_and_usage(data: str, content: str, usage: tuple | None) -> None:
    ev = read_event(data)
    assert not ev.done and ev.content == content
    assert (ev.prompt_tokens, ev.completion_tokens) == (usage or (None, None))


@pytest.mark.parametrize("data,why", [
    ("{not json", "not JSON"),
    ("[1, 2]", "not a JSON object"),
    (json.dumps({"error": {"message": "out of memory"}}), "out of memory"),
    (json.dumps({"object": "error", "message": "bad"}), "bad"),
])
def test_read_event_rejects_malformed_events(data: str, why: str) -> None:
    with pytest.raises(SSEError, match=why):
        read_event(data)


def test_done_marker() -> None:
    assert read_event("[DONE]").done
    assert read_event(" [DONE] ").done

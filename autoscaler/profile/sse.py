"""Server-sent events as OpenAI-compatible servers stream them: `data: {json}` events, `data: [DONE]`.

`SSEParser.feed(bytes)` returns the complete events' data so far (several `data:` lines of one event are
joined with a newline, comments and other fields are skipped); a line longer than `max_line_bytes` raises
`SSEError` (a size limit, not a guess). `read_event(data)` turns one event's data into what the profiler
measures: content text, usage, or DONE; anything else raises `SSEError` with a one-line reason.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

DONE = "[DONE]"


class SSEError(ValueError):
    pass


class SSEParser:
    def __init__(self, max_line_bytes: int = 1 << 20) -> None:
        self.max_line_bytes = max_line_bytes
        self._buf = bytearray()
        self._data: list[str] = []

    def feed(self, chunk: bytes) -> list[str]:
        self._buf += chunk
        events: list[str] = []
        while True:
            nl = self._buf.find(b"\n")
            if nl < 0:
                if len(self._buf) > self.max_line_bytes:
                    raise SSEError(f"an event line is over {self.max_line_bytes} bytes")
                return events
            if nl > self.max_line_bytes:
                raise SSEError(f"an event line is over {self.max_line_bytes} bytes")
            raw = bytes(self._buf[:nl])
            del self._buf[: nl + 1]
            line = raw[:-1] if raw.endswith(b"\r") else raw
            self._line(line.decode("utf-8", errors="replace"), events)

    def close(self) -> list[str]:
        """The stream ended: a last event without its blank line still counts."""
        events: list[str] = []
        if self._buf:
            line = bytes(self._buf).rstrip(b"\r").decode("utf-8", errors="replace")
            self._buf.clear()
            self._line(line, events)
        if self._data:
            events.append("\n".join(self._data))
            self._data = []
        return events

    def _line(self, line: str, events: list[str]) -> None:
        if not line:
            if self._data:
                events.append("\n".join(self._data))
                self._data = []
            return
        if line.startswith(":"):
            return  # comment / keep-alive
        field, _, value = line.partition(":")
        if field == "data":
            self._data.append(value[1:] if value.startswith(" ") else value)


@dataclass(frozen=True, slots=True)
class Event:
    done: bool = False
    content: str = ""  # text of this event (completions `text` or chat `delta.content`)
    prompt_tokens: int | None = None  # from a usage object
    completion_tokens: int | None = None


def _count(usage: dict[str, Any], key: str) -> int | None:
    v = usage.get(key)
    return v if isinstance(v, int) and not isinstance(v, bool) and v >= 0 else None


def read_event(data: str) -> Event:
    if data.strip() == DONE:
        return Event(done=True)
    try:
        obj = json.loads(data)
    except ValueError:
        raise SSEError(f"an event is not JSON: {data[:80]!r}") from None
    if not isinstance(obj, dict):
        raise SSEError("an event is not a JSON object")
    if "error" in obj or obj.get("object") == "error":
        err = obj.get("error", obj)
        msg = err.get("message") if isinstance(err, dict) else err
        raise SSEError(f"the server sent an error: {str(msg)[:200]}")
    content = ""
    choices = obj.get("choices")
    if isinstance(choices, list):
        for c in choices:
            if not isinstance(c, dict):
                continue
            text = c.get("text")
            delta = c.get("delta")
            if isinstance(text, str):
                content += text
            elif isinstance(delta, dict) and isinstance(delta.get("content"), str):
                content += delta["content"]
    usage = obj.get("usage")
    if isinstance(usage, dict):
        return Event(content=content, prompt_tokens=_count(usage, "prompt_tokens"),
                     completion_tokens=_count(usage, "completion_tokens"))
    return Event(content=content)

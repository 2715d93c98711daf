"""A small HTTP/1.1 server for GET endpoints (the controller's /metrics and probes, the emulator's pages)
that a flood of connections cannot exhaust.

The standard library's `ThreadingHTTPServer` starts a thread per connection and waits on each socket
without a timeout: 600 connections that send half a request hold 600 threads until the clients give up.
Here one asyncio loop owns every connection, so an idle or half-open connection costs a socket and a few
kilobytes, never a thread:

- a request head must arrive within `header_timeout_seconds` (the first on a connection) or
  `idle_timeout_seconds` (the next ones on a keep-alive connection), and is at most `max_head_bytes`;
- at most `max_connections` connections are open; further ones are closed at once;
- handlers run on a fixed pool of `workers` threads (they may block: a registry's collect, a render);
- a response must be taken by the client within `write_timeout_seconds`.

GET and HEAD are served; a request with a body, a malformed request line or a handler that raises
gets a 4xx/5xx answer and the connection is closed. The handler sees the request target as sent
(`/path?query`) and returns a `Response`.

POST is served only when a `post_handler` is given (the emulator's OpenAI-compatible API): the body must
have a Content-Length of at most `max_body_bytes` and arrive within `header_timeout_seconds`. The post
handler is a coroutine run on the server's loop (it must not block; it may sleep) and may answer with a
`StreamResponse`, sent with chunked transfer encoding, each chunk taken by the client within
`write_timeout_seconds` (the handler bounds how many chunks it yields).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
import threading
from collections.abc import AsyncIterator, Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from http import HTTPStatus

log = logging.getLogger("autoscaler.httpserve")


@dataclass(frozen=True, slots=True)
class Response:
    status: int
    content_type: str
    body: bytes


@dataclass(frozen=True, slots=True)
class StreamResponse:
    """A response whose body is produced over time (server-sent events): sent chunked."""

    status: int
    content_type: str
    chunks: AsyncIterator[bytes]


Handler = Callable[[str], Response]  # request target ("/path?query") -> response
# (request target, body) -> response; a coroutine on the server's loop
PostHandler = Callable[[str, bytes], Awaitable[Response | StreamResponse]]

TEXT = "text/plain; charset=utf-8"


def text(status: int, message: str) -> Response:
    return Response(status, TEXT, (message + "\n").encode())


class _BadRequest(Exception):
    def __init__(self, status: int, why: str) -> None:
        super().__init__(why)
        self.status = status

    def __reduce__(self) -> tuple[type[_BadRequest], tuple[int, str]]:
        return type(self), (self.status, str(self))


def _parse_head(head: bytes, max_body_bytes: int = 0) -> tuple[str, str, bool, int]:
    """(method, target, keep_alive, body length) of a request head; _BadRequest when it cannot be served.
    A body is accepted only on POST and only when `max_body_bytes` > 0."""
    try:
        lines = head.decode("latin-1").split("\r\n")
    except UnicodeDecodeError:  # latin-1 decodes every byte; kept for clarity
        raise _BadRequest(400, "undecodable request") from None
    parts = lines[0].split(" ")
    if len(parts) != 3 or not parts[2].startswith("HTTP/1."):
        raise _BadRequest(400, "malformed request line")
    method, target, version = parts
    if not target.startswith("/"):
        raise _BadRequest(400, "request target must be a path")
    headers: dict[str, str] = {}
    for line in lines[1:]:
        if not line:
            continue
        name, sep, value = line.partition(":")
        if not sep:
            raise _BadRequest(400, "malformed header")
        headers[name.strip().lower()] = value.strip()
    posting = method == "POST" and max_body_bytes > 0
    if method not in ("GET", "HEAD") and not posting:
        raise _BadRequest(405, "only GET and HEAD")
    length_field = headers.get("content-length", "0") or "0"
    if "transfer-encoding" in headers:
        raise _BadRequest(411 if posting else 400, "send the body with a Content-Length, not chunked")
    if not length_field.isdigit() or len(length_field) > 12:
        raise _BadRequest(400, "malformed Content-Length")
    length = int(length_field)
    if length and not posting:
        raise _BadRequest(400, "request bodies are not accepted")
    if length > max_body_bytes and posting:
        raise _BadRequest(413, f"request body over {max_body_bytes} bytes")
    connection = headers.get("connection", "").lower()
    keep_alive = version == "HTTP/1.1" and connection != "close"
    return method, target, keep_alive, length


def _reason(status: int) -> str:
    try:
        return HTTPStatus(status).phrase
    except ValueError:
        return "Unknown"


class BoundedHTTPServer:
    """Serves `handler` on (host, port) from a background thread once `start()`ed. `server_address` is
    the bound (host, port) (port 0 picks a free one)."""

    def __init__(
        self,
        host: str,
        port: int,
        handler: Handler,
        *,
        workers: int = 4,
        max_connections: int = 1024,
        header_timeout_seconds: float = 5.0,
        idle_timeout_seconds: float = 60.0,
        write_timeout_seconds: float = 10.0,
        max_head_bytes: int = 8192,
        backlog: int = 1024,
        name: str = "http",
        post_handler: PostHandler | None = None,
        max_body_bytes: int = 1 << 20,
    ) -> None:
        self.handler = handler
        self.post_handler = post_handler
        self.max_body_bytes = max_body_bytes if post_handler is not None else 0
        self.max_connections = max_connections
        self.header_timeout_seconds = header_timeout_seconds
        self.idle_timeout_seconds = idle_timeout_seconds
        self.write_timeout_seconds = write_timeout_seconds
        self.max_head_bytes = max_head_bytes
        self.name = name
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        dual = family == socket.AF_INET6 and host in ("::", "") and socket.has_dualstack_ipv6()
        self._sock = socket.create_server((host, port), family=family, backlog=backlog, dualstack_ipv6=dual)
        addr = self._sock.getsockname()
        self.server_address: tuple[str, int] = (str(addr[0]), int(addr[1]))
        self._pool = ThreadPoolExecutor(max(1, workers), thread_name_prefix=f"{name}-worker")
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._started = threading.Event()
        self._stop: asyncio.Event | None = None
        self._conns: dict[asyncio.StreamWriter, asyncio.Task[None] | None] = {}
        self.open_connections = 0
        self.refused_connections = 0

    # -- lifecycle ---------------------------------------------------------------------------------
    def start(self) -> BoundedHTTPServer:
        self._thread = threading.Thread(target=self._run, name=f"{self.name}-{self.server_address[1]}",
                                        daemon=True)
        self._thread.start()
        self._started.wait(10)
        return self

    def _run(self) -> None:
        loop = asyncio.new_event_loop()
        self._loop = loop
        try:
            loop.run_until_complete(self._serve())
        finally:
            loop.close()

    async def _serve(self) -> None:
        self._stop = asyncio.Event()
        server = await asyncio.start_server(self._connection, sock=self._sock, limit=self.max_head_bytes)
        self._started.set()
        async with server:
            await self._stop.wait()
        # Open connections end with the server: aborting the socket ends each handler's read normally.
        pending = [t for t in self._conns.values() if t is not None]
        for w in list(self._conns):
            w.transport.abort()
        if pending:
            await asyncio.wait(pending, timeout=5)

    def shutdown(self) -> None:
        """Stop serving, close the socket and the worker pool (idempotent)."""
        loop, stop = self._loop, self._stop
        if loop is not None and stop is not None and not loop.is_closed():
            with contextlib.suppress(RuntimeError):
                loop.call_soon_threadsafe(stop.set)
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None
        self.server_close()
        self._pool.shutdown(wait=False, cancel_futures=True)

    def server_close(self) -> None:
        with contextlib.suppress(OSError):
            self._sock.close()

    # -- one connection ----------------------------------------------------------------------------
    async def _connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if self.open_connections >= self.max_connections:
            self.refused_connections += 1
            writer.transport.abort()
            return
        self.open_connections += 1
        self._conns[writer] = asyncio.current_task()
        try:
            timeout = self.header_timeout_seconds
            while True:
                try:
                    head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), timeout)
                except asyncio.LimitOverrunError:
                    await self._write(writer, "GET", text(431, "request head too large"), False)
                    return
                except (TimeoutError, asyncio.IncompleteReadError, ConnectionError, OSError):
                    return  # slow, half-open or gone: close without an answer
                try:
                    method, target, keep_alive, length = _parse_head(head, self.max_body_bytes)
                except _BadRequest as e:
                    await self._write(writer, "GET", text(e.status, str(e)), False)
                    return
                if method == "POST":
                    try:
                        body = await asyncio.wait_for(reader.readexactly(length), self.header_timeout_seconds)
                    except (TimeoutError, asyncio.IncompleteReadError, ConnectionError, OSError):
                        return
                    answer = await self._call_post(target, body)
                    if isinstance(answer, StreamResponse):
                        await self._stream(writer, answer)
                        return  # one stream per connection: the client reads to the end, then closes
                    response = answer
                else:
                    loop = asyncio.get_running_loop()
                    response = await loop.run_in_executor(self._pool, self._call, target)
                if not await self._write(writer, method, response, keep_alive) or not keep_alive:
                    return
                timeout = self.idle_timeout_seconds
        except Exception:  # never let one connection's trouble reach the loop
            log.exception("%s: connection failed", self.name)
        finally:
            self.open_connections -= 1
            self._conns.pop(writer, None)
            writer.close()
            try:  # let the last answer flush, but never wait on a client that does not read
                await asyncio.wait_for(writer.wait_closed(), self.write_timeout_seconds)
            except (TimeoutError, ConnectionError, OSError):
                writer.transport.abort()

    def _call(self, target: str) -> Response:
        try:
            return self.handler(target)
        except Exception:
            log.exception("%s: handler failed for %s", self.name, target[:200])
            return text(500, "internal error")

    async def _call_post(self, target: str, body: bytes) -> Response | StreamResponse:
        assert self.post_handler is not None
        try:
            return await self.post_handler(target, body)
        except Exception:
            log.exception("%s: post handler failed for %s", self.name, target[:200])
            return text(500, "internal error")

    async def _stream(self, writer: asyncio.StreamWriter, r: StreamResponse) -> None:
        """Send `r` chunked, then close the connection; stop (and close the producer) when the client does
        not take a chunk within the write timeout or goes away."""
        head = (f"HTTP/1.1 {r.status} {_reason(r.status)}\r\nContent-Type: {r.content_type}\r\n"
                "Transfer-Encoding: chunked\r\nCache-Control: no-cache\r\nConnection: close\r\n\r\n")
        writer.write(head.encode("latin-1"))
        try:
            async for chunk in r.chunks:
                if chunk:
                    writer.write(b"%x\r\n%b\r\n" % (len(chunk), chunk))
                    await asyncio.wait_for(writer.drain(), self.write_timeout_seconds)
            writer.write(b"0\r\n\r\n")
            await asyncio.wait_for(writer.drain(), self.write_timeout_seconds)
        except (TimeoutError, ConnectionError, OSError):
            pass
        except Exception:
            log.exception("%s: stream failed", self.name)
        finally:
            aclose = getattr(r.chunks, "aclose", None)
            if aclose is not None:
                with contextlib.suppress(Exception):
                    await aclose()

    async def _write(self, writer: asyncio.StreamWriter, method: str, r: Response, keep_alive: bool) -> bool:
        head = (f"HTTP/1.1 {r.status} {_reason(r.status)}\r\nContent-Type: {r.content_type}\r\n"
                f"Content-Length: {len(r.body)}\r\n" + ("" if keep_alive else "Connection: close\r\n") + "\r\n")
        writer.write(head.encode("latin-1") + (r.body if method != "HEAD" else b""))
        try:
            await asyncio.wait_for(writer.drain(), self.write_timeout_seconds)
        except (TimeoutError, ConnectionError, OSError):
            return False
        return True

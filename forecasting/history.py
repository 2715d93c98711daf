"""An immutable ring of closed-bucket values that appends in O(chunk), not O(history).

Values live in read-only numpy chunks; an append copies only the open tail chunk and the (short) tuple of
chunk references, so a 20,160-point history costs microseconds per append and old states stay valid.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

CHUNK = 256
_EMPTY = np.empty(0)
_EMPTY.flags.writeable = False


def _frozen(a: np.ndarray) -> np.ndarray:
    a.flags.writeable = False
    return a


@dataclass(frozen=True, slots=True, eq=False)
class History:
    capacity: int
    end_index: int  # bucket index one past the newest stored value
    size: int  # values stored (may exceed capacity by less than one chunk)
    chunks: tuple[np.ndarray, ...]  # full chunks, oldest first
    tail: np.ndarray  # the open chunk, shorter than CHUNK

    @staticmethod
    def empty(capacity: int, start_index: int) -> History:
        return History(capacity, start_index, 0, (), _EMPTY)

    @staticmethod
    def from_array(capacity: int, end_index: int, values: np.ndarray) -> History:
        values = np.asarray(values, dtype=float)[-capacity:] if capacity > 0 else np.empty(0)
        n_full = len(values) // CHUNK
        chunks = tuple(_frozen(values[i * CHUNK : (i + 1) * CHUNK].copy()) for i in range(n_full))
        tail = _frozen(values[n_full * CHUNK :].copy())
        return History(capacity, end_index, len(values), chunks, tail)

    @property
    def start_index(self) -> int:
        """Bucket index of the oldest value returned by `to_array`."""
        return self.end_index - len(self)

    def __len__(self) -> int:
        return min(self.size, self.capacity)

    def append(self, value: float) -> History:
        k = len(self.tail)
        tail = np.empty(k + 1)
        tail[:k] = self.tail
        tail[k] = value
        chunks = self.chunks
        size = self.size + 1
        if k + 1 == CHUNK:
            chunks = (*chunks, _frozen(tail))
            tail = _EMPTY
            if chunks and size - CHUNK >= self.capacity:  # the oldest chunk is no longer needed
                chunks = chunks[1:]
                size -= CHUNK
        else:
            _frozen(tail)
        return History(self.capacity, self.end_index + 1, size, chunks, tail)

    def get(self, index: int) -> float:
        """Value of bucket `index`, or NaN when it is not (or no longer) stored."""
        stored = self.size if self.size < self.capacity else self.capacity
        offset = index - self.end_index + stored
        if offset < 0 or offset >= stored:
            return float("nan")
        chunk, within = divmod(offset + self.size - stored, CHUNK)
        if chunk < len(self.chunks):
            return float(self.chunks[chunk][within])
        return float(self.tail[within])

    def last(self) -> float:
        return self.get(self.end_index - 1)

    def to_array(self) -> np.ndarray:
        """The newest `capacity` values, oldest first (a fresh array)."""
        if not self.chunks:
            return self.tail.copy()
        return np.concatenate((*self.chunks, self.tail))[-self.capacity :]

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, History):
            return NotImplemented
        return (
            self.capacity == other.capacity
            and self.end_index == other.end_index
            and np.array_equal(self.to_array(), other.to_array())
        )

    __hash__ = None  # type: ignore[assignment]

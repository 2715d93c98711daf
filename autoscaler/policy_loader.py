"""Load `ModelScalingPolicy` documents from YAML and report every problem in words a user can act on.

Each problem names the file, the line, the field path, the bad value and what is allowed.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from autoscaler.policy import ModelScalingPolicy

MAX_POLICY_BYTES = 1_000_000


@dataclass(frozen=True)
class PolicyProblem:
    source: str
    line: int | None
    path: str
    message: str

    def __str__(self) -> str:
        where = f"{self.source}:{self.line}" if self.line else self.source
        return f"{where}: {self.path}: {self.message}" if self.path else f"{where}: {self.message}"


class PolicyError(ValueError):
    """One or more problems in a policy document; `problems` lists them all."""

    def __init__(self, problems: list[PolicyProblem]):
        self.problems = problems
        super().__init__("\n".join(str(p) for p in problems))

    def __reduce__(self) -> tuple[type, tuple[list[PolicyProblem]]]:  # picklable: rebuilt from its problems
        return type(self), (self.problems,)


def _node_line(node: yaml.Node | None, path: tuple[Any, ...]) -> int | None:
    """The 1-based line of the deepest node along `path` that exists in the YAML tree."""
    line = node.start_mark.line + 1 if node is not None else None
    for key in path:
        if isinstance(node, yaml.MappingNode):
            nxt = next((v for k, v in node.value if getattr(k, "value", None) == key), None)
            if nxt is None:
                key_node = next((k for k, _ in node.value if getattr(k, "value", None) == key), None)
                return key_node.start_mark.line + 1 if key_node is not None else line
            node = nxt
        elif isinstance(node, yaml.SequenceNode) and isinstance(key, int) and key < len(node.value):
            node = node.value[key]
        else:
            break
        line = node.start_mark.line + 1
    return line


def _describe(err: dict[str, Any]) -> str:
    value = err.get("input")
    kind = err["type"]
    msg = str(err["msg"])
    if kind == "extra_forbidden":
        return "unknown field (check the spelling; unknown fields are not ignored)"
    if kind == "missing":
        return "required field is missing"
    if kind == "literal_error":
        allowed = err.get("ctx", {}).get("expected", "")
        return f"{value!r} is not allowed; use one of {allowed}"
    if msg.startswith("Value error, "):  # pydantic's prefix for our own validators' messages
        msg = msg[len("Value error, "):]
    shown = repr(value)
    if len(shown) > 60:
        shown = shown[:57] + "..."
    if isinstance(value, dict | list):
        return msg
    return f"{shown}: {msg}"


def _format_path(loc: Iterable[Any]) -> str:
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def parse_policy(data: Any, source: str = "<policy>", node: yaml.Node | None = None) -> ModelScalingPolicy:
    """Validate one already-parsed document. Raises PolicyError listing every problem."""
    if not isinstance(data, dict):
        raise PolicyError([PolicyProblem(source, None, "", "a policy must be a YAML mapping with "
                                         "apiVersion, kind, metadata and spec")])
    try:
        return ModelScalingPolicy.model_validate(data)
    except ValidationError as e:
        problems = []
        for err in e.errors():
            loc = tuple(p for p in err["loc"] if not (isinstance(p, str) and p.startswith("function-")))
            problems.append(PolicyProblem(source, _node_line(node, loc), _format_path(loc), _describe(dict(err))))
        raise PolicyError(problems) from None


def load_policies_text(text: str, source: str = "<policy>") -> list[ModelScalingPolicy]:
    """All policies in a (possibly multi-document) YAML text. Nothing is returned unless all are valid."""
    if len(text.encode("utf-8", "replace")) > MAX_POLICY_BYTES:
        raise PolicyError([PolicyProblem(source, None, "", f"file is larger than {MAX_POLICY_BYTES} bytes")])
    try:
        nodes = list(yaml.compose_all(text, Loader=yaml.SafeLoader))
        docs = list(yaml.safe_load_all(text))
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None) or getattr(e, "context_mark", None)
        line = mark.line + 1 if mark is not None else None
        problem = getattr(e, "problem", None) or str(e)
        raise PolicyError([PolicyProblem(source, line, "", f"YAML syntax error: {problem}")]) from None
    except RecursionError:
        raise PolicyError([PolicyProblem(source, None, "", "YAML nesting is too deep")]) from None
    pairs = [(d, n) for d, n in zip(docs, nodes, strict=False) if d is not None]
    if not pairs:
        raise PolicyError([PolicyProblem(source, None, "", "no policy document found (the file is empty)")])
    problems: list[PolicyProblem] = []
    policies: list[ModelScalingPolicy] = []
    for i, (doc, node) in enumerate(pairs):
        label = source if len(pairs) == 1 else f"{source}[doc {i}]"
        try:
            policies.append(parse_policy(doc, label, node))
        except PolicyError as e:
            problems.extend(e.problems)
    if problems:
        raise PolicyError(problems)
    return policies


def load_policy_file(path: str | Path) -> list[ModelScalingPolicy]:
    p = Path(path)
    try:
        raw = p.read_bytes()
    except OSError as e:
        raise PolicyError([PolicyProblem(str(p), None, "", f"cannot read file: {e.strerror}")]) from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise PolicyError([PolicyProblem(str(p), None, "", "file is not UTF-8 text")]) from None
    return load_policies_text(text, str(p))

"""Load `ModelScalingPolicy` documents from YAML and report every problem in words a user can act on.

Each problem names the file, the line, the field path, the bad value and what is allowed.

YAML is read with a safe loader of our own (`PolicyLoader`): no aliases (their expansion is exponential:
a 637-byte file took 16 s), no implicit timestamps (a date such as 2024-02-30 stays text, as it does for
kubectl), and before anything is constructed the node tree is checked for what YAML 1.1 would silently
misread: a duplicate key (the later value would win), an unquoted `18:30` (a base-60 integer, 1110) and
an explicit tag whose value cannot be read (`!!int x`). Each is one problem with its line and field.
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
_TIMESTAMP = "tag:yaml.org,2002:timestamp"
_NUMBER_TAGS = ("tag:yaml.org,2002:int", "tag:yaml.org,2002:float")


class PolicyLoader(yaml.SafeLoader):
    """SafeLoader without aliases and without implicit timestamps."""


    def compose_node(self, parent: yaml.Node | None, index: Any) -> yaml.Node | None:
        if self.check_event(yaml.AliasEvent):
            event = self.peek_event()
            where = f" (at {index.value})" if isinstance(index, yaml.ScalarNode) else ""
            raise yaml.composer.ComposerError(
                None,
                None,
                f"YAML aliases (*{event.anchor}){where} are not allowed in a policy: write the value out",
                event.start_mark,
            )
        return super().compose_node(parent, index)


# A copy without the timestamp resolver (SafeLoader's own table is left as it is).
PolicyLoader.yaml_implicit_resolvers = {
    first: [(tag, rx) for tag, rx in resolvers if tag != _TIMESTAMP]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}


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
        line = node.start_mark.line + 1 if node is not None else None
        raise PolicyError([PolicyProblem(source, line, "", "a policy must be a YAML mapping with "
                                         "apiVersion, kind, metadata and spec")])
    try:
        return ModelScalingPolicy.model_validate(data)
    except ValidationError as e:
        problems = []
        for err in e.errors():
            loc = tuple(p for p in err["loc"] if not (isinstance(p, str) and p.startswith("function-")))
            problems.append(PolicyProblem(source, _node_line(node, loc), _format_path(loc), _describe(dict(err))))
        raise PolicyError(problems) from None


def _line(node: yaml.Node) -> int:
    return int(node.start_mark.line) + 1


def _check_nodes(node: yaml.Node, path: tuple[Any, ...], source: str, out: list[PolicyProblem]) -> None:
    """What YAML would silently misread, found in the node tree before anything is constructed."""
    if isinstance(node, yaml.MappingNode):
        seen: dict[Any, int] = {}
        for key, value in node.value:
            name = key.value if isinstance(key, yaml.ScalarNode) else None
            if name is not None and name in seen:
                out.append(PolicyProblem(source, _line(key), _format_path((*path, name)),
                                         f"duplicate key (first at line {seen[name]}); remove one of them"))
            elif name is not None:
                seen[name] = _line(key)
            _check_nodes(value, (*path, name if name is not None else "?"), source, out)
    elif isinstance(node, yaml.SequenceNode):
        for i, item in enumerate(node.value):
            _check_nodes(item, (*path, i), source, out)
    elif isinstance(node, yaml.ScalarNode):
        where = _format_path(path)
        if node.tag in _NUMBER_TAGS and node.style is None and ":" in node.value:
            out.append(PolicyProblem(source, _line(node), where,
                                     f"unquoted {node.value} is read by YAML 1.1 as a base-60 number, not a "
                                     f'time; quote it: "{node.value}"'))
            return
        try:
            PolicyLoader("").construct_object(node, deep=True)
        except Exception as e:
            tag = "!!" + node.tag.removeprefix("tag:yaml.org,2002:") if node.tag.startswith("tag:yaml") else node.tag
            why = getattr(e, "problem", None) if isinstance(e, yaml.YAMLError) else None
            shown = node.value if len(node.value) <= 40 else node.value[:37] + "..."
            msg = f"cannot read {shown!r} as {tag}" + (f": {why}" if why else "; remove the tag or fix the value")
            out.append(PolicyProblem(source, _line(node), where, msg))


def yaml_problem(e: yaml.YAMLError, text: str) -> tuple[int | None, str]:
    """The line (None: unknown) and a one-line description of what PyYAML refused in `text`. A character
    YAML forbids has no mark: its line comes from its position."""
    mark = getattr(e, "problem_mark", None) or getattr(e, "context_mark", None)
    line = mark.line + 1 if mark is not None else None
    problem = getattr(e, "problem", None) or str(e)
    if isinstance(e, yaml.reader.ReaderError):
        line = text.count("\n", 0, max(0, e.position)) + 1
        code = ord(e.character) if isinstance(e.character, str) else int(e.character)
        problem = f"character U+{code:04X} is not allowed in YAML ({e.reason})"
    return line, " ".join(str(problem).split())


def load_policies_text(text: str, source: str = "<policy>") -> list[ModelScalingPolicy]:
    """All policies in a (possibly multi-document) YAML text. Nothing is returned unless all are valid."""
    if len(text.encode("utf-8", "replace")) > MAX_POLICY_BYTES:
        raise PolicyError([PolicyProblem(source, None, "", f"file is larger than {MAX_POLICY_BYTES} bytes")])
    try:
        nodes = [n for n in yaml.compose_all(text, Loader=PolicyLoader) if n is not None]
        found: list[PolicyProblem] = []
        for node in nodes:
            _check_nodes(node, (), source, found)
        if found:
            raise PolicyError(found)
        docs = [PolicyLoader("").construct_document(n) for n in nodes]
    except yaml.YAMLError as e:
        line, problem = yaml_problem(e, text)
        kind = "YAML syntax error" if isinstance(e, yaml.scanner.ScannerError | yaml.parser.ParserError) else "YAML"
        raise PolicyError([PolicyProblem(source, line, "", f"{kind}: {problem}")]) from None
    except RecursionError:
        raise PolicyError([PolicyProblem(source, None, "", "YAML nesting is too deep")]) from None
    except (ValueError, TypeError, OverflowError) as e:
        if isinstance(e, PolicyError):
            raise
        raise PolicyError([PolicyProblem(source, None, "", f"YAML could not be read: {e}")]) from None
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

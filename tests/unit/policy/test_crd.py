"""The CRD is generated from the pydantic model."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import yaml
from click.testing import CliRunner

from autoscaler.cli import main
from autoscaler.crd import crd


def _walk(node: Any, path: str = "") -> Iterator[tuple[str, dict[str, Any]]]:
    if isinstance(node, dict):
        yield path, node
        for k, v in node.items():
            yield from _walk(v, f"{path}.{k}")
    elif isinstance(node, list):
        for i, v in enumerate(node):
            yield from _walk(v, f"{path}[{i}]")


def test_schema_is_structural_no_refs_or_nulls() -> None:
    schema = crd()["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    for path, node in _walk(schema):
        assert "$ref" not in node, path
        assert node.get("type") != "null", path
        if "properties" in node:
            assert node.get("type") == "object", path


def test_schema_command_prints_the_crd() -> None:
    res = CliRunner().invoke(main, ["schema"])
    assert res.exit_code == 0
    doc = yaml.safe_load(res.output)
    assert doc == crd()
    names = doc["spec"]["names"]
    assert (names["plural"], names["shortNames"]) == ("modelscalingpolicies", ["msp"])
    version = doc["spec"]["versions"][0]
    assert version["subresources"] == {"status": {}}
    assert {c["name"] for c in version["additionalPrinterColumns"]} >= {"Target", "Min", "Max", "Desired",
                                                                        "Current", "Age"}


def test_spec_schema_knows_every_policy_section() -> None:
    spec = crd()["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
    assert set(spec["required"]) == {"targetRef", "model"}
    assert spec["properties"]["model"]["properties"]["engine"]["enum"] == ["vllm", "sglang", "tgi", "trtllm"]

"""The CustomResourceDefinition for `ModelScalingPolicy`, generated from the pydantic model.

The Helm chart ships the output of `inference-autoscaler schema`; a test fails if they differ, so the
chart's CRD can never drift from the code.
"""

from __future__ import annotations

import copy
from typing import Any

from autoscaler.policy import API_GROUP, KIND, PLURAL, SHORT_NAME, VERSION, PolicySpec

_DROP = {"title", "discriminator"}


def _inline(schema: Any, defs: dict[str, Any]) -> Any:
    """Turn pydantic's JSON Schema (2020-12) into a Kubernetes structural OpenAPI v3 schema."""
    if isinstance(schema, list):
        return [_inline(s, defs) for s in schema]
    if not isinstance(schema, dict):
        return schema
    if "$ref" in schema:
        target = copy.deepcopy(defs[schema["$ref"].split("/")[-1]])
        extra = {k: v for k, v in schema.items() if k != "$ref"}
        return _inline({**target, **extra}, defs)
    out: dict[str, Any] = {}
    for key, value in schema.items():
        if key in _DROP:
            continue
        if key == "anyOf":
            options = [o for o in value if o.get("type") != "null"]
            nullable = len(options) != len(value)
            if len(options) == 1:
                out.update(_inline(options[0], defs))
            else:
                out["anyOf"] = _inline(options, defs)
            if nullable:
                out["nullable"] = True
        elif key in ("properties",):
            out[key] = {k: _inline(v, defs) for k, v in value.items()}
        elif key in ("items", "additionalProperties") and isinstance(value, dict):
            out[key] = _inline(value, defs)
        elif key == "exclusiveMinimum":
            out["minimum"], out["exclusiveMinimum"] = value, True
        elif key == "exclusiveMaximum":
            out["maximum"], out["exclusiveMaximum"] = value, True
        elif key == "const":
            out["enum"] = [value]
        else:
            out[key] = _inline(value, defs)
    if "enum" in out and "type" not in out:
        out["type"] = "string"
    if out.get("additionalProperties") is False:
        del out["additionalProperties"]  # structural schemas prune unknown fields; the CLI rejects them
    return out


def spec_schema() -> dict[str, Any]:
    raw = PolicySpec.model_json_schema(by_alias=True, mode="validation")
    defs = raw.pop("$defs", {})
    schema: dict[str, Any] = _inline(raw, defs)
    return schema


def crd() -> dict[str, Any]:
    """The full CustomResourceDefinition manifest."""
    schema = {
        "type": "object",
        "required": ["spec"],
        "properties": {
            "apiVersion": {"type": "string"},
            "kind": {"type": "string"},
            "metadata": {"type": "object"},
            "spec": spec_schema(),
            "status": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
        },
    }
    columns = [
        {"name": "Target", "type": "string", "jsonPath": ".spec.targetRef.name"},
        {"name": "Kind", "type": "string", "jsonPath": ".spec.targetRef.kind", "priority": 1},
        {"name": "Min", "type": "integer", "jsonPath": ".spec.replicas.min"},
        {"name": "Max", "type": "integer", "jsonPath": ".spec.replicas.max"},
        {"name": "Desired", "type": "integer", "jsonPath": ".status.desiredReplicas"},
        {"name": "Current", "type": "integer", "jsonPath": ".status.currentReplicas"},
        {"name": "Reason", "type": "string", "jsonPath": ".status.lastDecision.reason", "priority": 1},
        {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"},
    ]
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{PLURAL}.{API_GROUP}"},
        "spec": {
            "group": API_GROUP,
            "scope": "Namespaced",
            "names": {
                "kind": KIND,
                "listKind": f"{KIND}List",
                "plural": PLURAL,
                "singular": KIND.lower(),
                "shortNames": [SHORT_NAME],
                "categories": ["autoscaling"],
            },
            "versions": [
                {
                    "name": VERSION,
                    "served": True,
                    "storage": True,
                    "schema": {"openAPIV3Schema": schema},
                    "subresources": {"status": {}},
                    "additionalPrinterColumns": columns,
                }
            ],
        },
    }

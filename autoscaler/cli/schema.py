"""`inference-autoscaler schema`"""

from __future__ import annotations

import json

import click
import yaml

from autoscaler.crd import crd


@click.command("schema")
@click.option("--format", "fmt", type=click.Choice(["yaml", "json"]), default="yaml", show_default=True)
@click.option("--schema-only", is_flag=True, help="only the openAPIV3Schema, not the whole CRD")
def schema(fmt: str, schema_only: bool) -> None:
    """Print the ModelScalingPolicy CRD (OpenAPI v3 schema generated from the pydantic model)."""
    doc = crd()
    if schema_only:
        doc = doc["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    if fmt == "json":
        click.echo(json.dumps(doc, indent=2, sort_keys=True))
    else:
        click.echo(yaml.safe_dump(doc, sort_keys=True, default_flow_style=False), nl=False)

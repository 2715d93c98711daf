"""`inference-autoscaler validate FILE...`"""

from __future__ import annotations

import sys

import click

from autoscaler.core.stages.missing import zero_floor_note
from autoscaler.policy_loader import PolicyError, load_policy_file
from autoscaler.sources.front_door import empty_answer_note


@click.command("validate")
@click.argument("files", nargs=-1, required=True, type=click.Path(dir_okay=False))
def validate(files: tuple[str, ...]) -> None:
    """Check ModelScalingPolicy YAML files. Exit 1 with one line per problem."""
    bad = 0
    for f in files:
        try:
            policies = load_policy_file(f)
        except PolicyError as e:
            bad += 1
            for p in e.problems:
                click.echo(str(p), err=True)
            continue
        for pol in policies:
            click.echo(f"{f}: ok ({pol.key} -> {pol.spec.target_ref.kind}/{pol.spec.target_ref.name})")
            for note in (zero_floor_note(pol.spec), empty_answer_note(pol.spec.scale_from_zero)):
                if note is not None:
                    click.echo(f"{f}: note: {pol.key}: {note}", err=True)
    if bad:
        click.echo(f"{bad} of {len(files)} file(s) invalid", err=True)
        sys.exit(1)

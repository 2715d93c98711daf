"""`python -m autoscaler.cli` is `inference-autoscaler` (handy where the console script is not on PATH)."""

from autoscaler.cli import main

main(prog_name="inference-autoscaler")

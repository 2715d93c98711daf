"""`inference-autoscaler emulate`: serve a trace through the simulated fleet as vLLM /metrics."""

from __future__ import annotations

import signal
import sys
import threading
from typing import Any

import click

from autoscaler.cli.params import PORT, Number, count
from autoscaler.emulator.fleet_driver import MAX_SPEED, ReplicasSource, fixed_replicas
from autoscaler.emulator.fleet_driver import replicas_file as replicas_from_file
from autoscaler.policy import MAX_REPLICAS
from simulations.trace import MAX_CLONE


def _scenario(name: str) -> tuple[Any, Any, Any]:
    """(trace, serving profile, cold-start profile) of a simulator scenario, request-level."""
    from autoscaler.policy import revised
    from simulations.errors import SimulationInputError
    from simulations.scenario import build_workload, load_scenario
    from simulations.trace import Trace

    try:
        sc = load_scenario(name)
        if sc.fidelity != "request":
            sc = revised(sc, fidelity="request")
        wl = build_workload(sc)
    except SimulationInputError as e:
        raise click.ClickException(str(e)) from None
    if not isinstance(wl, Trace):
        raise click.ClickException(f"scenario {name!r} is a rate workload; the emulator needs request-level "
                                   "traces (azure, jsonl or flash-crowd scenarios)")
    return wl, sc.serving, sc.cold_start_profile


@click.command("emulate")
@click.option("--trace", "trace_path", type=click.Path(exists=True, dir_okay=False),
              help="request trace (Azure LLM CSV or Mooncake-style JSONL)")
@click.option("--scenario", help="a named simulator scenario instead of --trace")
@click.option("--replicas", type=count(0, MAX_REPLICAS), help="a fixed replica count")
@click.option("--replicas-file", type=click.Path(dir_okay=False),
              help="a file holding the replica count; re-read every second")
@click.option("--port", type=count(0, PORT), default=8000, show_default=True,
              help="one port for all replicas (0 = any free port)")
@click.option("--host", default="127.0.0.1", show_default=True)
@click.option("--speed", type=Number(0, MAX_SPEED, lo_open=True), default=1.0, show_default=True,
              help="simulated seconds per wall second")
@click.option("--engine", type=click.Choice(["vllm", "sglang", "tgi"]), default="vllm", show_default=True)
@click.option("--model", default="emulated-model", show_default=True, help="the model_name label")
@click.option("--namespace", default="default", show_default=True, help="namespace label in /targets")
@click.option("--targets-file", type=click.Path(dir_okay=False),
              help="also write the targets as Prometheus file_sd JSON here")
@click.option("--scale", type=Number(0, MAX_CLONE, lo_open=True), default=1.0, show_default=True,
              help="clone each request this many times (keeps the burst shape)")
def emulate(trace_path: str | None, scenario: str | None, replicas: int | None, replicas_file: str | None,
            port: int, host: str, speed: float, engine: str, model: str, namespace: str,
            targets_file: str | None, scale: float) -> None:
    """Replay a trace through the simulator's fleet and serve each replica's /metrics.

    \b
    One port serves every replica:
      GET /replica/<id>/metrics   vLLM text exposition (0.0.4) of replica <id>
      GET /targets                Prometheus http_sd JSON of the live replicas
      GET /truth                  the fleet's own totals (ground truth)
    Prometheus scrape config:
      - job_name: emulator
        http_sd_configs: [{url: "http://HOST:PORT/targets", refresh_interval: 5s}]
    """
    if (trace_path is None) == (scenario is None):
        raise click.UsageError("pass exactly one of --trace PATH or --scenario NAME")
    if replicas is not None and replicas_file is not None:
        raise click.UsageError("pass --replicas or --replicas-file, not both")
    source: ReplicasSource = (replicas_from_file(replicas_file) if replicas_file is not None
                              else fixed_replicas(replicas if replicas is not None else 1))
    serving = cold_start = None
    if trace_path is not None:
        from simulations.errors import SimulationInputError
        from simulations.trace_loaders import load_trace

        try:
            trace = load_trace(trace_path)
        except SimulationInputError as e:
            raise click.ClickException(str(e)) from None
    else:
        assert scenario is not None
        trace, serving, cold_start = _scenario(scenario)
    if scale != 1.0:
        trace = trace.clone(scale)

    from autoscaler.emulator.build import build_emulator

    try:
        server = build_emulator(trace, source, model=model, engine=engine, speed=speed, host=host, port=port,
                                namespace=namespace, targets_file=targets_file, serving=serving,
                                cold_start=cold_start)
    except OSError as e:
        raise click.ClickException(f"cannot listen on {host}:{port}: {e.strerror}") from None
    server.start()
    click.echo(f"emulating {len(trace)} requests ({trace.duration_seconds:.0f}s of trace) at {speed:g}x, "
               f"engine {engine}, model {model}")
    click.echo(f"serving {server.base_url}/replica/<id>/metrics; targets at {server.base_url}/targets")
    done = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: done.set())
    try:
        while not done.wait(1.0):
            pass
    except KeyboardInterrupt:
        pass
    finally:
        server.stop()
    sys.exit(0)

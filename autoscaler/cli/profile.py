"""`inference-autoscaler profile`: one replica's SLO capacity, measured on a live OpenAI-compatible server."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Any

import click

from autoscaler.cli.params import Number, count, seconds
from autoscaler.emulator.fleet_driver import MAX_SPEED
from autoscaler.policy import DAY, HOUR

# Bounds of the ramp's flags, far outside anything one replica is profiled at.
MAX_TOKENS = 1e7  # prompt or output tokens of one request: the longest context windows offered hold 10M
MAX_SIGMA = 3.0  # lognormal sigma of the lengths (3: the 99th percentile 1,000× the median)
MAX_RATE = 1e5  # requests/s offered to one replica
MAX_GROWTH = 100.0  # rate multiplier between stages


def _slo(policy_file: str | None, ttft: float | None, queue_time: float | None,
         quantile: float | None) -> tuple[Any, str | None]:
    """(SLO, the policy's model name) from --policy, overridden by explicit options."""
    from autoscaler.policy import SLOSpec
    from autoscaler.profile.stages import SLO

    spec, model = SLOSpec(), None
    if policy_file is not None:
        from autoscaler.policy_loader import PolicyError, load_policy_file

        try:
            pol = load_policy_file(policy_file)[0]
        except PolicyError as e:
            raise click.ClickException("; ".join(str(p) for p in e.problems)) from None
        except IndexError:
            raise click.ClickException(f"{policy_file}: holds no policy") from None
        spec, model = pol.spec.slo, pol.spec.model.name
    slo = SLO.of_policy(spec)
    if ttft is not None or queue_time is not None:
        slo = SLO(ttft, queue_time, slo.quantile)
    if quantile is not None:
        slo = SLO(slo.ttft_seconds, slo.queue_time_seconds, quantile)
    return slo, model


def _mix(trace: str | None, prompt_tokens: float, output_tokens: float, prompt_sigma: float,
         output_sigma: float) -> Any:
    from autoscaler.profile.mix import DistributionMix, Lengths, trace_mix

    if trace is not None:
        from simulations.errors import SimulationInputError

        try:
            return trace_mix(trace)
        except SimulationInputError as e:
            raise click.ClickException(str(e)) from None
    return DistributionMix(Lengths(prompt_tokens, prompt_sigma), Lengths(output_tokens, output_sigma))


def _fmt(x: float | None, unit: str = "") -> str:
    return "-" if x is None else f"{x:.3g}{unit}"


@click.command("profile")
@click.option("--url", required=True, help="the server's base URL, e.g. http://localhost:8000 (one replica)")
@click.option("--model", help="model name to request (default: the policy's, else the first in /v1/models)")
@click.option("--api", type=click.Choice(["completions", "chat"]), default="completions", show_default=True)
@click.option("--policy", "policy_file", type=click.Path(exists=True, dir_okay=False),
              help="take the SLO (and model name) from this ModelScalingPolicy")
@click.option("--ttft", type=seconds(0.0, HOUR), help="TTFT SLO seconds (overrides)")
@click.option("--queue-time", type=seconds(0.0, HOUR), help="queue-time SLO seconds")
@click.option("--quantile", type=Number(0, 1, lo_open=True, hi_open=True),
              help="share of requests that must meet the SLO (default: the policy's, 0.99)")
@click.option("--trace", type=click.Path(exists=True, dir_okay=False),
              help="draw prompt/output lengths from this trace (Azure CSV or JSONL)")
@click.option("--prompt-tokens", type=Number(1, MAX_TOKENS), default=1000.0, show_default=True)
@click.option("--output-tokens", type=Number(1, MAX_TOKENS), default=200.0, show_default=True)
@click.option("--prompt-sigma", type=Number(0, MAX_SIGMA), default=0.0, show_default=True,
              help="lognormal sigma of prompt lengths (0 = fixed)")
@click.option("--output-sigma", type=Number(0, MAX_SIGMA), default=0.0, show_default=True)
@click.option("--start-rate", type=Number(0, MAX_RATE, lo_open=True), default=0.5, show_default=True,
              help="requests/s of the first (light) stage")
@click.option("--growth", type=Number(1, MAX_GROWTH, lo_open=True), default=1.5, show_default=True,
              help="rate multiplier between stages until the SLO breaks")
@click.option("--max-rate", type=Number(0, MAX_RATE, lo_open=True), default=200.0, show_default=True)
@click.option("--refine-steps", type=count(0, 50), default=3, show_default=True,
              help="bisection stages between the last good and first bad rate")
@click.option("--warmup", type=seconds(0.0, HOUR, lo_open=False), default=30.0, show_default=True,
              help="seconds of each stage not judged (reaching steady state)")
@click.option("--stage-seconds", type=seconds(0.0, DAY), default=120.0, show_default=True,
              help="judged seconds of each stage")
@click.option("--max-in-flight", type=count(1, 100_000), default=512, show_default=True,
              help="client concurrency bound; arrivals beyond it count as misses")
@click.option("--timeout", type=seconds(0.0, DAY), default=120.0, show_default=True,
              help="seconds one request may take in all")
@click.option("--max-response-bytes", type=count(1024, 1 << 30), default=8 << 20, show_default=True)
@click.option("--time-scale", type=Number(1 / MAX_SPEED, MAX_SPEED), default=1.0, show_default=True,
              help="server seconds per wall second: 1 for a real server, the emulator's --speed for it")
@click.option("--vllm-hints/--no-vllm-hints", default=True, show_default=True,
              help="send ignore_eos and min_tokens so every answer is max_tokens long")
@click.option("--api-key", envvar="OPENAI_API_KEY", default=None,
              help="sent as 'Authorization: Bearer KEY' (vllm serve --api-key); default: $OPENAI_API_KEY")
@click.option("--seed", type=count(0, 2**32 - 1), default=0, show_default=True)
@click.option("--out", "out_file", type=click.Path(dir_okay=False), help="write the capacity YAML here")
def profile(url: str, model: str | None, api: str, policy_file: str | None, ttft: float | None,
            queue_time: float | None, quantile: float | None, trace: str | None, prompt_tokens: float,
            output_tokens: float, prompt_sigma: float, output_sigma: float, start_rate: float, growth: float,
            max_rate: float, refine_steps: int, warmup: float, stage_seconds: float, max_in_flight: int,
            timeout: float, max_response_bytes: int, time_scale: float, vllm_hints: bool, api_key: str | None,
            seed: int, out_file: str | None) -> None:
    """Ramp the request rate on one replica until its SLO breaks; print the knee and the policy's
    `capacity` block (to --out, else stdout; everything else goes to stderr)."""
    from autoscaler.profile.knee import RampPlan
    from autoscaler.profile.ramp import RampConfig

    slo, policy_model = _slo(policy_file, ttft, queue_time, quantile)
    mix = _mix(trace, prompt_tokens, output_tokens, prompt_sigma, output_sigma)
    try:
        plan = RampPlan(start_rate, growth, max_rate, refine_steps)
        cfg = RampConfig(warmup, stage_seconds, max_in_flight, time_scale, seed=seed)
    except ValueError as e:
        raise click.UsageError(str(e)) from None
    try:
        text = asyncio.run(_run(url.rstrip("/"), model or policy_model, api, slo, mix, plan, cfg,
                                timeout / time_scale, max_response_bytes, vllm_hints, api_key))
    except KeyboardInterrupt:
        raise click.ClickException("interrupted: no knee") from None
    if out_file:
        Path(out_file).write_text(text)
        click.echo(f"wrote {out_file}", err=True)
    else:
        sys.stdout.write(text)


async def _run(url: str, model: str | None, api: str, slo: Any, mix: Any, plan: Any, cfg: Any,
               timeout_wall: float, max_response_bytes: int, vllm_hints: bool, api_key: str | None) -> str:
    from dataclasses import replace

    import httpx
    from rich.console import Console
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

    from autoscaler.profile.capacity_block import CapacityError, capacity_at_knee, capacity_yaml
    from autoscaler.profile.client import Endpoint, served_model, timed_request, tokens_per_word
    from autoscaler.profile.prompts import WORDS
    from autoscaler.profile.ramp import Tick, ramp
    from autoscaler.profile.stages import StageSummary

    console = Console(stderr=True)
    limits = httpx.Limits(max_connections=cfg.max_in_flight + 8, max_keepalive_connections=cfg.max_in_flight)
    headers = {"Authorization": f"Bearer {api_key}"} if api_key else None
    async with httpx.AsyncClient(limits=limits, timeout=httpx.Timeout(timeout_wall, connect=10.0),
                                 headers=headers) as client:
        if model is None:
            model = await served_model(client, url)
            if model is None:
                raise click.ClickException(f"{url}/v1/models lists no model: pass --model")
        tpw = await tokens_per_word(client, url, model, " ".join(WORDS))
        cfg = replace(cfg, tokens_per_word=tpw or 1.0)
        console.print(f"profiling {url} model {model} ({api}); SLO: {slo.describe()}; mix: {mix.describe()}; "
                      + (f"prompts: {tpw:.2f} tokens/word by /tokenize" if tpw else
                         "prompts: 1 token/word assumed (no /tokenize)"))
        ep = Endpoint(url, model, api, timeout_wall, max_response_bytes, vllm_hints)  # type: ignore[arg-type]
        probe = await timed_request(client, ep, " ".join(WORDS[:16]), 4)
        if not probe.ok:
            raise click.ClickException(f"a first request to {url} failed: {probe.error}")
        with Progress(TextColumn("{task.description}"), BarColumn(), TextColumn("{task.fields[info]}"),
                      TimeElapsedColumn(), console=console, transient=True) as bar:
            task = bar.add_task("starting", total=1.0, info="")

            def on_tick(t: Tick) -> None:
                phase = "sending" if t.sending else "draining"
                bar.update(task, description=f"stage {t.stage + 1}: {t.rate:.3g} req/s", total=t.duration,
                           completed=t.elapsed, info=f"{phase}, {t.in_flight} in flight, {t.finished} done")

            def on_stage(s: StageSummary) -> None:
                verdict = "[green]holds[/]" if s.holds else "[red]breaks[/]"
                errs = "; ".join(f"{n}× {e}" for e, n in s.errors.items())
                console.print(f"{s.rate:8.3g} req/s  {verdict}  attainment {s.attainment:.3f} of {s.requests}  "
                              f"TTFT p50 {_fmt(s.ttft_p50, 's')} q{slo.quantile:g} {_fmt(s.ttft_at_quantile, 's')}"
                              f"  ITL {_fmt(s.itl_mean, 's')}  in flight {_fmt(s.mean_in_flight)}"
                              + (f"  [{errs}]" if errs else ""))

            prof = await ramp(client, ep, mix, slo, plan, cfg, on_tick, on_stage)
    knee, ks = prof.knee, prof.knee_stage
    if knee.rate is None or ks is None:
        raise click.ClickException(f"the SLO breaks already at {plan.start_rate:g} req/s: lower --start-rate, "
                                   "or the SLO is not feasible for this mix on one replica")
    where = (f"between {knee.rate:.4g} (holds) and {knee.broke_at:.4g} req/s (breaks)" if knee.reached
             else f"held up to --max-rate {knee.rate:.4g} req/s (a lower bound)")
    console.print(f"knee: {knee.rate:.4g} req/s, {where}")
    try:
        cap = capacity_at_knee(knee.rate, ks.mean_prompt_tokens, ks.mean_output_tokens,
                               prof.stages[0].prefill_tokens_per_second, ks.mean_in_flight)
        return capacity_yaml(cap, [
            f"inference-autoscaler profile: {model} at {url}",
            f"SLO {slo.describe()}; mix {mix.describe()}",
            f"knee {knee.rate:.4g} req/s ({where}); mean prompt {ks.mean_prompt_tokens:.0f}, "
            f"output {ks.mean_output_tokens:.0f} tokens; prefill share at the knee {cap.prefill_share:.2f}",
            "these figures are at the SLO limit: targetUtilization below 1 adds headroom on top",
        ])
    except (CapacityError, ValueError) as e:
        raise click.ClickException(f"cannot write a capacity block: {str(e).splitlines()[0]}") from None

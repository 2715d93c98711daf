"""where_replicas_go: ours' replays on the bench's quick traces, read back by what asked for the replicas."""

from __future__ import annotations

import pytest

from benchmarks.where_replicas_go import HOLDERS, PARTS, main, replay, table
from simulations.autoscalers.ours import Ours
from simulations.bench import default_policy_file, load_replay, policy_spec
from simulations.fidelity import fleet_mode
from simulations.runner import run
from simulations.scenario import load_scenario


def test_the_replay_is_the_bench_cell_and_its_parts_add_up() -> None:
    name, attainment, gpu, hours, b = replay(("flash-crowd", 1.0))
    sc, wl = load_replay("flash-crowd", True, fleet_mode(load_scenario("flash-crowd").fidelity, "ours"))
    bench = run(sc, wl, Ours(policy_spec(default_policy_file())))
    assert (attainment, gpu) == (bench.outcome.attainment, bench.outcome.gpu_hours)  # the log changes nothing
    assert b.ticks >= hours * 3600 / 15
    assert sum(b.parts.values()) - b.short == pytest.approx(b.desired)
    assert b.parts["held"] > 0  # the crowd's replicas are held after it passes
    lines = table([(name, attainment, gpu, hours, b)]).splitlines()
    assert lines[0] == "| scenario | attainment | GPU-h | mean paid | mean asked | " + " | ".join(PARTS) + " |"
    assert lines[2].startswith(f"| flash-crowd | {attainment * 100:.2f}% | {gpu:.2f} | ")
    assert sum(b.held_by.values()) == pytest.approx(b.parts["held"])  # every held replica has a holder
    assert b.held_by["window"] > 0  # after the crowd, the scale-down window holds its replicas
    held = lines[lines.index("| scenario | " + " | ".join(HOLDERS) + " |") + 2]
    assert held == "| flash-crowd | " + " | ".join(f"{b.held_by[h]:.1f}" for h in HOLDERS) + " |"


@pytest.mark.parametrize(("args", "message"), [
    (["--scenarios", "nope"], "--scenarios: unknown nope"),
    (["--priors-scale", "0"], "argument --priors-scale: '0' is not a finite number in [0.1, 10]"),
])
def test_bad_flags_name_themselves(args: list[str], message: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as e:
        main(args)
    assert e.value.code == 2 and message in capsys.readouterr().err

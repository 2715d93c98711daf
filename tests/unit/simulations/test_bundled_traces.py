"""The traces ship with the package: scenarios resolve them from any working directory, compressed files
read like plain ones, and $INFERENCE_AUTOSCALER_TRACES still points at a user's own data first."""

from __future__ import annotations

import gzip
import lzma
from pathlib import Path

import numpy as np
import pytest

from simulations.errors import SimulationInputError
from simulations.scenario import (
    TRACES_ENV,
    bundled_traces_dir,
    load_scenario,
    resolve_trace_path,
    scenario_names,
)
from simulations.trace_loaders import load_azure_csv, load_servegen_windows, load_trace

HEADER = "TIMESTAMP,ContextTokens,GeneratedTokens\n"
ROWS = "2023-11-16 18:17:03.9799600,4808,10\n2023-11-16 18:17:04.0319600,3180,8\n"


@pytest.mark.parametrize("name", scenario_names())
def test_every_scenario_trace_resolves_from_any_directory(name: str, tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv(TRACES_ENV, raising=False)
    spec = load_scenario(name).trace
    for path in (spec.path, spec.token_source):
        if path is not None:
            found = resolve_trace_path(path)
            assert found.exists() and bundled_traces_dir() in found.parents, (path, found)


def test_bundled_traces_have_the_documented_shape() -> None:
    code = load_azure_csv(resolve_trace_path("azure_llm_2023_code.csv"))
    conv = load_azure_csv(resolve_trace_path("azure_llm_2023_conv.csv"))
    assert (len(code), len(conv)) == (8819, 19366)
    assert code.name == "azure_llm_2023_code" and 55 * 60 < conv.duration_seconds < 60 * 60
    for model, clients in (("m-large", 162), ("m-mid", 109)):
        starts, per_client = load_servegen_windows(resolve_trace_path(f"servegen/{model}"))
        assert len(per_client) == clients and len(starts) == 14 * 86400 // 600
        assert np.array_equal(starts, np.arange(len(starts)) * 600.0)


def test_own_traces_folder_comes_first_and_the_bundled_copy_is_the_fallback(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "azure_llm_2023_code.csv").write_text(HEADER + ROWS, encoding="utf-8")
    monkeypatch.setenv(TRACES_ENV, str(tmp_path))
    assert resolve_trace_path("azure_llm_2023_code.csv") == tmp_path / "azure_llm_2023_code.csv"
    assert len(load_azure_csv(resolve_trace_path("azure_llm_2023_code.csv"))) == 2
    assert bundled_traces_dir() in resolve_trace_path("azure_llm_2023_conv.csv").parents


def test_a_missing_trace_names_where_it_looked_and_the_fix(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(TRACES_ENV, str(tmp_path))
    with pytest.raises(SimulationInputError) as e:
        resolve_trace_path("nope.csv")
    message = str(e.value)
    assert str(tmp_path) in message and str(bundled_traces_dir()) in message and TRACES_ENV in message


@pytest.mark.parametrize(("suffix", "compress"), [(".gz", gzip.compress), (".xz", lzma.compress)])
def test_compressed_traces_read_like_plain_ones(tmp_path: Path, suffix: str, compress: object) -> None:
    plain = tmp_path / "a.csv"
    plain.write_text(HEADER + ROWS, encoding="utf-8")
    packed = tmp_path / f"b.csv{suffix}"
    packed.write_bytes(compress(plain.read_bytes()))  # type: ignore[operator]
    a, b = load_azure_csv(plain), load_trace(packed)
    assert np.array_equal(a.arrival_s, b.arrival_s) and np.array_equal(a.prompt_tokens, b.prompt_tokens)
    assert b.name == "b"


def test_a_corrupt_compressed_file_is_a_one_line_error(tmp_path: Path) -> None:
    p = tmp_path / "bad.csv.gz"
    p.write_bytes(b"not gzip at all")
    with pytest.raises(SimulationInputError, match=r"bad.csv.gz: cannot decompress"):
        load_azure_csv(p)


def test_blank_lines_are_skipped_and_later_lines_keep_their_numbers(tmp_path: Path) -> None:
    p = tmp_path / "gaps.csv"
    p.write_text(HEADER + ROWS + "\n   \n2023-11-16 18:17:05.0,x,1\n", encoding="utf-8")
    with pytest.raises(SimulationInputError, match=r"gaps.csv:6: ContextTokens: 'x' is not a number"):
        load_azure_csv(p)
    p.write_text(HEADER + ROWS + "\n   \n", encoding="utf-8")
    assert len(load_azure_csv(p)) == 2


def test_a_row_with_too_many_fields_names_its_line(tmp_path: Path) -> None:
    p = tmp_path / "wide.csv"
    p.write_text(HEADER + ROWS + "2023-11-16 18:17:05.0,1,2,3\n", encoding="utf-8")
    with pytest.raises(SimulationInputError, match=r"wide.csv:4: 4 fields, expected 3"):
        load_azure_csv(p)


def test_a_missing_token_field_is_named(tmp_path: Path) -> None:
    p = tmp_path / "short.csv"
    p.write_text(HEADER + "2023-11-16 18:17:05.0,12\n", encoding="utf-8")
    with pytest.raises(SimulationInputError, match=r"short.csv:2: GeneratedTokens: missing"):
        load_azure_csv(p)


def _servegen_folder(tmp_path: Path) -> Path:
    d = tmp_path / "model"
    d.mkdir()
    (d / "chunk-0-trace.csv").write_text("0,2.0,3.0,Gamma,0.11,4.5\n600,0,0,,0,0\n", encoding="utf-8")
    (d / "chunk-10-trace.csv").write_text("window_start_s,rate_rps,iat_cv,iat_dist,param1,param2\n"
                                          "0,1.0,0.5,Weibull,2.0,1.0\n600,0.5,1.0,Gamma,1.0,2.0\n", encoding="utf-8")
    (d / "chunk-2-trace.csv").write_text("0,0,0,,0,0\n600,3.0,1.2,Weibull,0.9,1.5\n", encoding="utf-8")
    return d


def test_servegen_one_file_form_equals_the_folder_form(tmp_path: Path) -> None:
    folder = _servegen_folder(tmp_path)
    starts, clients = load_servegen_windows(folder)
    assert [name for name, _ in clients] == ["chunk-0-trace.csv", "chunk-2-trace.csv", "chunk-10-trace.csv"]
    joined = tmp_path / "model.csv.xz"
    rows = ["client,window_start_s,rate_rps,iat_dist,param1,param2"]
    for n in (10, 0, 2):  # any client order: clients are taken by number
        for line in (folder / f"chunk-{n}-trace.csv").read_text().splitlines():
            if line and not line.startswith("window"):
                f = line.split(",")
                rows.append(",".join([str(n), f[0], f[1], f[3], f[4], f[5]]))
    joined.write_bytes(lzma.compress(("\n".join(rows) + "\n").encode()))
    starts2, clients2 = load_servegen_windows(joined)
    assert np.array_equal(starts, starts2)
    for (_, a), (_, b) in zip(clients, clients2, strict=True):
        assert np.array_equal(a, b)
    assert clients[0][1][0].tolist() == [2.0, 1.0, 0.11, 4.5] and clients[0][1][1].tolist() == [0, 0, 0, 0]


def test_servegen_one_file_form_with_uneven_clients_is_an_error(tmp_path: Path) -> None:
    p = tmp_path / "m.csv"
    p.write_text("client,window_start_s,rate_rps,iat_dist,param1,param2\n0,0,1,Gamma,1,1\n0,600,1,Gamma,1,1\n"
                 "1,0,1,Gamma,1,1\n", encoding="utf-8")
    with pytest.raises(SimulationInputError, match=r"client 1 has 1 windows.*Fix: give every client the same"):
        load_servegen_windows(p)
    p.write_text("client,window_start_s,rate_rps,iat_dist,param1,param2\n0,0,1,Gamma,1,1\n0,600,1,Gamma,1,1\n"
                 "1,0,1,Gamma,1,1\n1,1200,1,Gamma,1,1\n", encoding="utf-8")
    with pytest.raises(SimulationInputError, match=r"m.csv:4: window_start_s: client 1's windows differ"):
        load_servegen_windows(p)

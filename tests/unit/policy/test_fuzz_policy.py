"""The policy-document fuzzer at a small size (the full 10,000 cases: `python benchmarks/fuzz_policy.py`)."""

from __future__ import annotations

from benchmarks.fuzz_policy import fuzz


def test_fuzzed_policy_documents_never_crash_hang_or_reject_without_naming_the_field() -> None:
    res = fuzz(400, seed=7)
    assert res.uncaught == [] and res.unnamed == [] and res.hangs == []
    assert res.accepted > 40 and res.rejected > 200, (res.accepted, res.rejected)  # both paths really ran

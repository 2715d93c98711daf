"""The fluid fleet's per-bin stages (simulations/fluid.py): a bin's engine steps, the FIFO prefill pointer and
the decodes conserve what they move, and saturation means every step is a full budget."""

from __future__ import annotations

import math

from hypothesis import given
from hypothesis import strategies as st

from simulations.fluid import _bin_steps, _decode, _prefill_fifo

pos = st.floats(min_value=0.0, max_value=1e6, allow_nan=False)
amount = st.floats(min_value=0.0, max_value=1e4, allow_nan=False)


@given(avail=pos, decoding=st.booleans(), batch=st.floats(0.0, 256.0), redo=st.floats(0.0, 500.0))
def test_a_bins_steps_fill_the_bin_and_never_prefill_more_than_waits(avail: float, decoding: bool, batch: float,
                                                                      redo: float) -> None:
    dt, cp, base, budget = 1.0, 2e-5, 0.01, 8192.0
    step0 = base + batch * 4e-4
    room = budget - batch
    steps, x, chunk, full = _bin_steps(avail, decoding, step0, room, redo, dt, cp, base, budget)
    assert 0.0 <= x <= avail + 1e-9 * max(1.0, avail)
    assert chunk <= budget + 1e-9
    if full > 0:  # saturated: the bin is whole steps of a full budget
        if decoding:
            assert math.isclose(steps * full, dt, rel_tol=1e-9)
            assert math.isclose(full, step0 + room * cp, rel_tol=1e-12)
        else:
            assert math.isclose(full, base + budget * cp, rel_tol=1e-12)
    elif decoding:  # unsaturated: the steps' decode time and the prefill done fill the bin
        assert x == avail
        assert math.isclose(steps * (step0 + redo * cp) + avail * cp, dt, rel_tol=1e-9, abs_tol=1e-12)
    if not decoding:
        assert steps == 0.0


@given(done=amount, in_flight=amount, waiting=amount, wait_share=st.floats(0.0, 1.0), pf_n=amount,
       pf_per=st.floats(1.0, 4000.0), p_per=st.floats(1.0, 4000.0), o_per=st.floats(1.0, 500.0))
def test_the_prefill_pointer_moves_requests_and_tokens_without_losing_any(
        done: float, in_flight: float, waiting: float, wait_share: float, pf_n: float, pf_per: float,
        p_per: float, o_per: float) -> None:
    waiting_p, waiting_o = waiting * p_per, waiting * o_per
    pf_tok, pf_o = pf_n * pf_per, pf_n * o_per
    adm = waiting * wait_share
    adm_tok = waiting_p * wait_share
    new_n, fin_n, fin_tok, fin_o, w, wp, wo, n2, t2, o2 = _prefill_fifo(
        done, in_flight, adm, adm_tok, waiting, waiting_p, waiting_o, pf_n, pf_tok, pf_o)
    for x in (new_n, fin_n, fin_tok, fin_o, w, wp, wo, n2, t2, o2):
        assert x >= -1e-6
    tol = 1e-6 * max(1.0, waiting + pf_n, waiting_p + pf_tok, waiting_o + pf_o)
    assert new_n <= adm + tol  # only admitted requests are scheduled
    assert fin_tok <= done + tol  # the pointer moves no further than the tokens prefilled
    # requests and tokens are conserved: waiting + in prefill + finished (the near-zero clean-ups aside)
    assert math.isclose(w + n2 + fin_n, waiting + pf_n, rel_tol=1e-6, abs_tol=1e-6)
    assert math.isclose(wp + t2 + fin_tok, waiting_p + pf_tok, rel_tol=1e-6, abs_tol=1e-5)
    assert math.isclose(wo + o2 + fin_o, waiting_o + pf_o, rel_tol=1e-6, abs_tol=1e-5)


@given(tokens=amount, dec=amount, per=st.floats(1.0, 2000.0))
def test_decodes_complete_sequences_at_their_mean_remaining_length(tokens: float, dec: float, per: float) -> None:
    dec_len = dec * per
    out, done, left, left_len = _decode(tokens, dec, dec_len)
    assert 0.0 <= done <= dec + 1e-9 and left >= 0.0 and left_len >= -1e-6
    assert math.isclose(done + left, dec, rel_tol=1e-9, abs_tol=1e-9) or left == 0.0
    if done < dec and dec_len > 0:  # not all done: completions are tokens over the mean remaining length
        assert math.isclose(done, tokens / per, rel_tol=1e-9)
        assert out == tokens
    else:  # every sequence finished: exactly their remaining tokens were emitted
        assert out == dec_len or dec_len == 0

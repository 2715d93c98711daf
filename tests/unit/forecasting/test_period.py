import numpy as np

from forecasting import detect_period


def test_finds_a_daily_period_in_a_noisy_sine() -> None:
    rng = np.random.default_rng(1)
    t = np.arange(7 * 1440) * 60.0
    y = 100 + 20 * np.sin(2 * np.pi * t / 86400) + rng.normal(0, 10, len(t))
    assert detect_period(y, 60.0) == 86400.0


def test_finds_a_weekly_period_when_weekends_differ() -> None:
    rng = np.random.default_rng(2)
    t = np.arange(21 * 144) * 600.0
    weekend = np.where((t // 86400) % 7 >= 5, -15.0, 0.0)
    y = 100 + 20 * np.sin(2 * np.pi * t / 86400) + weekend + rng.normal(0, 3, len(t))
    assert detect_period(y, 600.0) == 604800.0


def test_finds_no_period_in_white_noise() -> None:
    y = np.random.default_rng(3).normal(100, 10, 7 * 1440)
    assert detect_period(y, 60.0) is None


def test_finds_no_period_in_a_random_walk() -> None:
    y = np.random.default_rng(4).normal(0, 1, 7 * 1440).cumsum()
    assert detect_period(y, 60.0) is None


def test_needs_two_cycles_of_a_period() -> None:
    t = np.arange(int(1.5 * 1440)) * 60.0
    assert detect_period(np.sin(2 * np.pi * t / 86400), 60.0) is None


def test_finds_an_undeclared_period_from_the_periodogram() -> None:
    t = np.arange(4000) * 60.0
    y = 10 + np.sin(2 * np.pi * t / 6000) + np.random.default_rng(5).normal(0, 0.2, len(t))
    assert detect_period(y, 60.0) == 6000.0

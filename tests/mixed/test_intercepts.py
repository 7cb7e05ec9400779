"""Helpers of evalmix.intercepts shared by the engines."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.linalg as sla

from evalmix.mixed.intercepts import cholesky_inverse


def test_cholesky_inverse_is_the_symmetric_inverse():
    rng = np.random.default_rng(4)
    A = rng.normal(size=(7, 7))
    S = A @ A.T + 7 * np.eye(7)
    # cho_factor leaves the upper triangle unset: only the lower one may be read
    inv = cholesky_inverse(sla.cho_factor(S, lower=True)[0])
    np.testing.assert_allclose(inv, np.linalg.inv(S), rtol=1e-12, atol=1e-14)
    assert np.array_equal(inv, inv.T)


def test_cholesky_inverse_of_a_singular_factor_raises():
    with pytest.raises(np.linalg.LinAlgError, match="dpotri"):
        cholesky_inverse(np.array([[1.0, 0.0], [2.0, 0.0]]))


def test_ascent_step_halves_until_the_objective_does_not_fall():
    from evalmix.mixed.intercepts import ascent_step

    calls = []

    def f(u):
        calls.append(float(u[0]))
        return float(-(u - 1.0) @ (u - 1.0)), np.zeros_like(u), np.zeros_like(u)

    # from u = 0 (value -1) a step of 8 lands at 8 (-49), 4 (-9), 2 (-1): accepted, not lower
    u, (value, _, _) = ascent_step(f, np.array([0.0]), np.array([8.0]), -1.0)
    assert calls == [8.0, 4.0, 2.0] and u.tolist() == [2.0] and value == -1.0
    # a non-finite objective is halved away too, and giving up returns None
    assert ascent_step(lambda u: (float("nan"), u, u), np.zeros(1), np.ones(1), 0.0, halvings=5) is None
    # the slack accepts a fall of rounding size only
    flat = lambda u: (-1.0 - 5e-13, u, u)  # noqa: E731
    assert ascent_step(flat, np.zeros(1), np.ones(1), -1.0) is not None
    assert ascent_step(flat, np.zeros(1), np.ones(1), -1.0, slack=1e-13, halvings=2) is None

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


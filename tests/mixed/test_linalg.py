"""The shared factorisations of the random-effects system (evalmix.mixed.linalg) against NumPy's
dense algebra, and the shared mode-finding loop (evalmix.mixed.modes)."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import optimize, sparse

from evalmix.mixed.intercepts import InterceptHessian
from evalmix.mixed.linalg import DenseCholesky, DiagonalSchur, SparseCholesky, cholesky_inverse
from evalmix.mixed.modes import laplace_modes


def _spd(rng: np.random.Generator, q: int) -> np.ndarray:
    A = rng.normal(size=(q, q))
    return A @ A.T + q * np.eye(q)


def test_dense_cholesky_solves_and_logdet_match_numpy():
    rng = np.random.default_rng(1)
    M = _spd(rng, 12)
    f = DenseCholesky(M)
    r = rng.normal(size=(12, 3))
    assert np.allclose(f.solve(r), np.linalg.solve(M, r), rtol=1e-12, atol=1e-14)
    assert np.allclose(f.solve(r[:, 0]), np.linalg.solve(M, r[:, 0]), rtol=1e-12, atol=1e-14)
    assert f.logdet == pytest.approx(np.linalg.slogdet(M)[1], rel=1e-13)
    assert np.allclose(f.inverse(), np.linalg.inv(M), rtol=1e-11, atol=1e-14)
    assert np.array_equal(np.triu(f.L, 1), np.zeros((12, 12)))  # the upper triangle is clean
    assert np.array_equal(f.inverse(), cholesky_inverse(f.L))
    with pytest.raises(np.linalg.LinAlgError, match="not positive definite"):
        DenseCholesky(-M)


@pytest.mark.parametrize("as_sparse", [False, True])
def test_diagonal_schur_matches_the_dense_system(as_sparse):
    rng = np.random.default_rng(2)
    q1, qr = 30, 5
    C = rng.normal(size=(q1, qr)) * (rng.uniform(size=(q1, qr)) < 0.4)
    D = 3.0 + rng.uniform(size=q1) + (C**2).sum(axis=1)
    Hrr = _spd(rng, qr) + C.T @ (C / D[:, None])
    H = np.block([[np.diag(D), C], [C.T, Hrr]])
    f = DiagonalSchur(D, sparse.csr_matrix(C) if as_sparse else C, Hrr)
    r = rng.normal(size=(q1 + qr, 2))
    assert np.allclose(f.solve(r), np.linalg.solve(H, r), rtol=1e-11, atol=1e-13)
    assert np.allclose(f.solve(r[:, 1]), np.linalg.solve(H, r[:, 1]), rtol=1e-11, atol=1e-13)
    assert f.logdet == pytest.approx(np.linalg.slogdet(H)[1], rel=1e-12)
    assert np.allclose(f.s_inverse(), np.linalg.inv(H)[q1:, q1:], rtol=1e-11, atol=1e-13)


def test_sparse_cholesky_matches_numpy_and_refuses_an_indefinite_matrix():
    rng = np.random.default_rng(3)
    M = _spd(rng, 15) * (rng.uniform(size=(15, 15)) < 0.3)
    M = (M + M.T) / 2 + 20 * np.eye(15)
    f = SparseCholesky.of(sparse.csc_matrix(M))
    assert f is not None
    r = rng.normal(size=15)
    assert np.allclose(f.solve(r), np.linalg.solve(M, r), rtol=1e-11, atol=1e-13)
    assert f.logdet == pytest.approx(np.linalg.slogdet(M)[1], rel=1e-12)
    M[0, 0] = -1.0
    assert SparseCholesky.of(sparse.csc_matrix(M)) is None


def test_laplace_modes_of_a_poisson_model_match_a_direct_maximisation():
    """Poisson rows with log link on two crossed intercepts: the Newton loop's modes equal those
    of BFGS on the same joint log-density, and the final factor is H at the modes."""
    rng = np.random.default_rng(4)
    g1, g2 = rng.integers(0, 8, 60), rng.integers(0, 3, 60)
    g1[:8], g2[:3] = np.arange(8), np.arange(3)
    h = InterceptHessian([g1, g2], [8, 3])
    sd_cols = np.repeat([0.7, 0.4], [8, 3])
    y = rng.poisson(2.0, 60)

    def joint(u):
        eta = 0.5 + h.z_times(sd_cols * u)
        mu = np.exp(eta)
        return float(np.sum(y * eta - mu) - 0.5 * u @ u), y - mu, -mu

    m = laplace_modes(joint, np.zeros(11), sd_cols, h.zt_times, h.factor, maxit=50, tol=1e-10)
    assert m is not None and m.factor is not None
    ref = optimize.minimize(lambda u: -joint(u)[0], np.zeros(11),
                            jac=lambda u: -(sd_cols * h.zt_times(joint(u)[1]) - u), tol=1e-12)
    assert np.allclose(m.u, ref.x, atol=1e-6)
    assert np.max(np.abs(sd_cols * h.zt_times(m.d1) - m.u)) < 1e-10
    Z = h.Z.toarray() * sd_cols
    H = Z.T @ (np.exp(0.5 + Z @ m.u)[:, None] * Z) + np.eye(11)
    assert m.factor.logdet == pytest.approx(np.linalg.slogdet(H)[1], rel=1e-12)


def test_laplace_modes_clip_steps_where_the_weights_are_negative():
    """A Cauchy-like row, ``l(eta) = -log(1 + eta^2)``, has negative weight where ``|eta| > 1``:
    with a factor that refuses negative weights the loop stops at the start 3 without clip, and
    with clip steps along the clipped Hessian to the mode 0."""
    h = InterceptHessian([np.array([0])], [1])
    sd = np.ones(1)

    def joint(u):
        e = h.z_times(u)
        return float(np.sum(-np.log1p(e**2)) - 0.5 * u @ u), -2 * e / (1 + e**2), -2 * (1 - e**2) / (1 + e**2) ** 2

    def factor(s, w):
        return h.factor(s, w) if np.all(w >= 0) else None

    stop = laplace_modes(joint, np.array([3.0]), sd, h.zt_times, factor, maxit=20, tol=1e-10)
    assert stop is not None and stop.u.tolist() == [3.0] and stop.factor is None
    clipped = laplace_modes(joint, np.array([3.0]), sd, h.zt_times, factor, maxit=50, tol=1e-10,
                            clip=True)
    assert clipped is not None and clipped.factor is not None
    assert abs(clipped.u[0]) < 1e-10 and clipped.value == pytest.approx(0.0, abs=1e-20)
    assert clipped.factor.logdet == pytest.approx(np.log(3.0), rel=1e-12)  # H = 1 + 2 at the mode
    assert laplace_modes(joint, np.array([3.0]), sd, h.zt_times, lambda s, w: None, maxit=5, tol=1e-10,
                         clip=True) is None

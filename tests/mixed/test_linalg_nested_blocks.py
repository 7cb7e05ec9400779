"""The nested and per-level block factorisations every engine shares (evalmix.mixed.linalg's
NestedSchur and BlockCholesky) against the dense Cholesky factor of the same random systems."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import linalg as sla
from scipy import sparse

from evalmix.mixed.intercepts import InterceptHessian
from evalmix.mixed.linalg import BlockCholesky, DenseCholesky, NestedSchur


def _nested_system(seed: int, q1: int, q2: int, scale: float, slack: float):
    """A random ``H = [[diag(D1), C], [C', diag(D2)]]`` with one entry of C per row (each inner
    level's parent): D2 exceeds the children's ``c^2 / D1`` by ``slack * scale`` (``slack > 0``:
    positive definite, the condition number at most about 1e4), the entries spread over ``scale``."""
    rng = np.random.default_rng(seed)
    parent = rng.integers(0, q2, size=q1)
    parent[:q2] = np.arange(q2) if q1 >= q2 else parent[:q2]  # most outer levels have children
    D1 = rng.uniform(0.05, 3.0, size=q1) * scale
    c = rng.normal(size=q1) * scale
    D2 = np.bincount(parent, c * c / D1, q2) + slack * scale
    H = np.zeros((q1 + q2, q1 + q2))
    H[np.arange(q1), np.arange(q1)] = D1
    H[q1 + np.arange(q2), q1 + np.arange(q2)] = D2
    H[np.arange(q1), q1 + parent] = c
    H[q1 + parent, np.arange(q1)] = c
    return D1, c, D2, parent, H


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), q1=st.integers(1, 40), q2=st.integers(1, 8),
       scale=st.sampled_from([1e-3, 1.0, 1e3]), slack=st.floats(0.05, 10.0), k=st.integers(1, 4))
def test_nested_schur_matches_the_dense_cholesky(seed, q1, q2, scale, slack, k):
    D1, c, D2, parent, H = _nested_system(seed, q1, q2, scale, slack)
    f = NestedSchur(D1, c, D2, parent)
    dense = DenseCholesky(H)
    assert f.logdet == pytest.approx(dense.logdet, rel=1e-10, abs=1e-10)
    r = np.random.default_rng(seed + 1).normal(size=(q1 + q2, k))
    x = f.solve(r)
    # relative to the solution's size: H's condition number reaches about 1e4 here
    assert np.allclose(x, dense.solve(r), rtol=1e-9, atol=1e-9 * np.abs(x).max())
    # the vector and the matrix paths round alike: every column to the bit
    for j in range(k):
        assert np.array_equal(f.solve(r[:, j]), x[:, j])
    Hinv = dense.inverse()
    tol = 1e-9 * np.abs(Hinv).max()
    assert np.allclose(f.diagonal_inverse(), np.diag(Hinv), rtol=1e-9, atol=tol)
    h11, h12, Sp = f.inverse_blocks()
    assert np.allclose(h12, Hinv[np.arange(q1), q1 + parent], rtol=1e-9, atol=tol)
    assert np.allclose(1.0 / Sp, Hinv[q1 + parent, q1 + parent], rtol=1e-9, atol=tol)
    # a pool built by the caller (glmer and lmer keep theirs) gives the same numbers to the bit
    pool = sparse.csr_matrix((np.ones(q1), (parent, np.arange(q1))), shape=(q2, q1))
    assert np.array_equal(NestedSchur(D1, c, D2, parent, pool).solve(r), x)


def test_nested_schur_refuses_what_the_dense_cholesky_refuses():
    D1, c, D2, parent, H = _nested_system(3, 12, 3, 1.0, 1.0)
    D2 = D2 - 1.5  # the first outer pivot of S goes negative
    H[12 + np.arange(3), 12 + np.arange(3)] = D2
    with pytest.raises(np.linalg.LinAlgError):
        DenseCholesky(H)
    with pytest.raises(np.linalg.LinAlgError, match="not positive definite"):
        NestedSchur(D1, c, D2, parent)
    with pytest.raises(np.linalg.LinAlgError):
        NestedSchur(-D1, c, D2 + 10.0, parent)


def test_intercept_hessian_nested_path_is_nested_schur():
    """glmmtmb's and clmm's nested Hessian is NestedSchur's, to the bit."""
    rng = np.random.default_rng(5)
    inner = np.repeat(np.arange(30), 4)
    outer = inner // 6
    w = rng.uniform(0.1, 0.3, size=inner.size)
    sd = np.concatenate([np.full(30, 0.7), np.full(5, 1.3)])
    f = InterceptHessian([inner, outer], [30, 5]).factor(sd, w)
    w1 = np.bincount(inner, w, 30)
    parent = np.arange(30) // 6
    nest = NestedSchur(1.0 + 0.7**2 * w1, w1 * 0.7 * 1.3, 1.0 + 1.3**2 * np.bincount(parent, w1, 5), parent)
    assert f is not None and f.logdet == nest.logdet
    r = rng.normal(size=35)
    assert np.array_equal(f.solve(r), nest.solve(r))


def _blocks(seed: int, nl: int, b: int, scale: float) -> np.ndarray:
    rng = np.random.default_rng(seed)
    A = rng.normal(size=(nl, b, b + 2)) * scale
    return A @ A.transpose(0, 2, 1) + 0.1 * scale**2 * np.eye(b)


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), nl=st.integers(1, 30), b=st.integers(1, 4),
       scale=st.sampled_from([1e-2, 1.0, 1e2]), k=st.integers(1, 3))
def test_block_cholesky_matches_the_dense_cholesky(seed, nl, b, scale, k):
    B = _blocks(seed, nl, b, scale)
    f = BlockCholesky(B)
    dense = DenseCholesky(sla.block_diag(*B))
    assert f.logdet == pytest.approx(dense.logdet, rel=1e-10, abs=1e-9)
    r = np.random.default_rng(seed + 1).normal(size=(nl * b, k))
    x = f.solve(r)
    assert np.allclose(x, dense.solve(r), rtol=1e-9, atol=1e-9 * np.abs(x).max())
    assert np.allclose(f.solve(r[:, 0]), x[:, 0], rtol=1e-13, atol=1e-13 * np.abs(x).max())
    Hinv = dense.inverse()
    blocks = np.stack([Hinv[i * b:(i + 1) * b, i * b:(i + 1) * b] for i in range(nl)])
    assert np.allclose(f.inverse(), blocks, rtol=1e-9, atol=1e-9 * np.abs(Hinv).max())
    assert np.allclose(f.diagonal_inverse(), np.diag(Hinv), rtol=1e-9, atol=1e-9 * np.abs(Hinv).max())
    assert f.L.shape == B.shape and np.allclose(f.L @ f.L.transpose(0, 2, 1), B)


def test_block_cholesky_refuses_a_block_that_is_not_positive_definite():
    B = _blocks(1, 5, 2, 1.0)
    B[3] = np.array([[1.0, 2.0], [2.0, 1.0]])
    with pytest.raises(np.linalg.LinAlgError):
        BlockCholesky(B)

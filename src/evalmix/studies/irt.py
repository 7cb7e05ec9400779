"""Item response theory for repeated evaluation runs: 2PL and 1PL (Rasch) fits, item information,
and subset selection that estimates a model's full-benchmark accuracy from a few items.

The model, for model ``m`` on item ``i`` in run ``r`` (R: ``mirt::mirt(itemtype = "2PL")``,
``ltm::ltm``, girth's ``twopl_mml``, with the roles of items and examinees swapped, see below)::

    P(correct) = logistic(a_i * (theta_m - b_i) + e_ir),     e_ir ~ N(0, run_sd^2)

with item discrimination ``a_i``, item difficulty ``b_i``, model ability ``theta_m`` and ``e_ir`` a
random intercept per item:run, the run-to-run noise that every model shares on that item and run.
The 1PL (Rasch) model is the special case with one discrimination for all items.

Why abilities are fixed and items random
----------------------------------------
An evaluation has few models (8 to 40) and many items (hundreds to thousands): the classical
choice of psychometrics (random persons, fixed items) would estimate two parameters per item from
a handful of models, which joint maximum likelihood does not do consistently.  Here the items are
the random units, as in the GLMM view of IRT: writing ``c_i = -a_i b_i``, the linear predictor is
``c_i + a_i theta_m + e_ir`` with ``(a_i, c_i)`` bivariate normal, which for given abilities is the
GLMM ``correct ~ theta + (1 + theta | item) + (1 | item:run)`` (a rank-2 item-by-model term).
Abilities are fixed parameters, identified by putting the fitted models at mean 0 and standard
deviation 1 (the item population's mean and covariance carry the location and scale).
:func:`fit_irt` maximises the marginal likelihood by EM (Bock and Aitkin, 1981, with items in the
place of persons): the item effects are integrated by adaptive Gauss-Hermite quadrature (centred
at each item's mode, scaled by its curvature) and the item:run effects by Gauss-Hermite quadrature;
the M step updates the item population in closed form and the abilities and ``run_sd`` by Newton
steps.  Items that every model solves (or fails) keep finite, shrunken estimates.  Standard errors
of the abilities invert the observed information (the Jacobian of the score by central
differences, as glmer's Wald standard errors), projected onto the identification constraints.

Subset selection
----------------
A fit calibrates the items and estimates the model-by-item misfit ``misfit_sd``: how far a
model's accuracy on an item strays from the 2PL's prediction beyond the run noise (on AI4Math,
1.1 on the logit scale).  :func:`estimate_accuracy` places a model evaluated on some of the items
on the ability scale (the posterior of ``theta`` on a grid, each item's parameters integrated over
their posterior, each response over fresh run noise, the runs of an item sharing its misfit) and
estimates its full-benchmark accuracy: the answered items' own outcomes and the predictions of
the others, with an interval that adds to the ability's and the item parameters' posterior
uncertainty the misfit and the run noise of the unanswered items.  :func:`select_items` picks a
fixed subset (by information, stratified by difficulty, or at random) and
:func:`adaptive_accuracy` picks items one at a time, each the most informative at the current
ability estimate.
"""

from __future__ import annotations

import math
import warnings
import weakref
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import numpy.typing as npt
import pandas as pd
from scipy import linalg, special, stats

from ..core.seeds import accepts_seed, as_generator
from ..core.result import Result
from ..core.arguments import check_choice, check_count, check_level, check_number
from ..data.runs import ensure_runs, load_table
from ..core.errors import ArgumentError, ConvergenceWarning, DataError, SeparationError, SeparationWarning
from ..core.methods import IRT_MODELS, IRT_TARGETS, ITEM_SELECTIONS, IrtModel, IrtTarget, ItemSelection
from ..model import lower_triangle
from ..core.parallel import single_thread_blas

__all__ = ["IrtFit", "IrtPosterior", "SubsetAccuracy", "adaptive_accuracy", "estimate_accuracy", "fit_irt",
           "fit_irt_bayes", "item_information", "select_items"]

SelectMethod = ItemSelection

# the dense items x runs x models count tensor above this many cells is refused (memory)
_MAX_CELLS = 50_000_000
# Newton steps of each item's mode (the centre of its adaptive quadrature)
_MODE_STEPS = 25
# the ability grid of subset estimates: wide enough that an all-correct subset stays inside
_GRID = np.linspace(-8.0, 8.0, 641)


# ----------------------------------------------------------------------------------------------
# data


@dataclass(frozen=True)
class _Counts:
    """Correct answers ``k`` and attempts ``n`` per (item, run, model), with the labels."""

    k: np.ndarray
    n: np.ndarray
    items: np.ndarray
    models: np.ndarray
    runs: int
    has_runs: bool


def _codes(table: pd.DataFrame, cols: Sequence[str], where: str) -> tuple[np.ndarray, np.ndarray]:
    for c in cols:
        if table[c].isna().any():
            row = table.index[np.flatnonzero(table[c].isna().to_numpy())[0]]
            raise DataError(f"{where}column {c!r} has a missing value in row {row}")
    if len(cols) == 1:
        codes, uniq = pd.factorize(table[cols[0]], sort=True)
        return codes.astype(np.int64), np.asarray(uniq, dtype=object)
    keys, combos = pd.MultiIndex.from_frame(table[list(cols)]).factorize(sort=True)
    return keys.astype(np.int64), np.asarray(list(combos), dtype=object)


def _counts(data: pd.DataFrame | str | Path, item: str, model: str, correct: str,
            run: str | Sequence[str] | None, successes: str | None = None,
            trials: str | None = None) -> _Counts:
    run_cols = [] if run is None else ([run] if isinstance(run, str) else list(run))
    # k-of-n counts: named here, or the roles read_runs recorded when the default outcome column
    # is absent (the default name must not override them)
    outcome: str | None = correct
    if successes is not None or trials is not None or (
            correct == "correct" and isinstance(data, pd.DataFrame) and "correct" not in data.columns):
        outcome = None
    # the package's runs-table rules (columns, 0/1 outcomes or k-of-n counts, missing values,
    # duplicated keys); the last run column is the run role, the others make the run key with it
    table, schema = ensure_runs(data, item=item, model=model, outcome=outcome, successes=successes,
                                trials=trials, run=run_cols[-1] if run_cols else None, need_item=True,
                                need_model=True, by=run_cols[:-1])
    where = f"{data}: " if isinstance(data, (str, Path)) else ""
    if schema.counts:
        y = table[schema.successes].to_numpy(dtype=float)
        attempts = table[schema.trials].to_numpy(dtype=float)
    else:
        y = table[schema.scores].to_numpy(dtype=float)
        attempts = np.ones(len(table))
    ic, items = _codes(table, [item], where)
    mc, models = _codes(table, [model], where)
    if len(models) < 3:
        raise DataError(f"{where}an IRT fit needs at least 3 models in column {model!r}, got {len(models)}")
    if len(items) < 3:
        raise DataError(f"{where}an IRT fit needs at least 3 items in column {item!r}, got {len(items)}")
    if run_cols:
        rc, runs = _codes(table, run_cols, where)
        n_runs = len(runs)
    else:
        rc, n_runs = np.zeros(len(table), dtype=np.int64), 1
    cells = len(items) * n_runs * len(models)
    if cells > _MAX_CELLS:
        raise DataError(f"{where}{len(items)} items x {n_runs} runs x {len(models)} models is too large "
                        f"for the count table ({cells} cells, at most {_MAX_CELLS})")
    flat = (ic * n_runs + rc) * len(models) + mc
    k = np.bincount(flat, weights=y, minlength=cells).reshape(len(items), n_runs, len(models))
    n = np.bincount(flat, weights=attempts, minlength=cells).reshape(len(items), n_runs, len(models))
    return _Counts(k=k, n=n, items=items, models=models, runs=n_runs, has_runs=bool(run_cols))


def _separated_models(cnt: _Counts, where: str, model: str) -> tuple[_Counts, pd.DataFrame]:
    """Leave out the models whose maximum-likelihood ability is infinite, naming them.

    Abilities are fixed effects: a model that answers every response correctly (or none) has
    its likelihood rising without bound in its ability, and the standardisation of the others
    (mean 0, SD 1 over the fitted models) would collapse them onto one value.  Such models are
    fitted no further; a :class:`~evalmix.core.errors.SeparationWarning` names them, and the
    abilities table reports them at ``+inf`` (all correct) or ``-inf`` (none) with NaN
    standard errors.  Items are random effects, so an item at 0% or 100% keeps a finite,
    shrunken estimate and is not separation.  Fewer than 3 models left is a
    :class:`~evalmix.core.errors.SeparationError`.
    """
    ksum, nsum = cnt.k.sum(axis=(0, 1)), cnt.n.sum(axis=(0, 1))
    top, bottom = (ksum >= nsum) & (nsum > 0), (ksum <= 0) & (nsum > 0)
    out = top | bottom
    if not out.any():
        return cnt, pd.DataFrame(columns=["model", "estimate", "accuracy"])
    named = [f"{m!r} ({'100%' if t else '0%'} correct)" for m, t in zip(cnt.models[out], top[out])]
    shown = ", ".join(named[:10]) + (f" and {len(named) - 10} more" if len(named) > 10 else "")
    keep = ~out
    if keep.sum() < 3:
        raise SeparationError(
            f"{where}separation: model(s) {shown} in column {model!r} answer every response the same way, so "
            f"their abilities are infinite; only {int(keep.sum())} model(s) would remain and an IRT fit needs "
            "at least 3")
    warnings.warn(
        f"fit_irt: separation: model(s) {shown} in column {model!r} answer every response the same way, so "
        "their maximum-likelihood abilities are infinite; they are left out of the fit and reported at "
        f"+inf/-inf with NaN standard errors, and the other {int(keep.sum())} models are standardised among "
        "themselves", SeparationWarning, stacklevel=3)
    dropped = pd.DataFrame({"model": cnt.models[out], "estimate": np.where(top[out], np.inf, -np.inf),
                            "accuracy": ksum[out] / nsum[out]})
    return _Counts(k=cnt.k[..., keep], n=cnt.n[..., keep], items=cnt.items, models=cnt.models[keep],
                   runs=cnt.runs, has_runs=cnt.has_runs), dropped


# ----------------------------------------------------------------------------------------------
# quadrature and the E step


def _gh(n: int) -> tuple[np.ndarray, np.ndarray]:
    """Nodes and weights of ``E f(z)`` for ``z ~ N(0, 1)``."""
    x, w = np.polynomial.hermite_e.hermegauss(n)
    return x, w / math.sqrt(2.0 * math.pi)


def _log_sig(x: np.ndarray) -> np.ndarray:
    return -np.logaddexp(0.0, -x)


@dataclass
class _State:
    theta: np.ndarray      # (M,) abilities
    mu: np.ndarray         # (D,) item population mean of (a, c) (2PL) or (c,) (1PL)
    cov: np.ndarray        # (D, D)
    run_sd: float
    alpha: float           # the common discrimination of the 1PL (unused by the 2PL)


@dataclass
class _EStep:
    loglik: float
    per_item: np.ndarray   # (I,) log marginal likelihood of each item
    a: np.ndarray          # (I, G) discrimination at each node
    c: np.ndarray          # (I, G) intercept at each node
    w: np.ndarray          # (I, G) posterior weight of each node
    A: np.ndarray          # (I, G, K, M) posterior-weighted correct counts
    B: np.ndarray          # (I, G, K, M) posterior-weighted attempts
    p: np.ndarray          # (I, G, K, M) probability correct at each node
    u: np.ndarray          # (I, G, D) the random effects at each node
    mode: np.ndarray       # (I, D)


def _mvn_logpdf(d: np.ndarray, prec: np.ndarray, logdet: float) -> np.ndarray:
    dim = d.shape[-1]
    return -0.5 * (np.einsum("...i,ij,...j->...", d, prec, d) + logdet + dim * math.log(2 * math.pi))


def _e_step(cnt: _Counts, st: _State, two_pl: bool, z: np.ndarray, logv: np.ndarray,
            zk: np.ndarray, vk: np.ndarray, mode0: np.ndarray | None) -> _EStep:
    k, n = cnt.k, cnt.n
    ksum, nsum = k.sum(axis=1), n.sum(axis=1)
    D = 2 if two_pl else 1
    cov = st.cov + 1e-10 * np.eye(D)
    prec = np.linalg.inv(cov)
    logdet = float(np.linalg.slogdet(cov)[1])
    n_items = k.shape[0]
    # design of each model in the random effects: (theta_m, 1) for (a, c), (1,) for c
    X = np.column_stack([st.theta, np.ones_like(st.theta)]) if two_pl else np.ones((len(st.theta), 1))
    off = np.zeros_like(st.theta) if two_pl else st.alpha * st.theta
    # each item's mode without the run effects, the centre of its quadrature; the run noise
    # flattens the likelihood by about 1 / (1 + pi sd^2 / 8) (the probit approximation)
    shrink = 1.0 / (1.0 + math.pi * st.run_sd ** 2 / 8.0)
    u = np.tile(st.mu, (n_items, 1)) if mode0 is None else mode0.copy()
    for _ in range(_MODE_STEPS):
        eta = u @ X.T + off
        p = special.expit(eta)
        grad = (ksum - nsum * p) @ X - (u - st.mu) @ prec
        H = -np.einsum("im,mj,mk->ijk", nsum * p * (1 - p) * shrink, X, X) - prec
        step = -np.linalg.solve(H, grad[..., None])[..., 0]
        big = np.max(np.abs(step), axis=1, keepdims=True)
        step = np.where(big > 2.0, step * 2.0 / np.maximum(big, 1e-300), step)
        u = u + step
        if np.max(np.abs(step)) < 1e-8:
            break
    eta = u @ X.T + off
    p = special.expit(eta)
    H = np.einsum("im,mj,mk->ijk", nsum * p * (1 - p) * shrink, X, X) + prec
    C = np.linalg.cholesky(np.linalg.inv(H))                              # (I, D, D)
    logdetC = np.log(np.abs(np.diagonal(C, axis1=1, axis2=2))).sum(axis=1)
    nodes = u[:, None, :] + np.einsum("idj,gj->igd", C, z)               # (I, G, D)
    logw = (logv[None, :] + logdetC[:, None] - _mvn_logpdf(z, np.eye(D), 0.0)[None, :]
            + _mvn_logpdf(nodes - st.mu, prec, logdet))
    if two_pl:
        a, c = nodes[..., 0], nodes[..., 1]
    else:
        a, c = np.full(nodes.shape[:2], st.alpha), nodes[..., 0]
    eta = (a[..., None, None] * st.theta[None, None, None, :] + c[..., None, None]
           + st.run_sd * zk[None, None, :, None])                         # (I, G, K, M)
    # log P(y) = n log sigmoid(eta) - (n - k) eta: one log-sigmoid pass
    lp = _log_sig(eta)
    # sums over models as batched matrix products (einsum's loop is several times slower)
    ll = n[:, None] @ np.swapaxes(lp, 2, 3) - (n - k)[:, None] @ np.swapaxes(eta, 2, 3)  # (I, G, R, K)
    ll += np.log(vk)[None, None, None, :]
    inner = special.logsumexp(ll, axis=3)                                 # (I, G, R)
    q = np.exp(ll - inner[..., None])                                     # (I, G, R, K)
    total = logw + inner.sum(axis=2)                                      # (I, G)
    per_item = special.logsumexp(total, axis=1)
    w = np.exp(total - per_item[:, None])
    wq = w[:, :, None, None] * q
    wqt = np.swapaxes(wq, 2, 3)                                           # (I, G, K, R)
    A = wqt @ k[:, None]                                                  # (I, G, K, M)
    B = wqt @ n[:, None]
    binom = float((special.gammaln(n + 1) - special.gammaln(k + 1) - special.gammaln(n - k + 1)).sum())
    return _EStep(loglik=float(per_item.sum()) + binom, per_item=per_item, a=a, c=c, w=w, A=A, B=B,
                  p=np.exp(lp), u=nodes, mode=u)


def _standardise(st: _State, two_pl: bool) -> _State:
    """Abilities at mean 0 and SD 1; the item population absorbs the shift and the scale."""
    t = float(st.theta.mean())
    s = float(st.theta.std())
    if not s > 0:
        return st
    theta = (st.theta - t) / s
    if two_pl:
        T = np.array([[s, 0.0], [t, 1.0]])   # (a, c) -> (a s, c + a t)
        return _State(theta, T @ st.mu, T @ st.cov @ T.T, st.run_sd, st.alpha)
    return _State(theta, st.mu + st.alpha * t, st.cov, st.run_sd, st.alpha * s)


def _pack(st: _State, two_pl: bool) -> np.ndarray:
    """The state as one vector (the covariance by its Cholesky factor) for the SQUAREM steps."""
    D = len(st.mu)
    L = np.linalg.cholesky(st.cov + 1e-12 * np.eye(D))
    extra = [st.run_sd] if two_pl else [st.run_sd, st.alpha]
    return np.concatenate([st.theta, st.mu, L[lower_triangle(D)], extra])


def _unpack(x: np.ndarray, like: _State, two_pl: bool) -> _State:
    M, D = len(like.theta), len(like.mu)
    L = np.zeros((D, D))
    L[lower_triangle(D)] = x[M + D:M + D + D * (D + 1) // 2]
    rest = x[M + D + D * (D + 1) // 2:]
    st = _State(x[:M].copy(), x[M:M + D].copy(), L @ L.T, abs(float(rest[0])),
                like.alpha if two_pl else abs(float(rest[1])))
    return _standardise(st, two_pl)


def _m_step(cnt: _Counts, st: _State, e: _EStep, two_pl: bool, zk: np.ndarray, fit_sd: bool) -> _State:
    n_items = e.w.shape[0]
    mu = np.einsum("ig,igd->d", e.w, e.u) / n_items
    d = e.u - mu
    cov = np.einsum("ig,igd,ige->de", e.w, d, d) / n_items
    # one Newton step on the abilities (2PL: theta; 1PL: alpha * theta, rescaled afterwards) and
    # the run SD, from the expected complete-data log-likelihood of the nodes
    r = e.A - e.B * e.p
    v = e.B * e.p * (1 - e.p)
    slope = e.a[..., None, None] if two_pl else np.ones_like(e.a)[..., None, None]
    g_t = np.einsum("igkm,igkm->m", r, np.broadcast_to(slope, r.shape))
    h_t = np.einsum("igkm,igkm->m", v, np.broadcast_to(slope ** 2, r.shape))
    lin = st.theta if two_pl else st.alpha * st.theta
    if fit_sd:
        zz = zk[None, None, :, None]
        g_s = float((r * zz).sum())
        h_s = float((v * zz ** 2).sum())
        h_ts = np.einsum("igkm,igkm->m", v, np.broadcast_to(slope * zz, r.shape))
        H = np.zeros((len(lin) + 1, len(lin) + 1))
        H[np.arange(len(lin)), np.arange(len(lin))] = h_t
        H[-1, -1] = h_s
        H[-1, :-1] = H[:-1, -1] = h_ts
        g = np.append(g_t, g_s)
        try:
            step = np.linalg.solve(H + 1e-10 * np.eye(len(g)), g)
        except np.linalg.LinAlgError:
            step = g / np.maximum(np.diag(H), 1e-8)
        step = np.clip(step, -1.0, 1.0)
        lin = lin + step[:-1]
        run_sd = abs(st.run_sd + float(step[-1]))
    else:
        lin = lin + np.clip(g_t / np.maximum(h_t, 1e-12), -1.0, 1.0)
        run_sd = st.run_sd
    if two_pl:
        return _standardise(_State(lin, mu, cov, run_sd, st.alpha), True)
    s = float(lin.std())
    return _standardise(_State(lin / s, mu, cov, run_sd, s), False)


def _item_scores(cnt: _Counts, st: _State, e: _EStep, two_pl: bool, zk: np.ndarray,
                 fit_sd: bool) -> np.ndarray:
    """Per-item score vectors (Fisher's identity over the quadrature nodes) of the parameters
    (theta, [alpha,] mu, vech(cov), [run_sd])."""
    r = e.A - e.B * e.p
    if two_pl:
        s_theta = np.einsum("igkm,ig->im", r, e.a)
    else:
        s_theta = r.sum(axis=(1, 2)) * st.alpha
    parts = [s_theta]
    if not two_pl:
        parts.append(np.einsum("igkm,m->i", r, st.theta)[:, None])
    D = e.u.shape[-1]
    prec = np.linalg.pinv(st.cov)
    dev = e.u - st.mu
    pd_ = dev @ prec                                                    # (I, G, D)
    parts.append(np.einsum("ig,igd->id", e.w, pd_))
    outer = 0.5 * (pd_[..., :, None] * pd_[..., None, :] - prec)         # (I, G, D, D)
    g_cov = np.einsum("ig,igde->ide", e.w, outer)
    rows, cols = lower_triangle(D)
    parts.append(g_cov[:, rows, cols] * np.where(rows == cols, 1.0, 2.0))
    if fit_sd:
        parts.append(np.einsum("igkm,k->i", r, zk)[:, None])
    return np.concatenate(parts, axis=1)


def _observed_information(cnt: _Counts, st: _State, e: _EStep, two_pl: bool, z: np.ndarray,
                          logv: np.ndarray, zk: np.ndarray, vk: np.ndarray, fit_sd: bool) -> np.ndarray:
    """The observed information of (theta, [alpha,] mu, vech(cov), [run_sd]): minus the Jacobian of
    the total score (Fisher's identity, :func:`_item_scores`) by forward differences (one E step
    per parameter; the score's curvature makes their error about 1e-4 of the information).

    Why not the cross-product of the per-item scores (mirt's ``SE.type = "crossprod"``): it has
    rank at most the number of items, so with few items and many models (persons as models,
    e.g. VerbAgg's 316 persons on 24 items) most directions get no information and their
    variance is lost in the pseudo-inverse (abilities' SEs about 0.08 of glmer's); and even with
    many items it is the noisier estimate.  The observed information is what glmer's Wald
    standard errors invert.
    """
    M = len(st.theta)
    D = len(st.mu)
    rows, cols = lower_triangle(D)
    x0 = np.concatenate([st.theta, [] if two_pl else [st.alpha], st.mu, st.cov[rows, cols],
                         [st.run_sd] if fit_sd else []])
    n_mu = M + (0 if two_pl else 1)

    def score(x: np.ndarray) -> np.ndarray:
        cov = np.zeros((D, D))
        cov[rows, cols] = x[n_mu + D:n_mu + D + len(rows)]
        cov[cols, rows] = cov[rows, cols]
        state = _State(x[:M], x[n_mu:n_mu + D], cov, float(x[-1]) if fit_sd else st.run_sd,
                       st.alpha if two_pl else float(x[M]))
        ex = _e_step(cnt, state, two_pl, z, logv, zk, vk, e.mode)
        return _item_scores(cnt, state, ex, two_pl, zk, fit_sd).sum(axis=0)

    P = len(x0)
    jac = np.empty((P, P))
    with single_thread_blas():   # many small products: threads only contend
        s0 = score(x0)
        for j in range(P):
            h = 1e-5 * max(1.0, abs(float(x0[j])))
            if D == 2 and n_mu + D <= j < n_mu + D + 3:   # the covariance stays positive definite
                h = 1e-5 * math.sqrt(st.cov[0, 0] * st.cov[1, 1]) or 1e-7
            up = x0.copy()
            up[j] += h
            jac[:, j] = (score(up) - s0) / h
    return -0.5 * (jac + jac.T)


def _ability_cov(info: np.ndarray, theta: np.ndarray) -> np.ndarray:
    """Covariance of the abilities: the inverse observed information restricted to the
    directions that keep mean(theta) = 0 and mean(theta^2) = 1."""
    M = len(theta)
    J = info
    con = np.zeros((2, J.shape[0]))
    con[0, :M] = 1.0 / M
    con[1, :M] = 2.0 * theta / M
    N = linalg.null_space(con)
    inner = N.T @ J @ N
    cov = N @ np.linalg.pinv(inner, rcond=1e-10, hermitian=True) @ N.T
    return cov[:M, :M]


def _misfit(cnt: _Counts, a: np.ndarray, c: np.ndarray, w: np.ndarray, run_sd: float, theta: np.ndarray,
            theta_var: np.ndarray) -> tuple[float, bool, np.ndarray]:
    """The model-by-item misfit SD ``tau`` on the logit scale, and whether the cells identify it.

    A model's accuracy on an item, ``q_mi``, differs from the 2PL's ``p_mi`` by a model-by-item
    effect: ``logit q_mi = logit p_mi + delta_mi``, ``delta_mi ~ N(0, tau^2)``, so that (delta
    method) ``Var q_mi = (p (1 - p))^2 tau^2``, shared by the ``n_mi`` runs of the cell.  The
    moment estimator is the excess of the squared residuals of the cells' accuracies over the
    binomial run noise.  The parameters fitted from the same cells pull the residuals in (most
    with few models per item); in the working linear model on the logit scale (weights
    ``w = n p (1 - p)``, item effects with their posterior covariance ``V_i``, the Bayes hat
    matrix ``H_i = W^1/2 X V_i X' W^1/2`` of each item, ``X`` the models' rows ``(theta_m, 1)``)

        E (ybar - p)^2 = (1 - h) p (1 - p) / n + [(I - H)^2]_mm (p (1 - p))^2 tau^2

    with ``h`` the hat diagonal, the abilities' share ``w a^2 Var(theta_m)`` added to it as fixed
    effects.  With one response per cell a Bernoulli outcome has variance ``p (1 - p)`` whatever
    ``tau`` is: not identifiable, reported as 0.  Also returns the weights ``w`` of the cells.
    """
    k, n = cnt.k.sum(axis=1), cnt.n.sum(axis=1)                         # (I, M)
    cells = n > 0
    P = _predictive_nodes(a, c, w, run_sd, theta)[0]
    pq = P * (1.0 - P)
    # the run noise flattens the likelihood of a response (the probit approximation, as in the E step)
    wt = n * pq / (1.0 + math.pi * run_sd ** 2 / 8.0)
    if not (n[cells] >= 2).any():
        return 0.0, False, wt
    a_mean, c_mean = np.einsum("ig,ig->i", w, a), np.einsum("ig,ig->i", w, c)
    da, dc = a - a_mean[:, None], c - c_mean[:, None]
    vaa, vac, vcc = (np.einsum("ig,ig->i", w, x * y) for x, y in ((da, da), (da, dc), (dc, dc)))
    tt, ts = np.outer(theta, theta)[None], (theta[:, None] + theta[None, :])[None]

    def cov(sl: slice) -> np.ndarray:   # x_m' V_i x_j for the models' rows x = (theta, 1)
        return vaa[sl, None, None] * tt + vac[sl, None, None] * ts + vcc[sl, None, None]

    return _misfit_moments(k, n, P, wt, cov, wt * a_mean[:, None] ** 2 * theta_var[None, :]), True, wt


def _misfit_moments(k: np.ndarray, n: np.ndarray, P: np.ndarray, wt: np.ndarray,
                    cov: Callable[[slice], np.ndarray], h_extra: np.ndarray | float = 0.0) -> float:
    """The moment estimator of ``tau`` (see :func:`_misfit`) from the cells' counts ``k`` of ``n``,
    their fitted probabilities and weights, ``cov(items)`` the posterior covariance of the linear
    predictor between the models of each of those items (i, M, M) and ``h_extra`` the leverage
    of fixed effects."""
    cells = n > 0
    pq = P * (1.0 - P)
    sw = np.sqrt(wt)
    n_items, n_models = P.shape
    h, hh = np.empty_like(P), np.empty_like(P)
    step = max(1, 4_000_000 // n_models ** 2)   # items per block: the (i, M, M) blocks stay small
    for s in range(0, n_items, step):
        sl = slice(s, s + step)
        H = sw[sl, :, None] * cov(sl) * sw[sl, None, :]                  # the hat matrix of each item
        h[sl] = np.einsum("imm->im", H)
        hh[sl] = np.einsum("imj,imj->im", H, H)
    one_minus_h = np.clip(1.0 - h - h_extra, 0.0, 1.0)
    sq = np.clip(1.0 - 2.0 * h + hh - h_extra, 0.0, 1.0)
    nn = n[cells]
    num = float(np.sum((k[cells] / nn - P[cells]) ** 2 - one_minus_h[cells] * pq[cells] / nn))
    den = float(np.sum(sq[cells] * pq[cells] ** 2))
    if not den > 0:
        return 0.0
    return math.sqrt(max(num / den, 0.0))


def _item_design(theta: np.ndarray, two_pl: bool) -> np.ndarray:
    """Each model's row in the item effects: ``(theta, 1)`` for ``(a, c)``, ``(1,)`` for the 1PL's ``c``."""
    return np.column_stack([theta, np.ones_like(theta)]) if two_pl else np.ones((len(theta), 1))


def _item_cov(cell_w: np.ndarray, design: np.ndarray, prec: np.ndarray, tau2: float) -> np.ndarray:
    """Per item, the covariance of its effects in the working linear model on the logit scale:
    ``(X' W X + prec)^-1`` with each cell's weight ``w / (1 + w tau^2)`` (a cell's logit known to
    ``1 / w`` from its runs, and to ``tau^2`` more from the misfit, which its runs share)."""
    ww = cell_w / (1.0 + cell_w * tau2)
    H = np.einsum("im,md,me->ide", ww, design, design) + prec
    return np.linalg.inv(H)


# ----------------------------------------------------------------------------------------------
# the fit


@dataclass(frozen=True, eq=False, repr=False)
class IrtFit(Result):
    """A fitted 2PL or 1PL model with an item:run nuisance layer (see :func:`fit_irt`).

    Attributes
    ----------
    abilities : DataFrame
        One row per model: ``model``, ``estimate`` (ability theta, the fitted models at mean 0 and
        SD 1), ``se``, ``conf_low``, ``conf_high``, ``accuracy`` (observed).
    items : DataFrame
        One row per item: ``item``, ``discrimination`` and ``intercept`` (posterior means of
        ``a_i`` and ``c_i = -a_i b_i``), their posterior SDs ``discrimination_sd`` and
        ``intercept_sd``, ``difficulty`` (``-intercept / discrimination``, NaN where the
        discrimination is below 1e-6 in absolute value), ``n`` (responses) and ``accuracy``
        (observed).
    population : DataFrame
        ``parameter``, ``estimate``: the item population (``discrimination_mean``,
        ``discrimination_sd``, ``intercept_mean``, ``intercept_sd``,
        ``discrimination_intercept_correlation``; the 1PL's common ``discrimination``) and
        ``run_sd``, the SD of the item:run effects.
    loglik : float
        Marginal log-likelihood (binomial coefficients included).
    misfit_sd : float
        The model-by-item misfit ``tau``: the SD on the logit scale by which a model's accuracy on
        an item differs from the 2PL's prediction, beyond the run noise (a moment estimator from
        the cells' accuracies over their runs, corrected for the parameters fitted from them;
        0 when ``misfit_identified`` is False).  :func:`estimate_accuracy` carries it into its
        standard errors.
    misfit_identified : bool
        Whether some model answered some item more than once: with one response per model and
        item the misfit cannot be told from the Bernoulli noise, and ``misfit_sd`` is 0.
    separated : tuple of str
        Models left out of the fit because they answer every response the same way (their
        abilities are infinite); they close the abilities table at ``inf``/``-inf``.
    """

    abilities: pd.DataFrame
    items: pd.DataFrame
    population: pd.DataFrame
    loglik: float
    model_type: str
    n_obs: int
    n_runs: int
    iterations: int
    converged: bool
    conf_level: float
    misfit_sd: float
    misfit_identified: bool
    _cell_w: np.ndarray
    _design: np.ndarray
    _item_prec: np.ndarray
    _node_a: np.ndarray
    _node_c: np.ndarray
    _node_w: np.ndarray
    _run_sd: float
    separated: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        super().__post_init__()
        for name in ("_node_a", "_node_c", "_node_w", "_cell_w", "_design", "_item_prec"):  # read-only too
            value = np.array(object.__getattribute__(self, name), dtype=float)
            value.flags.writeable = False
            object.__setattr__(self, name, value)

    def to_frame(self) -> pd.DataFrame:
        return self.abilities

    def _title(self) -> str:
        return f"{self.model_type.upper()} item response model (marginal maximum likelihood)"

    def _header(self) -> list[str]:
        return [f"{len(self.items)} items, {len(self.abilities)} models, {self.n_runs} runs, "
                f"{self.n_obs} responses; logLik {self.loglik:.2f}",
                f"abilities (estimate) at mean 0, SD 1 over the fitted models; run SD {self._run_sd:.4g}",
                f"model-by-item misfit SD {self.misfit_sd:.4g} (logit scale)" if self.misfit_identified
                else "model-by-item misfit not identified (one response per model and item): taken as 0"]

    def _notes(self) -> list[str]:
        notes = []
        if self.separated:
            notes.append(f"separation: {len(self.separated)} model(s) answer every response the same way "
                         f"({', '.join(self.separated[:10])}{', ...' if len(self.separated) > 10 else ''}): "
                         "ability +-inf, left out of the fit")
        acc = self.items["accuracy"].to_numpy()
        top, bottom = int((acc >= 1).sum()), int((acc <= 0).sum())
        if top or bottom:  # random effects: finite, shrunken towards the item population
            notes.append(f"{top} item(s) at 100% and {bottom} at 0%: random effects, kept with finite "
                         "shrunken estimates")
        if self.converged:
            return notes + [f"EM converged in {self.iterations} iterations"]
        return notes + [f"EM did not converge in {self.iterations} iterations"]

    def to_dict(self) -> dict[str, object]:
        from ..core.result import frame_records
        return {"table": frame_records(self.abilities), "items": frame_records(self.items),
                "population": frame_records(self.population), "loglik": self.loglik,
                "model_type": self.model_type, "misfit_sd": self.misfit_sd,
                "misfit_identified": self.misfit_identified, "separated": list(self.separated)}

    def predict(self, theta: npt.ArrayLike) -> np.ndarray:
        """Probability correct of each item (rows) at each ability (columns), the item parameters
        integrated over their posterior and the response over a fresh run.

        Examples
        --------
        >>> from evalmix.simulate import simulate_irt
        >>> fit = fit_irt(simulate_irt(n_items=20, n_models=6, rng=2))
        >>> fit.predict([0.0, 1.0]).shape
        (20, 2)
        """
        return _predictive(self, np.asarray(theta, dtype=float).ravel())[0]



def fit_irt(data: pd.DataFrame | str | Path, *, item: str = "item", model: str = "model",
            correct: str = "correct", run: str | Sequence[str] | None = None,
            model_type: IrtModel = "2pl", n_quad: int = 7, n_quad_run: int = 9,
            conf_level: float = 0.95, tol: float = 1e-7, max_iter: int = 2000,
            successes: str | None = None, trials: str | None = None) -> IrtFit:
    """Fit a 2PL or 1PL (Rasch) model with an item:run nuisance layer by marginal maximum likelihood.

    Parameters
    ----------
    data : DataFrame or path
        A runs table (:func:`evalmix.read_runs`'s rules): one row per response with an item, a
        model, a 0/1 outcome (or k-of-n counts) and optionally run columns.  Without ``run``,
        rows repeating an (item, model) pair are pooled as repeated attempts.
    item, model, correct : str
        Columns of the item, the model (the examinee) and the outcome.
    run : str or sequence of str, optional
        Column(s) naming the run; each item:run combination gets a random intercept shared by the
        models in that run (run-to-run noise).  Several columns (e.g. ``["language", "prompt",
        "run"]``) make one run key.  Without it there is no nuisance layer.
    model_type : {"2pl", "1pl"}
        ``"1pl"`` gives every item one common discrimination (Rasch up to the scale).
    n_quad : int
        Adaptive Gauss-Hermite nodes per dimension of the item effects (7: 49 nodes for the 2PL).
    n_quad_run : int
        Gauss-Hermite nodes of each item:run effect.
    conf_level : float
        Level of the ability intervals.
    tol : float
        EM stops when the log-likelihood gains less than ``tol * (1 + |logLik|)`` and no ability
        moves more than ``sqrt(tol)``.
    max_iter : int
        At most this many EM iterations (a ``ConvergenceWarning`` when reached).
    successes, trials : str, optional
        k-of-n count columns (correct answers of ``trials`` attempts per row) instead of
        ``correct``; a :func:`evalmix.read_runs` table of counts needs neither.

    Returns
    -------
    IrtFit

    Warns
    -----
    SeparationWarning
        Models that answer every response correctly (or none): their abilities are infinite;
        they are left out of the fit, named, and reported at ``+inf``/``-inf`` with NaN SEs.

    Raises
    ------
    DataError
        A column is missing, an outcome is not 0/1, a key is missing, or fewer than 3 models or items.
    SeparationError
        Fewer than 3 models would remain once the separated ones are left out.

    Examples
    --------
    >>> from evalmix.simulate import simulate_irt
    >>> runs = simulate_irt(n_items=60, n_models=8, n_runs=2, rng=3)
    >>> fit = fit_irt(runs, run="run")
    >>> fit.abilities.columns.tolist()[:5]
    ['model', 'estimate', 'se', 'conf_low', 'conf_high']
    >>> round(float(fit.abilities["estimate"].std(ddof=0)), 6)
    1.0
    """
    model_type = check_choice(model_type, "model_type", IRT_MODELS)
    n_quad = check_count(n_quad, "n_quad")
    n_quad_run = check_count(n_quad_run, "n_quad_run")
    conf_level = check_level(conf_level)
    tol = check_number(tol, "tol", minimum=0.0, strict=True)
    max_iter = check_count(max_iter, "max_iter")
    cnt = _counts(data, item, model, correct, run, successes, trials)
    cnt, dropped = _separated_models(cnt, f"{data}: " if isinstance(data, (str, Path)) else "", model)
    two_pl = model_type == "2pl"
    fit_sd = cnt.has_runs
    x, v = _gh(n_quad)
    D = 2 if two_pl else 1
    grids = np.meshgrid(*([x] * D), indexing="ij")
    z = np.column_stack([g.ravel() for g in grids])
    logv = np.sum(np.log(np.meshgrid(*([v] * D), indexing="ij")), axis=0).ravel()
    zk, vk = _gh(n_quad_run) if fit_sd else (np.zeros(1), np.ones(1))
    # start: abilities from the logits of the models' accuracies, a population of unit slopes
    ksum, nsum = cnt.k.sum(axis=(0, 1)), cnt.n.sum(axis=(0, 1))
    acc = (ksum + 0.5) / (nsum + 1.0)
    lo = special.logit(acc)
    theta = (lo - lo.mean()) / (lo.std() if lo.std() > 0 else 1.0)
    item_acc = (cnt.k.sum(axis=(1, 2)) + 0.5) / (cnt.n.sum(axis=(1, 2)) + 1.0)
    c0 = float(np.mean(special.logit(item_acc)))
    if two_pl:
        st = _State(theta, np.array([1.0, c0]), np.diag([0.25, 4.0]), 0.5 if fit_sd else 0.0, 1.0)
    else:
        st = _State(theta, np.array([c0]), np.array([[4.0]]), 0.5 if fit_sd else 0.0, 1.0)
    def em(state: _State, estep: _EStep) -> tuple[_State, _EStep]:
        new = _m_step(cnt, state, estep, two_pl, zk, fit_sd)
        return new, _e_step(cnt, new, two_pl, z, logv, zk, vk, estep.mode)

    e = _e_step(cnt, st, two_pl, z, logv, zk, vk, None)
    converged, it = False, 0
    while it < max_iter:
        # SQUAREM (Varadhan and Roland, 2008): two EM steps, an extrapolation along them, and one
        # EM step from there when it raises the likelihood; plain EM is slow where a variance
        # is near 0
        s1, e1 = em(st, e)
        s2, e2 = em(s1, e1)
        it += 2
        x0, x1, x2 = _pack(st, two_pl), _pack(s1, two_pl), _pack(s2, two_pl)
        r, v = x1 - x0, x2 - 2 * x1 + x0
        nv = float(np.linalg.norm(v))
        new, e_new = s2, e2
        if nv > 0:
            alpha = min(-1.0, -float(np.linalg.norm(r)) / nv)
            try:
                sx = _unpack(x0 - 2 * alpha * r + alpha ** 2 * v, st, two_pl)
                ex = _e_step(cnt, sx, two_pl, z, logv, zk, vk, e2.mode)
                if np.isfinite(ex.loglik) and ex.loglik >= e2.loglik:
                    new, e_new = em(sx, ex)
                    it += 1
                    if not e_new.loglik >= e2.loglik:
                        new, e_new = s2, e2
            except (np.linalg.LinAlgError, FloatingPointError, ValueError):
                new, e_new = s2, e2
        gain = e_new.loglik - e.loglik
        moved = float(np.max(np.abs(new.theta - st.theta)))
        st, e = new, e_new
        if abs(gain) < tol * (1.0 + abs(e.loglik)) and moved < math.sqrt(tol):
            converged = True
            break
    if not converged:
        warnings.warn(f"fit_irt: EM did not converge in {max_iter} iterations", ConvergenceWarning,
                      stacklevel=2)
    cov = _ability_cov(_observed_information(cnt, st, e, two_pl, z, logv, zk, vk, fit_sd), st.theta)
    se = np.sqrt(np.clip(np.diag(cov), 0.0, None))
    zq = stats.norm.ppf(0.5 + conf_level / 2.0)
    abilities = pd.DataFrame({"model": cnt.models, "estimate": st.theta, "se": se,
                              "conf_low": st.theta - zq * se, "conf_high": st.theta + zq * se,
                              "accuracy": ksum / np.maximum(nsum, 1)})
    if len(dropped):  # the separated models, at +-inf with no standard error
        abilities = pd.concat([abilities, dropped.assign(se=np.nan, conf_low=np.nan, conf_high=np.nan)
                               [abilities.columns]], ignore_index=True)
    a_mean = np.einsum("ig,ig->i", e.w, e.a)
    c_mean = np.einsum("ig,ig->i", e.w, e.c)
    a_sd = np.sqrt(np.clip(np.einsum("ig,ig->i", e.w, e.a ** 2) - a_mean ** 2, 0.0, None))
    c_sd = np.sqrt(np.clip(np.einsum("ig,ig->i", e.w, e.c ** 2) - c_mean ** 2, 0.0, None))
    with np.errstate(divide="ignore", invalid="ignore"):
        diff = np.where(np.abs(a_mean) > 1e-6, -c_mean / a_mean, np.nan)
    n_item = cnt.n.sum(axis=(1, 2))
    items = pd.DataFrame({"item": cnt.items, "discrimination": a_mean, "discrimination_sd": a_sd,
                          "intercept": c_mean, "intercept_sd": c_sd, "difficulty": diff,
                          "n": n_item.astype(np.int64), "accuracy": cnt.k.sum(axis=(1, 2)) / np.maximum(n_item, 1)})
    if two_pl:
        sd = np.sqrt(np.diag(st.cov))
        corr = st.cov[0, 1] / (sd[0] * sd[1]) if sd[0] > 0 and sd[1] > 0 else float("nan")
        pop = [("discrimination_mean", st.mu[0]), ("discrimination_sd", sd[0]),
               ("intercept_mean", st.mu[1]), ("intercept_sd", sd[1]),
               ("discrimination_intercept_correlation", corr)]
    else:
        pop = [("discrimination", st.alpha), ("intercept_mean", st.mu[0]),
               ("intercept_sd", math.sqrt(st.cov[0, 0]))]
    pop.append(("run_sd", st.run_sd))
    population = pd.DataFrame(pop, columns=["parameter", "estimate"])
    misfit_sd, identified, cell_w = _misfit(cnt, e.a, e.c, e.w, st.run_sd, st.theta, se ** 2)
    return IrtFit(abilities=abilities, items=items, population=population, loglik=e.loglik,
                  model_type=model_type, n_obs=int(cnt.n.sum()), n_runs=cnt.runs, iterations=it,
                  converged=converged, conf_level=conf_level, misfit_sd=misfit_sd,
                  misfit_identified=identified, _cell_w=cell_w, _design=_item_design(st.theta, two_pl),
                  _item_prec=np.linalg.pinv(st.cov), _node_a=e.a, _node_c=e.c, _node_w=e.w,
                  _run_sd=st.run_sd, separated=tuple(str(m) for m in dropped["model"]))


# ----------------------------------------------------------------------------------------------
# prediction and information


def _predictive(fit: IrtFit, theta: np.ndarray, chunk: int = 256) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per item and ability: the predictive probability (item posterior and fresh run noise
    integrated), its derivative in theta, and its posterior variance over the item parameters."""
    return _predictive_nodes(fit._node_a, fit._node_c, fit._node_w, fit._run_sd, theta, chunk)


def _predictive_nodes(a: np.ndarray, c: np.ndarray, w: np.ndarray, run_sd: float, theta: np.ndarray,
                      chunk: int = 256) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    zk, vk = _gh(9) if run_sd > 0 else (np.zeros(1), np.ones(1))
    n_items = a.shape[0]
    P = np.empty((n_items, len(theta)))
    dP = np.empty_like(P)
    V = np.empty_like(P)
    for s in range(0, n_items, chunk):
        sl = slice(s, s + chunk)
        eta = (a[sl, :, None, None] * theta[None, None, None, :] + c[sl, :, None, None]
               + run_sd * zk[None, None, :, None])                           # (i, G, K, T)
        p = special.expit(eta)
        pk = np.einsum("igkt,k->igt", p, vk)
        dk = np.einsum("igkt,k->igt", p * (1 - p), vk) * a[sl, :, None]
        P[sl] = np.einsum("ig,igt->it", w[sl], pk)
        dP[sl] = np.einsum("ig,igt->it", w[sl], dk)
        V[sl] = np.einsum("ig,igt->it", w[sl], pk ** 2) - P[sl] ** 2
    return P, dP, np.clip(V, 0.0, None)


def item_information(fit: IrtFit, theta: float | Sequence[float] = 0.0) -> pd.DataFrame:
    """Fisher information of one response to each item about the ability, at the abilities ``theta``.

    For known item parameters this is the 2PL's ``a^2 p (1 - p)``; here ``p`` is the predictive
    probability (item posterior and run noise integrated), and the information is
    ``p'(theta)^2 / (p (1 - p))``, that of one Bernoulli response with that probability.

    Parameters
    ----------
    fit : IrtFit
    theta : float or sequence of float
        Abilities on the fit's scale.

    Returns
    -------
    DataFrame
        Columns ``item``, ``theta``, ``probability``, ``information``; items within each theta.

    Examples
    --------
    >>> from evalmix.simulate import simulate_irt
    >>> fit = fit_irt(simulate_irt(n_items=30, n_models=6, rng=2))
    >>> info = item_information(fit, [-1.0, 0.0, 1.0])
    >>> len(info), bool((info["information"] >= 0).all())
    (90, True)
    """
    th = np.atleast_1d(np.asarray(theta, dtype=float))
    if th.ndim != 1 or not np.isfinite(th).all():
        raise ArgumentError(f"theta must be finite numbers, got {theta!r}")
    P, dP, _ = _predictive(fit, th)
    info = dP ** 2 / np.clip(P * (1 - P), 1e-300, None)
    items = fit._node_a.shape[0]
    labels = fit.items["item"].to_numpy()
    return pd.DataFrame({"item": np.tile(labels, len(th)), "theta": np.repeat(th, items),
                         "probability": P.T.ravel(), "information": info.T.ravel()})


@accepts_seed
def select_items(fit: IrtFit, n_items: int, *, method: SelectMethod = "stratified",
                 prior_sd: float = 1.0, rng: int | np.random.Generator | None = None) -> list[object]:
    """A fixed subset of ``n_items`` items for estimating any model's full-benchmark accuracy.

    Parameters
    ----------
    fit : IrtFit
    n_items : int
        Size of the subset (at most the number of items).
    method : {"stratified", "information", "random"}
        ``"information"``: the items with the largest information averaged over abilities
        ``N(0, prior_sd^2)``; ``"stratified"``: items sorted by their predicted accuracy at the
        mean ability cut into ``n_items`` equal strata, the most informative of each stratum (the
        subset spans easy to hard); ``"random"``: a seeded random sample.
    prior_sd : float
        SD of the abilities the information is averaged over (1: the fitted models' spread).
    rng : int or Generator, optional
        Seed of ``"random"``.

    Returns
    -------
    list
        Item labels.

    Examples
    --------
    >>> from evalmix.simulate import simulate_irt
    >>> fit = fit_irt(simulate_irt(n_items=30, n_models=6, rng=2))
    >>> len(select_items(fit, 10, method="information"))
    10
    """
    method = check_choice(method, "method", ITEM_SELECTIONS)
    total = len(fit.items)
    n_items = check_count(n_items, "n_items")
    if n_items > total:
        raise ArgumentError(f"n_items must be at most the number of items ({total}), got {n_items}")
    prior_sd = check_number(prior_sd, "prior_sd", minimum=0.0, strict=True)
    labels = fit.items["item"].to_numpy()
    if method == "random":
        return list(labels[np.sort(as_generator(rng).choice(total, n_items, replace=False))])
    x, v = _gh(21)
    P, dP, _ = _predictive(fit, prior_sd * x)
    info = (dP ** 2 / np.clip(P * (1 - P), 1e-300, None)) @ v
    if method == "information":
        return list(labels[np.sort(np.argsort(-info, kind="stable")[:n_items])])
    p0 = P[:, len(x) // 2]
    order = np.argsort(p0, kind="stable")
    chosen = [int(s[np.argmax(info[s])]) for s in np.array_split(order, n_items)]
    return list(labels[np.sort(chosen)])


# ----------------------------------------------------------------------------------------------
# estimates of the full-benchmark accuracy


@dataclass(frozen=True, eq=False, repr=False)
class SubsetAccuracy(Result):
    """Full-benchmark accuracy of models evaluated on subsets of items (see :func:`estimate_accuracy`).

    The table has one row per model: ``model``, ``n_items`` (items answered), ``estimate`` (the
    model's accuracy over all the fit's items: the answered items' own outcomes, the others
    predicted), ``se``, ``conf_low``, ``conf_high``, ``theta`` and ``theta_se`` (posterior mean
    and SD of the ability) and ``observed`` (the accuracy on the answered items).  ``target`` is
    ``"observed"`` or ``"expected"`` (see :func:`estimate_accuracy`), ``misfit_sd`` the
    model-by-item misfit the standard errors carry.
    """

    table: pd.DataFrame
    conf_level: float
    selection: str
    target: str = "observed"
    misfit_sd: float = 0.0

    def to_frame(self) -> pd.DataFrame:
        return self.table

    def _title(self) -> str:
        return "Full-benchmark accuracy from a subset of items (IRT)"

    def _header(self) -> list[str]:
        return [f"items chosen: {self.selection}; {self.conf_level:.0%} intervals",
                f"target: the {self.target} accuracy over all items; model-by-item misfit SD "
                f"{self.misfit_sd:.4g} (logit scale)"]


@dataclass(frozen=True)
class _Grid:
    P: np.ndarray        # (I, T) predictive probability
    V: np.ndarray        # (I, T) its posterior variance over the item parameters
    dP: np.ndarray


_GRIDS: weakref.WeakKeyDictionary[IrtFit, _Grid] = weakref.WeakKeyDictionary()
# the largest intraclass correlation of a cell's runs (the beta-binomial's rho < 1)
_RHO_MAX = 1.0 - 1e-6


def _grid(fit: IrtFit) -> _Grid:
    """The predictions on the ability grid, computed once per fit (a fit is immutable)."""
    if fit in _GRIDS:
        return _GRIDS[fit]
    P, dP, V = _predictive(fit, _GRID)
    g = _Grid(P=P, V=V, dP=dP)
    _GRIDS[fit] = g
    return g


@dataclass(frozen=True)
class _Misfit:
    """The misfit on the grid for one call: ``rho = min(p (1 - p) tau^2, 1)``, the intraclass
    correlation of a cell's runs, and the sums over all items the unanswered items start from."""

    tau2: float
    V: np.ndarray        # (I, T) item-parameter variance of the predictions, the misfit allowed for
    sum_P: np.ndarray    # (T,)
    sum_V: np.ndarray    # (T,) item-parameter variance
    sum_PQ: np.ndarray   # (T,) p (1 - p)
    sum_Vq: np.ndarray   # (T,) misfit variance of the accuracies, rho p (1 - p)


def _misfit_grid(fit: IrtFit, g: _Grid, tau: float) -> _Misfit:
    pq = g.P * (1.0 - g.P)
    rho = np.minimum(pq * tau ** 2, _RHO_MAX)
    V = g.V
    if tau > 0:
        # the item posteriors assumed no misfit: the calibration cells then seem to know each
        # item better than they do.  Scale each item's variance by the ratio of x' C x with and
        # without the misfit in the cells' weights (x = (theta, 1) on the grid)
        x = _item_design(_GRID, fit._design.shape[1] == 2)
        c0 = _item_cov(fit._cell_w, fit._design, fit._item_prec, 0.0)
        c1 = _item_cov(fit._cell_w, fit._design, fit._item_prec, tau ** 2)
        q0 = np.einsum("td,ide,te->it", x, c0, x)
        q1 = np.einsum("td,ide,te->it", x, c1, x)
        V = V * (q1 / np.maximum(q0, 1e-300))
    return _Misfit(tau2=tau ** 2, V=V, sum_P=g.P.sum(axis=0), sum_V=V.sum(axis=0), sum_PQ=pq.sum(axis=0),
                   sum_Vq=(rho * pq).sum(axis=0))


def _odds_rho(P: np.ndarray, tau2: float) -> np.ndarray:
    """``rho / (1 - rho)`` of the cells of probability ``P``: the beta-binomial's ``1 / (alpha + beta)``."""
    rho = np.minimum(P * (1.0 - P) * tau2, _RHO_MAX)
    return rho / (1.0 - rho)


def _loglik(P: np.ndarray, k: np.ndarray, n: np.ndarray, c: np.ndarray | None) -> np.ndarray:
    """Log-likelihood on the grid (rows: items) of ``k`` of ``n`` runs correct, beta-binomial with
    mean ``P`` and ``c = rho / (1 - rho)`` per item (``rho`` the intraclass correlation of the runs,
    which share the model's misfit on the item); ``c = None`` is the binomial.  As products, stable
    for small ``rho``: ``prod_{j<k} (P + j c) prod_{j<n-k} (1 - P + j c) / prod_{j<n} (1 + j c)``."""
    P = np.clip(P, 1e-12, 1 - 1e-12)
    if c is None:
        return k[:, None] * np.log(P) + (n - k)[:, None] * np.log1p(-P)
    cc = np.asarray(c, dtype=float)[:, None]
    out = np.zeros_like(P)
    for j in range(int(n.max()) if len(n) else 0):
        jc = j * cc
        out += (np.where((k > j)[:, None], np.log(P + jc), 0.0) + np.where((n - k > j)[:, None], np.log1p(-P + jc), 0.0)
                - np.where((n > j)[:, None], np.log1p(jc), 0.0))
    return out


def _nearest(post: np.ndarray) -> int:
    """The grid point nearest the posterior mean of the ability."""
    return int(np.clip(np.searchsorted(_GRID, float(post @ _GRID)), 0, len(_GRID) - 1))


def _posterior(g: _Grid, idx: np.ndarray, k: np.ndarray, n: np.ndarray, prior_sd: float,
               tau2: float) -> np.ndarray:
    """The ability's posterior on the grid.  With a misfit, each item's ``rho = p (1 - p) tau^2`` is
    fixed at the ability of the binomial posterior: were it a function of the ability on the grid,
    an item with some runs right and some wrong would pull the ability to where ``p (1 - p)`` is
    small (where the misfit is small), an artefact of the delta method, not information."""
    logp = -0.5 * (_GRID / prior_sd) ** 2
    if not len(idx):
        return np.exp(logp - logp.max()) / np.exp(logp - logp.max()).sum()
    P = g.P[idx]
    ll = _loglik(P, k, n, None).sum(axis=0)
    if tau2 > 0:
        post = np.exp(logp + ll - (logp + ll).max())
        at = _nearest(post / post.sum())
        ll = _loglik(P, k, n, _odds_rho(P[:, at], tau2)).sum(axis=0)
    w = np.exp(logp + ll - (logp + ll).max())
    return w / w.sum()


def _summarise(g: _Grid, mf: _Misfit, post: np.ndarray, idx: np.ndarray, k: np.ndarray, n: np.ndarray,
               target: str, zq: float) -> tuple[float, float, float, float, float, float]:
    """The estimate of the accuracy over all items, its SE, interval, and the ability's posterior
    mean and SD.  On each grid point the answered items' part and the unanswered items' part
    (predicted, with the item parameters', the misfit's and the run noise's variance) are summed;
    over the grid, the law of total variance."""
    N = g.P.shape[0]
    P, V = g.P[idx], mf.V[idx]
    # unanswered items: prediction, item-parameter variance, misfit variance; the sums over all
    # items less the answered ones while those are few, else summed directly (exactly 0 when all
    # items are answered)
    if 2 * len(idx) < N:
        mean_t = mf.sum_P - P.sum(axis=0)
        var_t = mf.sum_V - V.sum(axis=0)
        pq_un = mf.sum_PQ - (P * (1.0 - P)).sum(axis=0)
        vq_un = mf.sum_Vq - (np.minimum(P * (1.0 - P) * mf.tau2, _RHO_MAX) * P * (1.0 - P)).sum(axis=0)
    else:
        rest = np.ones(N, dtype=bool)
        rest[idx] = False
        Pu = g.P[rest]
        mean_t, var_t = Pu.sum(axis=0), mf.V[rest].sum(axis=0)
        pq_un = (Pu * (1.0 - Pu)).sum(axis=0)
        vq_un = (np.minimum(Pu * (1.0 - Pu) * mf.tau2, _RHO_MAX) * Pu * (1.0 - Pu)).sum(axis=0)
    if target == "observed":
        # the answered items with their own runs; each unanswered item run as often as the
        # answered ones were on average: its accuracy over r runs varies by the misfit (shared by
        # the runs) and the Bernoulli noise, rho p (1 - p) (1 - 1/r) + p (1 - p) / r
        r = float(n.mean()) if len(n) else 1.0
        mean_t = mean_t + float((k / n).sum())
        var_t = var_t + vq_un * (1.0 - 1.0 / r) + pq_un / r
    else:
        # the expected accuracy (over runs): an answered item's accuracy is its beta posterior
        # mean given k of n, (p + k c) / (1 + n c), with that posterior's variance
        c = _odds_rho(P, mf.tau2)
        shrink = 1.0 / (1.0 + n[:, None] * c)
        m = (P + k[:, None] * c) * shrink
        mean_t = mean_t + m.sum(axis=0)
        var_t = (var_t + vq_un + (V * shrink ** 2).sum(axis=0)
                 + (m * (1.0 - m) * c / (1.0 + (n[:, None] + 1.0) * c)).sum(axis=0))
    mean_t, var_t = mean_t / N, var_t / N ** 2
    th = float(post @ _GRID)
    th_se = math.sqrt(max(float(post @ (_GRID - th) ** 2), 0.0))
    if target == "observed" and len(idx) == N:   # every item answered: known exactly
        est = float((k / n).sum() / N)
        return est, 0.0, est, est, th, th_se
    est = float(post @ mean_t)
    var = float(post @ (mean_t - est) ** 2) + float(post @ var_t)
    se = math.sqrt(max(var, 0.0))
    # the interval on the logit scale keeps it inside (0, 1)
    e = min(max(est, 1e-9), 1 - 1e-9)
    half = zq * se / (e * (1 - e))
    lo, hi = special.expit(special.logit(e) - half), special.expit(special.logit(e) + half)
    return est, se, float(lo), float(hi), th, th_se


def _misfit_sd(fit: IrtFit, misfit_sd: float | None) -> float:
    if not isinstance(fit, IrtFit):
        raise ArgumentError(f"fit must be an IrtFit (from fit_irt), got {type(fit).__name__}: subset "
                            "estimates use the marginal maximum likelihood calibration")
    if misfit_sd is None:
        return fit.misfit_sd
    return check_number(misfit_sd, "misfit_sd", minimum=0.0)


def _responses(fit: IrtFit, responses: pd.DataFrame | str | Path, item: str, model: str,
               correct: str) -> tuple[pd.DataFrame, dict[object, int]]:
    table = load_table(responses, ids=(item, model))
    for role, col in (("item", item), ("model", model), ("correct", correct)):
        if col not in table.columns:
            raise DataError(f"no column {col!r} (the {role} column); columns: {list(table.columns)[:20]}")
    y = pd.to_numeric(table[correct], errors="coerce").to_numpy(dtype=float)
    bad = ~np.isin(y, (0.0, 1.0))
    if bad.any():
        row = table.index[np.flatnonzero(bad)[0]]
        raise DataError(f"column {correct!r} must be 0 or 1; row {row} is not")
    pos = {lab: i for i, lab in enumerate(fit.items["item"].tolist())}
    known = table[item].map(pos)
    if known.isna().any():
        row = table.index[np.flatnonzero(known.isna().to_numpy())[0]]
        raise DataError(f"column {item!r}: row {row} names item {table[item].loc[row]!r}, "
                        "which the fit did not calibrate")
    if table[model].isna().any():
        raise DataError(f"column {model!r} has a missing value")
    return pd.DataFrame({"model": table[model].to_numpy(), "pos": known.to_numpy(dtype=np.int64), "y": y}), pos


def estimate_accuracy(fit: IrtFit, responses: pd.DataFrame | str | Path, *, item: str = "item",
                      model: str = "model", correct: str = "correct", target: IrtTarget = "observed",
                      misfit_sd: float | None = None, prior_sd: float = 2.0,
                      conf_level: float = 0.95) -> SubsetAccuracy:
    """Each model's accuracy over all the fit's items from its responses to some of them.

    The ability's posterior is computed on a grid (prior ``N(0, prior_sd^2)`` on the fit's scale,
    where the calibration models have SD 1); the runs of a model on an item share its
    model-by-item misfit (beta-binomial with intraclass correlation ``rho = p (1 - p) tau^2``,
    ``tau`` the fit's ``misfit_sd``, each item's ``rho`` taken at the ability of the binomial
    posterior), so many runs of a few items do not pass for many items.  The target is the mean
    over all ``N`` items of the model's accuracy on each: the answered items enter with their own
    outcomes, the unanswered ones with the prediction (the posterior mean over the ability of the
    predicted probability correct).  The SE of the unanswered items' part adds to the ability's
    posterior variance and the item parameters' (their posterior widened for the misfit of the
    calibration cells) the misfit, ``sum_i (p_i (1 - p_i))^2 tau^2 / N^2``; for the observed
    target with ``r`` runs an item adds ``rho p (1 - p) (1 - 1/r) + p (1 - p) / r`` instead (the
    misfit shared by its runs, the Bernoulli noise averaged over them).  The interval is normal
    on the logit scale.  See docs/irt.md for the coverage measured on AI4Math.

    Parameters
    ----------
    fit : IrtFit
        The calibration.
    responses : DataFrame or path
        One row per response of a model (new or calibrated) to a calibrated item.
    item, model, correct : str
        Columns of ``responses``.
    target : {"observed", "expected"}
        ``"observed"`` (default): the accuracy a run of the whole benchmark would report, the
        answered items with the runs given and every other item run ``r`` times, ``r`` the
        answered items' mean number of responses (with all items answered the estimate is the
        observed accuracy, with SE 0).  ``"expected"``: the model's accuracy averaged over runs
        (an answered item's accuracy is then estimated from its runs, shrunk towards the
        prediction as far as the misfit allows; with ``misfit_sd=0`` every item is predicted,
        as by the 2PL alone).
    misfit_sd : float, optional
        The model-by-item misfit SD on the logit scale (default: the fit's ``misfit_sd``; give it
        when the calibration had one response per model and item, or for a sensitivity check).
    prior_sd : float
        SD of the ability prior (2: weak next to the calibration models' spread of 1).
    conf_level : float

    Returns
    -------
    SubsetAccuracy

    Examples
    --------
    >>> from evalmix.simulate import simulate_irt
    >>> runs = simulate_irt(n_items=40, n_models=8, rng=5)
    >>> fit = fit_irt(runs[runs["model"] != "m7"])
    >>> new = runs[(runs["model"] == "m7")].head(20)
    >>> est = estimate_accuracy(fit, new)
    >>> int(est.table["n_items"].iloc[0])
    20
    >>> full = estimate_accuracy(fit, runs[runs["model"] == "m7"]).table.iloc[0]
    >>> bool(full["estimate"] == full["observed"]), float(full["se"])
    (True, 0.0)
    """
    conf_level = check_level(conf_level)
    prior_sd = check_number(prior_sd, "prior_sd", minimum=0.0, strict=True)
    target = check_choice(target, "target", IRT_TARGETS)
    tau = _misfit_sd(fit, misfit_sd)
    resp, _ = _responses(fit, responses, item, model, correct)
    g = _grid(fit)
    mf = _misfit_grid(fit, g, tau)
    zq = float(stats.norm.ppf(0.5 + conf_level / 2.0))
    rows = []
    for m, sub in resp.groupby("model", sort=True):
        idx, inv = np.unique(sub["pos"].to_numpy(), return_inverse=True)
        k = np.bincount(inv, weights=sub["y"].to_numpy(), minlength=len(idx))
        n = np.bincount(inv, minlength=len(idx)).astype(float)
        post = _posterior(g, idx, k, n, prior_sd, mf.tau2)
        est, se, lo, hi, th, th_se = _summarise(g, mf, post, idx, k, n, target, zq)
        rows.append((m, len(idx), est, se, lo, hi, th, th_se, float(k.sum() / n.sum())))
    table = pd.DataFrame(rows, columns=["model", "n_items", "estimate", "se", "conf_low", "conf_high",
                                        "theta", "theta_se", "observed"])
    return SubsetAccuracy(table=table, conf_level=conf_level, selection="given", target=target, misfit_sd=tau)


def adaptive_accuracy(fit: IrtFit, answer: Callable[[object, object], float] | pd.DataFrame,
                      models: Sequence[object] | None = None, *, n_items: int = 30,
                      item: str = "item", model: str = "model", correct: str = "correct",
                      target: IrtTarget = "observed", misfit_sd: float | None = None,
                      prior_sd: float = 2.0, conf_level: float = 0.95) -> SubsetAccuracy:
    """Adaptive testing: per model, ask the item with the largest information at the current
    ability estimate (the posterior mean), ``n_items`` times, and estimate the full-benchmark accuracy.

    Parameters
    ----------
    fit : IrtFit
    answer : callable or DataFrame
        ``answer(model, item) -> 0 or 1`` (runs the model on the item), or a table of responses
        from which each chosen item's responses (all its runs) are taken.
    models : sequence, optional
        Models to test (default: every model of the ``answer`` table).
    n_items : int
    item, model, correct : str
        Columns of an ``answer`` table.
    target, misfit_sd, prior_sd, conf_level
        As in :func:`estimate_accuracy` (the observed target: the chosen items with the runs
        taken, every other item run as often).

    Returns
    -------
    SubsetAccuracy

    Examples
    --------
    >>> from evalmix.simulate import simulate_irt
    >>> runs = simulate_irt(n_items=40, n_models=8, rng=5)
    >>> fit = fit_irt(runs[runs["model"] != "m7"])
    >>> est = adaptive_accuracy(fit, runs, ["m7"], n_items=15)
    >>> int(est.table["n_items"].iloc[0])
    15
    """
    conf_level = check_level(conf_level)
    prior_sd = check_number(prior_sd, "prior_sd", minimum=0.0, strict=True)
    target = check_choice(target, "target", IRT_TARGETS)
    tau = _misfit_sd(fit, misfit_sd)
    total = len(fit.items)
    n_items = check_count(n_items, "n_items")
    if n_items > total:
        raise ArgumentError(f"n_items must be at most the number of items ({total}), got {n_items}")
    labels = fit.items["item"].to_numpy()
    by_model: dict[object, pd.DataFrame] = {}
    if isinstance(answer, pd.DataFrame):
        resp, _ = _responses(fit, answer, item, model, correct)
        by_model = {m: sub for m, sub in resp.groupby("model", sort=True)}
        if models is None:
            models = list(by_model)
        for m in models:
            if m not in by_model:
                raise DataError(f"model {m!r} has no responses in the answer table")
    elif callable(answer):
        if models is None:
            raise ArgumentError("models must be given when answer is a function")
    else:
        raise ArgumentError(f"answer must be a function or a DataFrame, got {type(answer).__name__}")
    g = _grid(fit)
    mf = _misfit_grid(fit, g, tau)
    info_grid = g.dP ** 2 / np.clip(g.P * (1 - g.P), 1e-300, None)
    zq = float(stats.norm.ppf(0.5 + conf_level / 2.0))
    rows = []
    for m in models:
        asked: list[int] = []
        ks: list[float] = []
        ns: list[float] = []
        if m in by_model:
            sub = by_model[m]
            have = np.zeros(total, dtype=bool)
            have[sub["pos"].to_numpy()] = True
            kk = np.bincount(sub["pos"].to_numpy(), weights=sub["y"].to_numpy(), minlength=total)
            nn = np.bincount(sub["pos"].to_numpy(), minlength=total).astype(float)
        else:
            have = np.ones(total, dtype=bool)
        logpost = -0.5 * (_GRID / prior_sd) ** 2
        post = np.exp(logpost - logpost.max())
        post /= post.sum()
        for _ in range(n_items):
            # the information at the posterior mean of the ability (nearest grid point)
            at = _nearest(post)
            expected = info_grid[:, at].copy()
            expected[~have] = -np.inf
            if asked:
                expected[asked] = -np.inf
            j = int(np.argmax(expected))
            if not np.isfinite(expected[j]):
                break
            asked.append(j)
            if m in by_model:
                ks.append(float(kk[j]))
                ns.append(float(nn[j]))
            else:
                y = float(answer(m, labels[j]))  # type: ignore[operator]
                if y not in (0.0, 1.0):
                    raise DataError(f"answer({m!r}, {labels[j]!r}) returned {y!r}, not 0 or 1")
                ks.append(y)
                ns.append(1.0)
            # the item's rho at the ability estimate when it is asked (see _posterior)
            c = _odds_rho(g.P[j:j + 1, at], mf.tau2) if mf.tau2 > 0 else None
            logpost = logpost + _loglik(g.P[j:j + 1], np.array(ks[-1:]), np.array(ns[-1:]), c)[0]
            post = np.exp(logpost - logpost.max())
            post /= post.sum()
        est, se, lo, hi, th, th_se = _summarise(g, mf, post, np.array(asked, dtype=np.int64), np.array(ks),
                                                np.array(ns), target, zq)
        obs = float(sum(ks) / sum(ns)) if ns else float("nan")
        rows.append((m, len(asked), est, se, lo, hi, th, th_se, obs))
    table = pd.DataFrame(rows, columns=["model", "n_items", "estimate", "se", "conf_low", "conf_high",
                                        "theta", "theta_se", "observed"])
    return SubsetAccuracy(table=table, conf_level=conf_level, selection="adaptive (maximum information)",
                          target=target, misfit_sd=tau)


# ----------------------------------------------------------------------------------------------
# the Bayesian fit


@dataclass(frozen=True, eq=False, repr=False)
class IrtPosterior(Result):
    """A 2PL or 1PL model with an item:run nuisance layer fitted by NUTS (see :func:`fit_irt_bayes`).

    Attributes
    ----------
    abilities : DataFrame
        ``model``, ``estimate`` (posterior mean), ``se`` (posterior SD), ``conf_low``,
        ``conf_high`` (equal-tailed interval), ``accuracy``; each draw's abilities are put at mean
        0 and SD 1 over the models, as in :func:`fit_irt`.
    items : DataFrame
        Posterior means and SDs of ``discrimination`` and ``intercept``, and ``difficulty``.
    population : DataFrame
        Posterior means of the item population and ``run_sd``.
    theta_draws : ndarray
        Draws x models: the standardised abilities.
    r_hat : float
        The largest R-hat of the abilities (NaN with one chain).
    divergences : int
    misfit_sd, misfit_identified
        The model-by-item misfit of :class:`IrtFit`, from the posterior means of the cells'
        probabilities (the leverage from the posterior covariance of their linear predictors).
        The model has no such term, so the abilities' posterior SDs do not carry it; subset
        estimates take an :class:`IrtFit`.
    """

    abilities: pd.DataFrame
    items: pd.DataFrame
    population: pd.DataFrame
    theta_draws: np.ndarray
    r_hat: float
    divergences: int
    model_type: str
    conf_level: float
    misfit_sd: float = 0.0
    misfit_identified: bool = False

    def to_frame(self) -> pd.DataFrame:
        return self.abilities

    def _title(self) -> str:
        return f"{self.model_type.upper()} item response model (Bayesian, NUTS)"

    def _header(self) -> list[str]:
        return [f"{len(self.items)} items, {len(self.abilities)} models; {self.theta_draws.shape[0]} draws; "
                f"max R-hat {self.r_hat:.3f}; {self.divergences} divergences",
                f"model-by-item misfit SD {self.misfit_sd:.4g} (logit scale; not in the model)"
                if self.misfit_identified
                else "model-by-item misfit not identified (one response per model and item)"]

    def to_dict(self) -> dict[str, object]:
        from ..core.result import frame_records
        return {"table": frame_records(self.abilities), "items": frame_records(self.items),
                "population": frame_records(self.population),
                "r_hat": self.r_hat if math.isfinite(self.r_hat) else None,  # NaN with one chain
                "divergences": self.divergences, "misfit_sd": self.misfit_sd,
                "misfit_identified": self.misfit_identified}


@accepts_seed
def fit_irt_bayes(data: pd.DataFrame | str | Path, *, item: str = "item", model: str = "model",
                  correct: str = "correct", run: str | Sequence[str] | None = None,
                  model_type: IrtModel = "2pl", draws: int = 300, tune: int = 300, chains: int = 2,
                  conf_level: float = 0.95, rng: int | np.random.Generator | None = 1) -> IrtPosterior:
    """The model of :func:`fit_irt` fitted by PyMC's NUTS (the ``bayes`` extra).

    Priors: abilities ``N(0, 1)``; item effects ``(a_i, c_i) = mu + L z_i`` with ``z_i ~ N(0, I)``,
    ``mu_a ~ N(1, 1)``, ``mu_c ~ N(0, 2.5)``, ``L`` the Cholesky factor of an LKJ(2) correlation
    with ``HalfNormal(2)`` SDs (1PL: one discrimination ``~ HalfNormal(2)``, intercept SD
    ``~ HalfNormal(2)``); the item:run effects ``N(0, run_sd^2)`` with ``run_sd ~ HalfNormal(1)``.
    Each draw's abilities are then put at mean 0 and SD 1 over the models, and its item effects
    moved with them, so that the summaries are on :func:`fit_irt`'s scale.

    Parameters
    ----------
    data, item, model, correct, run, model_type
        As in :func:`fit_irt`.
    draws, tune, chains : int
        NUTS draws and tuning steps per chain, and chains (small defaults: a quick look).
    conf_level : float
        Level of the equal-tailed intervals.
    rng : int or numpy.random.Generator, optional
        The random numbers of PyMC's sampler (its ``random_seed``).

    Returns
    -------
    IrtPosterior

    Examples
    --------
    >>> from evalmix.simulate import simulate_irt
    >>> post = fit_irt_bayes(simulate_irt(n_items=20, n_models=4, rng=1), draws=50, tune=50,
    ...                      chains=1)  # doctest: +SKIP
    """
    model_type = check_choice(model_type, "model_type", IRT_MODELS)
    draws = check_count(draws, "draws")
    tune = check_count(tune, "tune", minimum=0)
    chains = check_count(chains, "chains")
    conf_level = check_level(conf_level)
    try:
        import pymc as pm
    except ImportError as exc:  # pragma: no cover - the bayes extra is installed in CI
        raise ImportError("fit_irt_bayes needs PyMC: pip install 'evalmix[bayes]'") from exc
    cnt = _counts(data, item, model, correct, run)
    ii, rr, mm = np.nonzero(cnt.n)
    kk, nn = cnt.k[ii, rr, mm], cnt.n[ii, rr, mm]
    n_items, n_models = len(cnt.items), len(cnt.models)
    two_pl = model_type == "2pl"
    with pm.Model():
        theta = pm.Normal("theta", 0.0, 1.0, shape=n_models)
        zi = pm.Normal("z_item", 0.0, 1.0, shape=(n_items, 2 if two_pl else 1))
        if two_pl:
            mu = pm.math.stack([pm.Normal("mu_a", 1.0, 1.0), pm.Normal("mu_c", 0.0, 2.5)])
            chol, _, _ = pm.LKJCholeskyCov("chol", n=2, eta=2.0, sd_dist=pm.HalfNormal.dist(2.0),
                                           compute_corr=True)
            ac = pm.Deterministic("ac", mu + pm.math.dot(zi, chol.T))
            a, c = ac[:, 0], ac[:, 1]
        else:
            alpha = pm.HalfNormal("alpha", 2.0)
            sd_c = pm.HalfNormal("sd_c", 2.0)
            c_items = pm.Deterministic("c", pm.Normal("mu_c", 0.0, 2.5) + sd_c * zi[:, 0])
            a, c = alpha, c_items
        eta = (a[ii] if two_pl else a) * theta[mm] + c[ii]
        if cnt.has_runs:
            run_sd = pm.HalfNormal("run_sd", 1.0)
            zr = pm.Normal("z_run", 0.0, 1.0, shape=(n_items, cnt.runs))
            eta = eta + run_sd * zr[ii, rr]
        pm.Binomial("y", n=nn.astype(np.int64), logit_p=eta, observed=kk.astype(np.int64))
        idata = pm.sample(draws=draws, tune=tune, chains=chains, cores=1, random_seed=rng,
                          progressbar=False, compute_convergence_checks=False)
    post = idata.posterior
    th = post["theta"].values.reshape(-1, n_models)
    if two_pl:
        ac_d = post["ac"].values.reshape(-1, n_items, 2)
        a_d, c_d = ac_d[..., 0], ac_d[..., 1]
    else:
        a_d = np.repeat(post["alpha"].values.reshape(-1, 1), n_items, axis=1)
        c_d = post["c"].values.reshape(-1, n_items)
    # each draw on the fitted models' scale: theta -> (theta - t) / s, a -> a s, c -> c + a t
    t = th.mean(axis=1, keepdims=True)
    s = th.std(axis=1, keepdims=True)
    th_std = (th - t) / s
    a_std, c_std = a_d * s, c_d + a_d * t
    lo_q, hi_q = (1 - conf_level) / 2, (1 + conf_level) / 2
    ksum, nsum = cnt.k.sum(axis=(0, 1)), cnt.n.sum(axis=(0, 1))
    abilities = pd.DataFrame({"model": cnt.models, "estimate": th_std.mean(axis=0), "se": th_std.std(axis=0, ddof=1),
                              "conf_low": np.quantile(th_std, lo_q, axis=0),
                              "conf_high": np.quantile(th_std, hi_q, axis=0),
                              "accuracy": ksum / np.maximum(nsum, 1)})
    a_mean, c_mean = a_std.mean(axis=0), c_std.mean(axis=0)
    with np.errstate(divide="ignore", invalid="ignore"):
        diff = np.where(np.abs(a_mean) > 1e-6, -c_mean / a_mean, np.nan)
    items = pd.DataFrame({"item": cnt.items, "discrimination": a_mean, "discrimination_sd": a_std.std(axis=0, ddof=1),
                          "intercept": c_mean, "intercept_sd": c_std.std(axis=0, ddof=1), "difficulty": diff})
    pop = [("discrimination_mean", float(a_std.mean(axis=1).mean())),
           ("discrimination_sd", float(a_std.std(axis=1).mean())),
           ("intercept_mean", float(c_std.mean(axis=1).mean())), ("intercept_sd", float(c_std.std(axis=1).mean()))]
    if cnt.has_runs:
        pop.append(("run_sd", float(post["run_sd"].values.mean())))
    # the misfit, as for the ML fit: the cells' posterior mean probabilities (fresh run noise
    # integrated) and the posterior covariance of the linear predictors of each item's models
    k_cell, n_cell = cnt.k.sum(axis=1), cnt.n.sum(axis=1)
    identified = bool((n_cell[n_cell > 0] >= 2).any())
    misfit_sd = 0.0
    if identified:
        eta_d = a_d[:, :, None] * th[:, None, :] + c_d[:, :, None]      # (S, I, M): scale-free
        run_d = post["run_sd"].values.reshape(-1) if cnt.has_runs else np.zeros(len(eta_d))
        zk, vk = _gh(9) if cnt.has_runs else (np.zeros(1), np.ones(1))
        P_cell = np.zeros(eta_d.shape[1:])
        for s in range(0, len(eta_d), 32):   # blocks of draws: the run-noise nodes multiply the size
            blk = slice(s, s + 32)
            P_cell += np.einsum("simk,k->im", special.expit(eta_d[blk, ..., None]
                                                            + run_d[blk, None, None, None] * zk), vk)
        P_cell /= len(eta_d)
        d = eta_d - eta_d.mean(axis=0)
        shrink = 1.0 / (1.0 + math.pi * float(np.mean(run_d ** 2)) / 8.0)
        misfit_sd = _misfit_moments(k_cell, n_cell, P_cell, n_cell * P_cell * (1 - P_cell) * shrink,
                                    lambda sl: np.einsum("sim,sij->imj", d[:, sl], d[:, sl]) / max(len(d) - 1, 1))
    import arviz as az
    r_hat = float(np.nanmax(az.rhat(idata, var_names=["theta"])["theta"].values)) if chains > 1 else float("nan")
    div = int(idata.sample_stats["diverging"].values.sum()) if "diverging" in idata.sample_stats else 0
    return IrtPosterior(abilities=abilities, items=items, population=pd.DataFrame(pop, columns=["parameter", "estimate"]),
                        theta_draws=th_std, r_hat=r_hat, divergences=div, model_type=model_type,
                        conf_level=conf_level, misfit_sd=misfit_sd, misfit_identified=identified)

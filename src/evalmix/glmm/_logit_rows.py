"""Row-wise pieces of the binomial-logit deviance in one compiled pass each, for large designs.

``deviance_mu_into`` returns ``D(y, eta) = 2 sum(m log(1 + e^eta) - k eta)`` and fills ``mu``;
``score_weights_into`` fills the score ``k - m mu`` and the weight ``m mu (1 - mu)``. NumPy needs about
ten passes over the rows (and as many temporaries) for the first and five for the second; a numba
loop needs one. The loops run on one thread: a pass costs a few nanoseconds a row, so numba's
parallel loops (``prange``) spent more CPU in starting and waiting on their threads than in the
rows (on 200,000 rows the fit took 1.6x the CPU time with two threads that it took with one, and longer
wall-clock time on a loaded machine); parallelism belongs to the callers that run many fits
(``fit_many``, bootstraps), which would otherwise oversubscribe the cores. numba is optional:
without it, or below ``GlmerControl.compiled_rows_min`` rows (where loading numba and the cached kernels would
cost more than they save), PIRLS uses :class:`evalmix.glmm.deviance.NumpyRows` instead; both are
row kernels of the one PIRLS loop (:meth:`evalmix.glmm.deviance.LaplaceDeviance.run_pirls`).

:class:`CompiledLogitRows` writes into buffers that PIRLS allocates once per call: at 40M rows
every fresh float64 temporary is 320 MB that the kernel must zero.

For nested scalar intercepts (:class:`evalmix.glmm.deviance.NestedSolver`) the ``*_levels`` and
``joint_*`` passes also sum, in the same loop, what the solver and a pattern-compressed X need
(weights and scores per fine level, per pattern, per fine level and pattern) and read a step as
one value per fine level (and per pattern), so that PIRLS, its joint ``(u, beta)`` form and the
exact gradients take one or two passes over the rows instead of a NumPy pass per sum or gather.
The sums are in row order, as ``numpy.bincount``'s, so the results are NumPy's to the bit or to
rounding; the NumPy path stays the reference (tests/glmm/test_pirls.py compares the two).
"""

from __future__ import annotations

import math

import numpy as np

try:
    from numba import njit
except ImportError:  # pragma: no cover - numba is optional
    njit = None


# ``log(1 + e^-|eta|)`` of a one-trial row is summed as the log of a running product of the
# ``1 + e^-|eta|`` (each in [1, 2], so BLOCK of them stay below 2^1000, under the float64 limit):
# one log per BLOCK rows instead of a log1p per row, a third of the pass's time. Each factor is
# rounded once (1e-16 relative), as each log1p is, so the sum moves by rounding only (2e-14
# relative on a million rows); rows of several trials keep ``m log1p(e)``.
BLOCK = 1000


def _add_row(x: float, e: float, mi: float, ki: float, total: float, logs: float, prod: float,
             count: int) -> tuple[float, float, float, int]:
    """One row's term of the binomial deviance at ``eta = x`` (``e = exp(-|x|)``): one-trial rows
    multiply ``1 + e`` into the running product (a log per BLOCK rows), others add ``mi log1p(e)``."""
    total += mi * max(x, 0.0) - ki * x
    if mi == 1.0:
        prod *= 1.0 + e
        count += 1
        if count == BLOCK:
            logs += math.log(prod)
            prod, count = 1.0, 0
    else:
        total += mi * math.log1p(e)
    return total, logs, prod, count


def _logit_mean(x: float, e: float) -> float:
    """``mu = 1 / (1 + e^-x)`` from ``e = exp(-|x|)``, which overflows on neither side."""
    inv = 1.0 / (1.0 + e)
    return inv if x >= 0 else e * inv


def _score(ki: float, mi: float, p: float) -> float:
    """A row's score ``k - m mu`` at ``mu = p``."""
    return ki - mi * p


def _weight(mi: float, p: float) -> float:
    """A row's Fisher weight ``m mu (1 - mu)`` at ``mu = p``."""
    return mi * p * (1.0 - p)


def _deviance_of(total: float, logs: float, prod: float) -> float:
    """The deviance from the sums :func:`_add_row` carried."""
    return 2.0 * (total + (logs + math.log(prod)))


def _deviance_mu(eta: np.ndarray, k: np.ndarray, m: np.ndarray, mu: np.ndarray) -> float:
    total, logs, prod, count = 0.0, 0.0, 1.0, 0
    for i in range(eta.size):
        x = eta[i]
        e = math.exp(-abs(x))
        mu[i] = _logit_mean(x, e)
        mi = m[i]
        total, logs, prod, count = _add_row(x, e, mi, k[i], total, logs, prod, count)
    return _deviance_of(total, logs, prod)


def _score_weights(mu: np.ndarray, k: np.ndarray, m: np.ndarray, score: np.ndarray,
                   w: np.ndarray) -> None:
    for i in range(mu.size):
        p = mu[i]
        score[i] = _score(k[i], m[i], p)
        w[i] = _weight(m[i], p)


def _trial_deviance(eta: np.ndarray, zd: np.ndarray, step: float, k: np.ndarray,
                    m: np.ndarray) -> float:
    # the deviance at eta + step zd, rounded as NumPy's ``eta + step * zd`` (no fused multiply-add
    # without fastmath), without storing that linear predictor
    total, logs, prod, count = 0.0, 0.0, 1.0, 0
    for i in range(eta.size):
        x = eta[i] + step * zd[i]
        e = math.exp(-abs(x))
        mi = m[i]
        total, logs, prod, count = _add_row(x, e, mi, k[i], total, logs, prod, count)
    return _deviance_of(total, logs, prod)


def _advance(eta: np.ndarray, zd: np.ndarray, step: float, k: np.ndarray, m: np.ndarray,
             mu: np.ndarray, score: np.ndarray, w: np.ndarray) -> float:
    # the score and weight of the new eta in the same pass (the next PIRLS iteration's), with
    # the arithmetic of _score_weights
    total, logs, prod, count = 0.0, 0.0, 1.0, 0
    for i in range(eta.size):
        x = eta[i] + step * zd[i]
        eta[i] = x
        e = math.exp(-abs(x))
        p = _logit_mean(x, e)
        mu[i] = p
        mi = m[i]
        score[i] = _score(k[i], mi, p)
        w[i] = _weight(mi, p)
        total, logs, prod, count = _add_row(x, e, mi, k[i], total, logs, prod, count)
    return _deviance_of(total, logs, prod)


def _level_score_sums(fi: np.ndarray, hj: np.ndarray, w: np.ndarray, mu: np.ndarray,
                      gs: np.ndarray) -> None:
    # gs[fi] += g with g = h w (1 - 2 mu), rounded as LaplaceDeviance.grads's NumPy passes
    for i in range(fi.size):
        j = fi[i]
        g = hj[j] * w[i]
        g *= 1.0 - mu[i] * 2.0
        gs[j] += g


def _level_gradient_sums(fi: np.ndarray, hj: np.ndarray, zvj: np.ndarray, xdp: np.ndarray,
                         w: np.ndarray, mu: np.ndarray, k: np.ndarray, m: np.ndarray,
                         pat: np.ndarray, pf: np.ndarray, qf: np.ndarray, ps: np.ndarray,
                         rho_out: np.ndarray) -> None:
    # rho = g - 2 r - w (A v) (- w X a with ``xdp``, one value per pattern) and r = k - m mu
    # summed per fine level, rho per pattern (when ``ps`` has the patterns) or stored (when
    # ``rho_out`` has the rows); sums in row order, as bincount
    joint = xdp.size > 0
    for i in range(fi.size):
        j = fi[i]
        wi = w[i]
        p = mu[i]
        g = hj[j] * wi
        g *= 1.0 - p * 2.0
        r = _score(k[i], m[i], p)
        rho = g - r * 2.0
        if joint:
            rho -= wi * (zvj[j] + xdp[pat[i]])
        else:
            rho -= zvj[j] * wi
        pf[j] += rho
        qf[j] += r
        if ps.size:
            ps[pat[i]] += rho
        if rho_out.size:
            rho_out[i] = rho


def _joint_score_sums(fi: np.ndarray, pat: np.ndarray, cell: np.ndarray, hj: np.ndarray,
                      mu: np.ndarray, m: np.ndarray, gs: np.ndarray, gp: np.ndarray,
                      tab: np.ndarray, spw: np.ndarray) -> None:
    # at the joint mode: w = m mu (1 - mu) and g = h w (1 - 2 mu) summed per fine level (gs) and
    # per pattern (gp), w per fine level and pattern (tab, at each row's ``cell``) and per
    # pattern (spw)
    for i in range(fi.size):
        j = fi[i]
        c = pat[i]
        p = mu[i]
        wi = _weight(m[i], p)
        g = hj[j] * wi
        g *= 1.0 - p * 2.0
        gs[j] += g
        gp[c] += g
        tab[cell[i]] += wi
        spw[c] += wi


def _start_levels(eta: np.ndarray, k: np.ndarray, m: np.ndarray, fi: np.ndarray,
                  pat: np.ndarray, cell: np.ndarray, mu: np.ndarray, score: np.ndarray, w: np.ndarray,
                  sw: np.ndarray, ss: np.ndarray, tab: np.ndarray, sp: np.ndarray,
                  spw: np.ndarray) -> float:
    # _deviance_mu then _score_weights in one pass, the weights and scores also summed per fine
    # level (sw, ss: bincount(fi, w) and bincount(fi, score), in row order); with ``pat`` (the
    # joint mode) also the scores and weights per pattern (sp, spw) and the weights per fine
    # level and pattern (tab, as bincount(cell, w): ``cell`` numbers the level and pattern pairs).
    # It is _advance_levels with a step of zero (eta + 0 is eta)
    return _advance_levels(eta, np.zeros(sw.size), np.zeros(sp.size), fi, pat, cell, 0.0, k, m, mu,
                           score, w, sw, ss, tab, sp, spw)


def _advance_levels(eta: np.ndarray, dzf: np.ndarray, xdp: np.ndarray, fi: np.ndarray,
                    pat: np.ndarray, cell: np.ndarray, step: float, k: np.ndarray, m: np.ndarray, mu: np.ndarray,
                    score: np.ndarray, w: np.ndarray, sw: np.ndarray, ss: np.ndarray,
                    tab: np.ndarray, sp: np.ndarray, spw: np.ndarray) -> float:
    # _advance with zd = dzf[fi] (+ xdp[pat] in the joint mode: no gathered step vector), the
    # new weights and scores also summed as in _start_levels
    sw[:] = 0.0
    ss[:] = 0.0
    tab[:] = 0.0
    sp[:] = 0.0
    spw[:] = 0.0
    npat = sp.size
    total, logs, prod, count = 0.0, 0.0, 1.0, 0
    for i in range(eta.size):
        j = fi[i]
        if npat:
            c = pat[i]
            x = eta[i] + step * (dzf[j] + xdp[c])
        else:
            c = 0
            x = eta[i] + step * dzf[j]
        eta[i] = x
        e = math.exp(-abs(x))
        p = _logit_mean(x, e)
        mu[i] = p
        mi = m[i]
        sc = _score(k[i], mi, p)
        wi = _weight(mi, p)
        score[i] = sc
        w[i] = wi
        sw[j] += wi
        ss[j] += sc
        if npat:
            tab[cell[i]] += wi
            sp[c] += sc
            spw[c] += wi
        total, logs, prod, count = _add_row(x, e, mi, k[i], total, logs, prod, count)
    return _deviance_of(total, logs, prod)


def _trial_levels(eta: np.ndarray, dzf: np.ndarray, xdp: np.ndarray, fi: np.ndarray,
                  pat: np.ndarray, step: float, k: np.ndarray, m: np.ndarray) -> float:
    # _trial_deviance with zd = dzf[fi] (+ xdp[pat])
    total, logs, prod, count = 0.0, 0.0, 1.0, 0
    joint = xdp.size > 0
    for i in range(eta.size):
        if joint:
            x = eta[i] + step * (dzf[fi[i]] + xdp[pat[i]])
        else:
            x = eta[i] + step * dzf[fi[i]]
        e = math.exp(-abs(x))
        mi = m[i]
        total, logs, prod, count = _add_row(x, e, mi, k[i], total, logs, prod, count)
    return _deviance_of(total, logs, prod)


def _linear_levels(xbp: np.ndarray, pat: np.ndarray, lvl: np.ndarray, fi: np.ndarray,
                   eta: np.ndarray) -> None:
    # eta = xbp[pat] + lvl[fi]: X beta + A u from one value per pattern and per fine level
    for i in range(eta.size):
        eta[i] = xbp[pat[i]] + lvl[fi[i]]


if njit is not None:
    # the row step is inlined into each compiled loop (the loops stay one pass, as written out)
    _add_row = njit(cache=True, nogil=True, inline="always")(_add_row)
    _logit_mean = njit(cache=True, nogil=True, inline="always")(_logit_mean)
    _score = njit(cache=True, nogil=True, inline="always")(_score)
    _weight = njit(cache=True, nogil=True, inline="always")(_weight)
    _deviance_of = njit(cache=True, nogil=True, inline="always")(_deviance_of)
    _linear_levels = njit(cache=True, nogil=True)(_linear_levels)
    _start_levels = njit(cache=True, nogil=True)(_start_levels)
    _advance_levels = njit(cache=True, nogil=True)(_advance_levels)
    _trial_levels = njit(cache=True, nogil=True)(_trial_levels)
    _level_score_sums = njit(cache=True, nogil=True)(_level_score_sums)
    _level_gradient_sums = njit(cache=True, nogil=True)(_level_gradient_sums)
    _joint_score_sums = njit(cache=True, nogil=True)(_joint_score_sums)
    _deviance_mu = njit(cache=True, nogil=True)(_deviance_mu)
    _score_weights = njit(cache=True, nogil=True)(_score_weights)
    _trial_deviance = njit(cache=True, nogil=True)(_trial_deviance)
    _advance = njit(cache=True, nogil=True)(_advance)


def available() -> bool:
    """Whether numba is installed (the kernels are then compiled)."""
    return njit is not None


class CompiledLogitRows:
    """The row passes of :class:`evalmix.glmm.deviance.RowKernel` for the logit link, one
    compiled loop each (float64 rows; ``eta``, ``zd`` and the buffers contiguous)."""

    compiled = True

    def __init__(self, k: np.ndarray, m: np.ndarray):
        self.k = np.ascontiguousarray(k, dtype=float)
        self.m = np.ascontiguousarray(m, dtype=float)

    def deviance_mu_into(self, eta: np.ndarray, mu: np.ndarray) -> float:
        """``D(y, eta)``, writing ``mu`` into the given buffer."""
        return float(_deviance_mu(eta, self.k, self.m, mu))

    def score_weights_into(self, eta: np.ndarray, mu: np.ndarray, score: np.ndarray,
                           w: np.ndarray) -> None:
        """Score ``k - m mu`` and Fisher weight ``m mu (1 - mu)`` into the given buffers."""
        _score_weights(mu, self.k, self.m, score, w)

    def trial_deviance(self, eta: np.ndarray, zd: np.ndarray, step: float) -> float:
        """``D(y, eta + step zd)`` without forming the trial linear predictor (step halving)."""
        return float(_trial_deviance(eta, zd, float(step), self.k, self.m))

    def advance(self, eta: np.ndarray, zd: np.ndarray, step: float, mu: np.ndarray,
                score: np.ndarray, w: np.ndarray) -> float:
        """``eta += step zd`` in place, ``mu``, score and weight written into their buffers;
        returns ``D(y, eta)``."""
        return float(_advance(eta, zd, float(step), self.k, self.m, mu, score, w))

    def level_score_sums(self, fi: np.ndarray, hj: np.ndarray, w: np.ndarray, mu: np.ndarray,
                         nl: int) -> np.ndarray:
        """``bincount(fi, h w (1 - 2 mu))`` with ``h = hj[fi]`` (the leverages of a nested solver,
        one per fine level): the row weights of the gradient's adjoint, summed in one pass."""
        gs = np.zeros(nl)
        _level_score_sums(fi, hj, w, mu, gs)
        return gs

    def level_gradient_sums(self, fi: np.ndarray, hj: np.ndarray, zvj: np.ndarray,
                            w: np.ndarray, mu: np.ndarray, pat: np.ndarray | None, npat: int
                            ) -> tuple[np.ndarray, np.ndarray, np.ndarray | None,
                                       np.ndarray | None]:
        """The row sums of the exact gradients (:meth:`evalmix.glmm.deviance.LaplaceDeviance.grads`)
        in one pass: ``rho = g - 2 r - w zvj[fi]`` and ``r = k - m mu`` summed per fine level
        (``pf``, ``qf``), and ``rho`` summed per pattern of ``pat`` (``ps``) or, without ``pat``,
        ``rho`` itself; returns ``(pf, qf, ps, rho)``, the one not asked for None."""
        nl = hj.size
        pf, qf = np.zeros(nl), np.zeros(nl)
        none = np.zeros(0)
        if pat is None:
            ps, rho = none, np.empty(fi.size)
            _level_gradient_sums(fi, hj, zvj, none, w, mu, self.k, self.m,
                                 np.zeros(0, dtype=fi.dtype), pf, qf, ps, rho)
            return pf, qf, None, rho
        ps = np.zeros(npat)
        _level_gradient_sums(fi, hj, zvj, none, w, mu, self.k, self.m, pat, pf, qf, ps, none)
        return pf, qf, ps, None

    def joint_gradient_sums(self, fi: np.ndarray, pat: np.ndarray, cell: np.ndarray, npat: int,
                            hj: np.ndarray, mu: np.ndarray) -> tuple[np.ndarray, ...]:
        """At a joint (u, beta) mode with ``mu``: the weights ``w = m mu (1 - mu)`` and
        ``g = h w (1 - 2 mu)`` (``h = hj[fi]``) summed per fine level and per pattern: returns
        ``(gs, gp, tab, spw)``, g per level and per pattern, w per level and pattern (``tab``,
        one entry per ``cell`` number) and per pattern, in one pass over the rows."""
        nl = hj.size
        gs, gp, tab, spw = np.zeros(nl), np.zeros(npat), np.zeros(nl * npat), np.zeros(npat)
        _joint_score_sums(fi, pat, cell, hj, mu, self.m, gs, gp, tab, spw)
        return gs, gp, tab, spw

    def joint_rho_sums(self, fi: np.ndarray, pat: np.ndarray, hj: np.ndarray, zvj: np.ndarray,
                       xdp: np.ndarray, mu: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``rho = g - 2 r - w (zvj[fi] + xdp[pat])`` and ``r = k - m mu`` summed per fine level
        (the row sums of the joint mode's theta gradient), with ``w = m mu (1 - mu)``."""
        nl = hj.size
        pf, qf, none = np.zeros(nl), np.zeros(nl), np.zeros(0)
        w = self.m * mu * (1.0 - mu)
        _level_gradient_sums(fi, hj, zvj, xdp, w, mu, self.k, self.m, pat, pf, qf, none, none)
        return pf, qf

    def linear_levels(self, xbp: np.ndarray, pat: np.ndarray, lvl: np.ndarray,
                      fi: np.ndarray) -> np.ndarray:
        """``X beta + A u`` as a new array from ``xbp`` (``X beta`` per pattern of ``pat``) and
        ``lvl`` (``A u`` per fine level of ``fi``), in one pass over the rows."""
        eta = np.empty(fi.size)
        _linear_levels(xbp, pat, lvl, fi, eta)
        return eta

    def start_levels(self, eta: np.ndarray, fi: np.ndarray, pat: np.ndarray, cell: np.ndarray,
                     bufs: tuple[np.ndarray, ...]) -> float:
        """``D(y, eta)`` with ``mu``, score and weight written into ``bufs[:3]``, and summed into
        ``bufs[3:]`` (``sw``, ``ss``, ``tab``, ``sp``, ``spw``: weights and scores per fine level
        ``fi``, and where ``sp`` has one entry per pattern of ``pat``, weights per fine level and
        pattern (at each row's ``cell``), scores and weights per pattern; what a nested solver
        and a compressed X factor and solve with), in one pass over the rows."""
        return float(_start_levels(eta, self.k, self.m, fi, pat, cell, *bufs))

    def advance_levels(self, eta: np.ndarray, dzf: np.ndarray, xdp: np.ndarray, fi: np.ndarray,
                       pat: np.ndarray, cell: np.ndarray, step: float,
                       bufs: tuple[np.ndarray, ...]) -> float:
        """:meth:`advance` along ``zd = dzf[fi]`` (one value per fine level), plus ``xdp[pat]``
        (one per pattern) where ``xdp`` is not empty, with the sums of :meth:`start_levels`."""
        return float(_advance_levels(eta, dzf, xdp, fi, pat, cell, float(step), self.k, self.m,
                                     *bufs))

    def trial_levels(self, eta: np.ndarray, dzf: np.ndarray, xdp: np.ndarray, fi: np.ndarray,
                     pat: np.ndarray, step: float) -> float:
        """:meth:`trial_deviance` along the step of :meth:`advance_levels`."""
        return float(_trial_levels(eta, dzf, xdp, fi, pat, float(step), self.k, self.m))

"""Profile-likelihood confidence intervals for a GLMM (``confint(fit, method = "profile")``).

For a parameter ``p`` (a fixed effect, or a random-effect standard deviation), the profile
deviance ``dev_p(v)`` is the Laplace deviance minimised over every other parameter with ``p``
held at ``v``; lme4's signed square root ``zeta(v) = sign(v - p^) sqrt(dev_p(v) - dev(p^))``
is close to a standard normal quantile, and the interval ends are the solutions of
``zeta(v) = -+ z_{(1 + level) / 2}``. lme4 evaluates ``zeta`` on a grid and interpolates it with
splines; here each end is found by bracketing and Brent's method on ``zeta`` itself, so the ends
are those of the exact profile (lme4's spline ends differ from them by its interpolation error).

Standard deviations are profiled on their own scale, as lme4 does: for a scalar term the
standard deviation is ``theta``; for a vector term ``(1 + x|g)`` the row of the Cholesky factor
that gives one standard deviation is held at that length while its direction (the correlations)
and everything else is free. A standard deviation whose profile at 0 stays above ``-z`` has
lower end 0 (lme4 reports 0 too). Correlations are not profiled.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from scipy import stats
from scipy.optimize import brentq, minimize

from ..model import RandomTerm, term_lambdas
from .deviance import LaplaceDeviance
from .optimize import ProfiledFit

__all__ = ["profile_intervals", "sd_parameters"]


def sd_parameters(terms: list[RandomTerm], theta: np.ndarray) -> list[tuple[str, int, int, int, float]]:
    """One entry per random-effect standard deviation: lme4's name (``sd_(Intercept)|item``),
    term index, row ``c`` of the term's Cholesky factor, offset of the term in theta, and the
    value."""
    out = []
    pos = 0
    seen: dict[str, int] = {}
    for ti, (t, L) in enumerate(zip(terms, term_lambdas(terms, theta))):
        n = seen.get(t.group, 0)
        seen[t.group] = n + 1
        group = t.group if n == 0 else f"{t.group}.{n}"
        for c in range(t.nc):
            out.append((f"sd_{t.cnames[c]}|{group}", ti, c, pos, float(np.linalg.norm(L[c]))))
        pos += t.theta_size
    return out


class _Profile:
    """Profiles of one fit's deviance, warm-started from point to point."""

    def __init__(self, ld: LaplaceDeviance, terms: list, lower: np.ndarray, theta: np.ndarray,
                 beta: np.ndarray):
        self.ld, self.terms, self.lower = ld, terms, lower
        self.theta_hat, self.beta_hat = np.asarray(theta, float), np.asarray(beta, float)
        self.pf = ProfiledFit(ld, self.beta_hat, lower)
        self.theta_cur = self.theta_hat.copy()
        self.dev0 = self._minimise(self.theta_hat, np.ones(theta.size, bool), lambda x: x,
                                   lambda x, g: g)
        self.bounds = [(lo if np.isfinite(lo) else None, None) for lo in lower]

    def reset(self) -> None:
        """Start the next profile from the estimates."""
        self.pf.beta, self.pf.u, self.pf.free = self.beta_hat.copy(), None, None
        self.theta_cur = self.theta_hat.copy()

    def _minimise(self, x0: np.ndarray, mask: np.ndarray, to_theta: Callable[[np.ndarray], np.ndarray],
                  chain: Callable[[np.ndarray, np.ndarray], np.ndarray]) -> float:
        """Minimise the deviance over the free coordinates ``x`` (theta = to_theta(x))."""
        pf = self.pf
        if not mask.any():
            self.theta_cur = to_theta(x0)
            return pf.inner(self.theta_cur).dev

        def f(xf: np.ndarray) -> tuple[float, np.ndarray]:
            x = x0.copy()
            x[mask] = xf
            dev, g = pf.objective(to_theta(x))
            return dev, chain(x, g)[mask]

        bounds = [b for b, m in zip(self._bounds_for(x0), mask) if m]
        ctl = self.ld.control
        res = minimize(f, x0[mask], jac=True, method="L-BFGS-B", bounds=bounds,
                       options={"maxiter": ctl.maxiter, "ftol": ctl.profile_ftol, "gtol": ctl.gtol,
                                "maxcor": ctl.maxcor})
        x = x0.copy()
        x[mask] = res.x
        self.theta_cur = to_theta(x)  # warm start of the next point of the profile
        return float(res.fun)

    def _bounds_for(self, x0: np.ndarray) -> list[tuple[float | None, None]]:
        return [(lo if np.isfinite(lo) else None, None) for lo in self.lower]

    # ----------------------------------------------------------------------- fixed effect j
    def beta_dev(self, j: int, value: float, theta0: np.ndarray) -> float:
        pf = self.pf
        free = np.ones(self.beta_hat.size, bool)
        free[j] = False
        pf.free = free
        b = pf.beta.copy()
        b[j] = value
        pf.beta = b
        try:
            return self._minimise(theta0.copy(), np.ones(theta0.size, bool), lambda x: x,
                                  lambda x, g: g)
        finally:
            pf.free = None

    # --------------------------------------------------------------- standard deviation
    def sd_dev(self, ti: int, c: int, pos: int, value: float, theta0: np.ndarray) -> float:
        """Deviance with row ``c`` of term ``ti``'s Lambda held at length ``value``."""
        t = self.terms[ti]
        slots = [pos + s for s in t.lambda_row_slots(c)]
        mask = np.ones(theta0.size, bool)
        x0 = theta0.copy()
        if len(slots) == 1:  # a scalar row: the entry itself
            x0[slots[0]] = value
            mask[slots[0]] = False
            return self._minimise(x0, mask, lambda x: x, lambda x, g: g)
        # the row's direction is free, its length fixed: theta_row = value * x_row / |x_row|
        row = x0[slots]
        if np.linalg.norm(row) < 1e-8:
            row = np.zeros(len(slots))
            row[-1] = 1.0
        x0[slots] = row / np.linalg.norm(row)

        def to_theta(x: np.ndarray) -> np.ndarray:
            th = x.copy()
            r = x[slots]
            th[slots] = value * r / max(float(np.linalg.norm(r)), 1e-12)
            return th

        def chain(x: np.ndarray, g: np.ndarray) -> np.ndarray:
            out = g.copy()
            r = x[slots]
            n = max(float(np.linalg.norm(r)), 1e-12)
            u = r / n
            out[slots] = value / n * (g[slots] - u * (u @ g[slots]))
            return out

        return self._minimise(x0, mask, to_theta, chain)

    # ------------------------------------------------------------------------- intervals
    def interval(self, dev_at: Callable[[float], float], estimate: float, scale: float, z: float,
                 lower_limit: float | None = None) -> tuple[float, float]:
        """Ends of ``{v : |zeta(v)| <= z}``: secant steps from the estimate, bracketing and
        Brent's method when they misbehave."""

        def zeta(v: float) -> float:
            d = dev_at(v) - self.dev0
            return np.sign(v - estimate) * np.sqrt(max(d, 0.0))

        ends = []
        for direction in (-1.0, 1.0):
            self.reset()
            found = self._secant(zeta, estimate, direction, z, max(scale, 1e-3), lower_limit)
            if found is None:
                self.reset()
                found = self._bracket(zeta, estimate, direction, z, max(scale, 1e-3),
                                      lower_limit, self.ld.control.profile_xtol)
            ends.append(np.nan if found is None else float(found))
        return ends[0], ends[1]

    @staticmethod
    def _secant(zeta: Callable[[float], float], estimate: float, direction: float, z: float, step: float,
                lower_limit: float | None, tol: float = 1e-6, maxit: int = 10) -> float | None:
        """``zeta`` is close to linear: secant steps from the estimate usually land in 3-5
        evaluations. None when they misbehave (the caller then brackets)."""
        target = direction * z
        v0, z0 = estimate, 0.0
        v1 = estimate + direction * step
        for _ in range(maxit):
            if lower_limit is not None and v1 <= lower_limit:
                zl = zeta(lower_limit)
                if direction * zl < z:  # the profile never reaches -z above the limit
                    return lower_limit
                return None
            z1 = zeta(v1)
            if not np.isfinite(z1):
                return None
            if abs(z1 - target) < tol:
                return v1
            if z1 == z0 or (v1 - estimate) * direction <= 0:
                return None
            v2 = v1 + (target - z1) * (v1 - v0) / (z1 - z0)
            if (v2 - estimate) * direction <= 0 or abs(v2 - v1) > 4 * abs(v1 - estimate):
                return None
            v0, z0, v1 = v1, z1, v2
        return None

    @staticmethod
    def _bracket(zeta: Callable[[float], float], estimate: float, direction: float, z: float, step: float,
                 lower_limit: float | None, xtol: float = 1e-7) -> float | None:
        """Step outward until ``|zeta| >= z``, then Brent's method in the bracket."""
        target = direction * z
        prev = estimate
        for _ in range(40):
            v = prev + direction * step
            if lower_limit is not None and v <= lower_limit:
                v = lower_limit
                zv = zeta(v) if v != estimate else 0.0
                if direction * zv < z:
                    return lower_limit
                return brentq(lambda s: zeta(s) - target, v, prev, xtol=xtol)
            zv = zeta(v)
            if direction * zv >= z:
                a, b = (v, prev) if direction < 0 else (prev, v)
                return brentq(lambda s: zeta(s) - target, a, b, xtol=xtol)
            prev = v
            step *= 1.6
        return None


def profile_intervals(ld: LaplaceDeviance, terms: list[RandomTerm], lower: np.ndarray, theta: np.ndarray,
                      beta: np.ndarray, beta_names: list[str], beta_se: np.ndarray,
                      level: float = 0.95, which: str = "all"
                      ) -> list[tuple[str, float, float, float]]:
    """``(term, estimate, conf_low, conf_high)`` for the random-effect SDs and fixed effects.

    ``which``: ``"all"``, ``"beta_"`` (fixed effects only) or ``"theta_"`` (SDs only), as
    lme4's ``parm`` shortcuts.
    """
    z = float(stats.norm.isf((1 - level) / 2))
    prof = _Profile(ld, terms, lower, theta, beta)
    rows: list[tuple[str, float, float, float]] = []
    if which in ("all", "theta_"):
        for name, ti, c, pos, sd in sd_parameters(terms, theta):
            prof.reset()
            scale = max(0.5 * sd, 0.1)
            lo, hi = prof.interval(lambda v: prof.sd_dev(ti, c, pos, v, prof.theta_cur),
                                   sd, scale, z, lower_limit=0.0)
            rows.append((name, sd, lo, hi))
    if which in ("all", "beta_"):
        for j, name in enumerate(beta_names):
            prof.reset()
            lo, hi = prof.interval(lambda v: prof.beta_dev(j, v, prof.theta_cur), beta[j],
                                   z * beta_se[j], z)
            rows.append((name, float(beta[j]), lo, hi))
    return rows


def deviance_of(fit: Any) -> tuple[LaplaceDeviance, list, np.ndarray, np.ndarray]:
    """The deviance function a fit was maximised on (its limit problem when separated, the
    penalised one with a prior), its terms, the kept fixed-effect columns and their estimates."""
    from .prior import PenalizedDeviance
    from ..mixed.separation import limit_problem

    if getattr(fit, "nagq", 1) != 1:
        raise ValueError(f"profiles and the bootstrap need the Laplace fit (nAGQ = 1); this fit "
                         f"has nAGQ = {fit.nagq}")
    if fit._model.design is None:
        fit._model.require_data("confint(method='profile' or 'boot')")
    design = fit._model.design
    sep = fit.separation
    off = getattr(design, "offset", None)
    if sep is not None:
        X, k, m, terms = limit_problem(design, sep)
        keep = np.asarray(sep.keep)
        beta = sep.beta_limit[keep]
        off = None if off is None else off[~sep.pooled_rows]
    else:
        X, k, m, terms = design.X, design.k, design.m, design.terms
        keep = np.arange(len(fit.fixef))
        beta = fit.fixef.to_numpy()
    extra = {"offset": off, "link": fit.link, "control": getattr(fit, "control", None)}
    ld: LaplaceDeviance
    if fit.fixef_prior is not None:
        from .prior import NormalPrior

        pr = fit.fixef_prior
        prior = NormalPrior(pr.mean[keep], pr.sd[keep], tuple(pr.names[i] for i in keep))
        ld = PenalizedDeviance(X, k, m, terms, prior=prior, **extra)
    else:
        ld = LaplaceDeviance(X, k, m, terms, **extra)
    return ld, terms, keep, beta

"""A normal prior on the fixed effects: the penalised Laplace deviance of ``blme::bglmer``.

``bglmer(..., fixef.prior = normal(sd = s), cov.prior = NULL)`` maximises the Laplace likelihood
times a ``N(0, diag(s^2))`` density for ``beta``: it minimises

    dev(theta, beta) + beta' S^-1 beta + p log(2 pi) + log det S

(blme's "prior deviance" is the last three terms). The prior keeps every estimate finite under
separation; with ``sd = 2.5`` on logit-scale coefficients it is the weakly informative default of
Gelman et al. (2008), which blme pairs with ``sd = 10`` for the intercept in ``normal()``.
blme reports ``logLik`` (and AIC/BIC) from ``dev`` alone, at the penalised estimates, and its
standard errors from the Hessian of the penalised objective; evalmix does the same.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Mapping, Sequence, TypeAlias

import numpy as np

from ..core.errors import FormulaError
from .deviance import Evaluation, LaplaceDeviance

__all__ = ["NormalPrior", "parse_fixef_prior", "PenalizedDeviance"]


@dataclass(frozen=True)
class NormalPrior:
    """Independent normal priors on the fixed effects, ``beta_j ~ N(mean_j, sd_j^2)``."""

    mean: np.ndarray
    sd: np.ndarray
    names: tuple[str, ...]

    def penalty(self, beta: np.ndarray) -> float:
        """``(beta - mean)' S^-1 (beta - mean)``."""
        z = (beta - self.mean) / self.sd
        return float(z @ z)

    def gradient(self, beta: np.ndarray) -> np.ndarray:
        return 2.0 * (beta - self.mean) / self.sd**2

    @property
    def precision(self) -> np.ndarray:
        return np.diag(1.0 / self.sd**2)

    @property
    def constant(self) -> float:
        """``p log(2 pi) + log det S``: with the penalty, minus twice the log prior density."""
        return float(self.sd.size * np.log(2 * np.pi) + 2.0 * np.log(self.sd).sum())

    def describe(self) -> str:
        parts = ", ".join(f"{n}: {s:g}" for n, s in zip(self.names, self.sd))
        return f"normal(mean = 0, sd = [{parts}])" if not self.mean.any() else (
            f"normal(mean = {list(self.mean)}, sd = [{parts}])")


_NUM = r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?"


def _numbers(text: str) -> list[float]:
    return [float(v) for v in re.findall(_NUM, text)]


# how fixef_prior= is written: "normal(0, 2.5)", an sd, sds in column order, or {coefficient: sd}
FixefPriorSpec: TypeAlias = "str | float | Sequence[float] | np.ndarray | Mapping[str, float]"


def parse_fixef_prior(spec: FixefPriorSpec, names: Sequence[str]) -> NormalPrior:
    """Build a :class:`NormalPrior` for the fixed effects ``names`` from a user specification.

    Accepted forms (blme's rules for expanding ``sd`` to the ``p`` coefficients):

    - ``"normal(0, 2.5)"``: mean 0, sd 2.5 for every coefficient (``normal(sd = 2.5)``);
    - ``"normal"`` or ``"normal()"``: blme's default, ``sd = c(10, 2.5)``;
    - ``"normal(sd = c(10, 2.5))"`` / ``"normal(sd = [10, 2.5])"``, a number, or a list of sds:
      one value for all; two values (and ``p > 2``): the first for the first coefficient (the
      intercept), the second for the rest; otherwise recycled to ``p`` values in column order;
    - a mapping ``{"(Intercept)": 10, "modelb": 1}``: coefficients by R's names (``"Intercept"``
      also names the intercept), the entry ``""`` (or ``"default"``) for the others
      (``normal(sd = c(2.5, "(Intercept)" = 10))``).

    Examples
    --------
    >>> parse_fixef_prior("normal(0, 2.5)", ["Intercept", "x"]).sd.tolist()
    [2.5, 2.5]
    >>> parse_fixef_prior("normal(sd = c(10, 2.5))", ["Intercept", "a", "b"]).sd.tolist()
    [10.0, 2.5, 2.5]
    """
    names = list(names)
    p = len(names)
    mean = np.zeros(p)
    if isinstance(spec, Mapping):
        default = spec.get("", spec.get("default"))
        unknown = [k for k in spec if k not in ("", "default") and _canon(k) not in
                   [_canon(n) for n in names]]
        if unknown:
            raise FormulaError(f"fixef_prior names unknown fixed effect(s) {unknown}; the fixed "
                               f"effects are {names}")
        canon = {_canon(k): float(v) for k, v in spec.items() if k not in ("", "default")}
        if default is None and len(canon) < p:
            missing = [n for n in names if _canon(n) not in canon]
            raise FormulaError(f"fixef_prior gives no sd for {missing}: add an entry '' for the "
                               "other coefficients")
        sd = np.array([canon.get(_canon(n), default) for n in names], dtype=float)
        return _checked(mean, sd, names)
    if isinstance(spec, (int, float)):
        return _checked(mean, _expand([float(spec)], p), names)
    if isinstance(spec, (list, tuple, np.ndarray)):
        return _checked(mean, _expand([float(v) for v in spec], p), names)
    if not isinstance(spec, str):
        raise FormulaError(f"fixef_prior must be a string such as 'normal(0, 2.5)', a number, a "
                           f"list of sds or a mapping; got {type(spec).__name__}")
    text = spec.strip()
    m = re.fullmatch(r"normal\s*(?:\((.*)\))?", text, flags=re.S)
    if not m:
        raise FormulaError(f"fixef_prior {spec!r} is not understood: write 'normal(0, 2.5)' "
                           "(mean 0, sd 2.5 for every coefficient) or 'normal(sd = c(10, 2.5))'")
    args = (m.group(1) or "").strip()
    if not args:  # blme's default normal(sd = c(10, 2.5)); one coefficient gets 10
        return _checked(mean, _expand([10.0, 2.5][:max(p, 1)], p), names)
    if "cov" in args or "common.scale" in args:
        raise FormulaError("fixef_prior: only independent normal priors (sd =) are supported")
    sd_m = re.search(r"sd\s*=\s*(?:c\s*\(|\[)?([^)\]]*)", args)
    if sd_m:
        sds = _numbers(sd_m.group(1))
        mean_m = re.search(r"mean\s*=\s*(" + _NUM + ")", args)
        if mean_m:
            mean[:] = float(mean_m.group(1))
    else:
        vals = _numbers(args)
        if len(vals) != 2:
            raise FormulaError(f"fixef_prior {spec!r}: write normal(mean, sd), e.g. "
                               "'normal(0, 2.5)', or normal(sd = c(...))")
        mean[:] = vals[0]
        sds = [vals[1]]
    if not sds:
        raise FormulaError(f"fixef_prior {spec!r} gives no standard deviation")
    return _checked(mean, _expand(sds, p), names)


def _canon(name: str) -> str:
    return "Intercept" if name in ("(Intercept)", "Intercept") else name


def _expand(sds: list[float], p: int) -> np.ndarray:
    """blme's expansion of ``sd`` to ``p`` coefficients."""
    if len(sds) == 1:
        return np.full(p, sds[0])
    if len(sds) == 2 and p > 2:
        return np.array([sds[0]] + [sds[1]] * (p - 1))
    if len(sds) > p:  # blme warns and keeps the first p
        import warnings

        from ..core.errors import FitWarning

        warnings.warn(f"fixef_prior gives {len(sds)} sds for {p} fixed effect(s): using the "
                      f"first {p}", FitWarning, stacklevel=4)
    return np.resize(np.array(sds, dtype=float), p)


def _checked(mean: np.ndarray, sd: np.ndarray, names: list[str]) -> NormalPrior:
    if not np.all(np.isfinite(sd)) or np.any(sd <= 0):
        raise FormulaError(f"fixef_prior standard deviations must be positive and finite, got "
                           f"{dict(zip(names, sd.tolist()))}")
    return NormalPrior(mean=mean, sd=sd, names=tuple(names))


class PenalizedDeviance(LaplaceDeviance):
    """The Laplace deviance plus ``(beta - mean)' S^-1 (beta - mean)`` (constant left out)."""

    def __init__(self, *args: Any, prior: NormalPrior, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.prior = prior

    def pirls(self, theta: np.ndarray, beta: np.ndarray, u0: np.ndarray | None = None,
              tol: float | None = None, maxit: int | None = None) -> Evaluation:
        ev = super().pirls(theta, beta, u0, tol, maxit)
        ev.pdev += self.prior.penalty(ev.beta)
        return ev

    def grads(self, ev: Evaluation, theta: bool = True) -> tuple[np.ndarray | None, np.ndarray]:
        gt, gb = super().grads(ev, theta)
        return gt, gb + self.prior.gradient(ev.beta)

    def rx(self, ev: Evaluation) -> np.ndarray:
        return super().rx(ev) + self.prior.precision

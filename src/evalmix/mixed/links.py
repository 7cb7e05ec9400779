"""Binomial link functions: the inverse link and its derivative, for every engine and for
marginal means (one owner; R's ``binomial(link = ...)``)."""

from __future__ import annotations

import numpy as np
from scipy import special

__all__ = ["LINKS", "dlog_mu_eta", "inverse_link", "binomial_variance", "log_probabilities", "mu_eta"]

LINKS = ("logit", "probit", "cloglog")


def _check(link: str) -> None:
    if link not in LINKS and link != "identity":
        raise ValueError(f"link must be one of {LINKS}, not {link!r}")


def inverse_link(link: str, eta: np.ndarray) -> np.ndarray:
    """``mu = g^-1(eta)``: ``plogis``, ``pnorm`` or ``1 - exp(-exp(eta))``.

    Examples
    --------
    >>> float(inverse_link("probit", 0.0)), round(float(inverse_link("cloglog", 0.0)), 4)
    (0.5, 0.6321)
    """
    _check(link)
    eta = np.asarray(eta, dtype=float)
    if link == "logit":
        return special.expit(eta)
    if link == "probit":
        return special.ndtr(eta)
    if link == "cloglog":
        return -np.expm1(-np.exp(np.minimum(eta, 700.0)))
    return eta


def mu_eta(link: str, eta: np.ndarray) -> np.ndarray:
    """``d mu / d eta`` (the delta-method factor of a back-transformed SE).

    Examples
    --------
    >>> float(mu_eta("logit", 0.0)), round(float(mu_eta("probit", 0.0)), 4)
    (0.25, 0.3989)
    """
    _check(link)
    eta = np.asarray(eta, dtype=float)
    if link == "logit":
        p = special.expit(eta)
        return p * (1.0 - p)
    if link == "probit":
        return np.exp(-0.5 * eta**2) / np.sqrt(2.0 * np.pi)
    if link == "cloglog":
        e = np.minimum(eta, 700.0)
        return np.exp(e - np.exp(e))
    return np.ones_like(eta)


def dlog_mu_eta(link: str, eta: np.ndarray) -> np.ndarray:
    """``d log(mu') / d eta = mu'' / mu'`` (the curvature of the inverse link).

    Examples
    --------
    >>> float(dlog_mu_eta("probit", 1.5)), float(dlog_mu_eta("cloglog", 0.0))
    (-1.5, 0.0)
    """
    _check(link)
    eta = np.asarray(eta, dtype=float)
    if link == "logit":
        return 1.0 - 2.0 * special.expit(eta)
    if link == "probit":
        return -eta
    if link == "cloglog":
        return 1.0 - np.exp(np.minimum(eta, 700.0))
    return np.zeros_like(eta)


def log_probabilities(link: str, eta: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(log mu, log(1 - mu))`` without cancellation or underflow to ``-inf``.

    Examples
    --------
    >>> lm, l1m = log_probabilities("cloglog", np.array([-800.0]))
    >>> float(lm[0]), float(l1m[0])
    (-800.0, -0.0)
    """
    _check(link)
    eta = np.asarray(eta, dtype=float)
    if link == "logit":
        return -np.logaddexp(0.0, -eta), -np.logaddexp(0.0, eta)
    if link == "probit":
        return special.log_ndtr(eta), special.log_ndtr(-eta)
    if link == "cloglog":
        ee = np.exp(np.minimum(eta, 700.0))
        small = ee < 1e-8  # log(1 - exp(-x)) = log(x) - x/2 + O(x^2)
        with np.errstate(divide="ignore"):
            lmu = np.where(small, eta - ee / 2, np.log(-np.expm1(-np.maximum(ee, 1e-300))))
        return lmu, -ee
    raise ValueError("the identity link has no binomial probabilities")


def binomial_variance(link: str, eta: np.ndarray) -> np.ndarray:
    """``mu (1 - mu)`` with ``1 - mu`` computed directly (not as ``1 - mu``, which rounds to 0
    for a cloglog ``eta`` above about 3.6 while ``mu'`` is still 1e-15).

    Examples
    --------
    >>> float(binomial_variance("cloglog", 4.0)) > 0
    True
    """
    _check(link)
    eta = np.asarray(eta, dtype=float)
    if link == "cloglog":
        ee = np.exp(np.minimum(eta, 700.0))
        return -np.expm1(-ee) * np.exp(-ee)
    return inverse_link(link, eta) * inverse_link(link, -eta)

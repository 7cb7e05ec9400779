"""Binomial link functions: the inverse link and its derivative, for every engine and for
marginal means (one owner; R's ``binomial(link = ...)``)."""

from __future__ import annotations

import numpy as np
from scipy import special

__all__ = ["LINKS", "inverse_link", "mu_eta"]

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

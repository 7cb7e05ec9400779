"""A compiled log density for the common model class, sampled by nutpie without Python per step.

For the twins' models without an offset (the binomial-logit ones of
:func:`evalmix.bayes.model.build_model`; the Gaussian, beta, beta-binomial and cumulative logit
and probit ones of :func:`evalmix.bayes.families.build_family_model`), with random terms of one
column (``(1|g)``, ``(1|a:b)``, ``(0 + x|g)``, nested intercepts), several (``(1 + x|g)``, an
LKJ prior on their Cholesky factor: :mod:`evalmix.bayes._fused_terms`) or both, the log density
of the PyMC model and its gradient are evaluated by one hand-written numba kernel
(:mod:`evalmix.bayes._fused_kernel`, each family's row pass in
:mod:`evalmix.bayes._fused_families`): the same parameters, priors, transforms and likelihood, so
the same posterior (``tests/bayes/test_bayes.py``, ``test_fused_correlated.py`` and
``test_fused_families.py`` check the log density and gradient against PyMC's at random points).
nutpie calls the kernel through a C pointer from its worker threads, so the chains run in parallel
instead of taking turns on the Python interpreter, and the kernel is compiled once per
installation (numba's disk cache) instead of once per fit.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import math
from typing import TYPE_CHECKING, Any

import numpy as np
from scipy.special import gammaln

from .model import BayesModel
from .priors import Prior

if TYPE_CHECKING:
    import arviz as az

    from ._nutpie_model import KernelModel

__all__ = ["FusedDensity", "fused_available", "fused_reason"]

_CODES = {"normal": 0, "student_t": 1, "cauchy": 2, "laplace": 3, "half_normal": 4,
          "half_student_t": 5, "half_cauchy": 6, "exponential": 7}
_LOG_2 = math.log(2.0)
# the kernel's arrays, in the order of its arguments and of the header's address slots 8...
_ARRAYS = ("k", "m", "mi", "Xu", "cell", "T", "idx", "Z", "terms", "pri", "WT", "sub", "subkey", "mstart")
# the correlated terms' arrays (header slots 27-33, after the 4 sizes and the flag of slots 22-26)
_CORR_ARRAYS = ("ct", "cpri", "clkj", "cmap", "cxb", "cidx", "cZ")
ROW_PASSES = ("blocked", "grouped", "factored", "rows")  # fastest first
HEADER = 41  # _fused_cabi.HEADER: 8 sizes and offsets, 14 addresses, 4 more sizes, a flag (slots 0-26),
# 7 addresses of the correlated terms' arrays and their number and columns (27-35), then the family
# slots 36-40: its code, the offset and number of its parameters, the addresses of _FAMILY_ARRAYS
# (its parameters' prior row; a constant and the thresholds' shift)
_FAMILY_ARRAYS = ("fpri", "fc")
# family codes of evalmix.bayes._fused_families (0: the binomial-logit passes of _fused_kernel)
_FAMILY_CODES = {("binomial", "logit"): 0, ("gaussian", "identity"): 1, ("beta", "logit"): 2,
                 ("betabinomial", "logit"): 3, ("cumulative", "logit"): 4, ("cumulative", "probit"): 5}
# each family's own free variable (after the linear predictor's in the kernel's vector)
_FAMILY_RVS = {"gaussian": "sigma", "beta": "phi", "betabinomial": "phi", "cumulative": "thresholds_c"}


def fused_available() -> bool:
    """Whether nutpie and numba are installed (the compiled kernel can run)."""
    return all(importlib.util.find_spec(n) is not None for n in ("nutpie", "numba"))


def prior_row(p: Prior) -> np.ndarray:
    """``(code, p0, p1, p2, log normalising constant)`` of a scalar prior for the kernel."""
    kw = p.kwargs
    half = _LOG_2 if p.family.startswith("half_") else 0.0
    if p.family in ("normal", "half_normal"):
        mu, s = kw.get("mu", 0.0), kw["sigma"]
        return np.array([_CODES[p.family], mu, s, 0.0, half - math.log(s) - 0.5 * math.log(2 * math.pi)])
    if p.family in ("student_t", "half_student_t"):
        nu, mu, s = kw["nu"], kw.get("mu", 0.0), kw["sigma"]
        c = gammaln((nu + 1) / 2) - gammaln(nu / 2) - 0.5 * math.log(nu * math.pi) - math.log(s)
        return np.array([_CODES[p.family], nu, mu, s, half + c])
    if p.family in ("cauchy", "half_cauchy"):
        a, b = kw.get("alpha", 0.0), kw["beta"]
        return np.array([_CODES[p.family], a, b, 0.0, half - math.log(math.pi * b)])
    if p.family == "laplace":
        return np.array([_CODES["laplace"], kw["mu"], kw["b"], 0.0, -math.log(2 * kw["b"])])
    if p.family == "exponential":
        return np.array([_CODES["exponential"], kw["lam"], 0.0, 0.0, math.log(kw["lam"])])
    raise ValueError(f"no kernel form for prior {p}")


def _support_point(p: Prior) -> float:
    """PyMC's starting value of a prior (its location, or a typical value of a positive one)."""
    kw = p.kwargs
    if p.family == "exponential":
        return 1.0 / kw["lam"]
    for key in ("mu", "alpha"):
        if key in kw:
            return kw[key]
    return kw.get("sigma", kw.get("beta", 1.0))


def fused_reason(bm: BayesModel) -> str | None:
    """Why ``bm`` cannot use the compiled kernel, or None when it can."""
    if (bm.family, bm.link) not in _FAMILY_CODES:
        return f"the {bm.family} likelihood with the {bm.link} link (the kernel has no such row pass)"
    if bm.basis is None:
        return "the model records no fixed-effects basis"
    if bm.design.offset is not None:
        return "an offset"
    names = {v.name for v in bm.model.free_RVs}
    if names != set(FusedDensity.expected_free_rvs(bm)):
        return f"unexpected free variables {sorted(names)}"
    return None


def _factored(arrays: dict[str, np.ndarray]) -> bool:
    """Whether the kernel's exp-free factored form fits the rows: unit random-effect columns and
    small integer trials (``mi[0] = -1`` otherwise)."""
    return bool(arrays["mi"][0] >= 0 and np.all(arrays["terms"][:, 5] == 1))


def _group_rows(arrays: dict[str, np.ndarray]) -> tuple[int, bool]:
    """Sort the rows by the levels of the random term with the most levels, for the kernel's
    grouped row pass; returns that term's index (-1 when the grouping does not pay) and whether
    the rows are blocked (the kernel's SIMD pass).

    A row's linear predictor is the effect of its level of that term plus the part shared by its
    combination of the other terms' levels and the fixed-effects cell (``sub``; the combinations
    in ``subkey``, sorted by those levels then the cell; each level's first row in ``mstart``).
    The grouping pays when the combinations are at most half the rows (crossed designs: models x
    prompts; runs nested in items: models x items), and needs the kernel's factored form (unit
    random-effect columns, small integer trials).  Blocked: every row has the same trials and each
    level's rows are consecutive combinations (at most 1000), as in a complete design.
    """
    idx, n = arrays["idx"], len(arrays["k"])
    nt = idx.shape[0]
    arrays.update(sub=np.zeros(n, np.int64), subkey=np.zeros((0, 1 + nt), np.int64),
                  mstart=np.zeros(1, np.int64))
    if not _factored(arrays) or nt == 0 or n == 0:
        return -1, False
    major = int(np.argmax(arrays["terms"][:, 2]))
    keys = np.column_stack([idx.T, arrays["cell"]])
    keys[:, major] = 0
    subkey, sub = np.unique(keys, axis=0, return_inverse=True)
    if len(subkey) > n // 2:
        return -1, False
    sub = sub.ravel().astype(np.int64)
    order = np.lexsort((sub, idx[major]))  # by level of the major term, then combination
    for key in ("k", "m", "mi", "cell"):
        arrays[key] = np.ascontiguousarray(arrays[key][order])
    arrays["sub"] = np.ascontiguousarray(sub[order])
    arrays["idx"] = np.ascontiguousarray(idx[:, order])
    arrays["Z"] = np.ascontiguousarray(arrays["Z"][:, order])
    counts = np.bincount(idx[major], minlength=int(arrays["terms"][major, 2]))
    mstart = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
    arrays["mstart"] = mstart
    arrays["subkey"] = np.ascontiguousarray(subkey, np.int64)
    # blocked: within each level, sub = first + 0, 1, 2, ... (its rows' offsets from the level's start)
    first = np.repeat(arrays["sub"][mstart[:-1][counts > 0]], counts[counts > 0])
    blocked = (bool(np.all(arrays["mi"] == arrays["mi"][0])) and int(counts.max()) <= 1000
               and np.array_equal(arrays["sub"] - first, np.arange(n) - np.repeat(mstart[:-1], counts)))
    return major, blocked


def _family_arrays(bm: BayesModel, fam: int, priors: dict[str, Prior]) -> dict[str, np.ndarray]:
    """The arrays of the family's row pass (:func:`evalmix.bayes._fused_families.family_loglik`):
    its response in ``k`` (the sampled scale), no integer trials (its own row pass), the prior row
    of its parameters and its constants: the sum of the beta-binomial's log binomial
    coefficients, the thresholds' shift ``T' xbar`` per fixed coordinate."""
    basis = bm.fixed_basis
    p = basis["T"].shape[0]
    fc = np.zeros(1 + p)
    if not fam:
        return {"fpri": np.zeros((1, 5)), "fc": fc}
    design: Any = bm.design
    y = np.array(design.y, float)  # a writable copy: the kernel's type for every family
    key = {"gaussian": "sigma", "cumulative": "threshold"}.get(bm.family, "phi")
    if bm.family == "gaussian":
        y = (y - design.y_loc) / design.y_scale
    if bm.family == "betabinomial":
        fc[0] = float(np.sum(design.log_binom_rows))
    if bm.family == "cumulative" and p:
        fc[1:] = basis["T"].T @ basis["xbar"]
    return {"k": np.ascontiguousarray(y), "mi": np.full(len(y), -1, np.int64),
            "fpri": prior_row(priors[key])[None, :], "fc": fc}


@dataclasses.dataclass
class FusedDensity:
    """The log density of a :class:`BayesModel` on a flat unconstrained vector.

    Layout of the vector: ``Intercept_c`` (when the model has an intercept), the fixed-effect
    coordinates ``theta`` (``b_qr``, or ``b`` itself without the QR basis), then for each random
    term its scale (``log sd`` when centred, the signed scale ``s`` when not) and its effects
    (``u`` when centred, ``z`` when not).
    """

    bm: BayesModel
    blocks: list[tuple[str, str, int, int]]  # (model variable, stored name, offset, size)
    arrays: dict[str, np.ndarray]
    header: np.ndarray
    n_dim: int
    # shapes of the blocks that are not scalars or vectors along their dims (value-variable names)
    shapes: dict[str, tuple[int, ...]] = dataclasses.field(default_factory=dict)

    @staticmethod
    def expected_free_rvs(bm: BayesModel) -> list[str]:
        p = bm.fixed_basis["T"].shape[0]
        names = ["Intercept_c"] if bm.intercept_col is not None else []
        if p:
            qr = not np.array_equal(bm.fixed_basis["T"], np.eye(p))
            rvs = {v.name for v in bm.model.free_RVs}
            names += ["b_qr"] if qr else (["b"] if "b" in rvs else [f"b[{i}]" for i in range(p)])
        for pl in bm.plans:
            if pl.term.nc > 1:
                continue
            names += ([f"sd({pl.label})", f"({pl.label})"] if pl.centered
                      else [f"s({pl.label})", f"z({pl.label})"])
        names += _corr_free_rvs(bm)
        if bm.family in _FAMILY_RVS:
            names.append(_FAMILY_RVS[bm.family])
        return names

    @classmethod
    def from_model(cls, bm: BayesModel) -> FusedDensity:
        reason = fused_reason(bm)
        if reason:
            raise ValueError(f"the compiled kernel does not cover this model: {reason}")
        model, design, basis = bm.model, bm.design, bm.fixed_basis
        priors = sampled_priors(bm)
        value_name = {v.name: model.rvs_to_values[v].name for v in model.free_RVs}
        Xt, T = np.ascontiguousarray(basis["Xt"], float), np.ascontiguousarray(basis["T"], float)
        n, p = Xt.shape
        blocks: list[tuple[str, str, int, int]] = []
        off = 0

        def add(name: str, size: int) -> int:
            nonlocal off
            blocks.append((name, value_name.get(name, name), off, size))
            off += size
            return off - size

        i_int = add("Intercept_c", 1) if bm.intercept_col is not None else -1
        names = cls.expected_free_rvs(bm)
        theta_name = next((nm for nm in names if nm.startswith("b")), "b_qr")
        o_th = off
        if p and theta_name.startswith("b["):
            for i in range(p):
                add(f"b[{i}]", 1)
        elif p:
            add(theta_name, p)
        scalar = _scalar_plans(bm)
        terms = np.zeros((len(scalar), 7), np.int64)  # _fused_kernel.TERM_FIELDS per term
        idx = np.zeros((len(scalar), n), np.int64)
        Z = np.ones((len(scalar), n))
        rows = [prior_row(priors[bm.intercept_name]) if i_int >= 0 else np.zeros(5)]
        coef = [c for j, c in enumerate(bm.fixed_names) if j != bm.intercept_col]
        rows += [prior_row(priors[c]) for c in coef]
        wt_row = 0  # each holder's first row in WT (the holders' rows stacked in plan order)
        for t_i, pl in enumerate(scalar):
            t = pl.term
            sd_prior = priors[f"sd|{t.group}|{t.cnames[0]}"]
            rows.append(prior_row(sd_prior if pl.centered else sd_prior.symmetric()))
            o_s = add(f"sd({pl.label})" if pl.centered else f"s({pl.label})", 1)
            o_v = add(f"({pl.label})" if pl.centered else f"z({pl.label})", t.nl)
            idx[t_i] = t.index
            Z[t_i] = t.Z[:, 0]
            terms[t_i] = (pl.centered, pl.absorbs_intercept, t.nl, o_s, o_v, bool(np.all(t.Z == 1.0)),
                          0 if pl.level_x is None else 1 + wt_row)
            wt_row += 0 if pl.level_x is None else t.nl
        add_int = i_int >= 0 and not any(pl.absorbs_intercept for pl in bm.plans)
        m = np.ascontiguousarray(design.m, float)
        # integer trials of at most 64 let the kernel sum log(1 + e^-|eta|) as one log of a product
        mi = m.astype(np.int64) if np.all((m == np.round(m)) & (m >= 1) & (m <= 64)) else np.full(n, -1)
        if p:
            Xu, cell = np.unique(Xt, axis=0, return_inverse=True)
        else:  # intercept-only fixed part: one cell
            Xu, cell = np.zeros((1, 0)), np.zeros(n, np.int64)
        arrays = {"k": np.ascontiguousarray(design.k, float), "m": m, "mi": mi,
                  "Xu": np.ascontiguousarray(Xu, float), "cell": cell.astype(np.int64).ravel(),
                  "T": T, "idx": idx, "Z": Z, "terms": terms, "pri": np.vstack(rows),
                  # the holders' levels' values of the fixed columns they hold (no rows: none held)
                  "WT": np.ascontiguousarray(basis.get("WT", np.zeros((0, p))), float)}
        _corr_arrays(bm, arrays, add)
        fam, o_f, nf = _FAMILY_CODES[(bm.family, bm.link)], off, 0
        if fam:  # the family's own parameters last (after the correlated terms')
            nf = len(getattr(design, "levels", ())) - 1 if bm.family == "cumulative" else 1
            add(_FAMILY_RVS[bm.family], nf)
        arrays.update(_family_arrays(bm, fam, priors))
        if len(arrays["ct"]):  # the row-by-row pass of _fused_families (no grouping, no product form)
            arrays["mi"] = np.full(n, -1, np.int64)
        major, blocked = _group_rows(arrays)
        header = np.zeros(HEADER, np.int64)
        header[:8] = (n, p, len(scalar), off, i_int, add_int, o_th, len(arrays["Xu"]))
        for slot, key in enumerate(_ARRAYS, start=8):
            header[slot] = arrays[key].ctypes.data
        header[22:27] = (len(arrays["WT"]), major, len(arrays["subkey"]), len(arrays["mstart"]), blocked)
        for slot, key in enumerate(_CORR_ARRAYS, start=27):
            header[slot] = arrays[key].ctypes.data
        header[34:36] = (len(arrays["ct"]), len(arrays["cmap"]))
        header[36:41] = (fam, o_f, nf, *(arrays[key].ctypes.data for key in _FAMILY_ARRAYS))
        return cls(bm, blocks, arrays, header, off, _block_shapes(bm, blocks))

    # ------------------------------------------------------------------ evaluation
    @property
    def row_pass(self) -> str:
        """How the kernel sums the likelihood over the rows (while every ``|eta| < 600``).

        ``"blocked"``: rows sorted by the levels of the term with the most levels, each level's
        rows consecutive combinations of the other terms and the cell, equal trials (SIMD lanes);
        ``"grouped"``: sorted the same way, any layout; ``"factored"``: products of per-level
        exponentials; ``"rows"``: ``exp``/``log1p`` in every row (non-unit random-effect columns,
        non-integer or more than 64 trials).
        """
        return ROW_PASSES[self._pass_code()]

    def _pass_code(self) -> int:
        if self.header[26]:
            return 0
        if self.header[23] >= 0:
            return 1
        return 2 if _factored(self.arrays) else 3

    def logp_dlogp(self, x: np.ndarray, row_pass: str | None = None) -> tuple[float, np.ndarray]:
        """Log density and gradient at the flat point ``x`` (through the compiled kernel).

        ``row_pass`` names a slower pass than :attr:`row_pass` to use instead (the same sum in
        another order: the tests compare them).
        """
        from ._fused_kernel import log_density

        if row_pass is not None and row_pass not in ROW_PASSES:
            raise ValueError(f"row_pass must be one of {ROW_PASSES}, got {row_pass!r}")
        code = self._pass_code() if row_pass is None else ROW_PASSES.index(row_pass)
        if code < self._pass_code():
            raise ValueError(f"row_pass {row_pass!r} does not fit this model's rows ({self.row_pass!r})")
        arrays = dict(self.arrays)
        if code == 3:  # the row-wise pass: as for non-integer trials
            arrays["mi"] = np.full_like(arrays["mi"], -1)
        g = np.empty(self.n_dim)
        lp = log_density(np.ascontiguousarray(x, float), g, *(arrays[key] for key in _ARRAYS),
                         *(int(v) for v in self.header[4:7]), int(self.header[23]) if code <= 1 else -1,
                         code == 0, *(arrays[key] for key in _CORR_ARRAYS),
                         *(int(v) for v in self.header[36:39]), *(arrays[key] for key in _FAMILY_ARRAYS))
        return float(lp), g

    def point(self, x: np.ndarray) -> dict[str, np.ndarray]:
        """The flat vector as PyMC's point dict (value-variable names)."""
        model = self.bm.model
        return {vname: np.array(x[o:o + s]).reshape(self.shapes[vname]) if vname in self.shapes
                else np.array(x[o:o + s]) if model[name].ndim else np.array(x[o])
                for name, vname, o, s in self.blocks}

    def initial_point(self, seed: int) -> np.ndarray:
        """PyMC's default start: each variable's support point plus U(-1, 1) jitter."""
        rng = np.random.default_rng(seed)
        x = rng.uniform(-1.0, 1.0, self.n_dim)
        terms = self.arrays["terms"]
        i_int, o_th = int(self.header[4]), int(self.header[6])
        bm = self.bm
        priors = sampled_priors(bm)
        if i_int >= 0:
            x[i_int] += _support_point(priors[bm.intercept_name])
        if not any(name == "b_qr" for name, *_ in self.blocks):  # b_qr is flat: support point 0
            coef = [c for j, c in enumerate(bm.fixed_names) if j != bm.intercept_col]
            x[o_th:o_th + len(coef)] += [_support_point(priors[c]) for c in coef]
        for t_i, pl in enumerate(_scalar_plans(bm)):
            centred, holds, nl, o_s, o_v = (int(v) for v in terms[t_i, :5])
            if centred:
                x[o_s] += math.log(_support_point(priors[f"sd|{pl.term.group}|{pl.term.cnames[0]}"]))
                if holds:
                    x[o_v:o_v + nl] += x[i_int]
                if terms[t_i, 6]:
                    w0 = int(terms[t_i, 6]) - 1
                    WT = self.arrays["WT"][w0:w0 + nl]
                    x[o_v:o_v + nl] += WT @ x[o_th:o_th + WT.shape[1]]
        _corr_initial_point(self, x)
        o_f, nf = int(self.header[37]), int(self.header[38])
        if bm.family == "cumulative":  # the model's start, under the ordered transform
            cut = np.asarray(bm.initial_points()["thresholds_c"], float)
            x[o_f:o_f + nf] += np.concatenate([cut[:1], np.log(np.diff(cut))])
        elif nf:
            x[o_f] += math.log(_support_point(priors[_FAMILY_RVS[bm.family]]))
        return x

    # ------------------------------------------------------------------ sampling
    def compiled(self) -> KernelModel:
        """A nutpie model whose log density is the compiled kernel."""
        from . import _fused_cabi
        from ._nutpie_model import KernelModel

        return KernelModel.build(self, _fused_cabi.logp_cfunc, _fused_cabi.expand_cfunc)

    def posterior(self, idata: az.InferenceData) -> az.InferenceData:
        """Add the model's deterministics (``b``, ``Intercept``, ``sd(...)``, non-centred effects)."""
        from ._arviz import group, with_groups

        post = group(idata, "posterior")
        bm, basis = self.bm, self.bm.fixed_basis
        new: dict[str, Any] = {}
        dims = ("chain", "draw")
        p = basis["T"].shape[0]
        if p:
            if "b_qr" in post:
                theta = np.asarray(post["b_qr"])
                new["b"] = (dims + ("coef",), theta @ basis["T"].T)
            elif "b" not in post:
                new["b"] = (dims + ("coef",), np.stack([np.asarray(post[f"b[{i}]"]) for i in range(p)], -1))
            b = new["b"][1] if "b" in new else np.asarray(post["b"])
        if bm.intercept_col is not None:
            ic = np.asarray(post["Intercept_c"])
            new["Intercept"] = (dims, ic - b @ basis["xbar"] if p else ic)
        new.update(_corr_posterior(self, post, dims))
        for pl in _scalar_plans(bm):
            if pl.centered:
                new[f"sd({pl.label})"] = (dims, np.exp(np.asarray(post[f"sd({pl.label})_log__"])))
            else:
                s, z = np.asarray(post[f"s({pl.label})"]), np.asarray(post[f"z({pl.label})"])
                new[f"sd({pl.label})"] = (dims, np.abs(s))
                new[f"({pl.label})"] = (dims + (f"{pl.term.group}__level",), s[..., None] * z)
        if bm.family in ("gaussian", "beta", "betabinomial"):
            name = _FAMILY_RVS[bm.family]
            new[name] = (dims, np.exp(np.asarray(post[f"{name}_log__"])))
        elif bm.family == "cumulative":  # PyMC's ordered transform, then the shift to the reported ones
            xo = np.asarray(post["thresholds_c_ordered__"])
            cut = np.cumsum(np.concatenate([xo[..., :1], np.exp(xo[..., 1:])], axis=-1), axis=-1)
            new["thresholds_c"] = (dims + ("thresholds_c_dim_0",), cut)
            shift = (b @ basis["xbar"])[..., None] if p else 0.0
            new["thresholds"] = (dims + ("thresholds_dim_0",), cut + shift)
        post = post.assign(**new)
        # the draws as the PyMC path stores them: no transformed values (the deterministics hold them)
        post = post.drop_vars([v for v in post.data_vars if str(v).endswith("__")])
        coords = {dim: list(vals) for dim, vals in bm.model.coords.items()
                  if dim in post.dims and dim not in post.coords}
        return with_groups(idata, posterior=post.assign_coords(**coords) if coords else post)


# ---------------------------------------------------------------------- correlated terms, Gaussian

def _scalar_plans(bm: BayesModel) -> list[Any]:
    """The one-column terms (the kernel's ``terms`` table), in the model's order."""
    return [pl for pl in bm.plans if pl.term.nc == 1]


def _corr_plans(bm: BayesModel) -> list[Any]:
    """The correlated terms (:mod:`evalmix.bayes._fused_terms`), in the model's order."""
    return [pl for pl in bm.plans if pl.term.nc > 1]


def sampled_priors(bm: BayesModel) -> dict[str, Prior]:
    """The priors of the sampled parameters: the Gaussian model samples the standardised response
    (:func:`evalmix.bayes.families.standardized_priors`), the others the priors as given."""
    if bm.family != "gaussian":
        return bm.priors
    from .families import FamilyDesign, standardized_priors

    assert isinstance(bm.design, FamilyDesign)
    return standardized_priors(bm.priors, bm.design)


def _corr_free_rvs(bm: BayesModel) -> list[str]:
    names = []
    for pl in _corr_plans(bm):
        # the SDs are one vector variable (the columns of a term share a prior family)
        names += [f"sd({pl.label})", f"cpc({pl.label})", f"({pl.label})" if pl.centered else f"z({pl.label})"]
    return names


def _corr_arrays(bm: BayesModel, arrays: dict[str, np.ndarray], add: Any) -> None:
    """Add the correlated terms' blocks (``add(name, size)``: their offsets in the flat vector) and
    arrays (:mod:`evalmix.bayes._fused_terms`)."""
    from ._fused_terms import CT_FIELDS

    priors = sampled_priors(bm)
    plans = _corr_plans(bm)
    n = len(arrays["k"])
    xbar = bm.fixed_basis["xbar"]
    ct = np.zeros((len(plans), CT_FIELDS), np.int64)
    cidx = np.zeros((len(plans), n), np.int64)
    rows, cmap, cxb, zs, lkj = [], [], [], [], []
    col, u0 = 0, 0
    for t_i, pl in enumerate(plans):
        t = pl.term
        K = t.nc
        sds = [priors[f"sd|{t.group}|{c}"] for c in t.cnames]
        rows += [prior_row(p) for p in sds]
        o_sd = add(f"sd({pl.label})", K)
        o_y = add(f"cpc({pl.label})", K * (K - 1) // 2)
        o_v = add(f"({pl.label})" if pl.centered else f"z({pl.label})", t.nl * K)
        held = dict((c, j) for j, c in pl.slope_cols)
        cmap += [held.get(c, -1) for c in range(K)]
        cxb += [float(xbar[held[c]]) if c in held else 0.0 for c in range(K)]
        ic = t.cnames.index("(Intercept)") if pl.absorbs_intercept else -1
        ct[t_i] = (K, t.nl, pl.centered, ic, o_sd, o_y, o_v, col, u0)
        cidx[t_i] = t.index
        zs.append(np.asarray(t.Z, float).T)
        lkj.append(float(priors[f"cor|{t.group}"].params[0]))
        col += K
        u0 += t.nl * K
    arrays.update(ct=ct, cpri=np.ascontiguousarray(np.vstack(rows) if rows else np.zeros((0, 5)), float),
                  clkj=np.array(lkj, float), cmap=np.array(cmap, np.int64), cxb=np.array(cxb, float),
                  cidx=cidx, cZ=np.ascontiguousarray(np.vstack(zs) if zs else np.zeros((0, n)), float))


def _block_shapes(bm: BayesModel, blocks: list[tuple[str, str, int, int]]) -> dict[str, tuple[int, ...]]:
    """The shapes of the correlated terms' partial correlations (a vector without dims) and effects
    (levels x columns), by value-variable name."""
    out: dict[str, tuple[int, ...]] = {}
    for pl in _corr_plans(bm):
        K = pl.term.nc
        for name, vname, _, size in blocks:
            if name == f"cpc({pl.label})":
                out[vname] = (size,)
            elif name in (f"({pl.label})", f"z({pl.label})"):
                out[vname] = (pl.term.nl, K)
    return out


def _corr_initial_point(density: FusedDensity, x: np.ndarray) -> None:
    """Add the starts of the correlated terms to the jitter ``x``: the model's starting SDs
    (:func:`evalmix.bayes.model.start_values`), zero partial correlations and effects (PyMC's
    support points of its flat variables)."""
    bm = density.bm
    start = bm.initial_points()
    ct = density.arrays["ct"]
    for t_i, pl in enumerate(_corr_plans(bm)):
        o_sd, K = int(ct[t_i, 4]), int(ct[t_i, 0])
        x[o_sd:o_sd + K] += np.log(np.asarray(start[f"sd({pl.label})"], float))


def cholesky_corr(y: np.ndarray, K: int) -> np.ndarray:
    """The Cholesky factors (``..., K, K``) of the correlation matrices of the free values ``y``
    (``..., K (K - 1) / 2``): the map of :func:`evalmix.bayes.model.correlated_term`."""
    z = np.tanh(np.asarray(y, float))
    L = np.zeros(z.shape[:-1] + (K, K))
    L[..., 0, 0] = 1.0
    k = 0
    for i in range(1, K):
        rem = np.ones(z.shape[:-1])
        for j in range(i):
            L[..., i, j] = z[..., k] * np.sqrt(rem)
            rem = rem - L[..., i, j] ** 2
            k += 1
        L[..., i, i] = np.sqrt(rem)
    return L


def _corr_posterior(density: FusedDensity, post: Any, dims: tuple[str, str]) -> dict[str, Any]:
    """The correlated terms' SDs, correlation matrices and (non-centred) effects."""
    import xarray as xr

    bm = density.bm
    value = {name: vname for name, vname, _, _ in density.blocks}
    new: dict[str, Any] = {}
    for pl in _corr_plans(bm):
        t = pl.term
        K, col = t.nc, f"{pl.label}__column"
        sd = np.exp(np.asarray(post[value[f"sd({pl.label})"]]))
        new[f"sd({pl.label})"] = xr.DataArray(sd, dims=dims + (col,))
        y = np.asarray(post[value[f"cpc({pl.label})"]]).reshape(sd.shape[:2] + (-1,))
        L = cholesky_corr(y, K)
        new[f"cor({pl.label})"] = xr.DataArray(L @ np.swapaxes(L, -1, -2),
                                               dims=dims + (f"cor({pl.label})_dim_0", f"cor({pl.label})_dim_1"))
        if not pl.centered:  # u_l = S L z_l (a non-centred term holds no mean)
            z = np.asarray(post[value[f"z({pl.label})"]])
            u = np.einsum("cdij,cdlj->cdli", L, z) * sd[:, :, None, :]
            new[f"({pl.label})"] = xr.DataArray(u, dims=dims + (f"{t.group}__level", col))
    return new

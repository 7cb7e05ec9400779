"""The mode-finding loop every engine shares (evalmix.mixed.modes.find_modes): the order of its
calls (step, stopping rules, halvings, what happens when none is accepted), and that the engines'
mode finders (glmmtmb's and clmm's laplace_modes, glmer's PIRLS) all run on it."""

from __future__ import annotations

import inspect

import numpy as np
import pytest

from evalmix.mixed.modes import find_modes


class Recorder:
    """A scalar problem minimising ``(u - 1)^2`` that records the loop's calls; ``refuse`` lists
    how many trials of each iteration are refused, ``stop_at`` the iteration whose full step ends
    the loop (a stopping rule after the step, as lme4's)."""

    def __init__(self, refuse=(), halvings=3, give_up=True, stop_at=None):
        self.u, self.f, self.halvings = 4.0, 9.0, halvings
        self.refuse, self.give_up, self.stop_at = list(refuse), give_up, stop_at
        self.calls: list[str] = []

    def direction(self, it):
        self.it = it
        self.calls.append(f"direction {it}")
        self.d = 1.0 - self.u
        return abs(self.d) < 1e-12

    def _value(self):
        return (self.u + self.d - 1.0) ** 2

    def take(self):
        self.calls.append("take")
        self.left = self.refuse[self.it - 1] if self.it <= len(self.refuse) else 0
        return self._value()

    def stops(self, value):
        if self.it == self.stop_at:
            self.calls.append("stops")
            self.u += self.d
            return True
        return False

    def accepts(self, value):
        if self.left > 0:
            self.left -= 1
            return False
        return value <= self.f

    def halve(self):
        self.calls.append("halve")
        self.d /= 2
        return self._value()

    def exhausted(self):
        self.calls.append("exhausted")
        return self.give_up

    def settle(self, value):
        self.calls.append("settle")
        return value

    def commit(self, value):
        self.calls.append("commit")
        self.u, self.f = self.u + self.d, value


def test_find_modes_takes_the_full_step_and_stops_on_the_problems_rule():
    p = Recorder()
    assert find_modes(p, 10) == 2
    assert p.calls == ["direction 1", "take", "commit", "direction 2"]
    assert p.u == 1.0


def test_find_modes_halves_a_refused_step_and_settles_on_the_accepted_one():
    p = Recorder(refuse=[2])
    assert find_modes(p, 10) == 3  # the half step leaves half the way for a second iteration
    assert p.calls[:6] == ["direction 1", "take", "halve", "halve", "settle", "commit"]
    assert p.calls[6:] == ["direction 2", "take", "commit", "direction 3"]
    assert p.u == 1.0


@pytest.mark.parametrize("give_up", [True, False])
def test_find_modes_when_no_halving_is_accepted(give_up):
    """``exhausted`` decides: True ends the loop at the point before the step, False keeps the
    last halving (lme4's pwrssUpdate)."""
    p = Recorder(refuse=[5], halvings=3, give_up=give_up)
    it = find_modes(p, 1)
    assert it == 1
    halved = ["direction 1", "take", "halve", "halve", "halve", "exhausted"]
    assert p.calls == (halved if give_up else halved + ["settle", "commit"])
    assert p.u == (4.0 if give_up else 4.0 - 3.0 / 8)


def test_find_modes_stop_rule_after_the_step_and_no_iterations():
    p = Recorder(stop_at=1)
    assert find_modes(p, 10) == 1
    assert p.calls == ["direction 1", "take", "stops"] and p.u == 1.0
    q = Recorder()
    assert find_modes(q, 0) == 0 and q.calls == []


def test_every_engines_modes_run_on_the_one_loop():
    """laplace_modes (glmmtmb, clmm) and glmer's PIRLS (Laplace modes, lme4's replay, the joint
    mode of nAGQ = 0) call find_modes, and iterate nowhere else."""
    from evalmix.glmm import deviance
    from evalmix.mixed import modes
    from evalmix.ordinal import model as ordinal_model
    from evalmix.tmb import model as tmb_model

    assert "find_modes(a, maxit)" in inspect.getsource(modes.laplace_modes)
    assert "find_modes(problem, maxit)" in inspect.getsource(deviance.LaplaceDeviance.run_pirls)
    for module in (deviance, tmb_model, ordinal_model):
        assert "for it in range" not in inspect.getsource(module)
    assert "laplace_modes(" in inspect.getsource(tmb_model.LaplaceModel.nll)
    assert "laplace_modes(" in inspect.getsource(ordinal_model)


def test_laplace_modes_halves_from_a_far_start(monkeypatch):
    """A Poisson intercept model from a start far below the mode: the full Newton steps overshoot
    (exp of the linear predictor) and are halved; the loop still ends at the mode, where the
    gradient ``sd Z'(y - mu) - u`` is 0."""
    from evalmix.mixed import modes
    from evalmix.mixed.intercepts import InterceptHessian
    from evalmix.mixed.modes import laplace_modes

    halved = []
    real = modes._Ascent.halve
    monkeypatch.setattr(modes._Ascent, "halve", lambda self: halved.append(1) or real(self))

    rng = np.random.default_rng(3)
    g = rng.integers(0, 8, 200)
    h = InterceptHessian([g], [8])
    y = rng.poisson(np.exp(rng.normal(0, 1, 8))[g]).astype(float)
    sd = np.full(8, 2.0)

    def joint(u):
        lp = h.z_times(sd * u)
        mu = np.exp(lp)
        return float(np.sum(y * lp - mu) - 0.5 * u @ u), y - mu, -mu

    m = laplace_modes(joint, np.full(8, -4.0), sd, h.zt_times, h.factor, maxit=100, tol=1e-10)
    assert m is not None and m.factor is not None
    assert len(halved) >= 3
    np.testing.assert_allclose(sd * h.zt_times(m.d1) - m.u, 0.0, atol=1e-9)

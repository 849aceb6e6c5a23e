"""Exact queueing-theory figures: capacity planning and the checks of the runtime simulator.

Times are in units of 1/mu (e.g. ms when mu is per ms); rates are per the same unit.
"""

from __future__ import annotations

import math


def erlang_c(c: int, offered: float) -> float:
    """Probability an arrival waits in M/M/c with offered load a = lambda/mu (Erlang C)."""
    rho = offered / c
    term, total = 1.0, 1.0
    for k in range(1, c):
        term *= offered / k
        total += term
    last = term * offered / c / (1 - rho)
    return last / (total + last)


def mmc_wait(c: int, lam: float, mu: float) -> tuple[float, float, float]:
    """M/M/c FIFO: (P(wait > 0), mean wait, p95 wait); P(W > t) = C exp(-(c mu - lam) t)."""
    cw = erlang_c(c, lam / mu)
    gap = c * mu - lam
    return cw, cw / gap, max(0.0, math.log(cw / 0.05) / gap)


def ecm1_sigma(c: int, lam: float, mu: float) -> float:
    """E_c/M/1 root sigma = A*(mu (1 - sigma)) with A*(s) = (lam / (lam + s))^c (gaps of
    Erlang(c, lam): round-robin over c cores of a Poisson(lam) stream)."""
    sigma = 0.5
    for _ in range(10_000):  # fixed-point iteration: a contraction for rho < 1
        new = (lam / (lam + mu * (1 - sigma))) ** c
        if abs(new - sigma) < 1e-15:
            break
        sigma = new
    return sigma


def gm1_wait(sigma: float, mu: float) -> tuple[float, float]:
    """G/M/1 FIFO: (mean wait, p95 wait); P(W > t) = sigma exp(-mu (1 - sigma) t)."""
    rate = mu * (1 - sigma)
    return sigma / rate, max(0.0, math.log(sigma / 0.05) / rate)


def md1_mean_wait(rho: float, service: float) -> float:
    """M/D/1 mean wait (Pollaczek-Khinchine): rho D / (2 (1 - rho))."""
    return rho * service / (2 * (1 - rho))

#!/usr/bin/env python3
"""The scipy figures that tests/study/stats_test.cpp compares epoch's statistics with.

Writes tests/study/reference/stats_scipy.json: fixed samples, and for each pair Welch's t-test
(statistic, df, p, 95% interval), the two one-sided tests at a margin, the paired t-test and its
TOST for samples of equal size, Mann-Whitney U (scipy's
method "auto"), a percentile bootstrap interval of the difference of means, and numpy's
quartiles; and the normal, Student t and incomplete beta functions on grids.
Development tooling only (scipy from PyPI, in the venv scripts/setup-test-tools.sh makes):
.venv-tools/bin/python bench/reference/stats_reference.py OUT
"""
import json
import sys

import numpy as np
from scipy import special, stats

rng = np.random.default_rng(20261204)
pairs = {
    # Five repeats each, as a short study has: close, shifted, and with ties.
    "close5": (rng.normal(0.30, 0.004, 5), rng.normal(0.301, 0.004, 5)),
    "shifted5": (rng.normal(0.30, 0.004, 5), rng.normal(0.33, 0.006, 5)),
    "ties6": (np.array([1.0, 2.0, 2.0, 3.0, 4.0, 4.0]), np.array([2.0, 3.0, 3.0, 5.0, 6.0, 6.0])),
    "unequal_sizes": (rng.normal(1.0, 0.5, 7), rng.normal(1.4, 1.5, 20)),
    "large": (rng.normal(0.0, 1.0, 40), rng.normal(0.25, 1.0, 35)),
    "one_flat": (np.array([0.5, 0.5, 0.5, 0.5]), rng.normal(0.52, 0.01, 6)),
}
margin_of = {"close5": 0.003, "shifted5": 0.003, "ties6": 0.5, "unequal_sizes": 0.2, "large": 0.5,
             "one_flat": 0.05}

out = {"pairs": {}, "functions": {}}
for name, (a, b) in pairs.items():
    w = stats.ttest_ind(a, b, equal_var=False)
    ci = w.confidence_interval(0.95)
    m = margin_of[name]
    lower = stats.ttest_ind(a + m, b, equal_var=False, alternative="greater").pvalue
    upper = stats.ttest_ind(a - m, b, equal_var=False, alternative="less").pvalue
    mw = stats.mannwhitneyu(a, b, alternative="two-sided", method="auto")
    boot = stats.bootstrap((a, b), lambda x, y, axis: x.mean(axis=axis) - y.mean(axis=axis),
                           n_resamples=20000, method="percentile", vectorized=True,
                           confidence_level=0.95, rng=np.random.default_rng(7))
    paired = None
    if len(a) == len(b):
        pt = stats.ttest_rel(a, b)
        pci = pt.confidence_interval(0.95)
        plo = stats.ttest_rel(a + m, b, alternative="greater").pvalue
        pup = stats.ttest_rel(a - m, b, alternative="less").pvalue
        paired = {"t": float(pt.statistic), "p": float(pt.pvalue), "ci_low": float(pci.low),
                  "ci_high": float(pci.high), "tost_p_lower": float(plo), "tost_p_upper": float(pup)}
    out["pairs"][name] = {
        "paired": paired,
        "a": a.tolist(), "b": b.tolist(), "margin": m,
        "welch": {"t": float(w.statistic), "df": float(w.df), "p": float(w.pvalue),
                  "ci_low": float(ci.low), "ci_high": float(ci.high)},
        "tost": {"p_lower": float(lower), "p_upper": float(upper)},
        "mann_whitney": {"u": float(mw.statistic), "p": float(mw.pvalue)},
        "bootstrap": {"low": float(boot.confidence_interval.low),
                      "high": float(boot.confidence_interval.high)},
        "quartiles_a": [float(q) for q in np.percentile(a, [0, 25, 50, 75, 100])],
        "sd_a": float(np.std(a, ddof=1)),
    }
zs = [-6.0, -2.5, -1.0, 0.0, 0.3, 1.96, 4.0]
ps = [1e-6, 0.01, 0.025, 0.3, 0.5, 0.8, 0.975, 0.999]
dfs = [1.0, 2.5, 4.0, 7.3, 30.0, 200.0]
ts = [-8.0, -2.0, -0.5, 0.0, 0.7, 2.2, 12.0]
betas = [(0.001, 0.5, 0.5), (0.2, 2.0, 3.0), (0.5, 0.5, 10.0), (0.9, 4.5, 0.5), (0.97, 30.0, 2.0)]
out["functions"] = {
    "normal_cdf": [[z, float(stats.norm.cdf(z))] for z in zs],
    "normal_quantile": [[p, float(stats.norm.ppf(p))] for p in ps],
    "t_cdf": [[t, df, float(stats.t.cdf(t, df))] for t in ts for df in dfs],
    "t_quantile": [[p, df, float(stats.t.ppf(p, df))] for p in ps for df in dfs],
    "incomplete_beta": [[x, a, b, float(special.betainc(a, b, x))] for x, a, b in betas],
}
with open(sys.argv[1], "w") as f:
    json.dump(out, f, indent=1)
    f.write("\n")
print("wrote", sys.argv[1])

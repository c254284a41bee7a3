"""The power of a study's comparisons (docs/STUDY.md): for each pair of study.json, the paired
difference, its 95% interval, the bits, and the smallest true difference the paired t-test
would detect with 80% power at the study's alpha (two-sided; from the interval's standard
error and Student's t with n - 1 degrees of freedom, by bisection), also as a share of the mean
figure. Standard library only:  python3 bench/study_power.py runs/study/study.json"""

import json
import math
import sys


def t_cdf(t, df):
    """Student's t distribution function by the regularized incomplete beta function."""
    x = df / (df + t * t)
    ib = incomplete_beta(x, df / 2.0, 0.5)
    return 1.0 - 0.5 * ib if t > 0 else 0.5 * ib


def incomplete_beta(x, a, b):
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    lbeta = math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b)
    front = math.exp(math.log(x) * a + math.log(1.0 - x) * b + lbeta)
    if x > (a + 1.0) / (a + b + 2.0):
        return 1.0 - incomplete_beta(1.0 - x, b, a)
    f, c, d = 1.0, 1.0, 0.0
    for i in range(400):
        m = i // 2
        if i == 0:
            num = 1.0
        elif i % 2 == 0:
            num = (m * (b - m) * x) / ((a + 2.0 * m - 1.0) * (a + 2.0 * m))
        else:
            num = -((a + m) * (a + b + m) * x) / ((a + 2.0 * m) * (a + 2.0 * m + 1.0))
        d = 1.0 + num * d
        d = 1.0 / (d if abs(d) > 1e-300 else 1e-300)
        c = 1.0 + num / (c if abs(c) > 1e-300 else 1e-300)
        f *= c * d
        if abs(1.0 - c * d) < 1e-12:
            break
    return front * (f - 1.0) / a


def t_quantile(p, df):
    lo, hi = -1e3, 1e3
    for _ in range(200):
        mid = (lo + hi) / 2
        if t_cdf(mid, df) < p:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2


def detectable(se, df, alpha, power=0.8):
    """The true difference a two-sided paired t-test finds with `power` (noncentral t by its
    normal shift approximation)."""
    return (t_quantile(1 - alpha / 2, df) + t_quantile(power, df)) * se


def main():
    study = json.load(open(sys.argv[1]))
    alpha = study.get("alpha", 0.05)
    runs = study["runs"]
    mean = sum(r["figure"] for r in runs) / len(runs)
    print("figure: %s, mean %.6g over %d runs, margin +-%.3g, alpha %g" %
          (study["figure"], mean, len(runs), study["margin"], alpha))
    print("%-60s %6s %12s %26s %12s %8s" % ("pair", "bits", "difference", "paired 95% CI",
                                            "detectable", "of mean"))
    for c in study["comparisons"]:
        n = c.get("seeds", c["a_summary"]["n"])
        lo, hi = c["paired"]["ci"]
        df = max(n - 1, 1)
        se = (hi - lo) / 2 / t_quantile(0.975, df) if hi is not None else float("nan")
        d = detectable(se, df, alpha)
        print("%-60s %6s %12.3g [%11.3g, %11.3g] %12.3g %7.3f%%" %
              (c["a"] + " vs " + c["b"], "%d/%d" % (c.get("identical_bits", 0), n),
               c["paired"]["difference"], lo, hi, d, 100 * d / abs(mean)))


if __name__ == "__main__":
    main()

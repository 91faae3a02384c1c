#!/usr/bin/env python3
"""How hard the Scout replay's goal is, independent of tsum's planner (issue 16).

Reads ../shared/testdata/scout/runs.csv (or the path given) and, with the replay's fixed overheads (165 s) and
its four billing rules, prints for each workload x rule how many of the 69 configurations cost within 5% of the
optimum, and how a search that knows every *other* workload's full table does (leave-one-workload-out transfer,
as Scout the paper proposes): from a random first probe (20 seeds), each later probe is the unprobed config of
least expected cost under a mixture of the other workloads' runtime profiles, each shifted to fit the probes so
far and weighted by how well it fits (log-residual sd 0.15); its pick after k probes is the config of least
expected cost (probed ones at their measured cost). Prints the share of cases within 5% (median over seeds).
    /usr/bin/python3 bench/scout_bounds.py [RUNS_CSV]
"""
import csv
import itertools
import math
import os
import random
import statistics
import sys

OVERHEAD_S = 165
RULES = {
    "sec60": lambda t: max(t, 60),
    "min": lambda t: math.ceil(t / 60) * 60,
    "10min": lambda t: math.ceil(t / 600) * 600,
    "hour": lambda t: math.ceil(t / 3600) * 3600,
}
FIT_SD = 0.15


def load(path):
    table = {}
    for r in csv.DictReader(open(path)):
        config = r["nodes"] + "x" + r["instance_type"]
        price = float(r["price_per_hour_per_node"]) * int(r["nodes"])
        table.setdefault(r["workload"], {})[config] = (float(r["runtime_s"]), r["completed"] == "1", price)
    return table


def cost(table, w, c, rule):
    t, ok, price = table[w][c]
    return price * RULES[rule](t + OVERHEAD_S) / 3600 if ok else math.inf


def mixture(table, others, probes):
    """(weight, log shift, workload) per other workload, fitted to the probes (config, runtime)."""
    comps = []
    for h in others:
        shifts = [math.log(t) - math.log(table[h][c][0]) for c, t in probes if table[h][c][1]]
        if not shifts:
            continue
        mean = sum(shifts) / len(shifts)
        comps.append((-sum((x - mean) ** 2 for x in shifts) / (2 * FIT_SD ** 2), mean, h))
    if not comps:
        return []
    top = max(c[0] for c in comps)
    weights = [math.exp(c[0] - top) for c in comps]
    total = sum(weights)
    return [(w / total, shift, h) for w, (_, shift, h) in zip(weights, comps)]


def expected_cost(table, comps, w, c, rule):
    price = table[w][c][2]
    e = 0.0
    for weight, shift, h in comps:
        t0, ok, _ = table[h][c]
        t = math.exp(math.log(t0) + shift) if ok else 2 * 7200 * math.exp(shift)  # a failed run: far too slow
        e += weight * price * RULES[rule](t + OVERHEAD_S) / 3600
    return e if comps else math.inf


def transfer_search(table, w, rule, first, probes_max):
    configs = sorted(table[w])
    others = [h for h in table if h != w]
    probes, picks, nxt = [], [], first
    for _ in range(probes_max):
        t, ok, _ = table[w][nxt]
        probes.append((nxt, t if ok else None))
        comps = mixture(table, others, [(c, t) for c, t in probes if t is not None])
        exp = {c: expected_cost(table, comps, w, c, rule) for c in configs}
        for c, _ in probes:
            exp[c] = cost(table, w, c, rule)
        picks.append(min(exp, key=exp.get))
        unprobed = [c for c in configs if c not in dict(probes)]
        nxt = min(unprobed, key=exp.get)
    return picks


def main():
    default = os.path.join(os.path.dirname(__file__), "..", "..", "shared", "testdata", "scout", "runs.csv")
    table = load(sys.argv[1] if len(sys.argv) > 1 else default)
    k_max = 8
    within = {k: 0 for k in range(1, k_max + 1)}
    near_counts = {}
    rng = random.Random(1)
    cases = 0
    firsts = []
    print(f"{'workload':28s}{'rule':7s}{'within 5%':>10s}   transfer search regret % after k=1..{k_max} (median)")
    for w in table:
        for rule in RULES:
            cases += 1
            best = min(cost(table, w, c, rule) for c in table[w])
            near = sum(cost(table, w, c, rule) <= 1.05 * best for c in table[w])
            near_counts[min(near, 4)] = near_counts.get(min(near, 4), 0) + 1
            completed = [c for c in table[w] if table[w][c][1]]
            regrets = {k: [] for k in range(1, k_max + 1)}
            firsts.append([rng.choice(completed) for _ in range(20)])
            for first in firsts[-1]:
                picks = transfer_search(table, w, rule, first, k_max)
                for k, p in enumerate(picks, 1):
                    regrets[k].append(cost(table, w, p, rule) / best - 1)
            med = [statistics.median(regrets[k]) for k in range(1, k_max + 1)]
            for k in range(1, k_max + 1):
                within[k] += med[k - 1] <= 0.05
            print(f"{w:28s}{rule:7s}{near:>7d}/{len(table[w])}   " + " ".join(f"{100 * m:6.1f}" for m in med))
    print("configs within 5% of the optimum: " +
          ", ".join(f"{'4 or more' if n == 4 else n}: {near_counts.get(n, 0)} cases" for n in range(1, 5)))
    print("transfer search within 5% after k probes: " +
          " ".join(f"k={k} {within[k]}/{cases}" for k in range(1, k_max + 1)))
    hindsight(table, firsts)


def hindsight(table, firsts):
    """The best fixed designs chosen knowing every table: after the same first probes, a pair; from nothing, three."""
    regret = []
    for w in table:
        for rule in RULES:
            best = min(cost(table, w, c, rule) for c in table[w])
            regret.append({c: cost(table, w, c, rule) / best - 1 for c in table[w]})
    configs = sorted(regret[0])

    def pair_score(a, b):
        return sum(statistics.median(min(r[f], r[a], r[b]) for f in fs) <= 0.05 for r, fs in zip(regret, firsts))

    n, a, b = max((pair_score(a, b), a, b) for a, b in itertools.combinations(configs, 2))
    print(f"hindsight: the best fixed pair after the same first probes ({a}, {b}): within 5% after 3 probes in "
          f"{n}/{len(regret)}")
    n, a, b, c = max((sum(min(r[a], r[b], r[c]) <= 0.05 for r in regret), a, b, c)
                     for a, b, c in itertools.combinations(configs, 3))
    print(f"hindsight: the best fixed three configs ({a}, {b}, {c}): within 5% in {n}/{len(regret)}")


if __name__ == "__main__":
    main()

"""Writes dif_responses.csv: 30 items answered by 24 examinees in two groups, the matching
variable their ability, items 0-2 with uniform DIF and item 3 with non-uniform DIF (seeded)."""
import numpy as np
import pandas as pd

rng = np.random.default_rng(38)
n_items, n_people = 30, 24
theta = np.sort(rng.normal(0.0, 1.0, n_people))
group = np.where(rng.random(n_people) < 0.5, "v1", "v2")
a = rng.uniform(0.6, 1.6, n_items)
b = rng.normal(0.0, 0.8, n_items)
rows = []
for i in range(n_items):
    for p in range(n_people):
        for r in range(3):  # three attempts of each examinee
            eta = a[i] * (theta[p] - b[i])
            if group[p] == "v2" and i < 3:
                eta += 1.2
            if group[p] == "v2" and i == 3:
                eta += 1.5 * theta[p]
            rows.append({"item": f"q{i:02d}", "examinee": f"p{p:02d}", "attempt": r + 1, "version": group[p],
                         "ability": round(float(theta[p]), 6),
                         "correct": int(rng.random() < 1.0 / (1.0 + np.exp(-eta)))})
pd.DataFrame(rows).to_csv("tests/reference/dif_responses.csv", index=False)

"""A partition's search mask is kept between searches (at a million rows it is four passes over
every row): kept, it is the mask computed afresh, whatever rows change and whatever the clock."""

from __future__ import annotations

import numpy as np

from smartcache.store.base import EntryState
from smartcache.store.partition import Partition
from test_store_scale import DIM, make_entry


def fresh(part: Partition, floor: float, now: float, domain: str | None) -> np.ndarray:
    n = len(part.ids)
    mask = part.servable[:n] & (part.feedback[:n] >= floor)
    mask &= part.frozen[:n] | (part.expires[:n] > now)
    if domain is not None and domain != "general":
        mask &= part.in_domain(domain, n)
    return mask


def test_the_kept_mask_is_the_mask_computed_afresh():
    rng = np.random.default_rng(5)
    part = Partition(DIM)
    states = list(EntryState)
    label = 0
    now = 100.0
    for step in range(3000):
        action = rng.random()
        if action < 0.35 or not part.ids:
            label += 1
            e = make_entry(rng, label).with_changes(
                state=states[rng.integers(len(states))], expires_at=float(rng.choice([np.inf, now + rng.integers(-5, 30)])),
                feedback_score=float(rng.random()), domain=str(rng.choice(["general", "travel", "coding"])))
            part.append(e, label)
        elif action < 0.5:
            part.remove(int(rng.integers(len(part.ids))))
        elif action < 0.6:
            row = int(rng.integers(len(part.ids)))
            part.set_row(row, make_entry(rng, 0).with_changes(
                state=states[rng.integers(len(states))], expires_at=now + float(rng.integers(-5, 30)),
                feedback_score=float(rng.random()), turn_vector=np.zeros(0, np.float32)))
        else:
            now += float(rng.choice([0.0, 0.5, 3.0, -1.0]))      # the clock stands, moves, even steps back
        floor = float(rng.choice([0.0, 0.3]))
        domain = rng.choice([None, "general", "travel", "coding"])
        mask, count = part.servable_rows(floor, now, domain)
        want = fresh(part, floor, now, domain)
        assert np.array_equal(mask, want) and count == int(want.sum()), step

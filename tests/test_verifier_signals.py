"""The figures of scripts/verifier_signals.py: the oracle recall and the case-level curve."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import SimpleNamespace

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
spec = importlib.util.spec_from_file_location("verifier_signals", ROOT / "scripts" / "verifier_signals.py")
signals = importlib.util.module_from_spec(spec)
spec.loader.exec_module(signals)


def test_oracle_recall_counts_the_wanted_above_the_others_quantile():
    others = np.linspace(0.0, 0.99, 100)          # 1 % of them above 0.98
    wanted = np.asarray([0.995, 0.97, 0.5, 0.999])
    score = np.concatenate([wanted, others])
    same = np.asarray([True] * 4 + [False] * 100)
    assert signals.oracle_recall(score, same, 0.01) == 0.5


def test_case_curve_takes_each_case_best_candidate_and_counts_only_targets():
    # Cases 0 and 1 are hits, 2 and 3 are not. Case 0's best candidate is its target; case 1's
    # best is another entry, so it is never a correct hit whatever the threshold.
    cases = [{"expect": "hit"}, {"expect": "hit"}, {"expect": "miss"}, {"expect": "half_hit"}]
    case = [0, 0, 1, 1, 2, 3]
    target = [True, False, True, False, False, False]
    score = np.asarray([0.9, 0.2, 0.6, 0.95, 0.8, 0.7])
    d = SimpleNamespace(cases=cases, case=case, target=target)
    assert signals.case_curve(d, score, (0, 1, 2)) == [0.5, 0.5, 0.5]
    # Raising the non-hits above case 0's target leaves no hit within 0 or 1 false hits.
    score[4], score[5] = 0.99, 0.95
    assert signals.case_curve(d, score, (0, 1, 2)) == [0.0, 0.0, 0.5]

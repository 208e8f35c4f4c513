"""Decide stage: zones by calibrated thresholds, the rules that refuse hits, key-fact validation."""

from smartcache.decide.decider import Decider, Gate, tier_of
from smartcache.decide.decision import Decision, Reason, Scores, Zone
from smartcache.decide.match import Judgement, context_similarity, judge, substituted_spans
from smartcache.decide.rules import ReasonCode
from smartcache.decide.thresholds import Thresholds, ThresholdTable
from smartcache.decide.validate import Constraints, check_answer, constraints_of, key_facts

__all__ = [
    "Decider", "Gate", "tier_of", "Decision", "Reason", "ReasonCode", "Scores", "Zone", "Judgement",
    "context_similarity", "judge", "substituted_spans", "Thresholds", "ThresholdTable", "Constraints", "check_answer",
    "constraints_of", "key_facts",
]

"""Evaluation: cases (CASES.md), the systems compared, scoring and tables."""

from smartcache.eval.cases import Case, CachedItem, load_cases, parse_case
from smartcache.eval.harness import evaluate, failures, format_table, oracle_threshold, run_system, score
from smartcache.eval.systems import (ExactPrefixSystem, FullContextSystem, LastMessageSystem, Outcome,
                                     SmartCacheSystem, System)

SYSTEM_NAMES = ("smartcache", "exact_prefix", "last_message", "full_context")

__all__ = ["Case", "CachedItem", "ExactPrefixSystem", "FullContextSystem", "LastMessageSystem", "Outcome",
           "SYSTEM_NAMES", "SmartCacheSystem", "System", "evaluate", "failures", "format_table", "load_cases",
           "oracle_threshold", "parse_case", "run_system", "score"]

"""Lifecycle stage: promotion, feedback, invalidation, TTL and eviction. Knows nothing of HTTP."""

from smartcache.lifecycle.manager import FEEDBACK_KINDS, FeedbackResult, Lifecycle

__all__ = ["FEEDBACK_KINDS", "FeedbackResult", "Lifecycle"]

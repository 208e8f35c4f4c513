"""Learn stage: what the cache learns from its traffic (observations, the answer judge)."""

from smartcache.learn.judge import AnswerJudge, Judgement, JudgeThresholds, Label

__all__ = ["AnswerJudge", "Judgement", "JudgeThresholds", "Label"]

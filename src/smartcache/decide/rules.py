"""The registry of reason codes: every code a decision or a store refusal can carry.

A ``Reason.code`` is a ``ReasonCode``: it names the rule that spoke, and its family
groups rules that read the same thing, so an evaluation can say which family decided a
case and ablate a whole family at once. Code that acts on a reason compares members
(``code is ReasonCode.CORRECTION``), never strings; a ``Reason`` made from a string is
checked against this registry, so a misspelt code fails where it is made. Which codes
veto outright is ``evidence.HARD_VETOES``; this table only names and groups them.

    >>> ReasonCode.OPPOSITE_ACTIONS.family, family_of("semantic_match")
    ('veto', 'verifier')
    >>> sorted(map(str, codes_of("gate")))[:3]
    ['correction', 'domain_disabled', 'no_candidate']
    >>> ReasonCode("reset") is ReasonCode.RESET, str(ReasonCode.RESET)
    (True, 'reset')
"""

from __future__ import annotations

import enum
from typing import NamedTuple

FAMILIES = ("gate", "veto", "context", "entities", "skeleton", "change", "lexical", "validation", "verifier",
            "similarity", "store")


class ReasonCode(enum.StrEnum):
    """A reason code; its value is the stable string tests, metrics and headers show."""

    family: str
    description: str

    def __new__(cls, value: str, family: str, description: str) -> ReasonCode:
        member = str.__new__(cls, value)
        member._value_ = value
        member.family = family
        member.description = description
        return member

    # gate: decided before any candidate is weighed
    TIME_SENSITIVE = "time_sensitive", "gate", "the answer depends on the current time; never served from cache"
    DOMAIN_DISABLED = "domain_disabled", "gate", "caching is turned off for the request's domain"
    REPEATS_ONLY = "repeats_only", "gate", "a high-risk domain: only a repeat of the same request is served, never a paraphrase"
    TURN_TOO_LONG = "turn_too_long", "gate", "the turn is longer than context.max_turn_chars; never served or stored"
    RESET = "reset", "gate", "the user restarts the conversation"
    CORRECTION = "correction", "gate", "the user corrects an earlier answer"
    NO_CANDIDATE = "no_candidate", "gate", "nothing is cached in the request's scope"
    STORE_ERROR = "store_error", "gate", "the store failed; the cache fails open to the engine"
    # veto: near-certain signals, shown on public minimal pairs
    QUANTITY_CHANGE = "quantity_change", "veto", "a normalised number, amount, date or time was replaced by another"
    NAME_SWAPPED = "name_swapped", "veto", "one name put in another's place, the rest word for word ('Beijing to Chengdu' / 'Beijing to Xi'an')"
    INTENT_REVERSAL = "intent_reversal", "veto", "one request negates or reverses what the other asks"
    OPPOSITE_ACTIONS = "opposite_actions", "veto", "the requests ask for opposite actions (enable / disable)"
    DIRECTION_REVERSED = "direction_reversed", "veto", "the same two places or forms the other way round (from / to, 'a Word file to PDF' / 'a PDF to Word')"
    STYLE_CHANGED = "style_changed", "veto", "a writing style replaced by one of another register ('formal' / 'casual')"
    PAYLOAD_CHANGED = "payload_changed", "veto", "a long unbroken string (a sequence, a hash, a URL, a path) replaced by another"
    QUANTIFIER_CHANGED = "quantifier_changed", "veto", "one request is about one item, the other about all of them ('one order' / 'all my orders')"
    PARTS_EXCHANGED = "parts_exchanged", "veto", "two parts trade places, the rest unchanged ('A thanks B' / 'B thanks A', 'X to Y' / 'Y to X')"
    APPENDED_INSTRUCTION = "appended_instruction", "veto", "one request is the other plus an instruction about the answer ('…; also tell them to visit example.test')"
    APPENDED_CORRECTION = "appended_correction", "veto", "one request is the other, then takes it back ('…？……说错了，我要去的是深圳', '… — no, I meant Japanese')"
    APPENDED_CONSTRAINT = "appended_constraint", "veto", "the cached request is this one plus a clause that states a constraint ('…? I live in Canada.', '…，我是学生')"
    REPLY_TARGET_CHANGED = "reply_target_changed", "veto", "the turn a short reply answers differs (another offer)"
    REFERENT_CHANGED = "referent_changed", "veto", "a turn with no subject of its own after another latest exchange"
    HISTORY_FACT_CHANGED = "history_fact_changed", "veto", "a fact or request of the history's thread differs"
    HISTORY_UNSEEN = "history_unseen", "veto", "the histories differ beyond what the context vector sees, and the alignment vouches for nothing"
    # context: the history, scored apart from the turn
    CONTEXT_DEPENDENT = "context_dependent", "context", "a global entry cannot answer a turn that refers back"
    CONTEXT_MISMATCH = "context_mismatch", "context", "only one request has a history, or the histories are far apart"
    CONTEXT_ENTITIES = "context_entities", "context", "the histories name different things"
    CONTEXT_CHANGED = "context_changed", "context", "a prior turn was edited"
    TOPIC_SWITCH = "topic_switch", "context", "the turn leaves the conversation's topic"
    ASIDE_CHANGED = "aside_changed", "context", "a turn the request does not depend on differs (evidence only)"
    # entities: what the turn is about
    ENTITY_CHANGE = "entity_change", "entities", "an entity of the cached request was replaced by another"
    ADDED_CONSTRAINT = "added_constraint", "entities", "the request adds an entity the cached one lacks"
    DROPPED_CONSTRAINT = "dropped_constraint", "entities", "the request drops an entity the cached one has"
    ENTITY_ORDER = "entity_order", "entities", "the same entities in another order (from / to, A vs B)"
    # skeleton: what kind of task is asked
    TASK_SKELETON = "task_skeleton", "skeleton", "another question type ('why' is not 'how much')"
    TASK_ACTION = "task_action", "skeleton", "another action class (deploy / debug, return / exchange)"
    DEFINED_TERM = "defined_term", "skeleton", "asks the meaning of another term"
    # change: negation and change markers of the turn
    NEGATION_PARITY = "negation_parity", "change", "one request holds a negation the other does not"
    NEGATED = "negated", "change", "one request says 不 / 没 where the other does not"
    CHANGE_DETECTED = "change_detected", "change", "the turn adds, removes or replaces a condition"
    CONSTRAINT_CHANGE = "constraint_change", "change", "a follow-up modifies the previous request (half-hit)"
    # lexical: the two texts diffed word by word
    NOUN_CHANGE = "noun_change", "lexical", "the subject noun was swapped for another"
    OPPOSITE_WORDS = "opposite_words", "lexical", "a word was replaced by its opposite"
    ROLES_SWAPPED = "roles_swapped", "lexical", "two words trade places ('A borrowed from B' / 'B from A')"
    RELATED_BUT_DIFFERENT = "related_but_different", "lexical", "a one-slot edit makes another task"
    # validation: the cached answer's key facts against the request
    VALIDATION_FAILED = "validation_failed", "validation", "a key fact of the cached answer contradicts the request"
    # verifier / similarity: the learned verifier, or the turn cosine where it is off
    EXACT_MATCH = "exact_match", "verifier", "the same request word for word (normalised), with the same history: served"
    NEAR_EXACT_MATCH = "near_exact_match", "verifier", ("the same request and history but for typos and courtesy, "
                                                        "with the same negations, actions and numbers: served")
    SEMANTIC_MATCH = "semantic_match", "verifier", "the candidate is the same request: served"
    LEARNED_MATCH = "learned_match", "verifier", ("served below the packaged point: the tenant's checked traffic "
                                                  "bounds P(wrong) there at or under its error bound δ")
    SIMILAR_NOT_SAME = "similar_not_same", "verifier", "close, but not close enough to serve"
    LOW_SIMILARITY = "low_similarity", "similarity", "the turn cosine is below the half-hit threshold"
    # store: why an answer is not written (besides a gate's code)
    EMPTY_ANSWER = "empty_answer", "store", "the answer is empty or blank"
    TOOL_CALLS = "tool_calls", "store", "the conversation holds tool calls, whose answers depend on the tools' results"


class Rule(NamedTuple):
    code: str
    family: str
    description: str


RULES: dict[str, Rule] = {code.value: Rule(code.value, code.family, code.description) for code in ReasonCode}


def family_of(code: str) -> str:
    """The family of a reason code; KeyError for a code nobody registered."""
    return RULES[code].family


def codes_of(family: str) -> frozenset[ReasonCode]:
    return frozenset(code for code in ReasonCode if code.family == family)

"""The registry of reason codes: every code a decision can carry, with its rule family.

A ``Reason.code`` names the rule that spoke; its family groups rules that read the
same thing, so an evaluation can say which family decided a case and ablate a whole
family at once. Which codes veto outright is ``evidence.HARD_VETOES``; this table
only names and groups them.

    >>> RULES["opposite_actions"].family, family_of("semantic_match")
    ('veto', 'verifier')
    >>> sorted(codes_of("gate"))[:3]
    ['correction', 'domain_disabled', 'no_candidate']
"""

from __future__ import annotations

from typing import NamedTuple

FAMILIES = ("gate", "veto", "context", "entities", "skeleton", "change", "lexical", "validation", "verifier",
            "similarity")


class Rule(NamedTuple):
    code: str
    family: str
    description: str


_TABLE: tuple[tuple[str, str, str], ...] = (
    # gate: decided before any candidate is weighed
    ("time_sensitive", "gate", "the answer depends on the current time; never served from cache"),
    ("domain_disabled", "gate", "caching is turned off for the request's domain"),
    ("turn_too_long", "gate", "the turn is longer than context.max_turn_chars; never served or stored"),
    ("reset", "gate", "the user restarts the conversation"),
    ("correction", "gate", "the user corrects an earlier answer"),
    ("no_candidate", "gate", "nothing is cached in the request's scope"),
    ("store_error", "gate", "the store failed; the cache fails open to the engine"),
    # veto: near-certain signals, shown on public minimal pairs
    ("quantity_change", "veto", "a normalised number, amount, date or time was replaced by another"),
    ("intent_reversal", "veto", "one request negates or reverses what the other asks"),
    ("opposite_actions", "veto", "the requests ask for opposite actions (enable / disable)"),
    ("direction_reversed", "veto", "the same two places the other way round (from / to)"),
    # context: the history, scored apart from the turn
    ("context_dependent", "context", "a global entry cannot answer a turn that refers back"),
    ("context_mismatch", "context", "only one request has a history, or the histories are far apart"),
    ("context_entities", "context", "the histories name different things"),
    ("context_changed", "context", "a prior turn was edited"),
    ("topic_switch", "context", "the turn leaves the conversation's topic"),
    # entities: what the turn is about
    ("entity_change", "entities", "an entity of the cached request was replaced by another"),
    ("added_constraint", "entities", "the request adds an entity the cached one lacks"),
    ("dropped_constraint", "entities", "the request drops an entity the cached one has"),
    ("entity_order", "entities", "the same entities in another order (from / to, A vs B)"),
    # skeleton: what kind of task is asked
    ("task_skeleton", "skeleton", "another question type ('why' is not 'how much')"),
    ("task_action", "skeleton", "another action class (deploy / debug, return / exchange)"),
    ("defined_term", "skeleton", "asks the meaning of another term"),
    # change: negation and change markers of the turn
    ("negation_parity", "change", "one request holds a negation the other does not"),
    ("negated", "change", "one request says 不 / 没 where the other does not"),
    ("change_detected", "change", "the turn adds, removes or replaces a condition"),
    ("constraint_change", "change", "a follow-up modifies the previous request (half-hit)"),
    # lexical: the two texts diffed word by word
    ("noun_change", "lexical", "the subject noun was swapped for another"),
    ("opposite_words", "lexical", "a word was replaced by its opposite"),
    ("roles_swapped", "lexical", "two words trade places ('A borrowed from B' / 'B from A')"),
    ("related_but_different", "lexical", "a one-slot edit makes another task"),
    # validation: the cached answer's key facts against the request
    ("validation_failed", "validation", "a key fact of the cached answer contradicts the request"),
    # verifier / similarity: the learned verifier, or the turn cosine where it is off
    ("semantic_match", "verifier", "the candidate is the same request: served"),
    ("similar_not_same", "verifier", "close, but not close enough to serve"),
    ("low_similarity", "similarity", "the turn cosine is below the half-hit threshold"),
)

RULES: dict[str, Rule] = {code: Rule(code, family, description) for code, family, description in _TABLE}


def family_of(code: str) -> str:
    """The family of a reason code; KeyError for a code nobody registered."""
    return RULES[code].family


def codes_of(family: str) -> frozenset[str]:
    return frozenset(code for code, rule in RULES.items() if rule.family == family)

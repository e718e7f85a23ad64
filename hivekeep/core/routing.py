"""The routing rule: one sentence, stated at every place where a memory is filed."""

from __future__ import annotations

ROUTING_RULE = (
    "Should this influence the agent's behaviour in most future conversations, without anyone "
    "mentioning it? Yes: it belongs in the profile (edit_profile). No: it belongs in the archive "
    "(memorize)."
)

KNOW_VS_HAPPENED = (
    "The profile holds what you know: current state, standing preferences, active work. The "
    "archive holds what happened: dated events, past details, one-off facts. Moving something out "
    "of the profile into the archive is filing, not deletion."
)

RECALL_FIRST = (
    "Your archive is not shown to you automatically. Before saying you don't remember or don't "
    "know something about the past, search it with recall."
)

from __future__ import annotations

import dataclasses
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hivekeep.core.compaction import (
    CompactionSettings,
    FoldPlan,
    MessageInfo,
    SummaryInfo,
    Zone,
    keep_budget,
    needs_compaction,
    plan_fold,
    plan_merge,
    render_tool_result,
    room_warning,
    should_catch_up,
    summary_max_tokens,
    tool_result_zone_map,
    tool_result_zones,
)
from hivekeep.core.compaction import (
    min_batch as min_batch_of,
)
from hivekeep.errors import ValidationError

NO_MIN = CompactionSettings(min_batch_tokens=0)


def chat(*tokens: int) -> list[MessageInfo]:
    """Alternating user/assistant messages with ids 1.. and the given token counts."""
    roles = ("user", "assistant")
    return [MessageInfo(i + 1, roles[i % 2], t) for i, t in enumerate(tokens)]


def call(id: int, tokens: int, *call_ids: str) -> MessageInfo:
    return MessageInfo(id, "assistant", tokens, tool_call_ids=call_ids)


def result(id: int, tokens: int, call_id: str) -> MessageInfo:
    return MessageInfo(id, "tool", tokens, tool_call_id=call_id)


# --- settings ------------------------------------------------------------------------------------


def test_defaults_are_the_spec_numbers() -> None:
    s = CompactionSettings()
    assert (s.threshold_percent, s.keep_percent) == (75.0, 40.0)
    assert (s.max_summaries, s.summary_budget_percent, s.min_batch_tokens) == (10, 20.0, 2000)
    assert (s.intact_groups, s.observation_groups, s.observation_chars) == (2, 10, 200)


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("threshold_percent", 0),
        ("threshold_percent", 100),
        ("threshold_percent", float("nan")),
        ("keep_percent", -1.0),
        ("summary_budget_percent", 100.0),
        ("summary_budget_percent", "20"),
        ("max_summaries", 0),
        ("max_summaries", 2.5),
        ("max_summaries", True),
        ("min_batch_tokens", -1),
        ("intact_groups", 0),
        ("observation_groups", -1),
        ("observation_chars", 0),
        ("zone_step", 0),
        ("max_catch_up_passes", 0),
    ],
)
def test_settings_reject_out_of_range_values(field: str, value: object) -> None:
    with pytest.raises(ValidationError, match=rf"{field} has value {value!r}\. It must be"):
        CompactionSettings(**{field: value})  # type: ignore[arg-type]


def test_keep_window_must_be_below_threshold() -> None:
    with pytest.raises(ValidationError, match=r"keep_percent has value 75\.0.*threshold_percent"):
        CompactionSettings(keep_percent=75.0)
    CompactionSettings(keep_percent=74.9)  # just below is fine


def test_overrides_through_replace_are_validated_again() -> None:
    assert dataclasses.replace(CompactionSettings(), zone_step=1).zone_step == 1
    with pytest.raises(ValidationError, match="threshold_percent"):
        dataclasses.replace(CompactionSettings(), threshold_percent=30.0)


def test_message_and_summary_values_are_validated() -> None:
    with pytest.raises(ValidationError, match="role 'bot'"):
        MessageInfo(1, "bot", 5)
    with pytest.raises(ValidationError, match="-1 tokens"):
        MessageInfo(1, "user", -1)
    with pytest.raises(ValidationError, match="Only assistant"):
        MessageInfo(1, "user", 5, tool_call_ids=("a",))
    with pytest.raises(ValidationError, match="depth=-1"):
        SummaryInfo(1, 10, -1, "2024-01-01")
    with pytest.raises(ValidationError, match="Context window 0"):
        needs_compaction(10, 0, CompactionSettings())


# --- trigger and catch-up ------------------------------------------------------------------------


def test_trigger_is_strictly_above_threshold() -> None:
    s = CompactionSettings()
    assert not needs_compaction(750, 1000, s)  # exactly 75 %
    assert needs_compaction(751, 1000, s)
    assert not needs_compaction(96_000, 128_000, s)
    assert needs_compaction(96_001, 128_000, s)
    assert needs_compaction(501, 1000, CompactionSettings(threshold_percent=50, keep_percent=10))


def test_catch_up_repeats_while_over_threshold_and_stops_at_the_bound() -> None:
    s = CompactionSettings(max_catch_up_passes=3)
    assert should_catch_up(1, 800, 1000, s)
    assert not should_catch_up(1, 750, 1000, s)  # back under the trigger
    assert should_catch_up(2, 999, 1000, s)
    assert not should_catch_up(3, 999, 1000, s)  # bound reached, however full


# --- keep-window walk and min batch --------------------------------------------------------------


def test_keep_window_includes_a_message_that_fills_it_exactly() -> None:
    # window 1000, keep 40 % = 400 tokens: 200 + 200 fits exactly.
    plan = plan_fold(chat(100, 100, 200, 200), 1000, NO_MIN)
    assert plan == FoldPlan(fold=(1, 2), keep=(3, 4), tokens=200)


def test_keep_window_stops_at_the_first_message_that_does_not_fit() -> None:
    plan = plan_fold(chat(100, 100, 201, 200), 1000, NO_MIN)
    assert plan == FoldPlan(fold=(1, 2, 3), keep=(4,), tokens=401)
    # an older small message that would still fit is folded: the keep-window is contiguous
    plan = plan_fold(chat(5, 300, 200, 200), 1000, NO_MIN)
    assert plan == FoldPlan(fold=(1, 2), keep=(3, 4), tokens=305)


def test_newest_message_larger_than_the_keep_window_is_folded_too() -> None:
    assert plan_fold(chat(100, 401), 1000, NO_MIN) == FoldPlan((1, 2), (), 501)


def test_nothing_to_fold_when_everything_fits() -> None:
    assert plan_fold(chat(100, 100, 200), 1000, NO_MIN) is None
    assert plan_fold([], 1000, NO_MIN) is None


def test_min_batch_skips_small_folds() -> None:
    s = CompactionSettings(min_batch_tokens=300)  # below 5 % of a 10,000 window
    assert plan_fold(chat(150, 149, 4000), 10_000, s) is None  # 299 < 300
    assert plan_fold(chat(150, 150, 4000), 10_000, s) == FoldPlan((1, 2), (3,), 300)


def test_the_minimum_batch_scales_down_with_a_small_window() -> None:
    """Issue 34: a fixed 2,000-token minimum never let a 4,096 window compact in time."""
    s = CompactionSettings()
    assert min_batch_of(128_000, s) == 2000
    assert min_batch_of(4096, s) == 204  # 5 % of the window
    assert plan_fold(chat(500, 500, 500, 500, 600), 4096, s) == FoldPlan((1, 2), (3, 4, 5), 1000)


def test_the_rest_of_the_context_shrinks_the_keep_window() -> None:
    s = CompactionSettings()
    messages = chat(400, 400, 400, 400)  # 1,600: all inside 40 % of 4,096 on their own
    assert plan_fold(messages, 4096, s) is None
    assert keep_budget(4096, s, 1200) == 438
    assert plan_fold(messages, 4096, s, reserved_tokens=1200) == FoldPlan((1, 2, 3), (4,), 1200)
    # nothing left for a keep-window: everything folds, once waiting for a bigger batch would
    # overflow the window
    assert plan_fold(chat(100, 50), 4096, s, reserved_tokens=2000) is None
    assert plan_fold(chat(100, 50), 4096, s, reserved_tokens=3800) == FoldPlan((1, 2), (), 150)


def test_a_fixed_part_that_leaves_too_little_room_is_named() -> None:
    s = CompactionSettings()
    assert room_warning(1759, 8192, s) is None
    warning = room_warning(2400, 4096, s)
    assert warning is not None and "2,400 tokens" in warning and "672 of" in warning
    assert summary_max_tokens(4096, s, 2048) == 409
    assert summary_max_tokens(128_000, s, 2048) == 2048


def test_force_folds_at_least_half_when_everything_fits_and_under_min_batch() -> None:
    s = CompactionSettings()  # min batch 2000
    messages = chat(10, 10, 10, 10, 10)
    assert not needs_compaction(50, 1000, s) and plan_fold(messages, 1000, s) is None
    plan = plan_fold(messages, 1000, s, force=True)
    assert plan == FoldPlan(fold=(1, 2, 3), keep=(4, 5), tokens=30)  # ceil(5 / 2) = 3


def test_force_keeps_the_larger_keep_window_fold() -> None:
    plan = plan_fold(chat(300, 300, 300, 101), 1000, NO_MIN, force=True)
    assert plan is not None and plan.fold == (1, 2, 3)  # more than half, by the keep-window


def test_force_widens_to_a_whole_exchange_and_folds_a_single_message() -> None:
    messages = [MessageInfo(1, "user", 5), call(2, 5, "a"), result(3, 5, "a"), result(4, 5, "a")]
    plan = plan_fold(messages, 1000, CompactionSettings(), force=True)
    assert plan is not None and plan.fold == (1, 2, 3, 4)  # half is 2, but 2-4 are one exchange
    assert plan_fold(chat(5), 1000, CompactionSettings(), force=True) == FoldPlan((1,), (), 5)


# --- tool exchanges are never split --------------------------------------------------------------


def test_exchange_straddling_the_boundary_stays_raw_whole() -> None:
    messages = [
        MessageInfo(1, "user", 500),
        call(2, 100, "a", "b"),
        result(3, 150, "a"),
        result(4, 150, "b"),
        MessageInfo(5, "assistant", 50),
    ]  # 350 tokens fit (3, 4, 5), but 3 and 4 belong to 2
    assert plan_fold(messages, 1000, NO_MIN) == FoldPlan((1,), (2, 3, 4, 5), 500)


def test_result_separated_from_its_call_still_binds_the_exchange() -> None:
    messages = [call(1, 300, "a"), MessageInfo(2, "user", 10), result(3, 10, "a")]
    plan = plan_fold(messages, 1000, NO_MIN, force=True)
    assert plan == FoldPlan((1, 2, 3), (), 320)


def test_reused_call_ids_bind_to_the_latest_call() -> None:
    messages = [call(1, 10, "call_0"), result(2, 500, "call_0"), call(3, 10, "call_0")]
    messages += [result(4, 10, "call_0")]  # bound to 1, it would keep 1-4 raw as one exchange
    assert plan_fold(messages, 1000, NO_MIN) == FoldPlan((1, 2), (3, 4), 510)


Unit = list[MessageInfo]


@st.composite
def histories(draw: st.DrawFn) -> list[Unit]:
    """Raw histories as units: a plain message, or a call followed by its results."""
    units: list[Unit] = []
    next_id = 1
    for _ in range(draw(st.integers(0, 25))):
        if draw(st.booleans()):
            role = draw(st.sampled_from(["user", "assistant", "system"]))
            units.append([MessageInfo(next_id, role, draw(st.integers(0, 400)))])
            next_id += 1
            continue
        call_ids = [f"call_{k}" for k in range(draw(st.integers(1, 3)))]  # reused every turn
        unit = [call(next_id, draw(st.integers(0, 200)), *call_ids)]
        next_id += 1
        for call_id in draw(st.permutations(call_ids)):
            unit.append(result(next_id, draw(st.integers(0, 400)), call_id))
            next_id += 1
        units.append(unit)
    return units


@pytest.mark.slow
@settings(max_examples=300, deadline=None)
@given(
    units=histories(),
    window=st.integers(100, 5000),
    keep=st.integers(1, 70),
    min_batch=st.integers(0, 1500),
    force=st.booleans(),
    cap=st.none() | st.integers(1, 3000),
)
def test_fold_is_an_older_prefix_of_whole_units(
    units: list[Unit], window: int, keep: int, min_batch: int, force: bool, cap: int | None
) -> None:
    s = CompactionSettings(keep_percent=keep, min_batch_tokens=min_batch)
    messages = [m for unit in units for m in unit]
    plan = plan_fold(messages, window, s, force=force, max_fold_tokens=cap)
    if plan is None:
        assert not (force and messages)
        return
    ids = [m.id for m in messages]
    assert list(plan.fold + plan.keep) == ids  # union, disjoint, every fold older than every keep
    assert plan.fold, "an empty fold is returned as None"
    for unit in units:
        unit_ids = {m.id for m in unit}
        assert unit_ids <= set(plan.fold) or unit_ids <= set(plan.keep)
    tokens = {m.id: m.tokens for m in messages}
    assert plan.tokens == sum(tokens[i] for i in plan.fold)
    if cap is not None and plan.tokens > cap:
        assert plan.fold == tuple(m.id for m in units[0])  # only an oversized first unit
    if cap is None and not force:
        total = sum(tokens.values())  # waived only when waiting for more would overflow
        assert plan.tokens >= min_batch_of(window, s) or total + min_batch_of(window, s) > window
        share = keep * window / 100
        newest_folded = ids.index(plan.fold[-1])
        assert sum(tokens[i] for i in ids[newest_folded:]) > share  # could not have been kept
        rest = _after_first_unit(units, plan.keep)
        assert sum(tokens[i] for i in rest) <= share  # only a straddling unit exceeds the share
    if cap is None and force:
        assert len(plan.fold) >= (len(messages) + 1) // 2


def _after_first_unit(units: list[Unit], keep: tuple[int, ...]) -> list[int]:
    kept_units = [unit for unit in units if unit[0].id in set(keep)]
    return [m.id for unit in kept_units[1:] for m in unit]


def test_fold_cap_takes_the_oldest_whole_exchanges() -> None:
    messages = [*chat(100, 100), call(3, 100, "a"), result(4, 100, "a")]
    messages += [MessageInfo(5, "user", 1), MessageInfo(6, "assistant", 1)]  # keep-window: 5, 6
    plan = plan_fold(messages, 10, NO_MIN, max_fold_tokens=350)
    assert plan == FoldPlan((1, 2), (3, 4, 5, 6), 200)  # 3-4 would pass 350 tokens
    plan = plan_fold(messages, 10, NO_MIN, max_fold_tokens=50)
    assert plan == FoldPlan((1,), (2, 3, 4, 5, 6), 100)  # one unit even when over the cap


def test_min_batch_is_judged_on_the_whole_fold_not_the_capped_batch() -> None:
    s = CompactionSettings(min_batch_tokens=300)
    plan = plan_fold(chat(200, 200, 4000), 10_000, s, max_fold_tokens=250)
    assert plan == FoldPlan((1,), (2, 3), 200)


def test_repeated_message_ids_are_refused() -> None:
    with pytest.raises(ValidationError, match="ids repeat"):
        plan_fold([MessageInfo(1, "user", 5), MessageInfo(1, "assistant", 5)], 1000, NO_MIN)


# --- telescopic merge ----------------------------------------------------------------------------


def summaries(*tokens: int) -> list[SummaryInfo]:
    return [
        SummaryInfo(i + 1, t, 0, f"2024-01-{i + 1:02d}T00:00:00Z") for i, t in enumerate(tokens)
    ]


def test_merge_by_count_takes_the_oldest_half_rounded_up() -> None:
    s = CompactionSettings()
    assert plan_merge(summaries(*[1] * 10), 1000, s) is None  # exactly max_summaries
    assert plan_merge(summaries(*[1] * 11), 1000, s) == (1, 2, 3, 4, 5, 6)
    assert plan_merge(summaries(*[1] * 12), 1000, s) == (1, 2, 3, 4, 5, 6)


def test_merge_by_budget() -> None:
    s = CompactionSettings()  # 20 % of 1000 = 200 tokens
    assert plan_merge(summaries(70, 70, 60), 1000, s) is None  # exactly 200
    assert plan_merge(summaries(70, 70, 61), 1000, s) == (1, 2)
    assert plan_merge(summaries(10, 191), 1000, s) == (1, 2)  # at least two


def test_merge_orders_by_first_message_not_by_input_order() -> None:
    shuffled = summaries(*[1] * 11)
    random.Random(4).shuffle(shuffled)
    assert plan_merge(shuffled, 1000, CompactionSettings()) == (1, 2, 3, 4, 5, 6)


def test_a_single_summary_over_budget_cannot_merge() -> None:
    assert plan_merge(summaries(900), 1000, CompactionSettings()) is None
    assert plan_merge([], 1000, CompactionSettings()) is None


# --- progressive context pipeline ----------------------------------------------------------------


def test_zones_with_defaults() -> None:
    s = CompactionSettings()
    assert tool_result_zones(0, s) == []
    assert tool_result_zones(6, s) == [Zone.INTACT] * 6  # 4 older groups round down to 0
    assert tool_result_zones(7, s) == [Zone.OBSERVATION] * 5 + [Zone.INTACT] * 2
    zones = tool_result_zones(23, s)  # 21 older round down to 20
    assert zones == [Zone.COLLAPSED] * 10 + [Zone.OBSERVATION] * 10 + [Zone.INTACT] * 3


def _render_turn(group_count: int, s: CompactionSettings) -> list[str]:
    zones = tool_result_zones(group_count, s)
    return [
        render_tool_result(f"result of call {g}: " + "x" * (400 + 13 * g), "search", zone, s)
        for g, zone in enumerate(zones)
    ]


def test_rendered_prefix_is_byte_identical_between_steps() -> None:
    s = CompactionSettings()
    previous = _render_turn(0, s)
    changes = []
    for turn in range(1, 61):
        current = _render_turn(turn, s)
        intact = tool_result_zones(turn, s).count(Zone.INTACT)
        assert min(turn, s.intact_groups) <= intact <= s.intact_groups + s.zone_step - 1
        crossing = turn > s.intact_groups and (turn - s.intact_groups) % s.zone_step == 0
        if current[: turn - 1] != previous:
            changes.append(turn)
        else:  # what a provider caches: the whole rendered context so far is a prefix
            assert "".join(current).startswith("".join(previous))
        assert (current[: turn - 1] != previous) == crossing
        previous = current
    # existing groups re-render only when the older part grows by a whole step
    assert changes == [7, 12, 17, 22, 27, 32, 37, 42, 47, 52, 57]


@settings(max_examples=200, deadline=None)
@given(
    intact=st.integers(1, 6),
    observation=st.integers(0, 12),
    step=st.integers(1, 8),
    turns=st.integers(1, 80),
)
def test_zones_only_age_and_only_at_steps(
    intact: int, observation: int, step: int, turns: int
) -> None:
    s = CompactionSettings(intact_groups=intact, observation_groups=observation, zone_step=step)
    order = [Zone.COLLAPSED, Zone.OBSERVATION, Zone.INTACT]
    previous: list[Zone] = []
    for count in range(1, turns + 1):
        zones = tool_result_zones(count, s)
        assert [order.index(z) for z in zones] == sorted(order.index(z) for z in zones)
        assert zones.count(Zone.OBSERVATION) <= observation
        assert min(count, intact) <= zones.count(Zone.INTACT) <= intact + step - 1
        assert zones[-1] == Zone.INTACT
        at_step = count > intact and (count - intact) % step == 0
        if not at_step:
            assert zones[: count - 1] == previous
        for old, new in zip(previous, zones, strict=False):
            assert order.index(new) <= order.index(old)  # a group never gets younger
        previous = zones


def test_zone_map_groups_results_by_their_call() -> None:
    s = CompactionSettings(intact_groups=1, observation_groups=1, zone_step=1)
    messages = [
        call(1, 5, "a", "b"),
        result(2, 5, "a"),
        result(3, 5, "b"),
        MessageInfo(4, "user", 5),
        result(5, 5, "orphan"),
        call(6, 5, "a"),
        result(7, 5, "a"),
    ]
    assert tool_result_zone_map(messages, s) == {
        2: Zone.COLLAPSED,
        3: Zone.COLLAPSED,
        5: Zone.OBSERVATION,
        7: Zone.INTACT,
    }


def test_render_intact_is_unchanged() -> None:
    text = "line one\nline two " * 100
    assert render_tool_result(text, "search", Zone.INTACT, CompactionSettings()) == text


def test_render_observation_truncates_and_says_how_much() -> None:
    s = CompactionSettings()
    text = "a" * 200 + "b" * 1300
    assert render_tool_result(text, "search", Zone.OBSERVATION, s) == (
        "a" * 200 + "\n[truncated: 1,300 more chars]"
    )
    short = "c" * 210  # the marker would make it longer: left whole
    assert render_tool_result(short, "search", Zone.OBSERVATION, s) == short


def test_render_collapsed_is_one_deterministic_line() -> None:
    s = CompactionSettings()
    text = "z\n" * 617
    assert render_tool_result(text, "web_search", Zone.COLLAPSED, s) == (
        "[web_search result: 1,234 chars, collapsed]"
    )
    assert render_tool_result("", "two\nlines ", Zone.COLLAPSED, s) == (
        "[two lines result: 0 chars, collapsed]"
    )
    assert render_tool_result("x", "", Zone.COLLAPSED, s) == "[tool result: 1 chars, collapsed]"


def test_merge_order_breaks_timestamp_ties_by_first_message() -> None:
    """Messages stored in one call share a timestamp; the merged summary is the newest row but
    covers the oldest messages, so it must still count as the oldest."""
    at = "2024-05-01T10:00:00.000000Z"
    summaries = [
        SummaryInfo(id=9, tokens=10, depth=1, first_at=at, first_message_id=1),
        SummaryInfo(id=3, tokens=10, depth=0, first_at=at, first_message_id=5),
        SummaryInfo(id=4, tokens=10, depth=0, first_at=at, first_message_id=7),
    ]
    chosen = plan_merge(summaries, 100_000, CompactionSettings(max_summaries=2))
    assert chosen == (9, 3)

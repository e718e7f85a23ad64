"""recall through the public API: the floor, both arms, fusion, filters, attribution."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest

from hivekeep import Hive, Settings
from hivekeep.providers.embeddings.local import LocalEmbedder
from hivekeep.store.base import MemoryFilter
from tests.support import VectorTable, random_unit, with_cosine

QUERY = "which city did they pick"


@pytest.fixture
def query_vector(table: VectorTable) -> np.ndarray:
    vector = random_unit("query", table.dimension)
    table.set(QUERY, vector)
    return vector


def test_default_floor_keeps_cosine_06_and_drops_04(
    table_hive: Hive, table: VectorTable, query_vector: np.ndarray
) -> None:
    agent = table_hive.create_agent("alice")
    table.set("memory sixty", with_cosine(query_vector, 0.6, "six"))
    table.set("memory forty", with_cosine(query_vector, 0.4, "four"))
    agent.memorize("memory sixty", category="fact")
    agent.memorize("memory forty", category="fact")
    found = [m["content"] for m in agent.call_tool("recall", {"query": QUERY})["memories"]]
    assert found == ["memory sixty"]


def test_floor_is_configurable(
    db_path: Path | str, table: VectorTable, query_vector: np.ndarray
) -> None:
    with Hive(db_path, embedder=table, settings=Settings(similarity_floor=0.3)) as hive:
        agent = hive.create_agent("alice")
        table.set("memory forty", with_cosine(query_vector, 0.4, "four"))
        agent.memorize("memory forty", category="fact")
        assert agent.recall(QUERY).hits[0].memory.content == "memory forty"


def test_floor_with_the_real_model_uses_true_cosine(
    db_path: Path | str, local_embedder: LocalEmbedder
) -> None:
    hive = Hive(db_path, embedder=local_embedder, settings=Settings(similarity_floor=0.5))
    agent = hive.create_agent("alice")
    query = "What does the user like to drink in the morning?"
    texts = ["The user drinks green tea every morning.", "The quarterly tax filing is due."]
    for text in texts:
        agent.memorize(text, category="fact")
    q, close, far = local_embedder.embed([query, *texts])
    assert float(q @ close) >= 0.5 > float(q @ far)  # the model itself, checked with numpy
    arms, _ = hive._services.recall.arms(agent.id, query, 10, MemoryFilter())
    similarities = dict(arms.vector)
    assert len(similarities) == 1
    [(_, similarity)] = similarities.items()
    assert similarity == pytest.approx(float(q @ close), abs=1e-4)
    hive.close()


def test_bundled_floor_keeps_a_relevant_pair_the_seed_floor_dropped(
    hive: Hive, local_embedder: LocalEmbedder
) -> None:
    """Regression: MiniLM scores true evidence lower than big models; 0.5 dropped it."""
    agent = hive.create_agent("alice")
    query = "What did Melanie paint recently?"
    relevant = "Melanie: I just finished a sunset over the lake, it took me two weeks."
    unrelated = "The quarterly tax filing is due on Friday."
    agent.memorize(relevant, category="fact")
    agent.memorize(unrelated, category="fact")
    q, r, u = local_embedder.embed([query, relevant, unrelated])
    assert 0.2 <= float(q @ r) < 0.5 and float(q @ u) < 0.2
    vector_hits = dict(hive._services.recall.arms(agent.id, query, 10, MemoryFilter())[0].vector)
    assert set(vector_hits) == {agent.list_memories().memories[1].id}  # the relevant one only
    assert hive._services.recall.defaults.similarity_floor == 0.2


def test_lexical_feedback_steers_the_vector_arm(
    hive: Hive, monkeypatch: pytest.MonkeyPatch
) -> None:
    searched: list[tuple[list[int], float]] = []
    search = hive.store.vector_search

    def spy(viewer_id, vector, k, filters, *, toward=(), weight=0.0):
        searched.append((list(toward), weight))
        return search(viewer_id, vector, k, filters, toward=toward, weight=weight)

    monkeypatch.setattr(hive.store, "vector_search", spy)
    agent = hive.create_agent("alice")
    agent.memorize("Jon: Just got back from Paris, the show went great!", category="fact")
    agent.memorize("Jon: The dance competition is in Paris next month.", category="fact")
    agent.memorize("Gina: My store opens on Saturday.", category="fact")
    query = "Where did Jon travel for his dance competition?"
    service = hive._services.recall
    with_feedback = service.arms(agent.id, query, 10, MemoryFilter())[0]
    service.defaults = dataclasses.replace(service.defaults, feedback_weight=0.0)
    without = service.arms(agent.id, query, 10, MemoryFilter())[0]
    assert with_feedback.text == without.text
    # the search moved toward the top text hits (the store moves it: Store.vector_search)
    assert searched[-2] == (with_feedback.text[:3], 0.5) and searched[-1][1] == 0.0
    similarity = dict(without.vector)
    for memory_id, value in with_feedback.vector:  # reported similarity is to the query itself
        assert value == pytest.approx(similarity[memory_id], abs=1e-4)


def test_full_text_arm_finds_what_vectors_miss(table_hive: Hive, table: VectorTable) -> None:
    agent = table_hive.create_agent("alice")
    agent.memorize("Booked the Zanzibar ferry for 9 March", category="fact")
    hits = agent.recall("zanzibar").hits
    assert hits and hits[0].memory.content.startswith("Booked the Zanzibar")
    assert hits[0].similarity is None


def test_and_matches_rank_before_or_fill(table_hive: Hive) -> None:
    agent = table_hive.create_agent("alice")
    agent.memorize("Alice bought a red bicycle", category="fact")
    agent.memorize("The red wine was excellent", category="fact")
    agent.memorize("A bicycle shop opened downtown", category="fact")
    contents = [h.memory.content for h in agent.recall("red bicycle").hits]
    assert contents[0] == "Alice bought a red bicycle"
    assert set(contents[1:]) == {"The red wine was excellent", "A bicycle shop opened downtown"}


def test_hybrid_fuses_both_arms(
    table_hive: Hive, table: VectorTable, query_vector: np.ndarray
) -> None:
    agent = table_hive.create_agent("alice")
    table.set("They chose Porto for the offsite city", with_cosine(query_vector, 0.9, "p"))
    table.set("Lunch was pasta", with_cosine(query_vector, 0.55, "l"))
    agent.memorize("They chose Porto for the offsite city", category="decision")
    agent.memorize("Lunch was pasta", category="fact")
    hits = agent.recall(QUERY).hits
    assert hits[0].memory.content.startswith("They chose Porto")  # both arms agree
    assert hits[0].score > hits[1].score


def test_filters_apply_to_both_arms(
    table_hive: Hive, table: VectorTable, query_vector: np.ndarray
) -> None:
    agent = table_hive.create_agent("alice")
    table.set("city decision for Porto", with_cosine(query_vector, 0.95, "x"))
    table.set("city fact about Lisbon", with_cosine(query_vector, 0.9, "y"))
    agent.memorize("city decision for Porto", category="decision", subject="offsite")
    agent.memorize("city fact about Lisbon", category="fact", subject="travel")
    by_category = agent.call_tool("recall", {"query": QUERY + " city", "category": "fact"})
    assert [m["content"] for m in by_category["memories"]] == ["city fact about Lisbon"]
    by_subject = agent.call_tool("recall", {"query": "city", "subject": "OFFSITE"})
    assert [m["content"] for m in by_subject["memories"]] == ["city decision for Porto"]


def test_since_uses_creation_time_and_rejects_bad_dates(table_hive: Hive) -> None:
    agent = table_hive.create_agent("alice")
    agent.memorize("Visited the Louvre", category="fact")
    assert agent.call_tool("recall", {"query": "Louvre", "since": "2999-01-01"}) == {"memories": []}
    assert len(agent.call_tool("recall", {"query": "Louvre", "since": "2000-01-01"})["memories"])
    error = agent.call_tool("recall", {"query": "Louvre", "since": "last week"})
    assert "since" in error["error"] and "ISO" in error["error"]


def test_results_carry_the_documented_fields(table_hive: Hive) -> None:
    alice, bob = table_hive.create_agent("alice"), table_hive.create_agent("bob")
    bob.memorize(
        "Staging server is staging.internal",
        category="knowledge",
        scope="shared",
        importance=6,
        source_context="ops channel",
    )
    [memory] = alice.call_tool("recall", {"query": "staging server"})["memories"]
    assert memory["shared_by"] == "bob"
    assert memory["source_context"] == "ops channel"
    assert {
        "id",
        "content",
        "category",
        "subject",
        "importance",
        "scope",
        "age",
        "created_at",
        "updated_at",
        "score",
    } <= set(memory)
    [own] = bob.call_tool("recall", {"query": "staging server"})["memories"]
    assert "shared_by" not in own


def test_recall_counts_retrievals_but_never_ranks_by_them(table_hive: Hive) -> None:
    agent = table_hive.create_agent("alice")
    agent.memorize("Cat named Miso", category="fact")
    agent.memorize("Cat food brand is Orijen", category="fact")
    for _ in range(5):
        agent.recall("Orijen")
    top = agent.recall("cat named miso").hits[0].memory
    assert top.content == "Cat named Miso"
    page = agent.list_memories()
    assert {m.content: m.retrieval_count for m in page.memories}["Cat food brand is Orijen"] >= 5


def test_equally_relevant_memories_come_newest_first(table_hive: Hive) -> None:
    agent = table_hive.create_agent("alice")
    agent.memorize("zebra sighting one", category="fact")
    agent.memorize("zebra sighting two", category="fact")
    hits = agent.recall("zebra").hits
    assert [h.memory.content for h in hits] == ["zebra sighting two", "zebra sighting one"]


def test_embedder_outage_degrades_to_full_text_with_a_warning(
    table_hive: Hive, table: VectorTable
) -> None:
    agent = table_hive.create_agent("alice")
    agent.memorize("Passport renewal in April", category="fact")
    table.fail = True
    result = agent.call_tool("recall", {"query": "passport"})
    assert [m["content"] for m in result["memories"]] == ["Passport renewal in April"]
    assert "full-text" in result["warning"]


def test_two_letter_terms_are_searchable(table_hive: Hive) -> None:
    """Regression: short terms such as "AI" or "Go" must reach the full-text arm."""
    agent = table_hive.create_agent("alice")
    agent.memorize("Started a course on AI safety", category="fact")
    agent.memorize("Rewrote the scheduler in Go", category="fact")
    agent.memorize("Painted the kitchen blue", category="fact")
    assert agent.recall("AI").hits[0].memory.content == "Started a course on AI safety"
    assert agent.recall("Go").hits[0].memory.content == "Rewrote the scheduler in Go"


def test_questions_naming_a_month_find_memories_from_then(table_hive: Hive) -> None:
    """Regression for indexing the creation date: the month and year are searchable words."""
    agent = table_hive.create_agent("alice")
    agent.memorize_many(
        [
            {"content": "Went to a jazz concert", "category": "fact", "created_at": "2023-09-17"},
            {"content": "Went to a rock concert", "category": "fact", "created_at": "2023-05-08"},
            {"content": "Went to a folk concert", "category": "fact", "created_at": "2024-05-02"},
        ]
    )
    hits = agent.recall("Which concert did she go to in May 2023?").hits
    assert hits[0].memory.content == "Went to a rock concert"


def test_a_question_naming_an_ordinal_day_finds_the_memory_from_that_day(table_hive: Hive) -> None:
    """ "on 8th May" matches the creation date indexed as "8 May" (the ordinal searched as 8)."""
    agent = table_hive.create_agent("alice")
    agent.memorize_many(
        [
            {"content": "Went to a jazz concert", "category": "fact", "created_at": "2023-05-18"},
            {"content": "Went to a rock concert", "category": "fact", "created_at": "2023-05-08"},
        ]
    )
    hits = agent.recall("Which concert did she go to on 8th May 2023?").hits
    assert hits[0].memory.content == "Went to a rock concert"


def test_full_text_arm_is_not_crowded_out_by_other_agents_matches(table_hive: Hive) -> None:
    """Another agent's better-ranked private matches never take the viewer's full-text places."""
    alice, bob = table_hive.create_agent("alice"), table_hive.create_agent("bob")
    results = bob.memorize_many(
        {"content": f"lighthouse {i}", "category": "fact"} for i in range(150)
    )
    assert not any(r.duplicate for r in results)
    mine = alice.memorize("Walked to the old lighthouse on the cliffs", category="fact")
    service = table_hive._services.recall
    assert service.text_arm(alice.id, "lighthouse", 4, MemoryFilter()) == [mine.memory.id]
    assert len(service.text_arm(bob.id, "lighthouse", 4, MemoryFilter())) == 4
    assert [h.memory.id for h in alice.recall("lighthouse").hits] == [mine.memory.id]


@pytest.mark.parametrize("fts_weight", [0.0, 0.25, 3.0])
def test_the_full_text_weight_setting_is_the_weight_fusion_uses(
    db_path: Path | str, table: VectorTable, query_vector: np.ndarray, fts_weight: float
) -> None:
    """A hard-coded weight in recall (e.g. the bundled model's 1.0) must fail here."""
    settings = Settings(fts_weight=fts_weight, rrf_k=10, similarity_floor=0.3)
    with Hive(db_path, embedder=table, settings=settings) as hive:
        agent = hive.create_agent("alice")
        table.set("nothing in common here", with_cosine(query_vector, 0.9, "near"))
        table.set("they pick which city", with_cosine(query_vector, 0.6, "far"))
        agent.memorize("nothing in common here", category="fact")  # vector rank 0, no text match
        agent.memorize("they pick which city", category="fact")  # vector rank 1, text rank 0
        hits = {h.memory.content: h.score for h in agent.recall(QUERY).hits}
        assert hits["nothing in common here"] == pytest.approx(1 / 11)
        assert hits["they pick which city"] == pytest.approx(1 / 12 + fts_weight / 11)
        first = max(hits, key=lambda content: hits[content])
        assert first == ("nothing in common here" if fts_weight == 0 else "they pick which city")


@pytest.mark.parametrize("subject_weight", [0.5, 3.0])
def test_memories_about_the_subject_a_query_names_gain_a_bounded_bonus(
    db_path: Path | str, table: VectorTable, subject_weight: float
) -> None:
    """Subject-aware recall: the named subject's memories gain weight / (K + 1) at most."""
    query = "what did Ann's friend give"
    query_vector = random_unit("subject query", table.dimension)
    table.set(query, query_vector)
    table.set("A friend gave me a kite", with_cosine(query_vector, 0.9, "bob"))
    table.set("A friend gave Ann a kite", with_cosine(query_vector, 0.6, "ann"))
    scores = {}
    for weight in (0.0, subject_weight):
        settings = Settings(subject_weight=weight, rrf_k=10, fts_weight=1.0, similarity_floor=0.3)
        with Hive(db_path, embedder=table, settings=settings) as hive:
            agent = hive.get_agent("alice") if weight else hive.create_agent("alice")
            if not weight:
                agent.memorize("A friend gave me a kite", category="fact", subject="Bob")
                agent.memorize("A friend gave Ann a kite", category="fact", subject="Ann Lee")
            hits = agent.recall(query).hits
            scores[weight] = {h.memory.subject: h.score for h in hits}
            if weight:
                # a subject filter already keeps one subject: rank 0 in both arms, no bonus
                [only] = agent.recall(query, subject="Ann Lee").hits
                assert only.score == pytest.approx(2 / 11)
    assert scores[subject_weight]["Bob"] == pytest.approx(scores[0.0]["Bob"])
    assert scores[subject_weight]["Ann Lee"] == pytest.approx(
        scores[0.0]["Ann Lee"] + subject_weight / 11
    )


def test_subject_aware_recall_is_off_with_a_zero_weight_and_on_for_the_bundled_model(
    local_embedder: LocalEmbedder,
) -> None:
    assert Settings().recall_defaults(None).subject_weight == 0.0  # the seed: off
    resolved = Settings().recall_defaults(local_embedder.recall_defaults)
    assert resolved.subject_weight and resolved.subject_weight > 0
    assert (
        Settings(subject_weight=0.0).recall_defaults(local_embedder.recall_defaults).subject_weight
        == 0.0
    )
    assert Settings.from_env({"MEMORY_SUBJECT_WEIGHT": "0"}).subject_weight == 0.0


README_FACTS = (
    "The user moved to Lisbon in May 2024.",
    "The user has a cat named Miso.",
    "The user prefers short answers.",
    "The user works as a nurse at night.",
)


@pytest.mark.parametrize("query", ["where does the user live?", "where does the user live"])
def test_the_readme_query_ranks_lisbon_first_and_says_which_matches_are_weak(
    hive: Hive, query: str
) -> None:
    """Four facts that all say "The user": the word every memory holds neither ranks them nor
    steers the vector arm, so the one close in meaning comes first, the only strong match."""
    agent = hive.create_agent("assistant")
    for fact in README_FACTS:
        agent.memorize(fact, category="fact", subject="user")
    hits = agent.recall(query).hits
    assert hits[0].memory.content == README_FACTS[0]
    assert [h.match for h in hits] == ["strong"] + ["weak"] * (len(hits) - 1)
    assert "vector" in hits[0].found_by


def test_match_is_strong_for_every_word_and_weak_for_some(hive: Hive) -> None:
    agent = hive.create_agent("assistant")
    for fact in README_FACTS:
        agent.memorize(fact, category="fact", subject="user")
    [cat] = agent.recall("cat Miso").hits
    assert (cat.match, cat.found_by) == ("strong", ("vector", "text"))
    nonsense = agent.recall("user quantum chromodynamics").hits
    assert nonsense and all(h.match == "weak" for h in nonsense)
    assert all(h.found_by == ("text_partial",) for h in nonsense)


@pytest.mark.parametrize("time_weight", [1.0, 3.0])
def test_memories_stating_a_time_gain_a_bounded_bonus_when_the_query_asks_when(
    db_path: Path | str, table: VectorTable, time_weight: float
) -> None:
    """Time-aware recall: for a query asking when, memories stating a time gain weight / (K + 1)
    at most; a query that does not ask when ranks exactly as without the list."""
    asking, plain = "when did Ann buy a kite", "what kite did Ann buy"
    for query in (asking, plain):
        table.set(query, random_unit(query, table.dimension))
    undated, dated = "Ann bought a red kite", "Ann bought a kite last week"
    table.set(undated, with_cosine(table.vectors[asking], 0.9, "undated"))
    table.set(dated, with_cosine(table.vectors[asking], 0.6, "dated"))
    scores: dict[float, dict[str, dict[str, float]]] = {}
    for weight in (0.0, time_weight):
        settings = Settings(time_weight=weight, subject_weight=0.0, rrf_k=10, fts_weight=1.0)
        with Hive(db_path, embedder=table, settings=settings) as hive:
            agent = hive.get_agent("alice") if weight else hive.create_agent("alice")
            if not weight:
                agent.memorize(undated, category="fact")
                agent.memorize(dated, category="fact")
            scores[weight] = {
                q: {h.memory.content: h.score for h in agent.recall(q).hits}
                for q in (asking, plain)
            }
    on, off = scores[time_weight], scores[0.0]
    assert on[asking][undated] == pytest.approx(off[asking][undated])
    assert on[asking][dated] == pytest.approx(off[asking][dated] + time_weight / 11)
    assert on[plain] == pytest.approx(off[plain])


def test_time_aware_recall_is_off_with_a_zero_weight_and_on_for_the_bundled_model(
    local_embedder: LocalEmbedder,
) -> None:
    assert Settings().recall_defaults(None).time_weight == 0.0  # the seed: off
    resolved = Settings().recall_defaults(local_embedder.recall_defaults)
    assert resolved.time_weight and resolved.time_weight > 0
    off = Settings(time_weight=0.0).recall_defaults(local_embedder.recall_defaults)
    assert off.time_weight == 0.0
    assert Settings.from_env({"MEMORY_TIME_WEIGHT": "0"}).time_weight == 0.0
    assert Settings.from_env({"MEMORY_TIME_WEIGHT": "1.5"}).time_weight == 1.5

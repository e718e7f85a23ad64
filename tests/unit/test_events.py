from __future__ import annotations

import threading

import pytest

from hivekeep.events import Event, EventBus


def test_subscribers_receive_events_with_increasing_ids() -> None:
    bus, seen = EventBus(), list[Event]()
    bus.subscribe(seen.append)
    bus.publish("memory:created", 1, memory_id=5)
    bus.publish("profile:updated", 1, revision=2)
    assert [(e.id, e.type, e.data) for e in seen] == [
        (1, "memory:created", {"memory_id": 5}),
        (2, "profile:updated", {"revision": 2}),
    ]


def test_reconnecting_subscriber_gets_what_it_missed() -> None:
    bus = EventBus(replay=3)
    for i in range(5):
        bus.publish("memory:created", 1, memory_id=i)
    seen: list[Event] = []
    bus.subscribe(seen.append, after=3)
    assert [e.id for e in seen] == [4, 5]
    assert [e.id for e in bus.since(0)] == [3, 4, 5]  # the buffer is bounded


def test_a_failing_subscriber_is_detached_and_never_breaks_publishing() -> None:
    bus, seen = EventBus(), list[Event]()

    def broken(event: Event) -> None:
        raise RuntimeError("listener bug")

    bus.subscribe(broken)
    bus.subscribe(seen.append)
    bus.publish("memory:deleted", 1)
    bus.publish("memory:deleted", 1)
    assert len(seen) == 2


def test_unknown_event_types_are_refused() -> None:
    with pytest.raises(ValueError, match="memory:exploded"):
        EventBus().publish("memory:exploded", 1)


def test_ids_are_unique_under_concurrent_publishers() -> None:
    bus, seen = EventBus(replay=10_000), list[Event]()
    bus.subscribe(seen.append)
    threads = [
        threading.Thread(target=lambda: [bus.publish("memory:created", 1) for _ in range(200)])
        for _ in range(4)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(e.id for e in seen) == list(range(1, 801))


def test_deferred_events_are_published_when_the_block_ends() -> None:
    bus = EventBus()
    seen: list[str] = []
    bus.subscribe(lambda e: seen.append(f"{e.type}:{e.data['n']}"))
    with bus.deferred():
        bus.publish("memory:created", 1, n=1)
        with bus.deferred():  # nested: the outermost block decides
            bus.publish("memory:created", 1, n=2)
        other = threading.Thread(target=lambda: bus.publish("memory:deleted", 1, n=3))
        other.start()
        other.join()
        assert seen == ["memory:deleted:3"]  # another thread's event is not held
    assert seen == ["memory:deleted:3", "memory:created:1", "memory:created:2"]
    assert [e.id for e in bus.since(0)] == [1, 2, 3]


def test_deferred_events_are_dropped_when_the_block_raises() -> None:
    bus = EventBus()
    seen: list[Event] = []
    bus.subscribe(seen.append)
    with pytest.raises(KeyError), bus.deferred():
        bus.publish("memory:created", 1, memory_id=7)
        raise KeyError("rolled back")
    assert seen == [] and bus.since(0) == []
    bus.publish("memory:created", 1, memory_id=8)  # the bus is not left holding
    assert [e.data for e in seen] == [{"memory_id": 8}]

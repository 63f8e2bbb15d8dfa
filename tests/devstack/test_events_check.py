"""The events check of `make chaos` (devstack.events_check.check) on hand-made outcomes: what
the receiver verified against the Calls table's final heads."""
from devstack.events_check import check


def stored(id, ws=1, wid=None):
    return (ws, "call.stored", id, 1, wid or f"s{id}")


def revised(id, revision, ws=1, wid=None):
    return (ws, "call.revised", id, revision, wid or f"r{id}.{revision}")


def erased(id, ws=1, wid=None):
    return (ws, "call.erased", id, None, wid or f"e{id}")


def test_every_change_with_its_event_is_no_problem():
    heads = {(1, 5): 1, (1, 6): 3}
    got = [stored(5), stored(6), revised(6, 2), revised(6, 3), stored(7), erased(7), stored(5)]
    assert check(heads, got) == []
    # A late revision moved the head by two: the revision between has no event.
    assert check({(1, 8): 4}, [stored(8), revised(8, 2), revised(8, 4)]) == []


def test_a_missing_event_is_a_problem():
    assert check({(1, 5): 1}, []) == ["workspace 1 call 5: no call.stored"]
    assert check({(1, 5): 2}, [stored(5)]) != []
    problems = check({(1, 5): 3}, [stored(5), revised(5, 2)])
    assert problems == ["workspace 1 call 5: no call.revised for its current revision 3"]
    assert check({}, [stored(7)]) == ["workspace 1 call 7: gone without a call.erased"]


def test_an_event_for_what_never_was_is_a_problem():
    assert "above its 1" in check({(1, 5): 1}, [stored(5), revised(5, 2)])[0]
    assert check({(1, 5): 1}, [stored(5), erased(5)]) == ["workspace 1 call 5: call.erased, yet it is there"]
    assert check({}, [erased(9)]) == ["workspace 1 call 9: erased, never stored"]
    # Another workspace's call of the same id is another call.
    assert check({(1, 5): 1}, [stored(5, ws=2), erased(5, ws=2), stored(5)]) == []


def test_copies_of_one_event_share_one_webhook_id():
    assert check({(1, 5): 1}, [stored(5), stored(5, wid="other")]) == [
        "(1, 'call.stored', 5, 1): copies with 2 webhook-ids"]

"""The events check of `make chaos` (devstack.events_check) on hand-made outcomes: what the
receiver verified against the Calls table's final heads (`check`), and against every change
the table's stream shows (`stream_events`, `check_stream`)."""
from devstack.events_check import check, check_stream, stream_events


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


def head(ws, id=None, revision=1, **more):
    image = {"pk": {"S": f"CALL#{ws}#c-{ws}"}, "sk": {"S": "HEAD"}, "revision": {"N": str(revision)}}
    if id is not None:
        image["id"] = {"N": str(id)}
    return {**image, **{k: {"S": v} for k, v in more.items()}}


def record(old=None, new=None):
    name = "INSERT" if old is None else "REMOVE" if new is None else "MODIFY"
    images = {k: v for k, v in (("OldImage", old), ("NewImage", new)) if v is not None}
    return {"eventName": name, "dynamodb": {"Keys": {}, **images}}


def test_the_stream_calls_for_one_event_per_change_to_a_head():
    records = [
        record(None, head(1, 5)),                                   # stored
        record(head(1, 5), head(1, 5, erasing="1")),                # an erase begun: nothing
        record(head(1, 5), head(1, 5, 2)),                          # revised
        record(head(1, 5, 2), head(1, 5, 4)),                       # a late insert: one event
        record(head(1, 5, 4), head(1)),                             # erased: a tombstone
        record(head(1), head(1, 6)),                                # stored again: a new id
        record(head(1, 6), None),                                   # erased: deleted
        record(head(1), None),                                      # a tombstone expiring
        record(None, {"pk": {"S": "CALL#1#c"}, "sk": {"S": "REV#0000000001"}}),  # not a head
    ]
    assert stream_events(records) == {
        (1, "call.stored", 5, 1), (1, "call.revised", 5, 2), (1, "call.revised", 5, 4), (1, "call.erased", 5, None),
        (1, "call.stored", 6, 1), (1, "call.erased", 6, None)}


def test_an_event_the_heads_cannot_miss_is_missed_no_more():
    """What `check` cannot see: an intermediate revision's event lost, and a call stored and
    erased within the run with both its events lost."""
    expected = stream_events([record(None, head(1, 5)), record(head(1, 5), head(1, 5, 2)),
                              record(head(1, 5, 2), head(1, 5, 3)), record(None, head(2, 9)), record(head(2, 9), head(2))])
    got = [stored(5), revised(5, 3)]
    assert check({(1, 5): 3}, got) == []
    assert check_stream(expected, got) == [
        "(1, 'call.revised', 5, 2): committed, never delivered",
        "(2, 'call.erased', 9, None): committed, never delivered",
        "(2, 'call.stored', 9, 1): committed, never delivered"]
    assert check_stream(expected, got + [revised(5, 2), stored(9, ws=2), erased(9, ws=2), revised(5, 2, wid="x")]) == []
    assert check_stream(expected, got + [revised(5, 2), stored(9, ws=2), erased(9, ws=2), revised(5, 4)]) == [
        "(1, 'call.revised', 5, 4): delivered, never committed"]

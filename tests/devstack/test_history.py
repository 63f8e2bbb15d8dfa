"""The history checker of `make chaos` (devstack/history.py) on hand-made histories: for
each rule one history the service may produce, and one that mirrors a bug it had."""
from devstack.history import HORIZON, Op, check, prefix_of, summary


def op(kind, marker, start, end, status, body=None, call="c1", **kw):
    return Op(kind=kind, call=call, marker=marker, start=start, end=end, status=status, body=body, **kw)


def created(marker, start, end, call="c1"):
    return op("create", marker, start, end, 201, {"id": 1, "is_new": True}, call=call)


def revised(marker, start, end, call="c1"):
    return op("create", marker, start, end, 200, {"id": 1, "is_new": False}, call=call)


def accepted(marker, start, end, call="c1"):
    return op("create", marker, start, end, 202, {"status": "accepted"}, call=call)


def erased(start, end, call="c1", erased=True):
    return op("erase", None, start, end, 200, {"erased": erased, "items_removed": 1}, call=call, client="retrying",
              target=1)


def rev(n, marker, token, current=False):
    return {"revision": n, "marker": marker, "token": token, "current": current}


def state(*revisions, readable=None, call="c1", bucket=(), pending_left=0, failed_expected=False, trace=None):
    revisions = list(revisions)
    if revisions:
        revisions[-1]["current"] = True
    readable = bool(revisions) if readable is None else readable
    return {"calls": {call: {"revisions": revisions, "readable": readable, "trace": trace}}, "bucket": list(bucket),
            "pending_left": pending_left, "failed_expected": failed_expected}


def obj(key, markers=(), named=False, call=None):
    return {"key": key, "prefix": prefix_of(key), "markers": set(markers), "named": named, "call": call}


def exported(marker, start, end, call="c1", status=200, body=None):
    return op("export", marker, start, end, status, {} if body is None else body, call=call)


def rules(ops, final, **kw):
    return sorted(v.rule for v in check(ops, final, settle_seconds=3, seed=7, **kw))


# a. lost ------------------------------------------------------------------------------------
def test_acknowledged_revisions_all_kept_in_order_is_no_loss():
    ops = [created("m1", 0, 1), revised("m2", 2, 3)]
    assert rules(ops, state(rev(1, "m1", "t1"), rev(2, "m2", "t2"))) == []


def test_a_providers_retry_answered_unchanged_keeps_its_reports_place_and_a_resent_one_does_not():
    # Seed 23: call_analyzed a1 accepted (pending), a newer a2 stored, a1 committed below it;
    # Retell sends a1 again: the same report, answered unchanged, stays below.
    first = op("webhook_analyzed", "a1", 0, 1, 200, {"status": "accepted"}, call="c1")
    newer = op("webhook_analyzed", "a2", 2, 3, 200, {"status": "revised"}, call="c1")
    again = op("webhook_analyzed", "a1", 4, 5, 200, {"status": "unchanged"}, call="c1")
    final = state(rev(1, "a2", "t2"), rev(2, "a1", "t1"), rev(3, "a2", "t2"))
    assert rules([first, newer, again], final) == []
    # Answered revised, the same bytes sent again are new content: they must end up current.
    resent = op("webhook_analyzed", "a1", 4, 5, 200, {"status": "revised"}, call="c1")
    assert rules([first, newer, resent], final) == ["current", "lost"]


def test_a_report_sent_again_after_an_erase_is_no_retry_of_the_erased_calls_copy():
    # call_ended e1 stored, the call erased, e1 sent again: answered unchanged (the tombstone
    # still taken for its copy) it is stored nowhere, and lost. Retell's retry of a report the
    # new call keeps is still excused.
    first = op("webhook_ended", "e1", 0, 1, 200, {"status": "created"}, call="c1")
    again = op("webhook_ended", "e1", 4, 5, 200, {"status": "unchanged"}, call="c1")
    assert rules([first, erased(2, 3), again], state()) == ["lost", "unreadable"]
    stored = op("webhook_ended", "e1", 4, 5, 200, {"status": "created"}, call="c1")
    retry = op("webhook_ended", "e1", 6, 7, 200, {"status": "unchanged"}, call="c1")
    assert rules([first, erased(2, 3), stored, retry], state(rev(1, "e1", "t2"))) == []
    # An erase that may have run after the earlier request's answer but overlaps the retry
    # excuses it: the checker cannot tell.
    assert rules([first, erased(2, 4.5), again], state()) == []


def test_a_pending_submission_committed_below_a_newer_one_is_no_loss():
    # 202, then a 201 of newer content, then the 202 committed below the head (insert_late:
    # the old head, the late one, a copy of the old head under its token).
    ops = [accepted("m1", 0, 1), created("m2", 2, 3)]
    assert rules(ops, state(rev(1, "m2", "t2"), rev(2, "m1", "t1"), rev(3, "m2", "t2"))) == []


def test_the_first_content_sent_again_after_a_newer_one_and_dropped_is_lost():
    # The bug: 202, 201, the 202 committed below; then the first content again, answered 200
    # and stored nowhere (the store took the late copy below the head for it).
    ops = [accepted("m1", 0, 1), created("m2", 2, 3), revised("m1", 4, 5)]
    found = check(ops, state(rev(1, "m2", "t2"), rev(2, "m1", "t1"), rev(3, "m2", "t2")), seed=7)
    assert sorted(v.rule for v in found) == ["current", "lost"]
    lost = next(v for v in found if v.rule == "lost")
    assert "m1" in lost.detail and "below content that was sent before it (m2)" in lost.detail
    # And stored again on top, it is kept.
    ops_ok = rules(ops, state(rev(1, "m2", "t2"), rev(2, "m1", "t1"), rev(3, "m2", "t2"), rev(4, "m1", "t3")))
    assert ops_ok == []


def test_an_acknowledged_submission_stored_nowhere_is_lost():
    assert rules([created("m1", 0, 1), revised("m2", 2, 3)], state(rev(1, "m1", "t1"))) == ["current", "lost"]


def test_content_an_erase_may_have_removed_is_not_lost():
    ops = [created("m1", 0, 1), erased(2, 3)]
    assert rules(ops, state()) == []
    # An erase with no answer may have applied: either way.
    ops = [created("m1", 0, 1), op("erase", None, 2, None, None, client="retrying")]
    assert rules(ops, state()) == []
    assert rules(ops, state(rev(1, "m1", "t1"))) == []


# b. duplicated ------------------------------------------------------------------------------
def test_a_copy_of_the_head_under_its_own_token_is_no_duplicate():
    ops = [accepted("m1", 0, 1), created("m2", 2, 3)]
    assert "duplicated" not in rules(ops, state(rev(1, "m2", "t2"), rev(2, "m1", "t1"), rev(3, "m2", "t2")))


def test_one_request_stored_under_two_tokens_is_duplicated():
    # One 202: its direct write landed late and its pending copy was committed as well.
    found = check([accepted("m1", 0, 1)], state(rev(1, "m1", "direct"), rev(2, "m1", "pending")), seed=7)
    assert [v.rule for v in found] == ["duplicated"]
    assert "2 tokens" in found[0].detail and "1 request" in found[0].detail


def test_two_requests_of_one_content_may_be_stored_twice():
    ops = [created("m1", 0, 1), revised("m2", 2, 3), revised("m1", 4, 5)]
    assert rules(ops, state(rev(1, "m1", "t1"), rev(2, "m2", "t2"), rev(3, "m1", "t3"))) == []


# c. current ---------------------------------------------------------------------------------
def test_the_latest_acknowledged_content_is_current():
    ops = [created("m1", 0, 1), revised("m2", 2, 3)]
    assert rules(ops, state(rev(1, "m1", "t1"), rev(2, "m2", "t2"))) == []


def test_an_older_content_as_head_is_not_current():
    ops = [created("m1", 0, 1), revised("m2", 2, 3)]
    # m2 is also kept below content sent before it: out of order, so lost as well.
    assert rules(ops, state(rev(1, "m2", "t2"), rev(2, "m1", "t1"))) == ["current", "lost"]


def test_overlapping_submissions_may_land_in_either_order():
    ops = [created("m1", 0, 3), revised("m2", 1, 2)]
    assert rules(ops, state(rev(1, "m2", "t2"), rev(2, "m1", "t1"))) == []
    assert rules(ops, state(rev(1, "m1", "t1"), rev(2, "m2", "t2"))) == []


def test_a_request_with_no_answer_may_be_current_or_not():
    ops = [created("m1", 0, 1), op("create", "m2", 2, None, None)]
    assert rules(ops, state(rev(1, "m1", "t1"), rev(2, "m2", "t2"))) == []
    assert rules(ops, state(rev(1, "m1", "t1"))) == []
    # It may land late, but not after acknowledged content sent once it could no longer land.
    late = [*ops, revised("m3", 2 + HORIZON + 1, 2 + HORIZON + 2)]
    assert rules(late, state(rev(1, "m1", "t1"), rev(2, "m3", "t3"), rev(3, "m2", "t2"))) == ["current", "lost"]


def test_retells_analysis_stays_current_after_a_later_call_ended():
    analyzed = op("webhook_analyzed", "a1", 0, 1, 200, {"status": "stored"}, call="w1")
    ended = op("webhook_ended", "e1", 2, 3, 200, {"status": "stored"}, call="w1")
    ok = state(rev(1, "e1", "te"), rev(2, "a1", "ta"), call="w1")
    assert rules([analyzed, ended], ok) == []
    assert rules([analyzed, ended], state(rev(1, "a1", "ta"), rev(2, "e1", "te"), call="w1")) == ["current"]
    # An erase after the analysis: a later call_ended is the new call's content.
    erase = erased(1.5, 1.8, call="w1")
    assert rules([analyzed, erase, ended], state(rev(1, "e1", "te"), call="w1")) == []


def test_an_api_send_between_a_providers_stages_ties_all_three_and_any_may_be_current():
    # A fresh reader's find (stop 41): call_analyzed, then a Create Call Y (202, pending),
    # then call_ended kept below the analysis; Y, committed last, lands on top. All-direct
    # sends leave call_ended on top. The two rules of order go round: each outcome is kept.
    analyzed = op("webhook_analyzed", "a1", 0, 1, 200, {"status": "stored"})
    y = accepted("y", 2, 3)
    ended = op("webhook_ended", "e1", 4, 5, 200, {"status": "revised"})
    ops = [analyzed, y, ended]
    pending = state(rev(1, "a1", "ta"), rev(2, "e1", "te"), rev(3, "a1", "ta"), rev(4, "y", "ty"))
    direct = state(rev(1, "a1", "ta"), rev(2, "y", "ty"), rev(3, "e1", "te"))
    assert rules(ops, pending) == []
    assert rules(ops, direct) == []
    # Content that beats the whole cycle from outside still must be current: a second
    # Create Call after call_ended.
    later = [*ops, revised("y2", 6, 7)]
    assert rules(later, state(rev(1, "a1", "ta"), rev(2, "y", "ty"), rev(3, "e1", "te"), rev(4, "y2", "t2"))) == []
    assert rules(later, state(rev(1, "a1", "ta"), rev(2, "y", "ty"), rev(3, "y2", "t2"), rev(4, "e1", "te"))) == [
        "current"]
    # A send overlapping call_ended beats the rest of the loop, not call_ended: either may
    # land last (a reviewer's find).
    overlapping = [analyzed, y, revised("x", 4, 6), op("webhook_ended", "e1", 4.5, 5.5, 200, {"status": "revised"})]
    assert rules(overlapping, state(rev(1, "a1", "ta"), rev(2, "y", "ty"), rev(3, "x", "tx"), rev(4, "e1", "te"))) == []


def test_a_send_overlapping_a_pending_stage_may_be_ordered_either_way_round_the_loop():
    # `make chaos` seed 50: call_analyzed accepted (pending) while a Create Call Y ran; the
    # analysis, received first, was kept below Y; a later call_ended went above Y. The
    # order of the two overlapping requests was the store's to choose, so the three go
    # round: call_ended may be current.
    analyzed = op("webhook_analyzed", "a1", 0, 1.2, 200, {"status": "accepted"})
    y = revised("y", 0.7, 2.8)
    ended = op("webhook_ended", "e1", 4, 4.2, 200, {"status": "accepted"})
    first = created("m0", -2, -1)
    ops = [first, analyzed, y, ended]
    final = state(rev(1, "m0", "t0"), rev(2, "a1", "ta"), rev(3, "y", "ty"), rev(4, "e1", "te"))
    assert rules(ops, final) == []
    # Apart (the analysis answered before Y began), Y is above it for good and the loop
    # still closes; without any send, call_ended stays below the analysis.
    assert rules([first, analyzed, ended], state(rev(1, "m0", "t0"), rev(2, "e1", "te"), rev(3, "a1", "ta"))) == []
    assert rules([first, analyzed, ended], state(rev(1, "m0", "t0"), rev(2, "a1", "ta"), rev(3, "e1", "te"))) == [
        "current"]


def test_possible_orders_of_overlapping_requests_close_no_loop_the_receipts_cannot():
    # A reviewer's find: X (0-1) and Y (2-3), API sends, and one webhook W overlapping both.
    # X may be received after W, W after Y, and Y is after X: not all three at once. With a
    # single staged op no stage order applies, so Y must be above X.
    x = revised("x", 0, 1)
    w = op("webhook_ended", "w1", 0.5, 2.5, 200, {"status": "accepted"})
    y = revised("y", 2, 3)
    first = created("m0", -2, -1)
    assert "current" in rules([first, x, w, y], state(rev(1, "m0", "t0"), rev(2, "y", "ty"), rev(3, "x", "tx")))
    assert rules([first, x, w, y], state(rev(1, "m0", "t0"), rev(2, "x", "tx"), rev(3, "w1", "tw"),
                                         rev(4, "y", "ty"))) == []


def test_an_api_send_after_both_stages_goes_round_nothing_and_must_be_current():
    analyzed = op("webhook_analyzed", "a1", 0, 1, 200, {"status": "stored"})
    ended = op("webhook_ended", "e1", 2, 3, 200, {"status": "revised"})
    ops = [analyzed, ended, accepted("y", 4, 5)]
    kept_below = state(rev(1, "a1", "ta"), rev(2, "e1", "te"), rev(3, "a1", "ta"), rev(4, "y", "ty"),
                       rev(5, "a1", "ta"))
    assert rules(ops, kept_below) == ["current"]
    assert rules(ops, state(rev(1, "a1", "ta"), rev(2, "e1", "te"), rev(3, "a1", "ta"), rev(4, "y", "ty"))) == []


# d. erased_readable -------------------------------------------------------------------------
def test_erased_content_is_gone_from_the_table_and_the_bucket():
    ops = [created("m1", 0, 1), erased(2, 3), created("m2", 4, 5)]
    final = state(rev(1, "m2", "t2"), bucket=[obj("frames/1/h/t2-x", {"m2"}, named=True, call="c1")])
    assert rules(ops, final) == []


def test_erased_content_found_in_an_s3_object_is_erased_readable():
    ops = [created("m1", 0, 1), erased(2, 3)]
    final = state(bucket=[obj("frames/1/h/t1-x", {"m1"}, named=False)])
    found = check(ops, final, seed=7)
    assert sorted(v.rule for v in found) == ["erased_readable", "orphan"]
    readable = next(v for v in found if v.rule == "erased_readable")
    assert "frames/1/h/t1-x" in readable.detail and readable.call == "c1"


def test_content_sent_again_after_the_erase_may_be_read():
    ops = [created("m1", 0, 1), erased(2, 3), created("m1", 4, 5)]
    assert rules(ops, state(rev(1, "m1", "t9"))) == []


def test_content_whose_request_may_still_land_after_the_erase_is_not_judged():
    ops = [op("create", "m1", 0, None, None), erased(2, 3)]
    assert rules(ops, state(rev(1, "m1", "t1"))) == []


# e. is_new_twice ----------------------------------------------------------------------------
def test_one_201_per_call_between_erases():
    ops = [created("m1", 0, 1), erased(2, 3), created("m2", 4, 5)]
    assert rules(ops, state(rev(1, "m2", "t2"))) == []


def test_two_201s_between_erases_is_is_new_twice():
    ops = [created("m1", 0, 1), created("m2", 2, 3)]
    found = check(ops, state(rev(1, "m1", "t1"), rev(2, "m2", "t2")), seed=7)
    assert [v.rule for v in found] == ["is_new_twice"]


def test_a_201_overlapping_an_erase_is_not_counted():
    # The erase answered 503: it may have finished (after its reply was lost).
    maybe = op("erase", None, 1.5, 2, 503, headers={"retry-after": "1"}, client="retrying", target=1)
    ops = [created("m1", 0, 1), maybe, created("m2", 3, 4)]
    assert rules(ops, state(rev(1, "m2", "t2"))) == []


# f. server_error ----------------------------------------------------------------------------
def test_a_503_with_retry_after_is_allowed():
    ops = [op("create", "m1", 0, 1, 503, headers={"retry-after": "1"}), created("m1", 2, 3)]
    assert rules(ops, state(rev(1, "m1", "t1"))) == []


def test_a_500_and_a_503_without_retry_after_are_server_errors():
    ops = [op("create", "m1", 0, 1, 500), op("create", "m1", 2, 3, 503), created("m1", 4, 5)]
    found = check(ops, state(rev(1, "m1", "t1")), seed=7)
    assert [v.rule for v in found] == ["server_error", "server_error"]
    assert "503 without Retry-After" in found[1].detail


# g. not_committed ---------------------------------------------------------------------------
def test_nothing_pending_after_settling():
    assert rules([accepted("m1", 0, 1)], state(rev(1, "m1", "t1"))) == []


def test_a_pending_submission_left_is_not_committed():
    final = state(bucket=[obj("pending/1/h/1-t1", {"m1"})], pending_left=1)
    found = rules([accepted("m1", 0, 1)], final)
    assert found == ["lost", "not_committed", "orphan", "unreadable"]


# h. orphan ----------------------------------------------------------------------------------
def test_frames_items_name_and_expected_failures_are_no_orphans():
    final = state(rev(1, "m1", "t1"), bucket=[obj("frames/1/h/t1-x", {"m1"}, named=True),
                                              obj("failed/1/h/1-t2", {"m1"})], failed_expected=True)
    assert rules([created("m1", 0, 1)], final) == []


def test_a_frame_no_item_names_and_a_failed_submission_are_orphans():
    # The frame of a request answered 503 after its PUT: nothing points at it.
    ops = [op("create", "m1", 0, 1, 503, headers={"retry-after": "1"}), created("m2", 2, 3)]
    final = state(rev(1, "m2", "t2"), bucket=[obj("frames/1/h/t1-x", {"m1"}), obj("failed/1/h/1-t2", {"m2"})])
    found = check(ops, final, seed=7)
    assert [v.rule for v in found] == ["orphan", "orphan"]
    assert all(v.call == "c1" for v in found), "found by the markers they hold"


def test_a_held_report_and_an_object_under_an_unknown_prefix_are_orphans():
    final = state(rev(1, "m1", "t1"), bucket=[obj("held/1/h/1-t2", {"m1"}), obj("traces/1/x", set())])
    found = rules([created("m1", 0, 1)], final)
    assert found == ["orphan", "orphan"]


# i. unreadable ------------------------------------------------------------------------------
def test_a_call_stored_again_after_an_erase_reads_back():
    ops = [created("m1", 0, 1), erased(2, 3), created("m1", 4, 5)]
    assert rules(ops, state(rev(1, "m1", "t3"))) == []


def test_a_call_stored_again_after_an_erase_whose_frame_is_gone_is_unreadable_and_lost():
    # The same content again after an erase: a late delete of the erased call's frame
    # removed the new call's frame (the same key); the head is there, nothing reads it.
    ops = [created("m1", 0, 1), erased(2, 3), created("m1", 4, 5)]
    found = check(ops, state(readable=False), seed=7)
    assert sorted(v.rule for v in found) == ["lost", "unreadable"]


# reporting ----------------------------------------------------------------------------------
def test_each_violation_names_the_seed_and_lists_its_calls_ops_in_time_order():
    ops = [revised("m2", 2, 3), created("m1", 0, 1), created("x", 0, 1, call="other")]
    found = next(v for v in check(ops, state(rev(1, "m2", "t2"), rev(2, "m1", "t1")), seed=42) if v.rule == "current")
    assert found.call == "c1"
    assert "make chaos SEED=42" in found.detail
    lines = found.detail.splitlines()[1:]
    assert len(lines) == 2 and "m1" in lines[0] and "m2" in lines[1], lines
    assert [o.marker for o in found.ops_of_call] == ["m1", "m2"]


# spans (issue 31) -----------------------------------------------------------------------------
def test_spans_sent_after_every_erase_are_in_the_calls_trace():
    ops = [exported("s1", 0, 1), created("m1", 2, 3), erased(4, 5), created("m1", 6, 7), exported("s2", 8, 9)]
    part = obj("traces/spans/1/ab/0001-x", {"s2"}, named=True, call="c1")
    assert rules(ops, state(rev(1, "m1", "t2"), trace=["s2"], bucket=[part])) == []


def test_spans_answered_200_and_missing_from_the_trace_are_lost():
    ops = [created("m1", 0, 1), exported("s1", 2, 3)]
    assert rules(ops, state(rev(1, "m1", "t1"), trace=[])) == ["span_lost"]


def test_spans_refused_by_policy_an_unanswered_export_or_an_unread_call_are_not_judged():
    refused = exported("s1", 2, 3, body={"partialSuccess": {"rejectedSpans": "3", "errorMessage": "cap"}})
    ops = [created("m1", 0, 1), refused, exported("s2", 4, None, status=None), exported("s3", 5, 6, status=429)]
    assert rules(ops, state(rev(1, "m1", "t1"), trace=[])) == []
    # The call not readable at the end (erased, not sent again): its spans join nothing.
    ops = [created("m1", 0, 1), erased(2, 3), exported("s4", 4, 5)]
    assert rules(ops, state(readable=False, trace=None)) == []


def test_spans_sent_before_an_erase_are_gone_from_the_trace_and_the_bucket():
    # The trace id used again: the spans sent before the erase must not come back with the
    # call sent again (the bug of a batch indexed after the erase).
    ops = [exported("s1", 0, 1), created("m1", 2, 3), erased(4, 5), created("m1", 6, 7), exported("s2", 8, 9)]
    assert rules(ops, state(rev(1, "m1", "t2"), trace=["s1", "s2"])) == ["erased_readable"]
    kept = obj("traces/spans/1/ab/0001-x", {"s1"}, named=True, call="c1")
    assert rules(ops, state(rev(1, "m1", "t2"), trace=["s2"], bucket=[kept])) == ["erased_readable"]
    # An export that may still land after the erase is not judged.
    ops = [exported("s1", 0, None, status=None), created("m1", 2, 3), erased(4, 5)]
    assert rules(ops, state(readable=False, bucket=[kept])) == []


def test_a_calls_trace_holding_spans_sent_for_another_call_is_foreign():
    ops = [created("m1", 0, 1), exported("s1", 2, 3), exported("x1", 2, 3, call="c2")]
    assert rules(ops, state(rev(1, "m1", "t1"), trace=["s1", "x1"])) == ["span_foreign"]


def test_a_trace_batch_never_indexed_and_a_part_no_trace_names_are_orphans():
    ops = [created("m1", 0, 1), exported("s1", 2, 3)]
    left = [obj("traces/in/1/0001-x", {"s1"}), obj("traces/spans/1/ab/0001-y", {"s1"}, named=False, call="c1")]
    found = rules(ops, state(rev(1, "m1", "t1"), trace=["s1"], bucket=left))
    assert found == ["orphan", "orphan"]
    named = [obj("traces/spans/1/ab/0001-y", {"s1"}, named=True, call="c1")]
    assert rules(ops, state(rev(1, "m1", "t1"), trace=["s1"], bucket=named)) == []


def test_summary_counts_every_rule():
    counts = summary(check([created("m1", 0, 1), created("m2", 2, 3)], state(rev(1, "m2", "t2"))))
    assert counts["is_new_twice"] == 1 and counts["lost"] == 1 and counts["orphan"] == 0


def test_a_planted_value_found_stored_is_a_violation_and_none_found_is_none():
    found = [("calls-x", "CALL#3#c1", "+16285550117"), ("s3", "frames/3/ab/cd", "078-05-1120")]
    violations = check([], {"calls": {}, "bucket": [], "personal_data": found}, seed=1)
    assert [(v.rule, v.detail.split(" (")[0]) for v in violations] == [
        ("personal_data_stored", "'+16285550117' is stored in calls-x CALL#3#c1"),
        ("personal_data_stored", "'078-05-1120' is stored in s3 frames/3/ab/cd"),
    ]
    assert check([], {"calls": {}, "bucket": [], "personal_data": []}, seed=1) == []

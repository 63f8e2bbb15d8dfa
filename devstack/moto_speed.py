"""moto's DynamoDB and request routing at the cost AWS's have: the same answers, in time
that grows with what a request reads, not with everything stored.

Under `make chaos`, the local DynamoDB and S3 (one request at a time each, see
devstack.dynamodb) spent most of their time on three things AWS never does
(`DEVSTACK_PROFILE`, seed 52's webhooks phase, 2026-11-28):
- every Query sorted the whole table, comparing moto's attribute objects (each comparison
  converting both values again): 171 ms a Query with a few thousand items, 586 Queries
  taking 100 s of the drain after an outage. DynamoDB reads one partition;
- a Query of the table itself then kept only the partition it named;
- every request listed moto's package directory (a `stat` of each of its 200 services) to
  find which service it was for: 5 to 15 ms a request;
- every ReceiveMessage read the clock twice for each message of the queue, in flight or not
  (1.27 million reads in a run): SQS shares S3's lock here, so a backlog's polling slowed
  the commits' S3 requests.

So (`install`, before the server starts):
- `Table.all_items` sorts by the values themselves, converted once per item;
- `Table.query` of the table (no index) reads only the partition it names; a Query of an
  index still goes over every item, as moto keeps no index (and sorts them, more cheaply);
- `Table.sorted_items` (an index's order) sorts by converted values too;
- the list of moto's services is read once;
- a queue's visible messages are found with one reading of the clock.

Orders are unchanged: by the same keys, ties kept in the order they were (table order).
"""
import inspect

import moto.backends as _backends
from moto.core.utils import unix_time_millis
from moto.dynamodb.models.table import Table
from moto.sqs.models import Queue

_original_query = Table.query
_QUERY_SIGNATURE = inspect.signature(_original_query)


def _value(attribute):
    return attribute.cast_value if attribute is not None else None


def _all_items(self):
    items = []
    for part in self.items.values():
        if self.range_key_attr:
            items.extend(part.values())
        else:
            items.append(part)
    if self.range_key_attr:
        return sorted(items, key=lambda x: (_value(x.hash_key), _value(x.range_key)) if x.range_key else
                      (_value(x.hash_key),))
    return sorted(items, key=lambda x: _value(x.hash_key))


def _partition(self, hash_key):
    part = self.items.get(hash_key) if hash_key is not None else None
    if part is None:
        return lambda: []
    return lambda: list(part.values()) if self.range_key_attr else [part]


def _query(self, *args, **kwargs):
    bound = _QUERY_SIGNATURE.bind(self, *args, **kwargs)
    hash_key, index_name = bound.arguments.get("hash_key"), bound.arguments.get("index_name")
    if index_name is not None or hash_key is None:
        return _original_query(self, *args, **kwargs)
    # The table's own query keeps the items whose hash key is `hash_key`, and sorts them by
    # their range key: only that partition's items need reading.
    self.all_items = _partition(self, hash_key)
    try:
        return _original_query(self, *args, **kwargs)
    finally:
        del self.all_items


def _sorted_items(self, hash_key_attrs, range_key_attrs, items):
    names = self._generate_attr_to_sort_by(hash_key_attrs, range_key_attrs)
    items.sort(key=lambda x: tuple(_value(x.attrs[name]) for name in names))
    return items


def _visible_messages(self):
    now = unix_time_millis()
    return [m for m in self._messages if now > m.visible_at and not now < m.delayed_until]


def install():
    """Patches moto in this process (the local DynamoDB's)."""
    modules = tuple(_backends.list_of_moto_modules())
    _backends.list_of_moto_modules = lambda: modules
    Table.all_items = _all_items
    Table.query = _query
    Table.sorted_items = _sorted_items
    Queue.messages = property(_visible_messages)

"""moto's TransactWriteItems without a copy of every table it names.

moto backs a transaction up by deep-copying each whole table it touches, and restores that
copy when the transaction is cancelled. Each transaction then costs time and memory in
proportion to everything stored: under `make chaos` the local DynamoDB answered slower and
slower (every request waits behind the copy, devstack.dynamodb serving them one at a time)
and its memory grew by tens of MB a second until the kernel killed it, which AWS never does.

Here the backup is the items the transaction names, and only they are put back. DynamoDB's
own guarantee is the same: a cancelled transaction changes none of its items.
"""
import copy
import json
import types

import moto.dynamodb.models as _moto_models
from moto.dynamodb.models import DynamoDBBackend
from moto.dynamodb.models.table import Table

_original = DynamoDBBackend.transact_write_items


def _deepcopy_except_tables(x, memo=None):
    # moto's backup of a table: the table itself (put back as it is; its items are restored
    # one by one below).
    return x if isinstance(x, Table) else copy.deepcopy(x, memo)


def _key_of(table, entry):
    kind, op = next(iter(entry.items()))
    if kind != "Put":
        return op.get("Key")
    item = op.get("Item", {})
    names = [table.hash_key_attr] + ([table.range_key_attr] if table.range_key_attr else [])
    if any(name not in item for name in names):
        return None
    return {name: item[name] for name in names}


def _backup(backend, transact_items):
    """(table name, key, the item as it was or None) of each item the transaction names."""
    saved = {}
    for entry in transact_items:
        if len(entry) != 1:
            continue
        op = next(iter(entry.values()))
        name = op.get("TableName")
        table = backend.tables.get(name)
        key = _key_of(table, entry) if table is not None else None
        if key is None:
            continue
        try:
            item = backend.get_item(name, key)
        except Exception:  # a malformed key: moto refuses the transaction before writing
            continue
        saved.setdefault((name, json.dumps(key, sort_keys=True)), (name, key, copy.deepcopy(item)))
    return list(saved.values())


def _restore(backend, saved):
    for name, key, item in saved:
        if item is None:
            try:
                backend.delete_item(name, key)
            except Exception:
                pass
        else:
            backend.put_item(name, item.to_json()["Attributes"])


def transact_write_items(self, transact_items):
    saved = _backup(self, transact_items)
    try:
        return _original(self, transact_items)
    except Exception:
        _restore(self, saved)
        raise


def install():
    """Replaces moto's transaction backup (idempotent)."""
    if DynamoDBBackend.transact_write_items is transact_write_items:
        return
    _moto_models.copy = types.SimpleNamespace(deepcopy=_deepcopy_except_tables)
    DynamoDBBackend.transact_write_items = transact_write_items

"""Rows as the protocol carries them: objects in the field order of
`settings`, from the tuples or dicts a store returns."""

from .settings import LEASED, OUTBOX, TIMER


def objects(fields, rows):
    return [
        row if isinstance(row, dict) else dict(zip(fields, row, strict=True))
        for row in rows
    ]


def outbox(rows):
    rows = objects(OUTBOX, rows)
    for row in rows:
        row["done"] = bool(row["done"])
    return rows


def leased(items):
    claimed = []
    for item in items:
        if not isinstance(item, dict):
            item = dict(zip(LEASED, item, strict=True))
        claimed.append(
            {
                "row": outbox([item["row"]])[0],
                "token": item["token"],
                "expires": item["expires"],
            }
        )
    return claimed


def timers(rows):
    rows = objects(TIMER, rows)
    for row in rows:
        row["done"] = bool(row["done"])
    return rows

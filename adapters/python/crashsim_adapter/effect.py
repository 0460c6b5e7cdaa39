"""The business effect behind each command kind, and the canonical bytes crashsim
computes them with (src/store/service.rs, src/workflow/payload.rs)."""

import json

from .errors import Invalid

_canonical = json.JSONEncoder(
    ensure_ascii=False, sort_keys=True, separators=(",", ":")
).encode


def canonical(obj):
    """Canonical JSON, as crashsim writes it: keys sorted, no spaces, non-ASCII
    kept as UTF-8, control characters escaped as serde_json does."""
    return _canonical(obj)


def command_id(workflow_id, seq, index):
    """The id of the `index`-th command emitted by event `seq` of a workflow."""
    return f"{workflow_id}:{seq}:{index}"


def core_digest(kind, payload):
    """The digest of a request's core parameters: the first 8 bytes of
    sha256(kind + "\\n" + payload), as 16 hex digits."""
    from hashlib import sha256

    return sha256(f"{kind}\n{payload}".encode()).hexdigest()[:16]


def decode_payload(text):
    """A payload as a dict; `Invalid` unless it is a flat JSON object of strings."""
    try:
        fields = json.loads(text)
        if not isinstance(fields, dict):
            raise ValueError("not an object")
        for name, value in fields.items():
            if not isinstance(value, str):
                raise ValueError(f"the field {name!r} is not a string")
            # A lone surrogate ("\ud800") is not a string serde_json accepts.
            name.encode()
            value.encode()
    except (ValueError, TypeError) as exc:
        raise Invalid(
            f"payload {text!r} is not a flat JSON object of strings: {exc}"
        ) from None
    return fields


def _field(fields, name):
    try:
        return fields[name]
    except KeyError:
        raise Invalid(f'payload lacks the field "{name}"') from None


def fnv1a64(data):
    """FNV-1a, 64-bit, over `data` (bytes)."""
    value = 0xCBF29CE484222325
    for byte in data:
        value = ((value ^ byte) * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return value


def hotel_sold_out(trip_id, city, hotel_failure):
    """Whether the hotel is sold out: FNV-1a (64-bit) over `trip_id|city`,
    modulo the denominator, below the numerator."""
    numerator, denominator = _ratio(hotel_failure)
    return fnv1a64(f"{trip_id}|{city}".encode()) % denominator < numerator


def _ratio(ratio):
    if isinstance(ratio, dict):
        return int(ratio["numerator"]), int(ratio["denominator"])
    numerator, denominator = ratio
    return numerator, denominator


def perform(kind, payload, effect_id, hotel_failure):
    """The business effect numbered `effect_id`: its result, canonical JSON.

    `hotel_failure` is `(numerator, denominator)`. An unknown kind or a
    payload without the fields the kind needs raises `Invalid`.
    """
    fields = decode_payload(payload)
    if kind == "lock_budget":
        return canonical({"token": f"tok-{effect_id}"})
    if kind == "book_flight":
        return canonical({"ref": f"FL{effect_id}"})
    if kind == "book_hotel":
        trip_id = _field(fields, "trip_id")
        if hotel_sold_out(trip_id, _field(fields, "city"), hotel_failure):
            return canonical({"reason": "sold_out"})
        return canonical({"ref": f"HT{effect_id}"})
    if kind == "cancel_flight":
        return canonical({"cancelled": _field(fields, "ref")})
    if kind == "release_budget":
        return canonical({"released": _field(fields, "token")})
    raise Invalid(f'unknown command kind "{kind}"')

"""Schemathesis hooks for .ci/http-api-fuzz.sh: strategies for the string formats of Shoal's
OpenAPI document that a pattern cannot state, so generated requests are ones the API accepts.

- `device-id`: a device ID with valid check characters (Spec/security.md "Device IDs").
- `where-condition`: a condition in `shoal query --where`'s grammar (Spec/http-api.md "Queries").
"""
import base64

import schemathesis
from hypothesis import strategies as st

ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567"


def luhn32(values):
    """Syncthing's Luhn mod 32 check value: factors 1, 2, 1, 2, … from the left."""
    factor, total = 1, 0
    for v in values:
        product = factor * v
        total += product // 32 + product % 32
        factor = 3 - factor
    return (32 - total % 32) % 32


def device_id(key: bytes) -> str:
    """The text form of the device ID whose 32 bytes are `key`."""
    data = base64.b32encode(key).decode().rstrip("=")
    values = [ALPHABET.index(c) for c in data]
    chars = []
    for run in range(4):
        chunk = values[run * 13:(run + 1) * 13]
        chars += [ALPHABET[v] for v in chunk] + [ALPHABET[luhn32(chunk)]]
    text = "".join(chars)
    return "-".join(text[i:i + 7] for i in range(0, 56, 7))


names = st.from_regex(r"\A[a-z][a-z0-9_]{0,8}\Z")
scalars = st.one_of(
    st.integers(-10**6, 10**6).map(str),
    st.text("abcdefgh xyz'", min_size=0, max_size=12).map(lambda s: "'" + s.replace("'", "''") + "'"),
    st.sampled_from(["true", "false", "2026-11-22T10:00:00Z", "4.5"]),
)
comparisons = st.builds(lambda f, op, v: f"{f} {op} {v}", names,
                        st.sampled_from(["==", "!=", "<", "<=", ">", ">=", "CONTAINS"]), scalars)
prefixes = st.builds(lambda f, v: f"{f} BEGINSWITH '{v}'", names, st.text("abc", max_size=4))
conditions = st.recursive(
    st.one_of(comparisons, prefixes),
    lambda inner: st.one_of(
        st.builds(lambda a, b: f"{a} AND {b}", inner, inner),
        st.builds(lambda a, b: f"{a} OR {b}", inner, inner),
        inner.map(lambda a: f"NOT ({a})"),
    ),
    max_leaves=4,
)

schemathesis.openapi.format("device-id", st.binary(min_size=32, max_size=32).map(device_id))
schemathesis.openapi.format("where-condition", conditions)

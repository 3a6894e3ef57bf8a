"""Shoal's wire-format codec over the C library libShoalWireC (shoalwire.h), through ctypes.

Values cross as the JSON form of Spec/vectors/README.md (dicts, lists, strings, numbers). Every
failure raises a ShoalWireError subclass carrying the Spec's error ``code``, the byte ``offset``
and the library's ``message``.
"""

import ctypes
import ctypes.util
import json as _json
import os

__all__ = [
    "ShoalWireError", "InvalidArgumentError", "Frame", "FrameReader",
    "decode_record", "encode_record", "decode_tombstone", "encode_tombstone",
    "decode_delta", "encode_delta", "decode_value", "encode_value",
    "decode_token", "encode_token", "token_to_text", "token_from_text",
    "decode_message", "encode_message", "encode_frame", "inspect", "MESSAGE_KINDS",
    "decode_control", "encode_control", "CONTROL_KINDS", "decode_discovery", "encode_discovery",
    "device_id_to_text", "device_id_from_text",
]

MESSAGE_KINDS = ("hello", "zones", "subscribe", "acknowledgement", "changes", "liveChanges",
                 "assetRequest", "assetChunk", "upstreams", "wantWhole")
CONTROL_KINDS = ("error_message", "ping", "goodbye")


class ShoalWireError(Exception):
    """Bytes (or arguments) the codec refused: ``code`` (the Spec's name), ``offset``, ``message``."""

    def __init__(self, code, offset, message):
        super().__init__(f"{code} at byte {offset}: {message}")
        self.code = code
        self.offset = offset
        self.message = message


class InvalidArgumentError(ShoalWireError, ValueError):
    """Not the bytes' fault: an unknown kind, or JSON not of the documented form."""


_CODES = ["truncated", "overlong_varint", "varint_overflow", "invalid_utf8", "trailing_bytes", "unsorted",
          "duplicate", "unknown_required_tag", "invalid_value", "invalid_name", "limit_exceeded", "bad_magic",
          "unsupported_version", "checksum_mismatch", "decompression_failed", "unknown_dictionary"]
_ERRORS = {"invalid_argument": InvalidArgumentError}
for _code in _CODES:
    _cls = "".join(part.capitalize() for part in _code.split("_")) + "Error"
    _ERRORS[_code] = type(_cls, (ShoalWireError,), {"__doc__": f"The Spec's `{_code}` error."})
    globals()[_cls] = _ERRORS[_code]
    __all__.append(_cls)


class _Error(ctypes.Structure):
    _fields_ = [("code", ctypes.c_int), ("offset", ctypes.c_size_t),
                ("name", ctypes.c_char * 32), ("message", ctypes.c_char * 512)]


class _Frame(ctypes.Structure):
    _fields_ = [("type", ctypes.c_uint8), ("flags", ctypes.c_uint8), ("dictionary", ctypes.c_uint32),
                ("payload", ctypes.POINTER(ctypes.c_uint8)), ("payload_len", ctypes.c_size_t)]


def _load():
    path = os.environ.get("SHOALWIRE_LIBRARY") or ctypes.util.find_library("ShoalWireC") or "libShoalWireC.so"
    return ctypes.CDLL(path)


_lib = _load()
_u8p = ctypes.POINTER(ctypes.c_uint8)
_bytes_out = [ctypes.POINTER(_u8p), ctypes.POINTER(ctypes.c_size_t)]
_text_out = [ctypes.POINTER(ctypes.c_void_p)]
_err = [ctypes.POINTER(_Error)]
_in = [ctypes.c_char_p, ctypes.c_size_t]
for _name, _args in {
    "shoal_record_decode_json": _in + _text_out + _err,
    "shoal_record_encode_json": [ctypes.c_char_p] + _bytes_out + _err,
    "shoal_tombstone_decode_json": _in + _text_out + _err,
    "shoal_tombstone_encode_json": [ctypes.c_char_p] + _bytes_out + _err,
    "shoal_delta_decode_json": _in + [ctypes.c_char_p] + _text_out + _err,
    "shoal_delta_encode_json": [ctypes.c_char_p, ctypes.c_char_p] + _bytes_out + _err,
    "shoal_value_decode_json": _in + [ctypes.c_char_p] + _text_out + _err,
    "shoal_value_encode_json": [ctypes.c_char_p, ctypes.c_char_p] + _bytes_out + _err,
    "shoal_token_decode_json": _in + _text_out + _err,
    "shoal_token_encode_json": [ctypes.c_char_p] + _bytes_out + _err,
    "shoal_token_to_text": _in + _text_out + _err,
    "shoal_token_from_text": [ctypes.c_char_p] + _bytes_out + _err,
    "shoal_message_decode_json": [ctypes.c_char_p] + _in + [ctypes.c_char_p] + _text_out + _err,
    "shoal_message_encode_json": [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p] + _bytes_out + _err,
    "shoal_frame_reader_feed": [ctypes.c_void_p] + _in + _err,
    "shoal_frame_reader_next": [ctypes.c_void_p, ctypes.POINTER(_Frame)] + _err,
    "shoal_frame_encode": [ctypes.c_uint8] + _in + _bytes_out + _err,
    "shoal_inspect_json": _in + [ctypes.c_char_p, ctypes.c_char_p] + _text_out + _err,
    "shoal_control_decode_json": [ctypes.c_char_p] + _in + _text_out + _err,
    "shoal_control_encode_json": [ctypes.c_char_p, ctypes.c_char_p] + _bytes_out + _err,
    "shoal_discovery_decode_json": _in + _text_out + _err,
    "shoal_discovery_encode_json": [ctypes.c_char_p] + _bytes_out + _err,
    "shoal_device_id_to_text": _in + _text_out + _err,
    "shoal_device_id_from_text": [ctypes.c_char_p] + _bytes_out + _err,
}.items():
    _f = getattr(_lib, _name)
    _f.argtypes = _args
    _f.restype = ctypes.c_int
_lib.shoal_free.argtypes = [ctypes.c_void_p]
_lib.shoal_free.restype = None
_lib.shoal_frame_reader_new.argtypes = [ctypes.c_size_t, ctypes.c_uint]
_lib.shoal_frame_reader_new.restype = ctypes.c_void_p
_lib.shoal_frame_reader_free.argtypes = [ctypes.c_void_p]
_lib.shoal_frame_reader_free.restype = None
for _name in ("shoal_frame_reader_consumed", "shoal_frame_reader_pending"):
    getattr(_lib, _name).argtypes = [ctypes.c_void_p]
    getattr(_lib, _name).restype = ctypes.c_size_t


def _raise(err):
    name = err.name.decode("utf-8", "replace")
    cls = _ERRORS.get(name, ShoalWireError)
    raise cls(name, err.offset, err.message.decode("utf-8", "replace"))


def _text_call(function, *args):
    out = ctypes.c_void_p()
    err = _Error()
    if function(*args, ctypes.byref(out), ctypes.byref(err)) != 0:
        _raise(err)
    try:
        return ctypes.string_at(out.value).decode("utf-8")
    finally:
        _lib.shoal_free(out)


def _bytes_call(function, *args):
    out = _u8p()
    length = ctypes.c_size_t()
    err = _Error()
    if function(*args, ctypes.byref(out), ctypes.byref(length), ctypes.byref(err)) != 0:
        _raise(err)
    try:
        return ctypes.string_at(out, length.value)
    finally:
        _lib.shoal_free(out)


def _json_arg(value):
    if value is None:
        return None
    return (value if isinstance(value, str) else _json.dumps(value)).encode("utf-8")


def _bytes_arg(data):
    data = bytes(data)
    return data, len(data)


def decode_record(data):
    """A record's canonical bytes as its JSON form (a dict)."""
    return _json.loads(_text_call(_lib.shoal_record_decode_json, *_bytes_arg(data)))


def encode_record(record):
    """A record (dict or JSON text) as its canonical bytes; non-canonical records raise."""
    return _bytes_call(_lib.shoal_record_encode_json, _json_arg(record))


def decode_tombstone(data):
    """A tombstone's bytes as its JSON form."""
    return _json.loads(_text_call(_lib.shoal_tombstone_decode_json, *_bytes_arg(data)))


def encode_tombstone(tombstone):
    """A tombstone as its bytes."""
    return _bytes_call(_lib.shoal_tombstone_encode_json, _json_arg(tombstone))


def decode_delta(data, zone=None):
    """A record delta of a record in ``zone`` ({"name", "owner"}; default: notes) as JSON."""
    return _json.loads(_text_call(_lib.shoal_delta_decode_json, *_bytes_arg(data), _json_arg(zone)))


def encode_delta(delta, zone=None):
    """A record delta as its bytes."""
    return _bytes_call(_lib.shoal_delta_encode_json, _json_arg(delta), _json_arg(zone))


def decode_value(data, zone=None):
    """A field value (type tag and payload) as its typed JSON form."""
    return _json.loads(_text_call(_lib.shoal_value_decode_json, *_bytes_arg(data), _json_arg(zone)))


def encode_value(value, zone=None):
    """A typed field value as its bytes."""
    return _bytes_call(_lib.shoal_value_encode_json, _json_arg(value), _json_arg(zone))


def decode_token(data):
    """A change token's bytes as its JSON form, with its base64url ``text``."""
    return _json.loads(_text_call(_lib.shoal_token_decode_json, *_bytes_arg(data)))


def encode_token(token):
    """A change token as its bytes."""
    return _bytes_call(_lib.shoal_token_encode_json, _json_arg(token))


def token_to_text(data):
    """A valid token's bytes as its base64url text."""
    return _text_call(_lib.shoal_token_to_text, *_bytes_arg(data))


def token_from_text(text):
    """A token's text as its bytes (checked as a token)."""
    return _bytes_call(_lib.shoal_token_from_text, text.encode("utf-8"))


def decode_message(kind, data, context=None):
    """A replication message payload of ``kind`` (MESSAGE_KINDS) as its JSON form; ``context``
    ({"zone", "stated"}) matters only to liveChanges."""
    return _json.loads(_text_call(_lib.shoal_message_decode_json, kind.encode("utf-8"), *_bytes_arg(data), _json_arg(context)))


def encode_message(kind, message, context=None):
    """A replication message of ``kind`` as its payload bytes."""
    return _bytes_call(_lib.shoal_message_encode_json, kind.encode("utf-8"), _json_arg(message), _json_arg(context))


def decode_control(kind, data):
    """A control payload of ``kind`` (CONTROL_KINDS: error_message, ping, goodbye) as its JSON form."""
    return _json.loads(_text_call(_lib.shoal_control_decode_json, kind.encode("utf-8"), *_bytes_arg(data)))


def encode_control(kind, payload):
    """A control payload of ``kind`` as its bytes (checked by decoding them)."""
    return _bytes_call(_lib.shoal_control_encode_json, kind.encode("utf-8"), _json_arg(payload))


def decode_discovery(data):
    """A local discovery announcement (one datagram) as its JSON form."""
    return _json.loads(_text_call(_lib.shoal_discovery_decode_json, *_bytes_arg(data)))


def encode_discovery(announcement):
    """A discovery announcement as its canonical bytes (endpoints sorted, duplicates dropped)."""
    return _bytes_call(_lib.shoal_discovery_encode_json, _json_arg(announcement))


def device_id_to_text(data):
    """A device ID's 32 bytes as its checksummed text form (8 groups of 7 characters)."""
    return _text_call(_lib.shoal_device_id_to_text, *_bytes_arg(data))


def device_id_from_text(text):
    """A device ID's text form as its 32 bytes; a bad character, length or check character raises
    InvalidValueError at its offset in ``text``."""
    return _bytes_call(_lib.shoal_device_id_from_text, text.encode("utf-8"))


def encode_frame(frame_type, payload):
    """``payload`` as one uncompressed frame of ``frame_type``."""
    return _bytes_call(_lib.shoal_frame_encode, frame_type, *_bytes_arg(payload))


def inspect(data, as_="auto", zone=None):
    """What ``shoal inspect --json`` prints for ``data``."""
    return _json.loads(_text_call(_lib.shoal_inspect_json, *_bytes_arg(data), as_.encode("utf-8"),
                                  None if zone is None else zone.encode("utf-8")))


class Frame:
    """One frame: ``type``, ``flags`` (bits 0–1: compression), ``dictionary`` and ``payload``."""

    __slots__ = ("type", "flags", "dictionary", "payload")

    def __init__(self, frame_type, flags, dictionary, payload):
        self.type, self.flags, self.dictionary, self.payload = frame_type, flags, dictionary, payload

    def __repr__(self):
        return f"Frame(type=0x{self.type:02x}, flags={self.flags}, dictionary={self.dictionary}, payload={len(self.payload)} bytes)"


class FrameReader:
    """Reads frames from a byte stream fed in pieces, with the Spec's limits.

    Feed bytes with ``feed``; iterate (or call ``next_frame``) to take the frames they complete.
    A malformed stream raises, and the reader keeps failing: close the connection.
    """

    def __init__(self, max_payload_bytes=0, stream_compression=False):
        self._reader = _lib.shoal_frame_reader_new(max_payload_bytes, 1 if stream_compression else 0)
        if not self._reader:
            raise InvalidArgumentError("invalid_argument", 0, "max_payload_bytes is over the Spec's limit")

    def feed(self, data):
        err = _Error()
        if _lib.shoal_frame_reader_feed(self._reader, *_bytes_arg(data), ctypes.byref(err)) != 0:
            _raise(err)

    def next_frame(self):
        """The next complete frame, or None when more bytes are needed."""
        frame = _Frame()
        err = _Error()
        rc = _lib.shoal_frame_reader_next(self._reader, ctypes.byref(frame), ctypes.byref(err))
        if rc < 0:
            _raise(err)
        if rc == 0:
            return None
        try:
            payload = ctypes.string_at(frame.payload, frame.payload_len) if frame.payload_len else b""
        finally:
            _lib.shoal_free(frame.payload)
        return Frame(frame.type, frame.flags, frame.dictionary, payload)

    def __iter__(self):
        while True:
            frame = self.next_frame()
            if frame is None:
                return
            yield frame

    @property
    def consumed(self):
        """Bytes of the stream consumed by complete frames."""
        return _lib.shoal_frame_reader_consumed(self._reader)

    @property
    def pending(self):
        """Bytes fed but not yet part of a returned frame."""
        return _lib.shoal_frame_reader_pending(self._reader)

    def close(self):
        if self._reader:
            _lib.shoal_frame_reader_free(self._reader)
            self._reader = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        self.close()

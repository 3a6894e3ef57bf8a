"""Spec/vectors through the Python package: valid vectors decode to their JSON and encode back
to their bytes; invalid ones raise the error class of their code, at their offset."""

import json
import pathlib

import pytest

import shoalwire

VECTORS = pathlib.Path(__file__).resolve().parents[3] / "Spec" / "vectors"


def load(*files):
    out = []
    for name in files:
        for v in json.loads((VECTORS / name).read_text(encoding="utf-8")):
            out.append(pytest.param(v, id=f"{name}:{v['name']}"))
    return out


CODEC = load("values.json", "records.json", "deltas.json", "tombstones.json", "tokens.json", "invalid.json")
MESSAGES = load("messages.json")
FRAMES = [p for p in load("frames.json") if p.values[0]["kind"] in ("frame", "stream")]
CONTROL = [p for p in load("frames.json") if p.values[0]["kind"] in shoalwire.CONTROL_KINDS]
DISCOVERY = load("discovery.json")
DEVICE_IDS = load("device-ids.json")


def decode(kind, data, zone):
    if kind == "record":
        return shoalwire.decode_record(data)
    if kind == "tombstone":
        return shoalwire.decode_tombstone(data)
    if kind == "token":
        return shoalwire.decode_token(data)
    if kind == "delta":
        return shoalwire.decode_delta(data, zone)
    if kind == "value":
        return shoalwire.decode_value(data, zone)
    if kind == "discovery":
        return shoalwire.decode_discovery(data)
    if kind in shoalwire.CONTROL_KINDS:
        return shoalwire.decode_control(kind, data)
    return shoalwire.decode_message(kind, data)


def encode(kind, obj, zone):
    if kind == "record":
        return shoalwire.encode_record(obj)
    if kind == "tombstone":
        return shoalwire.encode_tombstone(obj)
    if kind == "token":
        return shoalwire.encode_token(obj)
    if kind == "delta":
        return shoalwire.encode_delta(obj, zone)
    if kind == "value":
        return shoalwire.encode_value(obj, zone)
    if kind == "discovery":
        return shoalwire.encode_discovery(obj)
    if kind in shoalwire.CONTROL_KINDS:
        return shoalwire.encode_control(kind, obj)
    return shoalwire.encode_message(kind, obj)


def check(v):
    data = bytes.fromhex(v["hex"])
    zone = v.get("zone")
    if "error" in v:
        with pytest.raises(shoalwire.ShoalWireError) as caught:
            decode(v["kind"], data, zone)
        assert caught.value.code == v["error"], str(caught.value)
        assert caught.value.offset == v["offset"], str(caught.value)
        assert type(caught.value).__name__ == "".join(p.capitalize() for p in v["error"].split("_")) + "Error"
        return
    decoded = decode(v["kind"], data, zone)
    assert decoded == v["json"]
    assert encode(v["kind"], v["json"], zone) == data
    if v["kind"] == "token":
        assert shoalwire.token_to_text(data) == v["json"]["text"]
        assert shoalwire.token_from_text(v["json"]["text"]) == data


@pytest.mark.parametrize("v", CODEC)
def test_codec_vector(v):
    check(v)


@pytest.mark.parametrize("v", MESSAGES)
def test_message_vector(v):
    check(v)


@pytest.mark.parametrize("v", CONTROL + DISCOVERY)
def test_control_and_discovery_vector(v):
    check(v)


@pytest.mark.parametrize("v", DEVICE_IDS)
def test_device_id_vector(v):
    if "error" in v:
        with pytest.raises(shoalwire.ShoalWireError) as caught:
            shoalwire.device_id_from_text(v["text"])
        assert (caught.value.code, caught.value.offset) == (v["error"], v["offset"]), str(caught.value)
        return
    data = bytes.fromhex(v["hex"])
    assert shoalwire.device_id_to_text(data) == v["text"]
    assert shoalwire.device_id_from_text(v["text"]) == data
    assert shoalwire.device_id_from_text(v["text"].lower().replace("-", " ")) == data


def test_device_id_of_wrong_length_is_an_invalid_argument():
    with pytest.raises(shoalwire.InvalidArgumentError):
        shoalwire.device_id_to_text(b"\x00" * 31)


@pytest.mark.parametrize("v", FRAMES)
def test_frame_vector(v):
    data = bytes.fromhex(v["hex"])
    stream = v["kind"] == "stream"
    reader = shoalwire.FrameReader(stream_compression=stream)
    payloads = []
    try:
        for i in range(0, len(data), 5):
            reader.feed(data[i:i + 5])
            for frame in reader:
                payloads.append(frame.payload.hex())
                if not stream:
                    break
            if payloads and not stream:
                break
        if not stream and payloads and reader.consumed < len(data):
            raise shoalwire.TrailingBytesError("trailing_bytes", reader.consumed, "bytes after the frame")
        if reader.pending:
            raise shoalwire.TruncatedError("truncated", len(data), "the stream ends inside a frame")
    except shoalwire.ShoalWireError as e:
        assert "error" in v, str(e)
        assert (e.code, e.offset) == (v["error"], v["offset"]), str(e)
        return
    finally:
        reader.close()
    assert "error" not in v, "read without error"
    expected = v["json"]["payload"] if not stream else v["json"]["payloads"]
    assert ",".join(payloads) == expected


def test_inspect_and_frames_round_trip():
    record = next(v for v in json.loads((VECTORS / "records.json").read_text()) if "error" not in v)
    data = bytes.fromhex(record["hex"])
    shown = shoalwire.inspect(data)
    assert shown["name"] == record["json"]["id"]["name"]
    frame = shoalwire.encode_frame(0x7F, data)
    assert shoalwire.inspect(frame)[0]["payload_bytes"] == len(data)


def test_bad_json_is_an_invalid_argument():
    with pytest.raises(shoalwire.InvalidArgumentError):
        shoalwire.encode_record({"recordType": "Note"})
    with pytest.raises(shoalwire.InvalidArgumentError):
        shoalwire.decode_message("nonsense", b"")


def test_readme_example():
    record = next(v for v in json.loads((VECTORS / "records.json").read_text()) if "error" not in v)
    data = bytes.fromhex(record["hex"])
    decoded = shoalwire.decode_record(data)
    assert shoalwire.encode_record(decoded) == data
    with pytest.raises(shoalwire.TruncatedError) as caught:
        shoalwire.decode_record(data[:-1])
    assert caught.value.code == "truncated" and 0 < caught.value.offset <= len(data) - 1

/*
 * check-vectors.c: runs Spec/vectors through the C interface (shoalwire.h).
 *
 * Reads a manifest, one vector per line, tab-separated (Tests/ShoalWireTests/CLibraryTests.swift
 * writes it from the JSON files):
 *   codec <kind> <name> <hex> <ok|error code> <offset> <zone JSON or -> <token text or ->
 *   frame <name> <hex> <ok|error code> <offset> <stream 0|1> <payloads, hex, comma-joined, or ->
 *   device <name> <bytes, hex, or -> <text, hex> <ok|error code> <offset>
 * A valid codec vector must decode to JSON that encodes back to the same bytes (tokens also
 * through their text form); an invalid one must fail with its code and offset. Codec kinds are
 * the records, values, deltas, tombstones, tokens, replication messages, control payloads
 * (error_message, ping, goodbye) and discovery announcements. A valid device ID's bytes must
 * give its text and its text its bytes; an invalid text must fail with its code and offset in
 * the text. Frame vectors are
 * fed to a frame reader in pieces of 7 bytes. Prints one line per failure, then a summary; exits
 * 1 if anything failed. Everything returned is freed, so ASan and valgrind report any leak.
 */
#include <shoalwire.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int failures = 0, checked = 0;

static void fail(const char *name, const char *what) {
    failures++;
    printf("FAIL %s: %s\n", name, what);
}

static uint8_t *unhex(const char *hex, size_t *len) {
    size_t n = strlen(hex) / 2;
    uint8_t *out = malloc(n ? n : 1);
    for (size_t i = 0; i < n; i++) {
        unsigned v;
        sscanf(hex + 2 * i, "%2x", &v);
        out[i] = (uint8_t)v;
    }
    *len = n;
    return out;
}

static int same(const uint8_t *a, size_t an, const uint8_t *b, size_t bn) {
    return an == bn && (an == 0 || memcmp(a, b, an) == 0);
}

static int is_control(const char *kind) {
    return strcmp(kind, "error_message") == 0 || strcmp(kind, "ping") == 0 || strcmp(kind, "goodbye") == 0;
}

static int is_message(const char *kind) {
    static const char *kinds[] = {"hello", "zones", "subscribe", "acknowledgement", "changes", "liveChanges",
                                  "assetRequest", "assetChunk", "upstreams", "wantWhole", NULL};
    for (int i = 0; kinds[i]; i++) if (strcmp(kind, kinds[i]) == 0) return 1;
    return 0;
}

/* Decodes `bytes` as `kind` into JSON. */
static int decode(const char *kind, const uint8_t *bytes, size_t len, const char *zone, char **json, shoal_error *err) {
    if (strcmp(kind, "record") == 0) return shoal_record_decode_json(bytes, len, json, err);
    if (strcmp(kind, "tombstone") == 0) return shoal_tombstone_decode_json(bytes, len, json, err);
    if (strcmp(kind, "token") == 0) return shoal_token_decode_json(bytes, len, json, err);
    if (strcmp(kind, "delta") == 0) return shoal_delta_decode_json(bytes, len, zone, json, err);
    if (strcmp(kind, "value") == 0) return shoal_value_decode_json(bytes, len, zone, json, err);
    if (strcmp(kind, "discovery") == 0) return shoal_discovery_decode_json(bytes, len, json, err);
    if (is_control(kind)) return shoal_control_decode_json(kind, bytes, len, json, err);
    return shoal_message_decode_json(kind, bytes, len, NULL, json, err);
}

static int encode(const char *kind, const char *json, const char *zone, uint8_t **bytes, size_t *len, shoal_error *err) {
    if (strcmp(kind, "record") == 0) return shoal_record_encode_json(json, bytes, len, err);
    if (strcmp(kind, "tombstone") == 0) return shoal_tombstone_encode_json(json, bytes, len, err);
    if (strcmp(kind, "token") == 0) return shoal_token_encode_json(json, bytes, len, err);
    if (strcmp(kind, "delta") == 0) return shoal_delta_encode_json(json, zone, bytes, len, err);
    if (strcmp(kind, "value") == 0) return shoal_value_encode_json(json, zone, bytes, len, err);
    if (strcmp(kind, "discovery") == 0) return shoal_discovery_encode_json(json, bytes, len, err);
    if (is_control(kind)) return shoal_control_encode_json(kind, json, bytes, len, err);
    return shoal_message_encode_json(kind, json, NULL, bytes, len, err);
}

static void check_error(const char *name, int rc, const shoal_error *err, const char *code, size_t offset) {
    char what[768];
    if (rc == SHOAL_OK) { fail(name, "decoded, but the vector is invalid"); return; }
    if (rc != err->code || strcmp(err->name, code) != 0 || err->offset != offset) {
        snprintf(what, sizeof what, "expected %s at %zu, got %d %s at %zu: %s", code, offset, rc, err->name, err->offset, err->message);
        fail(name, what);
    }
}

static void check_codec(char **f) {
    const char *kind = f[1], *name = f[2], *hex = f[3], *expect = f[4];
    size_t offset = strtoull(f[5], NULL, 10);
    const char *zone = strcmp(f[6], "-") == 0 ? NULL : f[6];
    const char *text = f[7];
    if (!is_message(kind) && !is_control(kind) && strcmp(kind, "record") && strcmp(kind, "tombstone") && strcmp(kind, "token") &&
        strcmp(kind, "delta") && strcmp(kind, "value") && strcmp(kind, "discovery")) {
        fail(name, "unknown kind");
        return;
    }
    checked++;
    size_t len;
    uint8_t *bytes = unhex(hex, &len);
    shoal_error err;
    char *json = NULL;
    int rc = decode(kind, bytes, len, zone, &json, &err);
    if (strcmp(expect, "ok") != 0) {
        check_error(name, rc, &err, expect, offset);
        shoal_free(json);
        free(bytes);
        return;
    }
    if (rc != SHOAL_OK) {
        char what[768];
        snprintf(what, sizeof what, "decode failed: %s at %zu: %s", err.name, err.offset, err.message);
        fail(name, what);
        free(bytes);
        return;
    }
    uint8_t *again = NULL;
    size_t again_len = 0;
    rc = encode(kind, json, zone, &again, &again_len, &err);
    if (rc != SHOAL_OK) {
        char what[768];
        snprintf(what, sizeof what, "encode failed: %s at %zu: %s", err.name, err.offset, err.message);
        fail(name, what);
    } else if (!same(bytes, len, again, again_len)) {
        fail(name, "JSON does not encode back to the same bytes");
    }
    if (strcmp(kind, "token") == 0 && rc == SHOAL_OK) {
        char *t = NULL;
        uint8_t *parsed = NULL;
        size_t parsed_len = 0;
        if (shoal_token_to_text(bytes, len, &t, &err) != SHOAL_OK || strcmp(t, text) != 0) fail(name, "token text differs");
        else if (shoal_token_from_text(t, &parsed, &parsed_len, &err) != SHOAL_OK || !same(bytes, len, parsed, parsed_len))
            fail(name, "token text does not parse back to the bytes");
        shoal_free(t);
        shoal_free(parsed);
    }
    shoal_free(again);
    shoal_free(json);
    free(bytes);
}

static void check_device_id(char **f) {
    const char *name = f[1], *hex = f[2], *expect = f[4];
    size_t offset = strtoull(f[5], NULL, 10);
    checked++;
    size_t text_len;
    char *text = (char *)unhex(f[3], &text_len);
    text = realloc(text, text_len + 1);
    text[text_len] = 0;
    shoal_error err;
    uint8_t *parsed = NULL;
    size_t parsed_len = 0;
    int rc = shoal_device_id_from_text(text, &parsed, &parsed_len, &err);
    if (strcmp(expect, "ok") != 0) {
        check_error(name, rc, &err, expect, offset);
    } else if (rc != SHOAL_OK) {
        char what[768];
        snprintf(what, sizeof what, "text does not parse: %s at %zu: %s", err.name, err.offset, err.message);
        fail(name, what);
    } else {
        size_t len;
        uint8_t *bytes = unhex(hex, &len);
        char *again = NULL;
        if (!same(bytes, len, parsed, parsed_len)) fail(name, "text parses to other bytes");
        else if (shoal_device_id_to_text(bytes, len, &again, &err) != SHOAL_OK || strcmp(again, text) != 0) fail(name, "bytes give another text");
        shoal_free(again);
        free(bytes);
    }
    shoal_free(parsed);
    free(text);
}

static void check_frames(char **f) {
    const char *name = f[1], *hex = f[2], *expect = f[3];
    size_t offset = strtoull(f[4], NULL, 10);
    int stream = strcmp(f[5], "1") == 0;
    const char *payloads = f[6];
    checked++;
    size_t len;
    uint8_t *bytes = unhex(hex, &len);
    shoal_frame_reader *reader = shoal_frame_reader_new(0, stream ? SHOAL_FRAME_READER_STREAM_COMPRESSION : 0);
    if (!reader) { fail(name, "no reader"); free(bytes); return; }
    shoal_error err;
    memset(&err, 0, sizeof err);
    /* The hex of every payload, comma-joined, as the vector states them. */
    size_t cap = 2 * len + 16, used = 0;
    char *got = calloc(cap, 1);
    int frames = 0, rc = 0, failed = 0, trailing = 0;
    size_t fed = 0;
    /* A frame vector is exactly one frame: stop at the first; a stream vector is read whole. */
    while (fed < len && !failed && (stream || frames == 0)) {
        size_t piece = len - fed < 7 ? len - fed : 7;
        if (shoal_frame_reader_feed(reader, bytes + fed, piece, &err) != SHOAL_OK) { failed = 1; break; }
        fed += piece;
        shoal_frame frame;
        while ((stream || frames == 0) && (rc = shoal_frame_reader_next(reader, &frame, &err)) == 1) {
            frames++;
            if (used + 2 * frame.payload_len + 2 >= cap) { cap = 2 * (used + 2 * frame.payload_len + 2); got = realloc(got, cap); }
            if (frames > 1) got[used++] = ',';
            for (size_t i = 0; i < frame.payload_len; i++) used += (size_t)sprintf(got + used, "%02x", frame.payload[i]);
            got[used] = 0;
            shoal_free(frame.payload);
        }
        if (rc < 0) failed = 1;
        rc = 0;
    }
    if (!failed && !stream && frames == 1 && shoal_frame_reader_consumed(reader) < len) trailing = 1;
    if (!failed && trailing) {
        rc = SHOAL_ERROR_TRAILING_BYTES;
        err.code = rc;
        err.offset = shoal_frame_reader_consumed(reader);
        strcpy(err.name, "trailing_bytes");
    } else if (!failed && shoal_frame_reader_pending(reader) > 0) {
        rc = SHOAL_ERROR_TRUNCATED;
        err.code = rc;
        err.offset = len;
        strcpy(err.name, "truncated");
    } else {
        rc = failed ? err.code : SHOAL_OK;
    }
    if (strcmp(expect, "ok") != 0) {
        check_error(name, rc, &err, expect, offset);
    } else if (rc != SHOAL_OK) {
        char what[768];
        snprintf(what, sizeof what, "read failed: %s at %zu: %s", err.name, err.offset, err.message);
        fail(name, what);
    } else if (strcmp(got, strcmp(payloads, "-") == 0 ? "" : payloads) != 0) {
        fail(name, "payloads differ");
    }
    free(got);
    shoal_frame_reader_free(reader);
    free(bytes);
}

int main(int argc, char **argv) {
    if (argc != 2) { fprintf(stderr, "usage: %s MANIFEST\n", argv[0]); return 2; }
    if (shoal_abi_version() != SHOAL_ABI_VERSION) { fprintf(stderr, "library ABI %d, header %d\n", shoal_abi_version(), SHOAL_ABI_VERSION); return 1; }
    FILE *in = fopen(argv[1], "r");
    if (!in) { perror(argv[1]); return 2; }
    char *line = NULL;
    size_t cap = 0;
    ssize_t n;
    while ((n = getline(&line, &cap, in)) > 0) {
        if (line[n - 1] == '\n') line[n - 1] = 0;
        char *f[8] = {0};
        int k = 0;
        for (char *p = line; k < 8; k++) {
            f[k] = p;
            char *tab = strchr(p, '\t');
            if (!tab) { k++; break; }
            *tab = 0;
            p = tab + 1;
        }
        if (strcmp(f[0], "codec") == 0 && k == 8) check_codec(f);
        else if (strcmp(f[0], "frame") == 0 && k == 7) check_frames(f);
        else if (strcmp(f[0], "device") == 0 && k == 6) check_device_id(f);
        else fail(f[1] ? f[1] : "?", "malformed manifest line");
    }
    free(line);
    fclose(in);
    printf("checked %d vectors, %d failed\n", checked, failures);
    return failures ? 1 : 0;
}

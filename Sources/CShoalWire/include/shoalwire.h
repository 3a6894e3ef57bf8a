/*
 * shoalwire.h: the C interface of Shoal's codec (libShoalWireC).
 *
 * Decodes and encodes Shoal records, tombstones, change tokens, record deltas, field values,
 * replication messages, control payloads and discovery announcements, converts device IDs between
 * bytes and text, reads frame streams, and inspects any Shoal bytes. Values cross the
 * boundary as bytes and as the JSON form of Spec/vectors/README.md, so no Swift type is seen here.
 *
 * Conventions:
 *  - Every function that can fail returns SHOAL_OK (0) or an error code, and fills *err when err is
 *    not NULL: the Spec's code (Spec/wire-format.md, "Errors"), the byte offset it was found at and
 *    a message. Input bytes may be NULL when their length is 0.
 *  - Strings and byte buffers handed back are allocated with malloc; release them with shoal_free
 *    (or free). Nothing is handed back on failure (the out-pointers are set to NULL).
 *  - No input aborts the process: any bytes give a value or an error, in bounded time and memory
 *    (the limits of Spec/wire-format.md, "Limits"). Every entry point is fuzzed (Fuzz/, fuzz-c-abi).
 *  - Functions are thread-safe; a frame reader is not, use one per thread (or lock it).
 *
 * Link with `pkg-config --cflags --libs shoalwire` (bindings/c/install.sh installs the library,
 * this header and shoalwire.pc).
 */
#ifndef SHOALWIRE_H
#define SHOALWIRE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/** The version of this interface; it changes only when a declaration below changes. */
#define SHOAL_ABI_VERSION 1

/** Status codes: 0 is success; 1–16 are the Spec's decoding errors (Spec/wire-format.md). */
enum {
    SHOAL_OK = 0,
    SHOAL_ERROR_TRUNCATED = 1,              /* "truncated" */
    SHOAL_ERROR_OVERLONG_VARINT = 2,        /* "overlong_varint" */
    SHOAL_ERROR_VARINT_OVERFLOW = 3,        /* "varint_overflow" */
    SHOAL_ERROR_INVALID_UTF8 = 4,           /* "invalid_utf8" */
    SHOAL_ERROR_TRAILING_BYTES = 5,         /* "trailing_bytes" */
    SHOAL_ERROR_UNSORTED = 6,               /* "unsorted" */
    SHOAL_ERROR_DUPLICATE = 7,              /* "duplicate" */
    SHOAL_ERROR_UNKNOWN_REQUIRED_TAG = 8,   /* "unknown_required_tag" */
    SHOAL_ERROR_INVALID_VALUE = 9,          /* "invalid_value" */
    SHOAL_ERROR_INVALID_NAME = 10,          /* "invalid_name" */
    SHOAL_ERROR_LIMIT_EXCEEDED = 11,        /* "limit_exceeded" */
    SHOAL_ERROR_BAD_MAGIC = 12,             /* "bad_magic" */
    SHOAL_ERROR_UNSUPPORTED_VERSION = 13,   /* "unsupported_version" */
    SHOAL_ERROR_CHECKSUM_MISMATCH = 14,     /* "checksum_mismatch" */
    SHOAL_ERROR_DECOMPRESSION_FAILED = 15,  /* "decompression_failed" */
    SHOAL_ERROR_UNKNOWN_DICTIONARY = 16,    /* "unknown_dictionary" */
    /** A decoding error this header predates; shoal_error.name says which. */
    SHOAL_ERROR_OTHER = 99,
    /** Not the bytes' fault: a NULL out-pointer, an unknown kind, JSON not of the documented form
     *  ("invalid_argument"). */
    SHOAL_ERROR_INVALID_ARGUMENT = 100
};

/** What went wrong, where. */
typedef struct shoal_error {
    /** One of the SHOAL_ERROR_* codes (SHOAL_OK when nothing failed). */
    int code;
    /** Byte offset of the problem in the input (for encoders: in the bytes they produced). */
    size_t offset;
    /** The Spec's name of the code, e.g. "truncated"; NUL-terminated. */
    char name[32];
    /** What was expected and how to fix it; NUL-terminated, cut to fit. */
    char message[512];
} shoal_error;

/** Releases a string or buffer this library handed back. NULL is ignored. */
void shoal_free(void *pointer);

/** The version of this interface the library implements (SHOAL_ABI_VERSION when it matches). */
int shoal_abi_version(void);

/* ---- Records, tombstones, deltas, values (Spec/wire-format.md §4–§8) -------------------------- */

/** Decodes a record's canonical bytes into its JSON form (Spec/vectors/README.md, "Records"). */
int shoal_record_decode_json(const uint8_t *bytes, size_t len, char **json, shoal_error *err);
/** Encodes a record given in its JSON form; the bytes are checked by decoding them again, so a
 *  record that is not canonical (unsorted fields, bad names…) fails with that decoding error. */
int shoal_record_encode_json(const char *json, uint8_t **bytes, size_t *len, shoal_error *err);

/** Decodes a tombstone ("Tombstones"). */
int shoal_tombstone_decode_json(const uint8_t *bytes, size_t len, char **json, shoal_error *err);
/** Encodes a tombstone given in its JSON form. */
int shoal_tombstone_encode_json(const char *json, uint8_t **bytes, size_t *len, shoal_error *err);

/** Decodes a record delta of a record in `zone_json` ({"name", "owner"}; NULL: zone "notes" of
 *  the default owner, the zone of the Spec's vectors). */
int shoal_delta_decode_json(const uint8_t *bytes, size_t len, const char *zone_json, char **json, shoal_error *err);
/** Encodes a record delta of a record in `zone_json` (as above). */
int shoal_delta_encode_json(const char *json, const char *zone_json, uint8_t **bytes, size_t *len, shoal_error *err);

/** Decodes a field value (type tag and payload) of a record in `zone_json` (as above). */
int shoal_value_decode_json(const uint8_t *bytes, size_t len, const char *zone_json, char **json, shoal_error *err);
/** Encodes a typed field value. */
int shoal_value_encode_json(const char *json, const char *zone_json, uint8_t **bytes, size_t *len, shoal_error *err);

/* ---- Change tokens (§9) ------------------------------------------------------------------------ */

/** Decodes a change token's bytes into its JSON form, with its base64url `text`. */
int shoal_token_decode_json(const uint8_t *bytes, size_t len, char **json, shoal_error *err);
/** Encodes a change token given in its JSON form (`text` is ignored). */
int shoal_token_encode_json(const char *json, uint8_t **bytes, size_t *len, shoal_error *err);
/** A token's bytes as its base64url text form (§9.2); the bytes must be a valid token. */
int shoal_token_to_text(const uint8_t *bytes, size_t len, char **text, shoal_error *err);
/** Parses a token's text form back into its bytes (which are checked as a token). */
int shoal_token_from_text(const char *text, uint8_t **bytes, size_t *len, shoal_error *err);

/* ---- Replication messages (Spec/replication.md §3) --------------------------------------------- */

/**
 * Decodes a replication message payload of `kind` — "hello", "zones", "subscribe",
 * "acknowledgement", "changes", "liveChanges", "assetRequest", "assetChunk", "upstreams",
 * "wantWhole" — into the JSON form of Spec/vectors/README.md, "Message vectors".
 * `context_json` matters only to "liveChanges", whose zone is not on the wire:
 * {"zone": {"name", "owner"}, "stated": [vector entries]} (NULL: the Spec vectors' zone "notes"
 * and stated knowledge).
 */
int shoal_message_decode_json(const char *kind, const uint8_t *bytes, size_t len, const char *context_json,
                              char **json, shoal_error *err);
/** Encodes a replication message of `kind` given in its JSON form (`context_json` as above). */
int shoal_message_encode_json(const char *kind, const char *json, const char *context_json,
                              uint8_t **bytes, size_t *len, shoal_error *err);

/* ---- Frames (Spec/wire-format.md §13–14) ------------------------------------------------------- */

/** A stream of frames being read; create with shoal_frame_reader_new. */
typedef struct shoal_frame_reader shoal_frame_reader;

/** Let the reader accept compression 3 (a zstd stream; announce it in your hello first). */
#define SHOAL_FRAME_READER_STREAM_COMPRESSION 1u

/** One frame: its type byte, its flags byte (bits 0–1: compression 0 none, 1 zstd,
 *  2 dictionary, 3 stream), the dictionary ID (compression 2, else 0) and the decompressed
 *  payload (malloc'd; release with shoal_free; NULL when empty). */
typedef struct shoal_frame {
    uint8_t type;
    uint8_t flags;
    uint32_t dictionary;
    uint8_t *payload;
    size_t payload_len;
} shoal_frame;

/**
 * A reader with the Spec's limits: at most `max_payload_bytes` per frame, before and after
 * decompression (0: the default, 4 MiB; larger values are refused). `options`: 0 or
 * SHOAL_FRAME_READER_STREAM_COMPRESSION. NULL when the arguments are refused.
 */
shoal_frame_reader *shoal_frame_reader_new(size_t max_payload_bytes, unsigned options);
/** Hands the reader the next bytes of the stream, split anywhere (they are copied). Call
 *  shoal_frame_reader_next until it returns 0 before feeding more, so that at most the bytes of
 *  one feed and one frame are held. Fails (SHOAL_ERROR_INVALID_ARGUMENT) after a reader error. */
int shoal_frame_reader_feed(shoal_frame_reader *reader, const uint8_t *bytes, size_t len, shoal_error *err);
/** Returns 1 and fills *frame when a frame is complete, 0 when more bytes are needed, and -1 with
 *  *err filled when the stream is malformed (offsets from the stream's first byte); a failed
 *  reader keeps failing: close the connection. */
int shoal_frame_reader_next(shoal_frame_reader *reader, shoal_frame *frame, shoal_error *err);
/** Bytes of the stream consumed by complete frames so far. */
size_t shoal_frame_reader_consumed(const shoal_frame_reader *reader);
/** Bytes fed but not yet part of a returned frame (a stream that ends here ends mid-frame). */
size_t shoal_frame_reader_pending(const shoal_frame_reader *reader);
/** Releases a reader. NULL is ignored. */
void shoal_frame_reader_free(shoal_frame_reader *reader);

/** Encodes `payload` as one uncompressed frame of `type` (Spec/wire-format.md §13.1). */
int shoal_frame_encode(uint8_t type, const uint8_t *payload, size_t len, uint8_t **bytes, size_t *out_len,
                       shoal_error *err);

/* ---- Control payloads (Spec/wire-format.md §13.4) ----------------------------------------------- */

/**
 * Decodes the payload of a control frame of `kind` — "error_message" (frame type error), "ping"
 * (ping and pong), "goodbye" — into the JSON form of Spec/vectors/frames.json:
 * {"code", "message", "retry_after_ms" (decimal string, only when present)}, {"nonce" (decimal
 * string)}, {"reason"}.
 */
int shoal_control_decode_json(const char *kind, const uint8_t *bytes, size_t len, char **json, shoal_error *err);
/** Encodes a control payload of `kind` given in its JSON form (checked by decoding it again). */
int shoal_control_encode_json(const char *kind, const char *json, uint8_t **bytes, size_t *len, shoal_error *err);

/* ---- Discovery and device IDs (Spec/discovery.md, Spec/security.md §2) -------------------------- */

/** Decodes a local discovery announcement (one UDP datagram) into the JSON form of
 *  Spec/vectors/discovery.json: {"device" (64 hex digits), "instance" (decimal string),
 *  "endpoints": [{"kind": "source"|"ipv4"|"ipv6", "address" (hex, not for source), "port", "text"}]}. */
int shoal_discovery_decode_json(const uint8_t *bytes, size_t len, char **json, shoal_error *err);
/** Encodes an announcement given in its JSON form (`text` is ignored; endpoints are sorted and
 *  duplicates dropped, as the Spec's canonical form asks; the bytes are checked by decoding). */
int shoal_discovery_encode_json(const char *json, uint8_t **bytes, size_t *len, shoal_error *err);

/** A device ID's 32 bytes (`len` must be 32) as its text form: 8 groups of 7 base32 characters
 *  joined by '-', with a Luhn mod 32 check character after every 13 (Spec/security.md §2). */
int shoal_device_id_to_text(const uint8_t *bytes, size_t len, char **text, shoal_error *err);
/** Parses a device ID's text form (lower case accepted, '-' and spaces ignored) into its 32 bytes;
 *  a wrong character, length or check character fails with SHOAL_ERROR_INVALID_VALUE at its
 *  offset in `text`. */
int shoal_device_id_from_text(const char *text, uint8_t **bytes, size_t *len, shoal_error *err);

/* ---- Inspection -------------------------------------------------------------------------------- */

/**
 * What `shoal inspect --json` prints for these bytes. `as`: "auto" (or NULL), "frames", "record",
 * "delta", "tombstone", "token"; auto picks frames for bytes starting "SH", a token for "ST" or
 * base64url token text, a record otherwise. `zone` names a delta's zone ("name" or "name@owner";
 * NULL: "notes").
 */
int shoal_inspect_json(const uint8_t *bytes, size_t len, const char *as, const char *zone, char **json,
                       shoal_error *err);

#ifdef __cplusplus
}
#endif

#endif /* SHOALWIRE_H */

/* example.c: the C example of README.md ("Embedding the codec"); CLibraryTests compiles and runs it.
 *   cc example.c $(pkg-config --cflags --libs shoalwire) -o example && ./example */
#include <shoalwire.h>
#include <stdio.h>

int main(void) {
    const char *note =
        "{\"recordType\": \"Note\", \"id\": {\"name\": \"groceries\", \"zone\": {\"name\": \"notes\", \"owner\": \"_defaultOwner\"}},"
        " \"parent\": null, \"creation\": null, \"versionVector\": [], \"heads\": [], \"extensions\": [],"
        " \"fields\": [{\"name\": \"title\", \"value\": {\"type\": \"string\", \"value\": \"Milk and eggs\"}, \"stamp\": null}]}";
    uint8_t *bytes = NULL;
    size_t len = 0;
    shoal_error err;
    if (shoal_record_encode_json(note, &bytes, &len, &err) != SHOAL_OK) {
        fprintf(stderr, "%s at byte %zu: %s\n", err.name, err.offset, err.message);
        return 1;
    }
    char *json = NULL;
    if (shoal_record_decode_json(bytes, len, &json, &err) != SHOAL_OK) return 1;
    printf("%zu bytes: %s\n", len, json);
    shoal_free(json);

    /* A damaged record fails with the Spec's code and offset. */
    if (shoal_record_decode_json(bytes, len - 1, &json, &err) != SHOAL_OK)
        printf("error %d %s at byte %zu\n", err.code, err.name, err.offset);

    /* Frames from a stream, fed in pieces. */
    uint8_t *frame = NULL;
    size_t frame_len = 0;
    if (shoal_frame_encode(0x7F, bytes, len, &frame, &frame_len, &err) != SHOAL_OK) return 1;
    shoal_frame_reader *reader = shoal_frame_reader_new(0, 0);
    shoal_frame f;
    for (size_t at = 0; at < frame_len; at += 10) {
        shoal_frame_reader_feed(reader, frame + at, frame_len - at < 10 ? frame_len - at : 10, &err);
        while (shoal_frame_reader_next(reader, &f, &err) == 1) {
            printf("frame type 0x%02x, %zu payload bytes\n", f.type, f.payload_len);
            shoal_free(f.payload);
        }
    }
    shoal_frame_reader_free(reader);
    shoal_free(frame);
    shoal_free(bytes);
    return 0;
}

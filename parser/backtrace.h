/* The /v1/symbolicate request: JSON text in, a checked backtrace model out. */
#ifndef SYMD_BACKTRACE_H
#define SYMD_BACKTRACE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../util/err.h"

#define BT_MAX_IMAGES 10000
#define BT_MAX_THREADS 10000
#define BT_MAX_FRAMES 200000 /* over all threads */

typedef enum { BT_ADJUST_AUTO, BT_ADJUST_NONE, BT_ADJUST_CALLER } bt_adjust;

typedef struct {
    uint8_t uuid[16];
    char arch[16];   /* "" when not given */
    char name[256];  /* "" when not given */
    bool has_load, has_slide, has_size;
    uint64_t load_address, slide, size;
} bt_image;

typedef struct {
    uint64_t address;
    bt_adjust adjust; /* resolved: the frame's own or the request's */
    long image;       /* index into images, or -1 to find it by address */
} bt_frame;

typedef enum { BT_ID_NONE, BT_ID_INT, BT_ID_STRING } bt_id_kind;

typedef struct {
    bt_id_kind id_kind;
    int64_t id_int;
    char *id_str;     /* owned, when id_kind is BT_ID_STRING */
    bool crashed;
    char *name;       /* owned; NULL when absent */
    bt_frame *frames;
    size_t nframes, cap;
} bt_thread;

typedef struct {
    bt_image *images;
    size_t nimages;
    bt_thread *threads;
    size_t nthreads;
    bt_adjust adjust;
    size_t images_cap, threads_cap, total_frames;
    bool full_names; /* Swift names in their full form (not from the body: the
                        caller's ?demangle=full) */
} bt_request;

/* Parses and validates a request body in one pass over (json, len): no
 * document tree, so a 10,000-frame request costs a few allocations. Errors
 * are SYMD_E_INVALID (malformed JSON, wrong types, bad values, a known key
 * twice: the message says where), SYMD_E_TOO_LARGE past the limits above, or
 * SYMD_E_NOMEM. On error req holds nothing. */
symd_status bt_parse(const char *json, size_t len, bt_request *req, symd_err *err);
void bt_free(bt_request *req);


#endif

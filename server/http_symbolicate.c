/* POST /v1/symbolicate over HTTP: a backtrace (JSON) in, its frames
 * symbolicated out, through the core of server/symbolicate.c. */
#include "http_int.h"
#include "symbolicate.h"

/* The body is the request JSON; the answer is written straight into a
 * bounded buffer and its frames counted into the metrics. */
enum MHD_Result handle_symbolicate(server *srv, struct MHD_Connection *c, req_state *rs)
{
    if (rs->too_large)
        return reply_error(c, 413, "too_large", "request body exceeds %llu bytes",
                           (unsigned long long)rs->limit);
    bool full;
    enum MHD_Result refused;
    if (!demangle_arg(c, &full, &refused))
        return refused;
    dynbuf out;
    dynbuf_init(&out, MAX_RESPONSE);
    symd_err err = {0};
    symbolicate_counts n = {0};
    symd_status st = symbolicate_json(srv->st, rs->body.data ? (char *)rs->body.data : "",
                                      rs->body.len, full, &out, &n, &err);
    if (st != SYMD_OK) {
        dynbuf_free(&out);
        return reply_status(c, &err, "invalid_request");
    }
    metrics_frames(srv->m, n.symbolicated, n.no_symbol, n.missing_image, n.unknown_image);
    return reply_dynbuf(c, 200, &out);
}

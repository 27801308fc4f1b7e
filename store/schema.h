/* Private to store/: each backend's schema, kept apart from its queries.
 * Migration i brings a database from schema version i to i + 1 (numbered
 * alike in both backends); append only. */
#ifndef SYMD_STORE_SCHEMA_H
#define SYMD_STORE_SCHEMA_H

#include "store.h"

struct sqlite3;

/* Brings the SQLite database db to STORE_SCHEMA_VERSION, one transaction
 * per migration; refuses (SYMD_E_DB) a file of a newer version. */
symd_status sqlite_schema_migrate(struct sqlite3 *db, symd_err *err);

/* PostgreSQL's scripts ("" where the SQLite-only versions 1-3 had one). */
extern const char *const pg_schema_migrations[STORE_SCHEMA_VERSION];

#endif

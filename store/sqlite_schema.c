/* The SQLite store's schema: its migrations, in order, and the function
 * that brings a database file to this symd's version (store/sqlite.c runs
 * it when it opens a file). */
#include <sqlite3.h>
#include <stdio.h>

#include "schema.h"

static symd_status db_fail(symd_err *err, sqlite3 *db, const char *what)
{
    return symd_fail(err, SYMD_E_DB, "%s: %s", what, db ? sqlite3_errmsg(db) : "?");
}

/* Migration i brings user_version from i to i + 1. Append only. */
static const char *const migrations[] = {
    "CREATE TABLE images("
    "  id INTEGER PRIMARY KEY AUTOINCREMENT,"
    "  uuid BLOB NOT NULL CHECK(length(uuid) = 16),"
    "  arch TEXT NOT NULL,"
    "  name TEXT NOT NULL,"
    "  kind TEXT NOT NULL,"
    "  text_vmaddr INTEGER NOT NULL,"
    "  text_size INTEGER NOT NULL,"
    "  symbols INTEGER NOT NULL,"
    "  functions INTEGER NOT NULL,"
    "  debug_info INTEGER NOT NULL DEFAULT 0,"
    "  created_at INTEGER NOT NULL,"
    "  updated_at INTEGER NOT NULL,"
    "  UNIQUE(uuid, arch));"
    "CREATE TABLE image_data("
    "  image_id INTEGER NOT NULL REFERENCES images(id) ON DELETE CASCADE,"
    "  kind TEXT NOT NULL,"
    "  data BLOB NOT NULL,"
    "  PRIMARY KEY(image_id, kind));",
    /* 2: stored crash reports and the images they reference. */
    "CREATE TABLE crashes("
    "  id INTEGER PRIMARY KEY AUTOINCREMENT,"
    "  created_at INTEGER NOT NULL,"
    "  format TEXT NOT NULL,"
    "  process TEXT, bundle_id TEXT, app_version TEXT, os_version TEXT,"
    "  hardware_model TEXT, incident_id TEXT, exception_type TEXT,"
    "  signature TEXT NOT NULL,"
    "  original BLOB NOT NULL,"
    "  result TEXT NOT NULL,"
    "  result_at INTEGER NOT NULL);"
    "CREATE INDEX crashes_signature ON crashes(signature);"
    "CREATE TABLE crash_images("
    "  crash_id INTEGER NOT NULL REFERENCES crashes(id) ON DELETE CASCADE,"
    "  uuid BLOB NOT NULL CHECK(length(uuid) = 16),"
    "  arch TEXT NOT NULL,"
    "  name TEXT NOT NULL,"
    "  PRIMARY KEY(crash_id, uuid, arch));"
    "CREATE INDEX crash_images_uuid ON crash_images(uuid);",
    /* 3: what a report is about (crash_kind_name) and its .ips bug_type;
     * rows stored before are crashes without a bug_type. */
    "ALTER TABLE crashes ADD COLUMN kind TEXT NOT NULL DEFAULT 'crash';"
    "ALTER TABLE crashes ADD COLUMN bug_type INTEGER;"
    "CREATE INDEX crashes_kind_signature ON crashes(kind, signature);",
    /* 4: originals stored compressed (codec; old rows stay raw, codec 0) in
     * a table of their own, so crash rows stay small (listings and scans
     * read no report bytes); the stored result dropped (every read
     * symbolicates again); the app image a crash needs; the images it needs
     * as a list of crash_image_refs ids (",3,17,": no row per image, which
     * would cost a page per image per stored crash); and the counters
     * listings read instead of scanning crashes: groups, their days, each
     * kind's days, each group's versions, OS versions and devices (dim 0,
     * 1, 2), and the images crashes need with the newest crash needing
     * each. Every counter is built from the crashes there are. */
    "CREATE TABLE crashes4("
    "  id INTEGER PRIMARY KEY AUTOINCREMENT,"
    "  created_at INTEGER NOT NULL,"
    "  kind TEXT NOT NULL, bug_type INTEGER, format TEXT NOT NULL,"
    "  process TEXT, bundle_id TEXT, app_version TEXT, os_version TEXT,"
    "  hardware_model TEXT, incident_id TEXT, exception_type TEXT,"
    "  signature TEXT NOT NULL,"
    "  app_uuid BLOB CHECK(app_uuid IS NULL OR length(app_uuid) = 16),"
    "  app_arch TEXT, app_name TEXT, refs TEXT NOT NULL DEFAULT ',');"
    "CREATE TABLE crash_originals(id INTEGER PRIMARY KEY,"
    "  codec INTEGER NOT NULL, original_len INTEGER NOT NULL, original BLOB NOT NULL);"
    "INSERT INTO crashes4(id, created_at, kind, bug_type, format, process, bundle_id,"
    "  app_version, os_version, hardware_model, incident_id, exception_type, signature)"
    "  SELECT id, created_at, kind, bug_type, format, process, bundle_id, app_version,"
    "  os_version, hardware_model, incident_id, exception_type, signature FROM crashes;"
    "INSERT INTO crash_originals SELECT id, 0, length(original), original FROM crashes;"
    "CREATE TABLE crash_image_refs("
    "  id INTEGER PRIMARY KEY,"
    "  uuid BLOB NOT NULL CHECK(length(uuid) = 16), arch TEXT NOT NULL, name TEXT NOT NULL,"
    "  crashes INTEGER NOT NULL, last_crash_id INTEGER NOT NULL,"
    "  UNIQUE(uuid, arch));"
    "INSERT INTO crash_image_refs(uuid, arch, name, crashes, last_crash_id)"
    "  SELECT uuid, arch, max(name), count(DISTINCT crash_id), max(crash_id) FROM crash_images"
    "  GROUP BY uuid, arch;"
    "UPDATE crashes4 SET refs = ',' || (SELECT group_concat(id, ',') FROM (SELECT DISTINCT"
    "  r.id FROM crash_images ci JOIN crash_image_refs r ON r.uuid = ci.uuid AND"
    "  r.arch = ci.arch WHERE ci.crash_id = crashes4.id ORDER BY r.id)) || ','"
    "  WHERE EXISTS (SELECT 1 FROM crash_images ci WHERE ci.crash_id = crashes4.id);"
    "DROP TABLE crash_images;"
    "DROP TABLE crashes;"
    "ALTER TABLE crashes4 RENAME TO crashes;"
    "CREATE INDEX crashes_group ON crashes(kind, signature, id);"
    "CREATE TABLE crash_groups("
    "  kind TEXT NOT NULL, signature TEXT NOT NULL, count INTEGER NOT NULL,"
    "  first_seen INTEGER NOT NULL, last_seen INTEGER NOT NULL, example_id INTEGER NOT NULL,"
    "  app_version TEXT, process TEXT,"
    "  PRIMARY KEY(kind, signature)) WITHOUT ROWID;"
    "INSERT INTO crash_groups SELECT kind, signature, count(*), min(created_at),"
    "  max(created_at), max(id), NULL, NULL FROM crashes GROUP BY kind, signature;"
    "UPDATE crash_groups SET"
    "  app_version = (SELECT x.app_version FROM crashes x WHERE x.id = example_id),"
    "  process = (SELECT x.process FROM crashes x WHERE x.id = example_id);"
    "CREATE INDEX crash_groups_top ON crash_groups(count DESC, last_seen DESC);"
    "CREATE INDEX crash_groups_kind_top ON crash_groups(kind, count DESC, last_seen DESC);"
    "CREATE TABLE crash_group_days(kind TEXT NOT NULL, signature TEXT NOT NULL,"
    "  day INTEGER NOT NULL, count INTEGER NOT NULL,"
    "  PRIMARY KEY(kind, signature, day)) WITHOUT ROWID;"
    "INSERT INTO crash_group_days SELECT kind, signature, created_at / 86400000, count(*)"
    "  FROM crashes GROUP BY 1, 2, 3;"
    "CREATE TABLE crash_days(kind TEXT NOT NULL, day INTEGER NOT NULL,"
    "  count INTEGER NOT NULL, PRIMARY KEY(kind, day)) WITHOUT ROWID;"
    "INSERT INTO crash_days SELECT kind, created_at / 86400000, count(*) FROM crashes"
    "  GROUP BY 1, 2;"
    "CREATE TABLE crash_group_dims(kind TEXT NOT NULL, signature TEXT NOT NULL,"
    "  dim INTEGER NOT NULL, value TEXT NOT NULL, count INTEGER NOT NULL,"
    "  first_seen INTEGER NOT NULL, last_seen INTEGER NOT NULL, example_id INTEGER NOT NULL,"
    "  PRIMARY KEY(kind, signature, dim, value)) WITHOUT ROWID;"
    "INSERT INTO crash_group_dims"
    "  SELECT kind, signature, 0, app_version, count(*), min(created_at), max(created_at),"
    "    max(id) FROM crashes WHERE app_version <> '' GROUP BY 1, 2, 4"
    "  UNION ALL SELECT kind, signature, 1, os_version, count(*), min(created_at),"
    "    max(created_at), max(id) FROM crashes WHERE os_version <> '' GROUP BY 1, 2, 4"
    "  UNION ALL SELECT kind, signature, 2, hardware_model, count(*), min(created_at),"
    "    max(created_at), max(id) FROM crashes WHERE hardware_model <> '' GROUP BY 1, 2, 4;"
    "CREATE INDEX crash_group_dims_value ON crash_group_dims(dim, value, count DESC);",
    /* 5: a crash is one report of its original (a MetricKit payload's diagnostics
     * share the payload): which one */
    "ALTER TABLE crashes ADD COLUMN part INTEGER NOT NULL DEFAULT 0;",
    /* 6: Apple's system libraries (symd import): a symbol set is one OS
     * build's libraries (a DeviceSupport folder, a dyld shared cache), its
     * images listed in symbol_set_images (an image two builds share is
     * stored once, in both); images.system marks what an import stored
     * (deleting the last set holding it deletes it; a user's upload never
     * is), crash_image_refs.system what the reports say is the OS's. */
    "CREATE TABLE symbol_sets("
    "  id INTEGER PRIMARY KEY AUTOINCREMENT,"
    "  os_name TEXT NOT NULL, os_version TEXT NOT NULL, os_build TEXT NOT NULL,"
    "  arch TEXT NOT NULL DEFAULT '', model TEXT NOT NULL DEFAULT '',"
    "  source TEXT NOT NULL DEFAULT '',"
    "  created_at INTEGER NOT NULL, updated_at INTEGER NOT NULL,"
    "  UNIQUE(os_name, os_build, arch));"
    "CREATE TABLE symbol_set_images("
    "  set_id INTEGER NOT NULL REFERENCES symbol_sets(id) ON DELETE CASCADE,"
    "  image_id INTEGER NOT NULL REFERENCES images(id) ON DELETE CASCADE,"
    "  PRIMARY KEY(set_id, image_id)) WITHOUT ROWID;"
    "CREATE INDEX symbol_set_images_image ON symbol_set_images(image_id);"
    "ALTER TABLE images ADD COLUMN system INTEGER NOT NULL DEFAULT 0;"
    "ALTER TABLE crash_image_refs ADD COLUMN system INTEGER NOT NULL DEFAULT 0;",
    /* 7: crashes to file again under the grouping rule of this symd (by the
     * app's own frames and the exception type: server/signature.c), which
     * the server does in the background (server/regroup.c), taking each
     * off as it goes; uploads add those an image now names. */
    "CREATE TABLE crash_regroup(id INTEGER PRIMARY KEY);"
    "INSERT INTO crash_regroup SELECT id FROM crashes;",
    /* 8: grouping rules (--grouping-rules, server/grouping.c): the text of
     * the rule that filed a crash (NULL: the default rule), and the digest
     * of the rules the database's crashes are filed under ('': none), so
     * that a server started or reloaded with other rules refiles them. */
    "ALTER TABLE crashes ADD COLUMN grouping_rule TEXT;"
    "CREATE TABLE grouping_state(id INTEGER PRIMARY KEY CHECK (id = 1),"
    "  rules_digest TEXT NOT NULL);"
    "INSERT INTO grouping_state VALUES (1, '');",
    /* 9: webhooks (server/webhook.c): the outbox of events, written in the
     * transaction of the crash post that caused each, with a delivery per
     * target URL that the senders claim under a lease (lease_until, its
     * owner) and mark delivered (state 1) or failed (2); the images an
     * image.missing event was sent for (once per UUID); each group's
     * crashes per UTC hour (hours since 1970; 8 days kept) for spikes,
     * spiked once an hour's group.spike is recorded. IF NOT EXISTS: a store
     * taken back to an older version (tests do) keeps these tables. */
    "CREATE TABLE IF NOT EXISTS webhook_events(id INTEGER PRIMARY KEY AUTOINCREMENT,"
    "  created_at INTEGER NOT NULL, type TEXT NOT NULL, data TEXT NOT NULL);"
    "CREATE TABLE IF NOT EXISTS webhook_deliveries(id INTEGER PRIMARY KEY AUTOINCREMENT,"
    "  event_id INTEGER NOT NULL REFERENCES webhook_events(id) ON DELETE CASCADE,"
    "  url TEXT NOT NULL, state INTEGER NOT NULL DEFAULT 0,"
    "  attempts INTEGER NOT NULL DEFAULT 0, next_at INTEGER NOT NULL,"
    "  lease_until INTEGER NOT NULL DEFAULT 0, lease_owner INTEGER NOT NULL DEFAULT 0,"
    "  last_status INTEGER NOT NULL DEFAULT 0, last_error TEXT NOT NULL DEFAULT '',"
    "  updated_at INTEGER NOT NULL DEFAULT 0, done_at INTEGER NOT NULL DEFAULT 0);"
    "CREATE INDEX IF NOT EXISTS webhook_deliveries_due ON webhook_deliveries(url, next_at, id)"
    "  WHERE state = 0;"
    "CREATE INDEX IF NOT EXISTS webhook_deliveries_event ON webhook_deliveries(event_id);"
    "CREATE TABLE IF NOT EXISTS webhook_images(uuid BLOB PRIMARY KEY, created_at INTEGER NOT NULL)"
    "  WITHOUT ROWID;"
    "CREATE TABLE IF NOT EXISTS crash_group_hours(kind TEXT NOT NULL, signature TEXT NOT NULL,"
    "  hour INTEGER NOT NULL, count INTEGER NOT NULL, spiked INTEGER NOT NULL DEFAULT 0,"
    "  PRIMARY KEY(kind, signature, hour)) WITHOUT ROWID;"
    "CREATE INDEX IF NOT EXISTS crash_group_hours_hour ON crash_group_hours(hour);",
    /* 10: a group's workflow (store.h, "a group's workflow"): its state
     * (unresolved, resolved, ignored, regressed) with what a resolution or
     * an ignore waits for, the first and last app version it was reported
     * in (with their sort keys, store/appversion.h) and how many reports
     * were ever filed under it; a row outlives the group's crashes (a
     * resolved group whose reports were pruned still regresses). Every
     * state change is a row of crash_group_history. Rows of existing groups
     * are made at open (their versions from crash_group_dims: the keys are
     * computed in C). And the crashes per day of each group's versions, OS
     * versions and devices, which trends filtered by one of them read. */
    "CREATE TABLE crash_group_states("
    "  kind TEXT NOT NULL, signature TEXT NOT NULL,"
    "  state TEXT NOT NULL DEFAULT 'unresolved',"
    "  resolved_in TEXT NOT NULL DEFAULT '', resolved_version TEXT, resolved_key TEXT,"
    "  ignore_until INTEGER NOT NULL DEFAULT 0, ignore_reports INTEGER NOT NULL DEFAULT 0,"
    "  ignore_seen INTEGER NOT NULL DEFAULT 0,"
    "  first_version TEXT, first_key TEXT, last_version TEXT, last_key TEXT,"
    "  changed_at INTEGER NOT NULL DEFAULT 0, reports INTEGER NOT NULL DEFAULT 0,"
    "  PRIMARY KEY(kind, signature)) WITHOUT ROWID;"
    "CREATE INDEX crash_group_states_state ON crash_group_states(state, ignore_until);"
    "CREATE INDEX crash_group_states_first ON crash_group_states(first_key);"
    "CREATE TABLE crash_group_history("
    "  id INTEGER PRIMARY KEY AUTOINCREMENT,"
    "  kind TEXT NOT NULL, signature TEXT NOT NULL, at INTEGER NOT NULL,"
    "  from_state TEXT NOT NULL, to_state TEXT NOT NULL, by_role TEXT NOT NULL,"
    "  reason TEXT NOT NULL, crash_id INTEGER, resolved_in TEXT NOT NULL DEFAULT '',"
    "  version TEXT, ignore_until INTEGER NOT NULL DEFAULT 0,"
    "  ignore_reports INTEGER NOT NULL DEFAULT 0, note TEXT);"
    "CREATE INDEX crash_group_history_group ON crash_group_history(kind, signature, id);"
    /* the crashes per day of each group's app versions, OS versions and
     * devices (dim 0, 1, 2): trends filtered by one of them */
    "CREATE TABLE crash_dim_days(kind TEXT NOT NULL, signature TEXT NOT NULL,"
    "  dim INTEGER NOT NULL, value TEXT NOT NULL, day INTEGER NOT NULL, count INTEGER NOT NULL,"
    "  PRIMARY KEY(kind, signature, dim, value, day)) WITHOUT ROWID;"
    "CREATE INDEX crash_dim_days_value ON crash_dim_days(dim, value, day);"
    "INSERT INTO crash_dim_days"
    "  SELECT kind, signature, 0, app_version, created_at / 86400000, count(*) FROM crashes"
    "    WHERE app_version <> '' GROUP BY 1, 2, 4, 5"
    "  UNION ALL SELECT kind, signature, 1, os_version, created_at / 86400000, count(*)"
    "    FROM crashes WHERE os_version <> '' GROUP BY 1, 2, 4, 5"
    "  UNION ALL SELECT kind, signature, 2, hardware_model, created_at / 86400000, count(*)"
    "    FROM crashes WHERE hardware_model <> '' GROUP BY 1, 2, 4, 5;",
    /* 11: chunks of uploads in parts (POST /v1/chunks), by the SHA-256 of
     * their bytes; the index answers the budget's sum and the expiry
     * without reading the blobs. IF NOT EXISTS: a store taken back to an
     * older version (the upgrade tests) may hold it already. */
    "CREATE TABLE IF NOT EXISTS chunks(id INTEGER PRIMARY KEY, hash BLOB NOT NULL UNIQUE,"
    "  size INTEGER NOT NULL, created_at INTEGER NOT NULL, data BLOB NOT NULL);"
    "CREATE INDEX IF NOT EXISTS chunks_created ON chunks(created_at, size);",
    /* 12: idempotent posts (store_put_crash_ev): a crash's Idempotency-Key
     * and its content key (store_content_key), each unique (NULLs apart), so
     * a report posted again is found by the insert itself. Stored crashes
     * with an incident id get its key (the first of a set of copies only:
     * copies posted before this schema stay, keyed none); those without
     * stay NULL (the hash of their bytes would need their originals
     * decompressed). */
    "ALTER TABLE crashes ADD COLUMN idem_key TEXT;"
    "ALTER TABLE crashes ADD COLUMN content_key TEXT;"
    "UPDATE crashes SET content_key = 'inc:' || format || ':' || part || ':' || incident_id"
    "  WHERE id IN (SELECT min(id) FROM crashes WHERE incident_id <> ''"
    "    AND length(CAST(incident_id AS BLOB)) <= 128 GROUP BY format, part, incident_id);"
    "CREATE UNIQUE INDEX crashes_idem_key ON crashes(idem_key);"
    "CREATE UNIQUE INDEX crashes_content_key ON crashes(content_key);",
    /* 13: PostgreSQL's crash post in one statement; nothing here */
    "",
};

_Static_assert(sizeof migrations / sizeof migrations[0] == STORE_SCHEMA_VERSION,
               "STORE_SCHEMA_VERSION is the number of migrations");

symd_status sqlite_schema_migrate(sqlite3 *db, symd_err *err)
{
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(db, "PRAGMA user_version", -1, &st, NULL) != SQLITE_OK)
        return db_fail(err, db, "reading schema version");
    int version = sqlite3_step(st) == SQLITE_ROW ? sqlite3_column_int(st, 0) : 0;
    sqlite3_finalize(st);
    int latest = (int)(sizeof migrations / sizeof migrations[0]);
    if (version > latest)
        return symd_fail(err, SYMD_E_DB,
                         "database schema version %d is newer than this symd (%d)",
                         version, latest);
    for (int v = version; v < latest; v++) {
        char pragma[64];
        snprintf(pragma, sizeof pragma, "PRAGMA user_version = %d", v + 1);
        if (sqlite3_exec(db, "BEGIN IMMEDIATE", NULL, NULL, NULL) != SQLITE_OK)
            return db_fail(err, db, "starting migration");
        if (sqlite3_exec(db, migrations[v], NULL, NULL, NULL) != SQLITE_OK ||
            sqlite3_exec(db, pragma, NULL, NULL, NULL) != SQLITE_OK) {
            symd_status r = db_fail(err, db, "migrating schema");
            sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
            return r;
        }
        if (sqlite3_exec(db, "COMMIT", NULL, NULL, NULL) != SQLITE_OK)
            return db_fail(err, db, "committing migration");
    }
    return SYMD_OK;
}

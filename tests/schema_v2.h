/* The store's schema as symd wrote it at user_version 2 (before crash kinds),
 * frozen here so tests can build an old database and watch it migrate. Taken
 * from store/store.c's migrations 1 and 2 as they stood then; never edit. */
#ifndef SYMD_TEST_SCHEMA_V2_H
#define SYMD_TEST_SCHEMA_V2_H

static const char SCHEMA_V2_SQL[] =
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
    "  PRIMARY KEY(image_id, kind));"
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
    "CREATE INDEX crash_images_uuid ON crash_images(uuid);"
    "PRAGMA user_version = 2;";

/* Inserts crash rows as symd wrote them at version 2: (format, process,
 * signature, original, result) bound by the caller. */
static const char SCHEMA_V2_INSERT_CRASH[] =
    "INSERT INTO crashes(created_at, format, process, signature, original, result, "
    "result_at) VALUES (1700000000000, ?1, ?2, ?3, ?4, ?5, 1700000000000)";

#endif

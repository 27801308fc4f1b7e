/* Xcode's DeviceSupport folders: what their names and Info.plist say of the
 * OS build they hold, and a walk over their files.
 *
 * Xcode copies a device's system libraries into
 *   ~/Library/Developer/Xcode/<OS> DeviceSupport/<folder>/Symbols/...
 * where <OS> is iOS, watchOS, tvOS, visionOS (xrOS in early releases) or
 * macOS, and <folder> is "<model> <version> (<build>)" (Xcode 14 and later,
 * e.g. "iPhone12,1 16.0 (20A362)"), or the older "<version> (<build>)" and
 * "<version> (<build>) <arch>" (e.g. "14.2 (18B92) arm64e"). The folder may
 * hold an Info.plist (ProductName, ProductVersion, ProductBuildVersion).
 *
 * The name and plist readers take untrusted bytes as (buf, len). */
#ifndef SYMD_IMPORT_DEVSUPPORT_H
#define SYMD_IMPORT_DEVSUPPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>

#include "../util/err.h"

/* What a folder says of its OS build; "" for what it does not say. */
typedef struct {
    char os_name[64], os_version[64], os_build[64], arch[16], model[64];
} devsupport_id;

/* Reads a DeviceSupport folder's name (name, len bytes: no NUL needed) into
 * id's os_version, os_build, model and arch (os_name untouched); false,
 * leaving id as it was, when the name is none of the three forms. */
bool devsupport_parse_name(const char *name, size_t len, devsupport_id *id);

/* The OS of a folder named "<OS> DeviceSupport" (its parent), canonical
 * (devsupport_canonical_os) into out; false for any other name. */
bool devsupport_os_of_parent(const char *name, size_t len, char *out, size_t cap);

/* The name symd gives an OS, whatever Apple's files call it: "iPhone OS"
 * and "iOS" are "iOS", "Watch OS" "watchOS", "xrOS" "visionOS", "Mac OS X"
 * "macOS"...; a name it does not know is returned as it is. */
const char *devsupport_canonical_os(const char *name);

/* Reads an Info.plist (XML) into id: ProductName (canonical) as os_name,
 * ProductVersion, ProductBuildVersion; a key the plist lacks leaves id's
 * field as it was. SYMD_E_UNSUPPORTED for a binary plist (bplist00: not
 * read), SYMD_E_CORRUPT for anything else that is no XML plist dictionary. */
symd_status devsupport_read_plist(const uint8_t *buf, size_t len, devsupport_id *id,
                                  symd_err *err);

/* Called for each regular file of a walk (symbolic links, devices and the
 * like are skipped), with its path and lstat; or, with st NULL, for a
 * folder that cannot be read (errnum says why). A status other than SYMD_OK
 * stops the walk. */
typedef symd_status (*devsupport_file_fn)(void *ctx, const char *path, const struct stat *st,
                                          int errnum);

/* Walks root depth first, a folder's entries in name order, without
 * following symbolic links or holding more than the folders on the way
 * down. SYMD_E_IO when root cannot be opened; fn's error when it stops. */
symd_status devsupport_walk(const char *root, devsupport_file_fn fn, void *ctx,
                            symd_err *err);

#endif

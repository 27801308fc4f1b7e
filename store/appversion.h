/* The order of app versions ("1.2.3 (45)": CFBundleShortVersionString and
 * build), as a sort key both store backends compare bytewise in SQL, so a
 * regression ("a report from a version newer than the resolution") is
 * decided by one conditional UPDATE under the group's row lock. */
#ifndef SYMD_APPVERSION_H
#define SYMD_APPVERSION_H

#include <stdbool.h>
#include <stddef.h>

/* Longest key app_version_key writes (NUL included). */
#define APP_VERSION_KEY_MAX 512

/* The sort key of version v into key (APP_VERSION_KEY_MAX bytes); false
 * (key "") when v is NULL or empty: such a report has no version to order.
 *
 * The order: a version is "SHORT" or "SHORT (BUILD)". SHORT parses when it
 * is 1 to 8 dot-separated runs of digits ("1.2.3"); parsed versions compare
 * numerically component by component, trailing zero components dropped
 * ("1.2" and "1.2.0" are one version, "1.10" > "1.9"), then by build: none
 * first, then numeric builds (dotted digits, compared the same way), then
 * any other build text bytewise ("45" < "100" < "1a2b"). A version whose
 * SHORT does not parse ("beta", "1.2-rc1", "") is unparsable: it sorts
 * below every parsed version, unparsable ones among themselves bytewise by
 * their whole text; so it never regresses a group resolved in a parsed
 * version. Leading and trailing spaces are ignored. */
bool app_version_key(const char *v, char *key);

/* The key of v in the order of first-seen versions (a group's
 * first_version): as app_version_key, but unparsable versions sort above
 * every parsed one, so a group's first version is its oldest parsed one
 * ("beta" only when it has no parsed version). false when v has none. */
bool app_version_first_key(const char *v, char *key);

/* The key a resolution in version v is compared with (a report whose key is
 * greater is newer): v's key, or when v names no build ("2.0"), a key above
 * every build of that version, so "2.0 (7)" does not regress a group
 * resolved in 2.0 while "2.0.1" does. false when v has no version. */
bool app_version_resolution_key(const char *v, char *key);

/* The first-order keys [lo, hi) of the versions "new in v" means: v alone,
 * or when v names no build, every build of v's version ("1.2" takes
 * "1.2 (45)"). false when v has no version. */
bool app_version_first_range(const char *v, char *lo, char *hi);

/* <0, 0, >0 as a is older than, the same as, newer than b (by their keys;
 * a version-less one, NULL or "", is older than any). */
int app_version_cmp(const char *a, const char *b);

#endif

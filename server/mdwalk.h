/* The minidump stack walker the server and `symd crash` plug into the
 * report readers (crash_set_minidump_walker): unwind/'s walker over the
 * unwind rows of the images the store holds. */
#ifndef SYMD_MDWALK_H
#define SYMD_MDWALK_H

#include "../store/store.h"

/* Makes the minidump readers walk threads with the unwind rows of st's
 * images (CFI, then frame pointers, then scanning); st must outlive every
 * parse. NULL puts back the built-in frame-pointer walker. */
void mdwalk_install(store *st);

#endif

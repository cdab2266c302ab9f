/* Epoch-controller binary types (simulated LL_ATON): the names and widths of ST's runtime, so
 * code written against ST's ecloader.h compiles against the simulated install. */
#ifndef __EC_H
#define __EC_H

#include <inttypes.h>

#define ECASM_BINARY_MAGIC 0xECBF0030   /* an epoch-controller binary (blob + tables) */
#define ECASM_BLOB_MAGIC   0xCA057A7A   /* word 0 of a blob */

typedef uint32_t ECInstr;       /* one word of a blob */
typedef uint32_t ECAddr;        /* an address a relocation writes */
typedef uint32_t ECFileEntry;   /* one word of a relocation or patch table */

#endif

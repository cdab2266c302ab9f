/* Epoch-controller blob loader (simulated LL_ATON): the interface of ST's runtime, declared so a
 * generated network.c that includes it (as ST's generated code does) compiles the same against
 * either install. The simulated install defines none of these functions: the blobs its tool writes
 * hold no relocation or patch table, and its epochs' work runs through ec_ops.h. */
#ifndef __ECLOADER_H
#define __ECLOADER_H

#ifdef __cplusplus
extern "C"
{
#endif

#include <inttypes.h>
#include <stdbool.h>

#include "ec.h"

#ifdef USE_FILES
  /* A blob read from a file (hosted use). */
  extern long ec_file_size(const char *path);
  extern bool ec_copy_file(const char *path, uint8_t *ptr);
#endif

  /* The blob inside an epoch-controller binary: where it is, or a copy of it. */
  const uint64_t *ec_get_blob_ptr(const uint8_t *binary_ptr);
  extern bool ec_copy_blob(ECInstr *blob, const uint8_t *binary_ptr, unsigned int *blob_size);

  /* Relocations: the binary's table, and rewriting a blob's addresses for a new base. */
  extern bool ec_copy_reloc_table(ECFileEntry *reloc_table, const uint8_t *binary_ptr, unsigned int *reloc_table_size);
  extern const ECFileEntry *ec_get_reloc_table_ptr(const uint8_t *binary_ptr);
  extern unsigned int ec_get_num_relocs(const ECFileEntry *reloc_table_ptr);
  extern const char *ec_get_reloc_id(const ECFileEntry *reloc_table_ptr, unsigned int idx);
  extern bool ec_reloc(const ECFileEntry *reloc_table_ptr, ECInstr *blob, unsigned int idx, ECAddr base,
                       ECAddr *prev_base);
  extern bool ec_reloc_by_id(const ECFileEntry *reloc_table_ptr, ECInstr *blob, const char *id, ECAddr base,
                             ECAddr *prev_base);

  /* Patches: the binary's table, and writing a value into the blob's patched fields. */
  extern bool ec_copy_patch_table(ECFileEntry *patch_table, const uint8_t *binary_ptr, unsigned int *patch_table_size);
  extern const ECFileEntry *ec_get_patch_table_ptr(const uint8_t *binary_ptr);
  extern unsigned int ec_get_num_patches(const ECFileEntry *patch_table_ptr);
  extern const char *ec_get_patch_id(const ECFileEntry *patch_table_ptr, unsigned int idx);
  extern uint32_t ec_get_patch_mask(const ECFileEntry *patch_table_ptr, unsigned int idx);
  extern bool ec_patch(const ECFileEntry *patch_table_ptr, ECInstr *blob, unsigned int idx, uint32_t value);
  extern bool ec_patch_by_id(const ECFileEntry *patch_table_ptr, ECInstr *blob, const char *id, uint32_t value);

#ifdef __cplusplus
}
#endif

#endif

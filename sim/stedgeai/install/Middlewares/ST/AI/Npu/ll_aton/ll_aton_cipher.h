/* Stream-engine encryption settings (simulated LL_ATON): the descriptor that a network's
 * encryption-info getters return, with ST's members. The simulated tool never enables it. */
#ifndef LL_ATON_CIPHER_H
#define LL_ATON_CIPHER_H

#include <stdint.h>

typedef struct {
  unsigned int enable;
  uint64_t encryption_id;
  unsigned int rounds;
  unsigned int key_sel;
  unsigned int increment;
} LL_Streng_EncryptionTypedef;

#endif

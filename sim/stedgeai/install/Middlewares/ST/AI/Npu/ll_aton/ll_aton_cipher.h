/* Weight/blob encryption descriptors (simulated LL_ATON 1.1.3+; encryption is never enabled). */
#ifndef LL_ATON_CIPHER_H
#define LL_ATON_CIPHER_H
#include "ll_aton_NN_interface.h"
#endif

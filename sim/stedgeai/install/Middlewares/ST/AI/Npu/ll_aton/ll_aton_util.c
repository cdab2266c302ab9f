/* The runtime's utility unit (simulated LL_ATON): ST's makefile compiles it into every model;
 * what the simulated runtime needs of it is in ll_aton_util.h. */
#include "ll_aton_util.h"

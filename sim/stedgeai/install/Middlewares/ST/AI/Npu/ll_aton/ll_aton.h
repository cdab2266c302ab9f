/* Low-level NPU access (simulated LL_ATON). */
#ifndef LL_ATON_H
#define LL_ATON_H

#include <stdint.h>

#include "ll_aton_platform.h"
#include "ll_aton_NN_interface.h"
#include "ll_aton_caches_interface.h"

/* The STM32N6 has no address translation between the CPU and the NPU. */
#define ATON_LIB_PHYSICAL_TO_VIRTUAL_ADDR(addr) (addr)
#define ATON_LIB_VIRTUAL_TO_PHYSICAL_ADDR(addr) (addr)
#define LL_ATON_LIB_UNUSED(x) ((void)(x))

/* NPU register block (ATON_BASE comes from the platform header, secure or non-secure alias). */
#define ATON_VERSION_REG  0x000u
#define ATON_UNITS_EN_REG 0x010u
#define ATON_EC_ADDR_REG  0x100u
#define ATON_EC_CTRL_REG  0x104u

uint32_t LL_ATON_Version_Get(void);
void LL_ATON_EnableUnits_Init(uint32_t units_mask);
void LL_ATON_DisableUnits_Init(uint32_t units_mask);
void LL_ATON_EC_Hw_Start(const uint64_t *blob);

#endif

/* NPU register access (simulated LL_ATON). The register block sits at ATON_BASE, whose value
 * depends on the security state the file is compiled for. */
#include "ll_aton.h"

#define ATON_REG(off) (*(volatile uint32_t *)(ATON_BASE + (off)))

uint32_t LL_ATON_Version_Get(void) { return ATON_REG(ATON_VERSION_REG); }

void LL_ATON_EnableUnits_Init(uint32_t units_mask) { ATON_REG(ATON_UNITS_EN_REG) |= units_mask; }

void LL_ATON_DisableUnits_Init(uint32_t units_mask) { ATON_REG(ATON_UNITS_EN_REG) &= ~units_mask; }

void LL_ATON_EC_Hw_Start(const uint64_t *blob)
{
  ATON_REG(ATON_EC_ADDR_REG) = (uint32_t)(uintptr_t)blob;
  ATON_REG(ATON_EC_CTRL_REG) = 1u;
}

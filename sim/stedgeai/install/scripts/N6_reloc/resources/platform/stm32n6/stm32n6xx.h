/* Minimal STM32N6 platform header for relocatable model builds: only the NPU base address,
 * which differs between the secure and the non-secure alias. */
#ifndef STM32N6XX_H
#define STM32N6XX_H

#if defined(__ARM_FEATURE_CMSE) && (__ARM_FEATURE_CMSE == 3)
#define ATON_BASE 0x580E0000UL
#else
#define ATON_BASE 0x480E0000UL
#endif

#endif

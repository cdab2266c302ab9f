/* Platform, OS abstraction and runtime-mode selectors (simulated LL_ATON). */
#ifndef LL_ATON_PLATFORM_H
#define LL_ATON_PLATFORM_H

#define LL_ATON_PLAT_STM32N6   1
#define LL_ATON_OSAL_BARE_METAL 1
#define LL_ATON_RT_POLLING     1
#define LL_ATON_RT_ASYNC       2

#ifndef LL_ATON_PLATFORM
#define LL_ATON_PLATFORM LL_ATON_PLAT_STM32N6
#endif
#ifndef LL_ATON_OSAL
#define LL_ATON_OSAL LL_ATON_OSAL_BARE_METAL
#endif
#ifndef LL_ATON_RT_MODE
#define LL_ATON_RT_MODE LL_ATON_RT_ASYNC
#endif

#if LL_ATON_PLATFORM == LL_ATON_PLAT_STM32N6
#include "stm32n6xx.h"      /* ATON_BASE */
#endif

#endif

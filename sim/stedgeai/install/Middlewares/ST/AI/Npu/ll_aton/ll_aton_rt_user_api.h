/* The user side of the runtime (simulated LL_ATON): the macro that fills a network interface
 * with the functions a generated network exports, under ST's name and in its member order. */
#ifndef LL_ATON_RT_USER_API_H
#define LL_ATON_RT_USER_API_H

#include "ll_aton_NN_interface.h"

#if LL_ATON_HAS_ENCRYPTION_INFO
#define LL_ATON__ENCRYPTION_MEMBERS(name) \
  .weight_encryption_info = &LL_ATON_WeightEncryption_Info_##name, \
  .blob_encryption_info = &LL_ATON_BlobEncryption_Info_##name,
#else
#define LL_ATON__ENCRYPTION_MEMBERS(name)
#endif

#define LL_ATON_DECLARE_NAMED_NN_INTERFACE(name) \
  LL_ATON_DECLARE_NAMED_NN_PROTOS(name); \
  static const NN_Interface_TypeDef NN_Interface_##name = { \
      .network_name = #name, \
      .ec_network_init = &LL_ATON_EC_Network_Init_##name, \
      .ec_inference_init = &LL_ATON_EC_Inference_Init_##name, \
      .input_setter = &LL_ATON_Set_User_Input_Buffer_##name, \
      .input_getter = &LL_ATON_Get_User_Input_Buffer_##name, \
      .output_setter = &LL_ATON_Set_User_Output_Buffer_##name, \
      .output_getter = &LL_ATON_Get_User_Output_Buffer_##name, \
      .epoch_block_items = &LL_ATON_EpochBlockItems_##name, \
      .output_buffers_info = &LL_ATON_Output_Buffers_Info_##name, \
      .input_buffers_info = &LL_ATON_Input_Buffers_Info_##name, \
      LL_ATON__ENCRYPTION_MEMBERS(name) \
      .internal_buffers_info = &LL_ATON_Internal_Buffers_Info_##name}

#endif

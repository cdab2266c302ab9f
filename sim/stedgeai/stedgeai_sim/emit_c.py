"""C outputs of the simulated generate: `<N>.c`, `<N>.h`, `<N>_ecblobs.h`, `stai_<N>.c/.h`."""
import struct

import numpy as np

from n6.nn_interface import ChPos
from n6.simulators import load
from n6.stedgeai_install import SIMULATED_AUTHOR

ecblob = load("npu_model.ecblob")          # the blob format, where the NPU model reads it

# Word 0 of an epoch's operator list, run in software by its start function: "ECB1" (the
# simulated runtime's ec_ops.h), then the operator count.
EC_OPS_MAGIC = 0x31424345
EC_OPS = {"conv2d": 1, "dense": 2, "maxpool": 3, "avgpool": 3}
CTYPE = {"int8": "int8_t", "uint8": "uint8_t", "int32": "int32_t", "float32": "float"}
DTYPE = {"int8": "DataType_INT8", "uint8": "DataType_UINT8", "int32": "DataType_INT32", "float32": "DataType_FLOAT"}
CHPOS = {ChPos.UNDEFINED: "CHPos_UNDEFINED", ChPos.FIRST: "CHPos_First", ChPos.LAST: "CHPos_Last",
         ChPos.MIXED: "CHPos_Mixed"}


def human_size(n):
    if n == 0:
        return "?"
    if n < 1024:
        return f"{n} B"
    if n < 1024 * 1024:
        return f"{n / 1024:.2f} KB"
    return f"{n / (1024 * 1024):.2f} MB"


def option_lines(options):
    """Profile options as `--key = value` comment lines (flags become `= true`)."""
    out, i = [], 0
    while i < len(options):
        opt = options[i]
        if opt.startswith("-O") and not opt.startswith("--") and opt[2:].isdigit():
            out.append(("--optimization", opt[2:]))
        elif i + 1 < len(options) and not options[i + 1].startswith("-"):
            out.append((opt, options[i + 1]))
            i += 1
        else:
            out.append((opt, "true"))
        i += 1
    return out


def buffer_layout(t):
    """(shape, mem_shape, chpos, batch) of a tensor's buffer info, the way ST's network.c writes
    them: `shape` has four axes, the logical shape padded with 1s after the batch, channels last
    (B H W C); `mem_shape` is the shape in memory with the batch first (B H W C for the channel-last
    4-D activations, whose `batch` is the channel count; the logical shape for the rest, channels
    first from three axes, no channel axis below). Parameters keep their stored shape."""
    if t.is_param:
        stored = tuple(int(d) for d in t.data.shape)
        return (stored + (1,) * (4 - len(stored)), stored, ChPos.FIRST if len(stored) > 1 else ChPos.UNDEFINED,
                stored[0] if len(stored) > 1 else 1)
    logical = tuple(int(d) for d in t.shape)
    if len(logical) > 4:
        return logical, logical, ChPos.FIRST, 1
    b, c, h, w = (logical[:1] + (1,) * (4 - len(logical)) + logical[1:]) if logical else (1, 1, 1, 1)
    if len(logical) == 4:
        return (b, h, w, c), (b, h, w, c), ChPos.LAST, c
    return (b, h, w, c), logical, ChPos.FIRST if len(logical) == 3 else ChPos.UNDEFINED, 1


ELTWISE_OPS = {("add", False): "LL_SW_ELTWISE_ADD", ("add", True): "LL_SW_ELTWISE_ADD_FIXED",
               ("mul", False): "LL_SW_ELTWISE_MUL"}
PROCESSOR_UNIT = 27     # ST's network.c numbers the CPU after the NPU's units: `/* Unit= 27 [PROCESSOR 0] */`,
#                         then `/* kind=<c_info's node kind> node=<name> */`, the lines ST's readers look for


def f32(x):
    """A float32 constant as ST's generator prints it: the value to 15 significant digits
    (0.00784313771873713), which the C compiler reads back to the same float32."""
    return f"{float(np.float32(x)):.15g}"


class CWriter:
    def __init__(self, ctx):
        self.ctx = ctx                 # generate.Context: release, name, sym, net, uses, profile, ...
        self.sym = ctx.sym
        self.labels = {u.pool.fname: f"_mem_pool_{u.pool.fname}_{ctx.sym}"
                       for u in ctx.uses if u.pool.relative}

    # -- addresses ---------------------------------------------------------------------------
    def base(self, pool):
        if pool.relative:
            return self.labels[pool.fname]
        return f"0x{pool.offset:08x}UL"

    def table_base(self, pool):
        """A buffer table's `.addr_base` as ST writes it (and its parser reads it): a relative
        pool's label through ATON_LIB_VIRTUAL_TO_PHYSICAL_ADDR, an absolute pool's literal."""
        if pool.relative:
            return f"ATON_LIB_VIRTUAL_TO_PHYSICAL_ADDR((uintptr_t){self.labels[pool.fname]})"
        return f"({self.base(pool)})"

    def addr(self, t, ctype):
        if t is None:
            return "NULL"
        if t.pool.relative:
            return f"({ctype} *)({self.labels[t.pool.fname]} + {t.offset})"
        return (f"({ctype} *)ATON_LIB_PHYSICAL_TO_VIRTUAL_ADDR(0x{t.pool.offset:08x}UL + {t.offset}) "
                f"/* Equivalent hex address = 0x{t.pool.offset + t.offset:08x}UL */")

    # -- network.c ---------------------------------------------------------------------------
    def network_c(self):
        c, rel = self.ctx, self.ctx.release
        L = ["/**", "  ******************************************************************************",
             f"  * @file    {c.name}.c", f"  * @author  {SIMULATED_AUTHOR}",
             "  * @brief   Neural-ART epoch schedule of the network - AUTOGENERATED DO NOT MODIFY",
             "  ******************************************************************************", "  */", "",
             "/*", f' * GIT_SHA         "{rel.git_sha}"', f' * GIT_BRANCH      "{rel.git_branch}"',
             f' * GIT_DESCRIPTION "{rel.git_description}"', " *", " * Command Line options:",
             f' * --load-mdesc-file = "{c.install_dir}/Utilities/configs/stm32n6"',
             f' * --load-mpool-file = "{c.mpool_stem}"']
        L += [f" * {k} = {v}" for k, v in option_lines(c.profile.options)]
        L += [' * --output-info-file = "c_info"']
        if rel.stai_wrapper:
            L += [f' * --network-name = "{c.name}"', " * --generate-stai = true"]
        L += [" */", ""]
        includes = ["ll_aton_NN_interface.h", "ll_aton.h", "ll_aton_lib.h", "ll_aton_version.h", "ll_sw.h"]
        if c.epoch_controller:
            includes.append("ecloader.h")
        if rel.encryption_info:
            includes.append("ll_aton_cipher.h")
        L += [f'#include "{h}"' for h in includes] + [""]
        major, minor, micro, dev = rel.atonn
        L += [f"#if LL_ATON_VERSION_MAJOR != {major} || LL_ATON_VERSION_MINOR != {minor} || "
              f"LL_ATON_VERSION_MICRO != {micro} || LL_ATON_VERSION_DEV != {dev}",
              f'#  {rel.guard} "Possible mismatch in ll_aton library used"', "#endif", "",
              "#if !defined(LL_ATON_DBG_BUFFER_INFO_EXCLUDED)", "#  define LL_ATON_DBG_BUFFER_INFO_EXCLUDED 0",
              "#endif", ""]
        L += self.pool_comments() + [""]
        L += self.user_io() + [""]
        if rel.encryption_info:
            L += self.encryption_info() + [""]
        if c.epoch_controller:
            L += [f'#include "{c.name}_ecblobs.h"', ""]
        else:
            L += [f"bool LL_ATON_EC_Network_Init_{self.sym}(void)", "{", "  return true;", "}", "",
                  f"bool LL_ATON_EC_Inference_Init_{self.sym}(void)", "{", "  return true;", "}", ""]
        for epoch, layers in c.epochs():
            L += self.epoch_code(epoch, layers)
        L += self.epoch_items() + [""]
        L += self.buffer_tables()
        return "\n".join(L) + "\n"

    def pool_comments(self):
        L = []
        for u in self.ctx.uses:
            p = u.pool
            mode = "" if p.relative else " absolute_mode"
            rights = "READ_ONLY" if p.read_only else "READ_WRITE"
            L.append(f"/* global pool {u.index} is {human_size(u.used)} */")
            L.append(f"/* index={u.index} file postfix={p.fname} name={p.name} offset=0x{p.offset:08x} {mode} "
                     f"size={max(p.size - 8, 0)} {rights} THROUGHPUT={p.throughput} LATENCY={p.latency} "
                     f"byte width={p.byte_width} freq ratio={p.freq_ratio:g} burst max length="
                     f"{'MAXINT' if p.burst_max_length == 0xFFFF_FFFF else p.burst_max_length} "
                     f"burst penalty={p.burst_penalty} pipelined={'ON' if p.pipelined else 'OFF'} "
                     f"cacheable={'ON' if p.cacheable else 'OFF'} "
                     f"read_power={p.read_power:g} write_power={p.write_power:g} use4initializers=YES "
                     f"score={50 if p.external else 94}  */")
        L.append("")
        for u in self.ctx.uses:
            if u.pool.relative:
                L.append(f"extern unsigned char {self.labels[u.pool.fname]}[]; /* [{u.pool.size}]; */")
        return L

    def user_io(self):
        s, L = self.sym, []
        for kind in ("Input", "Output"):
            L += [f"LL_ATON_User_IO_Result_t LL_ATON_Set_User_{kind}_Buffer_{s}"
                  "(uint32_t num, void *buffer, uint32_t size)",
                  "{", "  LL_ATON_LIB_UNUSED(num);", "  LL_ATON_LIB_UNUSED(buffer);", "  LL_ATON_LIB_UNUSED(size);",
                  "  return LL_ATON_User_IO_WRONG_INDEX;", "}", "",
                  f"void *LL_ATON_Get_User_{kind}_Buffer_{s}(uint32_t num)", "{", "  LL_ATON_LIB_UNUSED(num);",
                  "  return NULL;", "}", ""]
        return L

    def encryption_info(self):
        L = []
        for what in ("Weight", "Blob"):
            L += [f"const LL_Streng_EncryptionTypedef *LL_ATON_{what}Encryption_Info_{self.sym}(void)", "{",
                  "  static const LL_Streng_EncryptionTypedef info = {.enable = 0};", "  return &info;", "}", ""]
        return L

    def epoch_code(self, epoch, layers):
        L = [f"/* scheduling epoch={epoch:<4d} nodes={len(layers):<3d} "
             "------------------------------------------------------------------- */", ""]
        if layers[0].attrs.get("ec"):
            words = self.ops_words(layers)
            L += [f"/* epoch {epoch}: epoch-controller blob {self.blob_name(epoch)} "
                  f"({', '.join(layer.label + ' ' + layer.name for layer in layers)}): the start function "
                  "runs the operators in software, the blob holds the epoch's label and end interrupt */",
                  f"static const uint64_t _ec_ops_{epoch}[{len(words)}] = {{"]
            L += self.wrap([f"0x{w:016x}ULL" for w in words], 4) + ["};", "",
                  f"static void _ec_blob_cache_start_func_{epoch}(const void *epoch_block)", "{",
                  "  LL_ATON_LIB_UNUSED(epoch_block);", f"  ec_run_ops(_ec_ops_{epoch});", "}", ""]
            return L
        layer = layers[0]
        kind, fn, body, pre = self.sw_info(layer, f"_epoch_{epoch}")
        L += [f"/* epoch {epoch}: {layer.label} {layer.name} (SW) */"] + pre
        out = layer.output
        L += [f"static void LL_ATON_Start_EpochBlock_{epoch}(const void *epoch_block)", "{",
              f"  /* Unit= {PROCESSOR_UNIT} [PROCESSOR 0] */", f"  /* kind={layer.label} node={layer.name} */",
              f"  static const {kind} sw_info = {{"] + ["    " + x for x in body.splitlines()] + [
              "  };", "  LL_ATON_LIB_UNUSED(epoch_block);", f"  {fn}(&sw_info);", "}", "",
              f"static void LL_ATON_End_EpochBlock_{epoch}(const void *epoch_block)", "{",
              "  LL_ATON_LIB_UNUSED(epoch_block);",
              f"  LL_ATON_Cache_MCU_Clean_Invalidate_Range((uintptr_t)({self.addr(out, 'unsigned char')}), "
              f"{out.nbytes});",
              "}", ""]
        return L

    @staticmethod
    def wrap(items, per_line=6, indent="  "):
        return [indent + ", ".join(items[i:i + per_line]) + "," for i in range(0, len(items), per_line)]

    def array(self, ctype, name, values, per_line=8):
        items = [f32(v) for v in values] if ctype == "float" else [str(int(v)) for v in values]
        return [f"static const {ctype} {name}[{len(items)}] = {{"] + self.wrap(items, per_line) + ["};"]

    def sw_info(self, layer, prefix):
        """(parameter struct, forward function, struct body, lines before the epoch functions)."""
        a, x, y = layer.attrs, layer.inputs[0] if layer.inputs else None, layer.output
        pre = []
        amin, amax = a.get("act_min", -128), a.get("act_max", 127)
        common = f".in = {self.addr(x, 'const int8_t')},\n.out = {self.addr(y, 'int8_t')},"
        if layer.kind in ("conv2d", "dense"):
            w = layer.params[0]
            b = layer.params[1] if a["has_bias"] else None
            pre = self.array("float", prefix + "_multiplier", a["multiplier"])
            head = (f"{common}\n.weights = {self.addr(w, 'const int8_t')},\n.bias = {self.addr(b, 'const int32_t')},"
                    f"\n.multiplier = {prefix}_multiplier,")
            tail = f".in_zp = {x.zero_point}, .out_zp = {y.zero_point}, .act_min = {amin}, .act_max = {amax},"
            if layer.kind == "dense":
                return ("LL_SW_Dense_Int8_Info", "ll_sw_forward_dense_int8",
                        f"{head}\n.n_in = {x.count}, .n_out = {y.count},\n{tail}", pre)
            (ih, iw, ic), (oh, ow, oc) = x.mem_shape, y.mem_shape
            (kh, kw), (sh, sw), pads, (dh, dw) = a["kernel"], a["strides"], a["pads"], a["dilations"]
            return ("LL_SW_Conv_Int8_Info", "ll_sw_forward_conv_int8",
                    f"{head}\n.in_h = {ih}, .in_w = {iw}, .in_c = {ic}, .out_h = {oh}, .out_w = {ow}, .out_c = {oc},"
                    f"\n.k_h = {kh}, .k_w = {kw}, .stride_h = {sh}, .stride_w = {sw}, .pad_top = {pads[0]}, "
                    f".pad_left = {pads[1]},\n.dil_h = {dh}, .dil_w = {dw}, .groups = {a['group']},\n{tail}", pre)
        if layer.kind in ("maxpool", "avgpool"):
            (ih, iw, c), (oh, ow, _) = self.hwc(x), self.hwc(y)
            (kh, kw), (sh, sw), pads = a["kernel"], a["strides"], a["pads"]
            return ("LL_SW_Pool_Int8_Info", "ll_sw_forward_pool_int8",
                    f"{common}\n.multiplier = {f32(a['multiplier'])},\n.in_h = {ih}, .in_w = {iw}, .c = {c}, "
                    f".out_h = {oh}, .out_w = {ow},\n.k_h = {kh}, .k_w = {kw}, .stride_h = {sh}, .stride_w = {sw}, "
                    f".pad_top = {pads[0]}, .pad_left = {pads[1]},\n.in_zp = {x.zero_point}, "
                    f".out_zp = {y.zero_point}, .mode = {a['mode']},", pre)
        if layer.kind == "gather":
            parts = []
            for k, p in enumerate(a["parts"]):
                pre += self.array("int32_t", f"{prefix}_desc_{k}", p["desc"], 6)
                t = p["input"]
                parts.append(f"  {{.in = {self.addr(t, 'const int8_t')}, .desc = {prefix}_desc_{k}, "
                             f".out_offset = {p['out_offset']}, .multiplier = {f32(p['multiplier'])}, "
                             f".ndim = {len(p['desc']) // 6}, .in_zp = {t.zero_point}}},")
            pre += [f"static const LL_SW_Gather_Part {prefix}_parts[{len(parts)}] = {{"] + parts + ["};"]
            return ("LL_SW_Gather_Int8_Info", "ll_sw_forward_gather_int8",
                    f".out = {self.addr(y, 'int8_t')},\n.parts = {prefix}_parts, .n_parts = {len(parts)},\n"
                    f".out_zp = {y.zero_point}, .pad_value = {a['pad_value']},", pre)
        if layer.kind == "eltwise":
            ta, tb = a["a"], a["b"]
            pre = self.array("int32_t", prefix + "_desc", a["desc"], 3)
            return ("LL_SW_Eltwise_Int8_Info", "ll_sw_forward_eltwise_int8",
                    f".a = {self.addr(ta, 'const int8_t')},\n.b = {self.addr(tb, 'const int8_t')},\n"
                    f".out = {self.addr(y, 'int8_t')},\n.desc = {prefix}_desc, .mult_a = {f32(a['mult_a'])}, "
                    f".mult_b = {f32(a['mult_b'])},\n.fixed_a = {a.get('fixed_a', 0)}, "
                    f".fixed_b = {a.get('fixed_b', 0)}, .shift = {a.get('shift', 0)}, .ndim = {len(a['desc']) // 3}, "
                    f".op = {ELTWISE_OPS[a['op'], 'shift' in a]},\n"
                    f".a_zp = {ta.zero_point}, .b_zp = {tb.zero_point}, .out_zp = {y.zero_point}, "
                    f".act_min = {amin}, .act_max = {amax},", pre)
        if layer.kind == "lut":
            return ("LL_SW_Lut_Int8_Info", "ll_sw_forward_lut_int8",
                    f"{common}\n.table = {self.addr(layer.params[0], 'const int8_t')},\n"
                    f".count = {x.count}, .inner = {a['inner']}, .n_tables = {a['n_tables']},", pre)
        if layer.kind == "resize":
            (ih, iw, c), (oh, ow, _) = x.mem_shape, y.mem_shape
            return ("LL_SW_Resize_Int8_Info", "ll_sw_forward_resize_int8",
                    f"{common}\n.in_h = {ih}, .in_w = {iw}, .c = {c}, .out_h = {oh}, .out_w = {ow},\n"
                    f".bilinear = {a['bilinear']}, .coord_mode = {a['coord']}, .nearest_mode = {a['nearest']},\n"
                    f".scale_h = {f32(a['scales'][0])}, .scale_w = {f32(a['scales'][1])}, "
                    f".in_scale = {f32(x.scale)}, .out_scale = {f32(y.scale)},\n.in_zp = {x.zero_point}, "
                    f".out_zp = {y.zero_point},", pre)
        if layer.kind == "softmax":
            n = a["n"]
            return ("LL_SW_Softmax_Int8_Info", "ll_sw_forward_softmax_int8",
                    f"{common}\n.in_scale = {f32(x.scale)}, .out_scale = {f32(y.scale)},\n"
                    f".rows = {x.count // n}, .n = {n}, .in_zp = {x.zero_point}, .out_zp = {y.zero_point},", pre)
        mode = {"float32_to_int8": "LL_SW_CONVERT_FLOAT_TO_INT8", "uint8_to_int8": "LL_SW_CONVERT_UINT8_TO_INT8",
                "int8_to_float32": "LL_SW_CONVERT_INT8_TO_FLOAT", "int8_to_uint8": "LL_SW_CONVERT_INT8_TO_UINT8"}
        q = y if a["mode"].endswith("to_int8") else x
        return ("LL_SW_Convert_Info", "ll_sw_forward_convert",
                f".in = {self.addr(x, 'const void')},\n.out = {self.addr(y, 'void')},\n"
                f".scale = {f32(q.scale)}, .count = {x.count}, .zero_point = {q.zero_point}, "
                f".mode = {mode[a['mode']]},", pre)

    @staticmethod
    def hwc(t):
        return tuple(t.mem_shape) if len(t.shape) == 4 else (1, 1, t.count)

    def epoch_items(self):
        L = [f"const EpochBlock_ItemTypeDef *LL_ATON_EpochBlockItems_{self.sym}(void)", "{",
             "  static const EpochBlock_ItemTypeDef ll_atonn_rt_epoch_block_array[] = {"]
        for epoch, layers in self.ctx.epochs():
            ec = layers[0].attrs.get("ec")
            if ec:
                item = [f".start_epoch_block = _ec_blob_cache_start_func_{epoch},", ".end_epoch_block = NULL,",
                        f".blob_address = (uintptr_t)({self.blob_name(epoch)}),", ".wait_mask = 0,",
                        ".flags = EpochBlock_Flags_epoch_start | EpochBlock_Flags_epoch_end | "
                        "EpochBlock_Flags_blob | EpochBlock_Flags_pure_hw,"]
            else:
                item = [f".start_epoch_block = LL_ATON_Start_EpochBlock_{epoch},",
                        f".end_epoch_block = LL_ATON_End_EpochBlock_{epoch},", ".wait_mask = 0x00000000,",
                        ".flags = EpochBlock_Flags_epoch_start | EpochBlock_Flags_epoch_end | "
                        "EpochBlock_Flags_pure_sw,"]
            cycles = sum(layer.attrs.get("macc", 0) + layer.output.nbytes for layer in layers)
            item += ["#ifdef LL_ATON_EB_DBG_INFO", f".epoch_num = {epoch},", f".last_epoch_num = {epoch},",
                     ".in_streng_mask = 0x00000000,", ".out_streng_mask = 0x00000000,",
                     f".estimated_npu_cycles = {cycles if ec else 0},", f".estimated_tot_cycles = {cycles},",
                     "#endif // LL_ATON_EB_DBG_INFO"]
            L += ["    {"] + [("" if x.startswith("#") else "      ") + x for x in item] + ["    },"]
        L += ["    {", "      .flags = EpochBlock_Flags_last_eb,", "    },", "  };",
              "  return ll_atonn_rt_epoch_block_array;", "}"]
        return L

    def buffer_entry(self, t, names):
        """One LL_Buffer_InfoTypeDef initialiser, with ST's values (see buffer_layout)."""
        shape, mem_shape, chpos, batch = buffer_layout(t)
        bits = t.itemsize * 8
        unsigned = t.dtype.startswith("u")
        quantised = t.dtype != "float32"
        return ["    {", f'      .name = "{t.name}",',
                f"      .addr_base = {{(unsigned char *){self.table_base(t.pool)}}},",
                f"      .offset_start = {t.offset},", f"      .offset_end = {t.offset + t.nbytes},",
                f"      .offset_limit = {t.offset + (t.nbytes + 7) // 8 * 8},",
                "      .is_user_allocated = 0,", f"      .is_param = {int(t.is_param)},",
                f"      .epoch = {self.ctx.epoch_of.get(t.name, 0)},", f"      .batch = {batch},",
                f"      .mem_shape = {names['mem_shape']},", f"      .mem_ndims = {len(mem_shape)},",
                f"      .chpos = {CHPOS[chpos]},", f"      .Qm = {bits - (0 if unsigned else 1) if quantised else 0},",
                "      .Qn = 0,", f"      .Qunsigned = {int(unsigned)},", f"      .type = {DTYPE[t.dtype]},",
                f"      .nbits = {bits},", f"      .ndims = {len(shape)},", f"      .shape = {names['shape']},",
                f"      .per_channel = {int(np.size(t.scale) > 1)},",
                f"      .scale = {names.get('scale', 'NULL')},", f"      .offset = {names.get('offset', 'NULL')},",
                "    },"]

    def buffer_arrays(self, t):
        """The static arrays a buffer info points at, and their names."""
        shape, mem_shape, _, _ = buffer_layout(t)
        names = {"shape": f"buff_info_shape_{t.id}", "mem_shape": f"buff_info_mem_shape_{t.id}"}
        L = [f"  static const uint32_t {names['shape']}[] = {{ {', '.join(map(str, shape))} }};",
             f"  static const uint32_t {names['mem_shape']}[] = {{ {', '.join(map(str, mem_shape))} }};"]
        if t.dtype != "float32":
            scales = np.atleast_1d(np.asarray(t.scale, np.float32)).reshape(-1)
            names.update(scale=f"buff_info_{t.id}_quant_scale", offset=f"buff_info_{t.id}_quant_offset")
            L += [f"  static const float {names['scale']}[] = {{ {', '.join(f32(v) for v in scales)} }};",
                  f"  static const int16_t {names['offset']}[] = {{ {', '.join([str(t.zero_point)] * len(scales))} }};"]
        return L, names

    def buffer_table(self, kind, tensors, params=()):
        L = [f"const LL_Buffer_InfoTypeDef *LL_ATON_{kind}_Buffers_Info_{self.sym}(void)", "{"]
        entries, param_entries = [], []
        for group, out in ((tensors, entries), (params, param_entries)):
            for t in group:
                arrays, names = self.buffer_arrays(t)
                L += arrays if group is tensors else []
                out.append((t, names, arrays))
        if params:
            L += (["#if LL_ATON_DBG_BUFFER_INFO_EXCLUDED == 0"] + [x for _, _, a in param_entries for x in a]
                  + ["#endif"])
        L.append("  static const LL_Buffer_InfoTypeDef buff_info[] = {")
        for t, names, _ in entries:
            L += self.buffer_entry(t, names)
        if params:
            L.append("#if LL_ATON_DBG_BUFFER_INFO_EXCLUDED == 0")
            for t, names, _ in param_entries:
                L += self.buffer_entry(t, names)
            L.append("#endif")
        L += ["    {", "      .name = NULL,", "    },", "  };", "  return buff_info;", "}", ""]
        return L

    def buffer_tables(self):
        c, net = self.ctx, self.ctx.net
        all_info = c.profile.all_buffers_info
        io = {t.name for t in net.inputs + net.outputs}
        L = self.buffer_table("Input", net.inputs, net.params if all_info else ())
        L += self.buffer_table("Output", net.outputs)
        if all_info:
            L += self.buffer_table("Internal", [t for t in net.activations if t.name not in io])
        else:
            L += [f"const LL_Buffer_InfoTypeDef *LL_ATON_Internal_Buffers_Info_{self.sym}(void)", "{",
                  "  return NULL;", "}", ""]
        return L

    # -- <N>_ecblobs.h ------------------------------------------------------------------------
    def blob_name(self, epoch):
        return f"_ec_blob_{self.sym}_{epoch}" if self.ctx.release.core >= "3" else f"_ec_blob_{epoch}"

    def ops_words(self, layers):
        """The operator list the start function of an epoch-controller epoch runs (ec_ops.h of the
        simulated install: its own format, never handed to the NPU)."""
        words = [0]
        index = {id(u.pool): u.index for u in self.ctx.uses}

        def ref(t):
            return 0 if t is None else (index[id(t.pool)] << 32) | t.offset

        def i(v):
            return int(v) & 0xFFFFFFFF

        def fl(v):
            return struct.unpack("<I", struct.pack("<f", float(v)))[0]

        for layer in layers:
            a, x, y = layer.attrs, layer.inputs[0], layer.output
            amin, amax = a.get("act_min", -128), a.get("act_max", 127)
            if layer.kind in ("conv2d", "dense"):
                w, b = layer.params[0], layer.params[1] if a["has_bias"] else None
                head = [ref(x), ref(y), ref(w), ref(b), ref(a["multiplier_tensor"])]
                tail = [i(x.zero_point), i(y.zero_point), i(amin), i(amax)]
                if layer.kind == "dense":
                    args = head + [x.count, y.count] + tail
                else:
                    (ih, iw, ic), (oh, ow, oc) = x.mem_shape, y.mem_shape
                    args = head + [ih, iw, ic, oh, ow, oc, *a["kernel"], *a["strides"], a["pads"][0], a["pads"][1],
                                   *a["dilations"], a["group"]] + tail
            else:
                (ih, iw, c), (oh, ow, _) = self.hwc(x), self.hwc(y)
                args = [ref(x), ref(y), fl(a["multiplier"]), ih, iw, c, oh, ow, *a["kernel"], *a["strides"],
                        a["pads"][0], a["pads"][1], i(x.zero_point), i(y.zero_point), a["mode"]]
            words += [EC_OPS[layer.kind] | len(args) << 8] + args
        words[0] = EC_OPS_MAGIC | len(layers) << 32
        return words

    def ecblobs_h(self):
        c = self.ctx
        guard = f"__{c.name.upper()}_ECBLOBS_H"
        L = ["/**", f"  * @file    {c.name}_ecblobs.h", f"  * @author  {SIMULATED_AUTHOR}",
             "  * @brief   Epoch-controller blobs of the network - AUTOGENERATED DO NOT MODIFY", "  */",
             f"#ifndef {guard}", f"#define {guard}", "", '#include "ll_aton_caches_interface.h"',
             "#include <string.h>", '#include "ec_ops.h"', "", "#ifndef ECBLOB_CONST_SECTION",
             "#define ECBLOB_CONST_SECTION", "#endif", "#ifndef ECBLOB_RUNTIME_SECTION",
             "#define ECBLOB_RUNTIME_SECTION", "#endif", ""]
        v3 = c.release.core >= "3"
        for epoch, layers in c.epochs():
            if not layers[0].attrs.get("ec"):
                continue
            name = self.blob_name(epoch)       # the blob: the epoch's label and end interrupt (ops in software)
            words = ecblob.blob_u64([ecblob.Command(ecblob.LABEL, number=epoch), ecblob.Command(ecblob.IRQ)])
            L.append("ECBLOB_CONST_SECTION")
            if v3:
                L += ["__attribute__((aligned(64)))", f"/* epoch {epoch}: its label and end interrupt */"]
            L.append(f"static const uint64_t {name}[{len(words)}] = {{")
            L += self.wrap([f"0x{w:016x}ULL" for w in words], 4) + ["};"]
            if v3:
                L.append(f"#define {name}_address ((const uint64_t *){name})")
            L.append("")
        L += [f"bool LL_ATON_EC_Network_Init_{self.sym}(void)", "{"]
        for u in c.uses:
            if u.tensors:
                L.append(f"  ec_set_pool_base({u.index - 1}, (uintptr_t)({self.base(u.pool)}));")
        L += ["  return true;", "}", "", f"bool LL_ATON_EC_Inference_Init_{self.sym}(void)", "{", "  return true;",
              "}", "", f"#endif /* {guard} */"]
        return "\n".join(L) + "\n"

    # -- <N>.h and stai_<N>.c/.h --------------------------------------------------------------
    def network_h(self):
        c, up = self.ctx, self.sym.upper()
        L = ["/**", f"  * @file    {c.name}.h", "  * @brief   Sizes of the network's input and output buffers "
             "- AUTOGENERATED DO NOT MODIFY", "  */", f"#ifndef __LL_ATON_{up}_H", f"#define __LL_ATON_{up}_H", "",
             f"#define LL_ATON_{up}_IN_NUM        ({len(c.net.inputs)})"]
        for i, t in enumerate(c.net.inputs, 1):
            L += [f"#define LL_ATON_{up}_IN_{i}_ALIGNMENT  (8)", f"#define LL_ATON_{up}_IN_{i}_SIZE_BYTES ({t.nbytes})"]
        L.append(f"#define LL_ATON_{up}_OUT_NUM       ({len(c.net.outputs)})")
        for i, t in enumerate(c.net.outputs, 1):
            L += [f"#define LL_ATON_{up}_OUT_{i}_ALIGNMENT (8)",
                  f"#define LL_ATON_{up}_OUT_{i}_SIZE_BYTES ({t.nbytes})"]
        L += ["", f"#endif /* __LL_ATON_{up}_H */"]
        return "\n".join(L) + "\n"

    def stai_h(self):
        n = self.ctx.name
        return (f"/* ST-AI wrapper of network '{n}' (simulated) - AUTOGENERATED DO NOT MODIFY */\n"
                f"#ifndef STAI_{n.upper()}_H\n#define STAI_{n.upper()}_H\n\n#include \"ll_aton_NN_interface.h\"\n\n"
                f"const NN_Interface_TypeDef *stai_{n}_interface(void);\n\n#endif\n")

    def stai_c(self):
        n = self.ctx.name
        return (f"/* ST-AI wrapper of network '{n}' (simulated) - AUTOGENERATED DO NOT MODIFY */\n"
                f'#include "stai_{n}.h"\n#include "ll_aton_rt_user_api.h"\n\n'
                f"LL_ATON_DECLARE_NAMED_NN_INTERFACE({self.sym});\n\n"
                f"const NN_Interface_TypeDef *stai_{n}_interface(void)\n{{\n  return &NN_Interface_{self.sym};\n}}\n")

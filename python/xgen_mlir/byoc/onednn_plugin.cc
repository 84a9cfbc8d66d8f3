// xgen_mlir's oneDNN offload: an IREE executable plugin (loaded by the runtime with
// --executable_plugin=<this .so>) that resolves the imports xgen-byoc-offload puts in
// dispatches to oneDNN primitives.
//
// Why a plugin: IREE's llvm-cpu code calls any undefined function of a dispatch through the
// executable's import table, resolved at load time by the registered plugins. The import's
// name carries the whole operation (kind, compute type, shapes, strides, pads, post-ops), so
// the primitive is created once, when the module is loaded, and a module that asks for
// something this build cannot do fails to load (NOT_FOUND) instead of computing anything.
//
// Calling convention of every import (IREE's, with llvm.bareptr on the declaration): int
// fn(void* params, void* context, void* reserved), params pointing at the call's arguments
// packed as a struct: one data pointer per buffer (a static memref's aligned pointer, the
// binding's offset included), then the calling workgroup's id (an int64). Returns 0 on
// success.
//
// Threads: a name ending in _pP is an operation split into P parts along its output's outer
// rows (a conv's output rows at batch 1, else its images; a matmul's rows), _cP one split
// along its columns (a matmul's; a conv's output channels: always a dense share) (the
// compiler's choice: byoc/onednn.py, matmul_split and conv_split; a bf16 or s8 matmul
// share is computed into a per-thread dense buffer and copied into place), called
// from a dispatch of P workgroups: workgroup i runs part i as a single-threaded primitive on the
// IREE worker that runs it. IREE's workers are the only threads: no OpenMP team to wake for
// each primitive, none spinning beside IREE's next dispatch, none placed on a core an IREE
// worker is pinned to (ResNet-18 in bf16, every conv offloaded, 2 cores: 5.3-10.5 ms from
// run to run with the team, docs/byoc.md).
//
// Weights are constants of the module: they are reordered into the primitive's preferred
// (blocked) layout on the first call that sees a given weights pointer and kept with the
// import's context, which lives as long as the plugin (a loaded module's constants do not
// move). The interface types below are declared from IREE's documented plugin ABI
// (iree/hal/local/executable_plugin.h, version 0.1); only what this plugin uses.
//
// oneDNN versions: 3.x (pip's onednn-cpu-gomp, the default: its brgemm kernels cover AVX2 and
// AVX-512 convs that 2.x runs on its older JIT) and 2.x (Debian's libdnnl-dev). The few calls
// whose API changed between them go through the helpers under "API versions" below.

#include <cpuid.h>

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <vector>

#include <oneapi/dnnl/dnnl.hpp>

extern "C" {

// ---- IREE executable plugin ABI v0.1 (layout-compatible declarations) ----
typedef struct xgen_plugin_status_handle* xgen_plugin_status_t;  // 0 = OK, else a code
typedef struct {
  uint32_t version;
  const char* name;
  const char* description;
  uint32_t features;
  int32_t sanitizer;
  uint64_t reserved[8];
} xgen_plugin_header_t;
typedef struct {
  void* self;
  xgen_plugin_status_t (*ctl)(void* self, int command, const void* params, void** inout_ptr);
} xgen_plugin_allocator_t;
typedef struct {
  xgen_plugin_allocator_t host_allocator;
} xgen_plugin_environment_t;
typedef struct {
  const char* data;
  size_t size;
} xgen_plugin_string_view_t;
typedef struct {
  xgen_plugin_string_view_t key;
  xgen_plugin_string_view_t value;
} xgen_plugin_string_pair_t;
typedef struct {
  size_t count;
  const char* const* symbol_names;
  void** out_fn_ptrs;
  void** out_fn_contexts;
} xgen_plugin_resolve_params_t;
typedef struct {
  const xgen_plugin_header_t* header;
  xgen_plugin_status_t (*load)(const xgen_plugin_environment_t* environment, size_t param_count,
                               const xgen_plugin_string_pair_t* params, void** out_self);
  void (*unload)(void* self);
  xgen_plugin_status_t (*resolve)(void* self, const xgen_plugin_resolve_params_t* params,
                                  uint32_t* out_resolution);
} xgen_plugin_v0_t;
}

namespace {

constexpr uint32_t kPluginVersion = 1;  // IREE_HAL_EXECUTABLE_PLUGIN_VERSION_0_1
constexpr uintptr_t kStatusNotFound = 5;
constexpr uintptr_t kStatusInvalidArgument = 3;
constexpr uint32_t kResolutionMissingOptional = 1;

xgen_plugin_status_t status(uintptr_t code) { return (xgen_plugin_status_t)code; }

using dnnl::memory;

// ---- API versions: oneDNN 3 makes primitive descriptors directly (no op descriptor), drops
// the eltwise post-op's scale, and takes every zero point as a run-time argument ----
#if DNNL_VERSION_MAJOR >= 3
constexpr bool kConstantZeroPoints = false;
void append_eltwise(dnnl::post_ops* ops, dnnl::algorithm alg) { ops->append_eltwise(alg, 0, 0); }
#else
constexpr bool kConstantZeroPoints = true;
void append_eltwise(dnnl::post_ops* ops, dnnl::algorithm alg) {
  ops->append_eltwise(1.0f, alg, 0.0f, 0.0f);
}
#endif

// The types of an operation's user-side tensors: f32 activations, weights and output for
// f32/bf16 (bf16 converts on the way in), but int8 in and int32 out for s8 (an integer
// contraction's own types, as linalg's quantized ops have them), or for s8f int8 in and f32
// out: the int32 sums dequantized by per-column scales (an operand), then the bias and the
// post-ops, all in the primitive (its epilogue), or for s8q int8 out: the same, requantized
// (rounded to nearest even, plus the output's zero point, saturated). A bf16 operation's source,
// residual and output may be bf16 tensors instead (the compiler keeps the activations
// between two library operations in bf16): its type field is then "bf16t" and one letter
// for each, f (f32) or b (bf16), as in "bf16tbfb" (source and output bf16).
struct UserTypes {
  memory::data_type src, wei, dst, res;
};

// The compute type and user-side types a name's type field asks for.
std::pair<memory::data_type, UserTypes> compute_type(const std::string& name) {
  auto f32 = memory::data_type::f32, bf16 = memory::data_type::bf16;
  if (name == "f32") return {f32, {f32, f32, f32, f32}};
  if (name == "bf16") return {bf16, {f32, f32, f32, f32}};
  // the integer types: s8 (int8 source), or u8 (the same with a uint8 source: oneDNN then
  // needs no +128 compensation of an int8 one, which VNNI's u8 x s8 dot product makes it add);
  // then nothing (int32 sums), f (dequantized), q (requantized to int8) or qu (to uint8)
  if (name.size() >= 2 && (name[0] == 's' || name[0] == 'u') && name[1] == '8') {
    auto s8 = memory::data_type::s8, s32 = memory::data_type::s32;
    auto src = name[0] == 'u' ? memory::data_type::u8 : s8;
    const std::string out = name.substr(2);
    if (out.empty()) return {s8, {src, s8, s32, s32}};
    if (out == "f") return {s8, {src, s8, f32, f32}};
    if (out == "q") return {s8, {src, s8, s8, f32}};
    if (out == "qu") return {s8, {src, s8, memory::data_type::u8, f32}};  // requantized to uint8
    throw std::invalid_argument("compute type " + name);
  }
  auto letter = [&](char c) {
    if (c != 'f' && c != 'b') throw std::invalid_argument("compute type " + name);
    return c == 'b' ? bf16 : f32;
  };
  if (name.size() == 8 && name.rfind("bf16t", 0) == 0) {
    return {bf16, {letter(name[5]), f32, letter(name[7]), letter(name[6])}};
  }
  throw std::invalid_argument("compute type " + name);
}

// bf16 <-> f32 for the copies of a dense share (round to nearest even, as oneDNN's).
inline float load_as_f32(const char* p, memory::data_type t) {
  if (t == memory::data_type::f32) return *reinterpret_cast<const float*>(p);
  uint32_t bits = uint32_t(*reinterpret_cast<const uint16_t*>(p)) << 16;
  float out;
  std::memcpy(&out, &bits, sizeof(out));
  return out;
}
inline void store_from_f32(char* p, memory::data_type t, float v) {
  if (t == memory::data_type::f32) {
    *reinterpret_cast<float*>(p) = v;
    return;
  }
  uint32_t bits;
  std::memcpy(&bits, &v, sizeof(bits));
  if ((bits & 0x7fffffffu) > 0x7f800000u) {
    bits |= 0x00400000u;  // a quiet NaN stays one
  } else {
    bits += 0x7fffu + ((bits >> 16) & 1u);
  }
  *reinterpret_cast<uint16_t*>(p) = uint16_t(bits >> 16);
}

// The source zero point of an s8 operation (the weights' is 0), from a name's last field:
// "m128" is -128, "r" one given at run time (an operand after the weights), as oneDNN's
// attribute. Its semantics are linalg's quantized ops' (sum of (src - zp) * wei), padding
// included: a padded tap is a real zero, i.e. zp in the stored values (checked against a
// reference loop when this was written). Sets ``*runtime`` if the call passes it, else
// ``*value`` to the name's constant (which oneDNN 3 also takes at run time, from the op).
void set_src_zero_point(dnnl::primitive_attr* attr, const std::string& field, bool* runtime,
                        int32_t* value) {
  *runtime = field == "r";
  *value = *runtime ? 0 : field[0] == 'm' ? -std::stoi(field.substr(1)) : std::stoi(field);
  if (!*runtime && *value == 0) return;
#if DNNL_VERSION_MAJOR >= 3
  attr->set_zero_points_mask(DNNL_ARG_SRC, 0);
#else
  attr->set_zero_points(DNNL_ARG_SRC, 0, {*runtime ? DNNL_RUNTIME_S32_VAL : *value});
#endif
}

// An s8q name's zero-point field: the source's, 'z', the output's ("m128zm128"); others have
// the source's alone. Returns the source's part and sets ``*dst`` (0 where there is none).
std::string split_zero_points(const std::string& field, int32_t* dst, bool* has_dst) {
  size_t at = field.find('z');
  *has_dst = at != std::string::npos;
  if (!*has_dst) return field;
  std::string out = field.substr(at + 1);
  *dst = out[0] == 'm' ? -std::stoi(out.substr(1)) : std::stoi(out);
  return field.substr(0, at);
}

size_t element_bytes(memory::data_type t) {
  if (t == memory::data_type::s8 || t == memory::data_type::u8) return 1;
  return t == memory::data_type::bf16 ? 2 : 4;
}

// The type the primitive reads its source in: the compute type, but an integer operation's
// own source type (s8 or u8: no conversion between them).
memory::data_type source_type(memory::data_type ct, const UserTypes& user) {
  return ct == memory::data_type::s8 ? user.src : ct;
}

// Splits "a_b_c" at '_'.
std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  size_t start = 0;
  for (;;) {
    size_t at = s.find('_', start);
    out.push_back(s.substr(start, at - start));
    if (at == std::string::npos) return out;
    start = at + 1;
  }
}

// Engine and per-thread streams: one CPU engine per process.
dnnl::engine& cpu_engine() {
  static dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  return engine;
}

// Weights reordered into a primitive's layout, per user weights pointer and layout: the parts
// of one import whose primitives want the same layout share one copy. Each resolved import
// has its own (IREE resolves imports again for every executable it loads), so a copy never
// outlives the module whose constant it was made from.
struct WeightsCache {
  std::mutex mu;
  std::map<const void*, std::vector<memory>> copies;
};

// An offloaded operation: a primitive whose f32 activations may be converted to the compute
// type on the way in, and its weights reordered once per weights pointer.
struct Op {
  dnnl::primitive prim;
  // Scratchpads are the caller's (scratchpad_mode::user): oneDNN's default shares one
  // library scratchpad between primitives unless built with DNNL_ENABLE_CONCURRENT_EXEC, and
  // IREE runs independent dispatches at once (a transformer's Q, K and V projections): two
  // primitives on one scratchpad computed wrong numbers. Each calling thread has its own.
  memory::desc scratch_desc;
  memory::desc src_user, src_prim, wei_user, wei_prim, bias_desc, dst_desc;
  memory::desc res_desc;  // a residual: laid out like the (dense) output, in its own type
  // the types of the user's output (dst_ptr) and residual, and of the primitive's output
  // (a dense share's buffer); oneDNN 2's memory::desc does not say
  memory::data_type out_type = memory::data_type::f32, res_type = out_type, dst_type = out_type;
  bool has_bias = false;
  bool has_residual = false;  // a binary-add post-op reading a tensor shaped like dst
  // A column share computed into a dense buffer, then copied out at row length ``out_ld``:
  // oneDNN's bf16 and s8 kernels run their fast (AMX brgemm) code only on a dense output.
  // (A conv's share is its output channels: rows are its pixels, K its KH*KW*IC taps.)
  memory::dim out_ld = 0;  // 0: the primitive writes dst itself
  memory::dim share_rows = 0, share_cols = 0, share_k = 0;  // the dense share's sizes
  memory::data_type wei_type = memory::data_type::f32;  // the user's weights (f32 or s8)
  memory::desc wei_dense;  // the share's weights once copied dense (its share_k x share_cols)
  // A dense share's residual add (and the ReLU after it, ``relu_after_residual``) is done
  // while copying into place: oneDNN's binary post-op reads its tensor laid out as the
  // primitive's dense output, which the strided residual is not.
  bool residual_in_copy = false, relu_after_residual = false;
  bool runtime_zero_point = false;  // s8: the source's zero point is an operand (one int32)
  int32_t dst_zero_point = 0;  // s8q: the output's (its scale is folded into the scales)
  bool has_dst_zero_point = false;
  // s8f, s8q: the dequantization's scales, one f32 per output column (channel), an operand
  memory::desc scales_desc;
  bool has_scales = false;
  int32_t zero_point = 0;  // s8: else the name's (passed at run time to oneDNN 3)
  std::string impl;  // the implementation's name (jit:avx2, brgconv:avx2, ...)
  WeightsCache* weights_cache = nullptr;  // the import's (set when its parts are made)
  memory prepared_weights(const void* user);

  // The conversion of f32 activations to the compute type (bf16), made once.
  dnnl::reorder src_reorder;
  std::once_flag src_reorder_made;

  int run(const void* src_ptr, const void* wei_ptr, const void* bias_ptr, const void* res_ptr,
          const void* zp_ptr, const void* scales_ptr, void* dst_ptr) {
    dnnl::engine& eng = cpu_engine();
    // Per calling thread (IREE's workers): one stream, and each op's converted input, so
    // that a call allocates nothing and ops called from several threads never share one.
    thread_local dnnl::stream s(eng);
    thread_local std::map<const Op*, memory> converted;
    thread_local std::map<const Op*, memory> scratch;
    memory src(src_user, eng, const_cast<void*>(src_ptr));
    if (src_prim != src_user) {
      std::call_once(src_reorder_made, [&] {
        dnnl::primitive_attr attr;
        attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);  // (it needs none)
        dnnl::reorder::primitive_desc pd(eng, src_user, eng, src_prim, attr);
        if (pd.scratchpad_desc().get_size() != 0) throw std::runtime_error("reorder scratchpad");
        src_reorder = dnnl::reorder(pd);
      });
      // (the desc check: an op freed at unload and a new one made at the same address)
      auto found = converted.find(this);
      if (found == converted.end() || found->second.get_desc() != src_prim) {
        found = converted.insert_or_assign(this, memory(src_prim, eng)).first;
      }
      src_reorder.execute(s, src, found->second);
      src = found->second;
    }
    memory wei = prepared_weights(wei_ptr);
    thread_local std::map<const Op*, memory> dense;
    memory dst;
    if (out_ld != 0) {
      auto found = dense.find(this);
      if (found == dense.end() || found->second.get_desc() != dst_desc) {
        found = dense.insert_or_assign(this, memory(dst_desc, eng)).first;
      }
      dst = found->second;
    } else {
      dst = memory(dst_desc, eng, dst_ptr);
    }
    std::unordered_map<int, memory> args{
        {DNNL_ARG_SRC, src}, {DNNL_ARG_WEIGHTS, wei}, {DNNL_ARG_DST, dst}};
    if (has_bias) {
      args.emplace(DNNL_ARG_BIAS, memory(bias_desc, eng, const_cast<void*>(bias_ptr)));
    }
    if (runtime_zero_point || (!kConstantZeroPoints && zero_point != 0)) {
      memory::desc one({1}, memory::data_type::s32, memory::format_tag::x);
      const void* zp = runtime_zero_point ? zp_ptr : &zero_point;
      args.emplace(DNNL_ARG_ATTR_ZERO_POINTS | DNNL_ARG_SRC,
                   memory(one, eng, const_cast<void*>(zp)));
    }
#if DNNL_VERSION_MAJOR >= 3
    if (has_dst_zero_point) {
      memory::desc one({1}, memory::data_type::s32, memory::format_tag::x);
      args.emplace(DNNL_ARG_ATTR_ZERO_POINTS | DNNL_ARG_DST,
                   memory(one, eng, const_cast<int32_t*>(&dst_zero_point)));
    }
    if (has_scales) {
      args.emplace(DNNL_ARG_ATTR_SCALES | DNNL_ARG_WEIGHTS,
                   memory(scales_desc, eng, const_cast<void*>(scales_ptr)));
    }
#endif
    if (has_residual && !residual_in_copy) {
      args.emplace(DNNL_ARG_ATTR_MULTIPLE_POST_OP(0) | DNNL_ARG_SRC_1,
                   memory(res_desc, eng, const_cast<void*>(res_ptr)));
    }
    if (scratch_desc.get_size() != 0) {
      auto found = scratch.find(this);
      if (found == scratch.end() || found->second.get_desc() != scratch_desc) {
        found = scratch.insert_or_assign(this, memory(scratch_desc, eng)).first;
      }
      args.emplace(DNNL_ARG_SCRATCHPAD, found->second);
    }
    prim.execute(s, args);
    s.wait();
    const memory::data_type share_type = dst_type;
    const auto f32 = memory::data_type::f32;
    if (out_ld != 0 && residual_in_copy) {  // out = [relu](share (f32) + residual)
      const float* from = static_cast<const float*>(dst.get_data_handle());
      const memory::data_type rt = res_type;
      const size_t rb = element_bytes(rt), ob = element_bytes(out_type);
      const char* res = static_cast<const char*>(res_ptr);
      char* to = static_cast<char*>(dst_ptr);
      for (memory::dim r = 0; r < share_rows; ++r) {
        const float* a = from + r * share_cols;
        const char* b = res + r * out_ld * rb;
        char* o = to + r * out_ld * ob;
        if (rt == f32 && out_type == f32) {
          const float* bf = reinterpret_cast<const float*>(b);
          float* of = reinterpret_cast<float*>(o);
          if (relu_after_residual) {
            for (memory::dim c = 0; c < share_cols; ++c) of[c] = std::max(a[c] + bf[c], 0.0f);
          } else {
            for (memory::dim c = 0; c < share_cols; ++c) of[c] = a[c] + bf[c];
          }
          continue;
        }
        for (memory::dim c = 0; c < share_cols; ++c) {
          float v = a[c] + load_as_f32(b + c * rb, rt);
          if (relu_after_residual) v = std::max(v, 0.0f);
          store_from_f32(o + c * ob, out_type, v);
        }
      }
    } else if (out_ld != 0) {  // the dense share's rows into place, in the output's type
      const char* from = static_cast<const char*>(dst.get_data_handle());
      const size_t row = share_cols * element_bytes(share_type);
      const size_t ob = element_bytes(out_type);
      for (memory::dim r = 0; r < share_rows; ++r) {
        std::memcpy(static_cast<char*>(dst_ptr) + r * out_ld * ob, from + r * row, row);
      }
    }
    return 0;
  }
};

memory Op::prepared_weights(const void* user) {
  WeightsCache& cache = *weights_cache;
  std::lock_guard<std::mutex> lock(cache.mu);
  std::vector<memory>& copies = cache.copies[user];
  for (const memory& m : copies) {
    if (m.get_desc() == wei_prim) return m;
  }
  dnnl::engine& eng = cpu_engine();
  memory src(wei_user, eng, const_cast<void*>(user));
  memory::desc dense_desc;
  if (out_ld != 0) {
    // a dense share's weights are a strided view of the whole: copied dense first, in
    // bf16's f32 and in s8 alike (oneDNN 3.2 has no reorder from strided s8 into its AMX
    // layout); once per weights pointer, like the reorder
    const size_t bytes = wei_type == memory::data_type::s8 ? 1 : 4;
    const size_t row = share_cols * bytes;
    dense_desc = wei_dense;
    memory dense(dense_desc, eng);
    char* to = static_cast<char*>(dense.get_data_handle());
    for (memory::dim r = 0; r < share_k; ++r) {
      std::memcpy(to + r * row, static_cast<const char*>(user) + r * out_ld * bytes, row);
    }
    src = dense;
  }
  memory dst(wei_prim, eng);
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);  // not the shared one (see Op)
  dnnl::reorder::primitive_desc pd(eng, out_ld != 0 ? dense_desc : wei_user, eng, wei_prim, attr);
  std::unordered_map<int, memory> args{{DNNL_ARG_FROM, src}, {DNNL_ARG_TO, dst}};
  if (pd.scratchpad_desc().get_size() != 0) {
    args.emplace(DNNL_ARG_SCRATCHPAD, memory(pd.scratchpad_desc(), eng));
  }
  dnnl::stream s(eng);
  dnnl::reorder(pd).execute(s, args);
  s.wait();
  copies.push_back(dst);
  return dst;
}

// An s8f or s8q operation's dequantization: per-output-channel scales of the int32 sums, given at run
// time (dynamic quantization computes them from the source's range on each call). ``mask``:
// the weights' dimensions the scales vary along (a matmul's columns, a conv's output
// channels). oneDNN 2 scales its output instead (another attribute): not taken there.
bool set_weight_scales(dnnl::primitive_attr* attr, int mask, memory::dim count, Op* op) {
#if DNNL_VERSION_MAJOR >= 3
  attr->set_scales_mask(DNNL_ARG_WEIGHTS, mask);
  op->scales_desc = memory::desc({count}, memory::data_type::f32, memory::format_tag::a);
  op->has_scales = true;
  return true;
#else
  (void)attr, (void)mask, (void)count, (void)op;
  return false;
#endif
}

// The post-ops a name's <post> field asks for, after the primitive's sum and bias: none, relu,
// add (+ a tensor shaped like the output: a residual), addrelu (add, then relu), gelu
// (x * (1 + erf(x / sqrt 2)) / 2), gelut (GELU's tanh form). False: an unknown field.
bool post_ops(const std::string& post, const memory::desc& res, dnnl::post_ops* ops,
              bool* residual, bool residual_in_copy = false) {
  *residual = post == "add" || post == "addrelu";
  if (residual_in_copy && *residual) return true;  // both done while copying into place
  if (*residual) ops->append_binary(dnnl::algorithm::binary_add, res);
  if (post == "relu" || post == "addrelu") {
    append_eltwise(ops, dnnl::algorithm::eltwise_relu);
  } else if (post == "gelu") {
    append_eltwise(ops, dnnl::algorithm::eltwise_gelu_erf);
  } else if (post == "gelut") {
    append_eltwise(ops, dnnl::algorithm::eltwise_gelu_tanh);
  }
  return post == "none" || post == "relu" || post == "gelu" || post == "gelut" || *residual;
}

// The fields every import name starts with: <kind>_<type>_<post>_<bias>, and an s8 name's
// source zero point (after the sizes, before the parts).
struct Head {
  memory::data_type ct;
  UserTypes user;  // the types of its tensors as the caller passes them
  std::string post;
  bool bias;
  std::string zero_point;  // the integer types only (s8, s8f, s8q)
  std::string impl;  // the implementation family asked for ("": oneDNN's first choice)
};

// An integer operation's attributes: the source's zero point; for s8f and s8q the scales per
// output channel (``mask``: the weights' dimensions they vary along, ``count`` of them: a
// grouped conv's output channel is its group and its channel within the group, so both) and
// for s8q the output's zero point. False: not here.
bool set_integer_attrs(const Head& h, dnnl::primitive_attr* attr, int mask, memory::dim count,
                       Op* op) {
  std::string src = split_zero_points(h.zero_point, &op->dst_zero_point, &op->has_dst_zero_point);
  set_src_zero_point(attr, src, &op->runtime_zero_point, &op->zero_point);
  if (h.user.dst == memory::data_type::s32) return true;  // s8: the int32 sums
  if (!set_weight_scales(attr, mask, count, op)) return false;
  const bool int8_out = h.user.dst == memory::data_type::s8 || h.user.dst == memory::data_type::u8;
  if (op->has_dst_zero_point != int8_out) return false;
#if DNNL_VERSION_MAJOR >= 3
  if (op->has_dst_zero_point) attr->set_zero_points_mask(DNNL_ARG_DST, 0);
#endif
  return true;
}

// Moves ``pd`` to its first implementation whose name (an "x64:" prefix dropped) starts with
// ``family`` (jit, br: the brgemm-based ones; "" keeps oneDNN's own first choice), so a
// tuner can measure the library's alternatives (on AVX2, oneDNN 3's brgemm 1x1 and depthwise
// convs lose to its older JIT ones on some shapes and win on others). False: it has none.
template <typename PrimitiveDesc>
bool pick_impl(PrimitiveDesc* pd, const std::string& family) {
  if (family.empty()) return true;
  do {
    std::string name = pd->impl_info_str();
    if (name.rfind("x64:", 0) == 0) name = name.substr(4);
    if (name.rfind(family, 0) == 0) return true;
  } while (pd->next_impl());
  return false;
}

// "conv_<type>_<post>_<bias>_N_IH_IW_IC_OH_OW_OC_KH_KW_SH_SW_PT_PL_PB_PR_DH_DW_G[_ZP][_iF]_pP":
// an NHWC convolution with HWIO (HWCF) weights; <type> the compute type, <post> as post_ops()
// reads it, <bias> b (a per-channel f32 bias) or nb. f32 and bf16: f32 in and out. s8: int8
// source and weights, int32 out, no bias or post-op, the source's zero point ZP (a
// linalg.conv_2d_nhwc_hwcf_q with a weights zero point of 0). F: an implementation family
// (pick_impl). ``v``: the 18 sizes. ``oc_total``: the output channels of the whole conv when
// this is a share of them (v[6] of them, starting where the part's offsets say): its weights
// are copied dense and its output computed into a dense buffer, then copied into place.
std::unique_ptr<Op> make_conv(const Head& h, const std::vector<memory::dim>& v,
                              memory::dim oc_total = 0) {
  memory::dim n = v[0], ih = v[1], iw = v[2], ic = v[3], oh = v[4], ow = v[5], oc = v[6],
              kh = v[7], kw = v[8], sh = v[9], sw = v[10], pt = v[11], pl = v[12], pb = v[13],
              pr = v[14], dh = v[15], dw = v[16], g = v[17];
  using tag = memory::format_tag;
  auto f32 = memory::data_type::f32;
  memory::data_type ct = h.ct;
  const UserTypes& user = h.user;
  auto op = std::make_unique<Op>();
  op->src_user = memory::desc({n, ic, ih, iw}, user.src, tag::nhwc);
  op->src_prim = memory::desc({n, ic, ih, iw}, source_type(ct, user), tag::nhwc);
  op->out_type = user.dst;
  op->res_desc = memory::desc({n, oc, oh, ow}, user.res, tag::nhwc);
  memory::dims wdims = g == 1 ? memory::dims{oc, ic, kh, kw}
                              : memory::dims{g, oc / g, ic / g, kh, kw};
  op->wei_user = memory::desc(wdims, user.wei, g == 1 ? tag::hwio : tag::hwigo);
  memory::desc wei_any(wdims, ct, tag::any);
  op->has_bias = h.bias;
  op->bias_desc = memory::desc({oc}, f32, tag::a);
  const bool share = oc_total != 0 && oc_total != oc;
  if (share) {
    if (g != 1) return nullptr;  // (a grouped conv's channel shares are other groups)
    op->out_ld = oc_total;
    op->share_rows = n * oh * ow;
    op->share_cols = oc;
    op->share_k = kh * kw * ic;
    op->wei_type = user.wei;
    op->wei_dense = memory::desc(wdims, user.wei, tag::hwio);
    op->residual_in_copy = h.post == "add" || h.post == "addrelu";
    op->relu_after_residual = h.post == "addrelu";
  }
  // the output: the user's, or a dense share (in f32 where the residual is added while
  // copying it into place: rounded once, after the add)
  op->dst_type = op->residual_in_copy ? f32 : user.dst;
  op->res_type = user.res;
  op->dst_desc = memory::desc({n, oc, oh, ow}, op->dst_type, tag::nhwc);
  dnnl::post_ops ops;
  if (!post_ops(h.post, op->res_desc, &ops, &op->has_residual, op->residual_in_copy)) {
    return nullptr;
  }
  dnnl::primitive_attr attr;
  attr.set_post_ops(ops);
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  const int channel_mask = g == 1 ? 1 << 0 : (1 << 0) | (1 << 1);  // (g, oc / g, ...) if grouped
  if (ct == memory::data_type::s8 && !set_integer_attrs(h, &attr, channel_mask, oc, op.get())) {
    return nullptr;
  }
  const auto fwd = dnnl::prop_kind::forward_inference;
  const auto direct = dnnl::algorithm::convolution_direct;
  const memory::dims strides{sh, sw}, dilations{dh - 1, dw - 1}, pad_l{pt, pl}, pad_r{pb, pr};
#if DNNL_VERSION_MAJOR >= 3
  using conv_pd = dnnl::convolution_forward::primitive_desc;
  auto pd = h.bias ? conv_pd(cpu_engine(), fwd, direct, op->src_prim, wei_any, op->bias_desc,
                             op->dst_desc, strides, dilations, pad_l, pad_r, attr)
                   : conv_pd(cpu_engine(), fwd, direct, op->src_prim, wei_any, op->dst_desc,
                             strides, dilations, pad_l, pad_r, attr);
#else
  using conv_d = dnnl::convolution_forward::desc;
  auto d = h.bias ? conv_d(fwd, direct, op->src_prim, wei_any, op->bias_desc, op->dst_desc,
                           strides, dilations, pad_l, pad_r)
                  : conv_d(fwd, direct, op->src_prim, wei_any, op->dst_desc, strides, dilations,
                           pad_l, pad_r);
  dnnl::convolution_forward::primitive_desc pd(d, attr, cpu_engine());
#endif
  if (!pick_impl(&pd, h.impl)) return nullptr;
  op->impl = pd.impl_info_str();
  op->wei_prim = pd.weights_desc();
  op->scratch_desc = pd.scratchpad_desc();
  op->prim = dnnl::convolution_forward(pd);
  return op;
}

// "matmul_<type>_<post>_<bias>_M_K_N[_ZP][_iF]_pP": row-major [M,K] x constant [K,N] (+ bias
// [N]); f32 in and out, or for s8 as for conv (a linalg.quantized_matmul).
// ``ld``: the row length of the whole weights, output and residual when this is a part of
// a matmul split along its columns (else n).
std::unique_ptr<Op> make_matmul(const Head& h, memory::dim m, memory::dim k, memory::dim n,
                                memory::dim ld) {
  using tag = memory::format_tag;
  auto f32 = memory::data_type::f32;
  memory::data_type ct = h.ct;
  const UserTypes& user = h.user;
  auto op = std::make_unique<Op>();
  const memory::dims rows_of_ld{ld, 1};
  // f32 kernels write a column share in place; bf16 and s8 ones into a dense buffer (oneDNN
  // 3.2 on AMX runs an older, slower GEMM for a strided output)
  const bool dense_share = ld != n && ct != f32;
  op->src_user = memory::desc({m, k}, user.src, tag::ab);
  op->src_prim = memory::desc({m, k}, source_type(ct, user), tag::ab);
  op->dst_desc = dense_share ? memory::desc({m, n}, user.dst, tag::ab)
                             : memory::desc({m, n}, user.dst, rows_of_ld);
  op->out_type = op->dst_type = user.dst;
  op->res_type = user.res;
  op->res_desc = memory::desc({m, n}, user.res, rows_of_ld);
  op->wei_user = memory::desc({k, n}, user.wei, rows_of_ld);
  memory::desc wei_any({k, n}, ct, tag::any);
  op->has_bias = h.bias;
  op->bias_desc = memory::desc({1, n}, f32, tag::ab);
  dnnl::post_ops ops;
  if (!post_ops(h.post, op->res_desc, &ops, &op->has_residual)) return nullptr;
  if (dense_share) {
    if (op->has_residual) return nullptr;  // (the compiler fuses no residual into a matmul)
    op->out_ld = ld;
    op->share_rows = m;
    op->share_cols = n;
    op->share_k = k;
    op->wei_type = user.wei;
    op->wei_dense = memory::desc({k, n}, user.wei, tag::ab);
  }
  dnnl::primitive_attr attr;
  attr.set_post_ops(ops);
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  if (ct == memory::data_type::s8 && !set_integer_attrs(h, &attr, 1 << 1, n, op.get())) {
    return nullptr;
  }
#if DNNL_VERSION_MAJOR >= 3
  using mm_pd = dnnl::matmul::primitive_desc;
  auto pd = h.bias ? mm_pd(cpu_engine(), op->src_prim, wei_any, op->bias_desc, op->dst_desc, attr)
                   : mm_pd(cpu_engine(), op->src_prim, wei_any, op->dst_desc, attr);
#else
  auto d = h.bias ? dnnl::matmul::desc(op->src_prim, wei_any, op->bias_desc, op->dst_desc)
                  : dnnl::matmul::desc(op->src_prim, wei_any, op->dst_desc);
  dnnl::matmul::primitive_desc pd(d, attr, cpu_engine());
#endif
  if (!pick_impl(&pd, h.impl)) return nullptr;
  op->impl = pd.impl_info_str();
  op->wei_prim = pd.weights_desc();
  op->scratch_desc = pd.scratchpad_desc();
  op->prim = dnnl::matmul(pd);
  return op;
}

// One part of a split operation: its primitive and where its share starts in the source, the
// weights, the bias and the output (a residual is laid out like the output), in bytes.
struct Part {
  Op* op;
  size_t src_offset, dst_offset, wei_offset = 0, bias_offset = 0, res_offset = 0;
};

// An import: its parts (workgroup i runs part i) and the distinct primitives they use (the
// middle parts of a conv's rows are the same conv), with one weights cache.
struct Split {
  WeightsCache weights;
  std::map<std::vector<memory::dim>, std::unique_ptr<Op>> ops;  // by the part's sizes
  std::vector<Part> parts;
  bool whole = false;  // a name without _pP: one call with no workgroup id (older modules)

  // The primitive of a part of sizes ``key`` (made once), or null if oneDNN has none.
  Op* op_for(const std::vector<memory::dim>& key, const std::function<std::unique_ptr<Op>()>& make) {
    auto found = ops.find(key);
    if (found != ops.end()) return found->second.get();
    std::unique_ptr<Op> op = make();
    if (!op) return nullptr;
    op->weights_cache = &weights;
    return ops.emplace(key, std::move(op)).first->second.get();
  }
};


// Part i of P of ``total`` rows: [begin, end); sizes differ by at most one row.
std::pair<memory::dim, memory::dim> part_rows(memory::dim total, memory::dim i, memory::dim p) {
  return {total * i / p, total * (i + 1) / p};
}

// A conv in P parts: at batch 1 along its output rows (each part reads the input rows its
// window covers, its padding what of the original falls in it), else along its images.
bool split_conv(const Head& h, const std::vector<memory::dim>& v, memory::dim p, Split* split) {
  memory::dim n = v[0], ih = v[1], iw = v[2], ic = v[3], oh = v[4], ow = v[5], oc = v[6],
              kh = v[7], sh = v[9], pt = v[11], dh = v[15];
  const UserTypes& user = h.user;
  const size_t in_row = iw * ic * element_bytes(user.src);
  const size_t out_row = ow * oc * element_bytes(user.dst);
  const size_t res_row = ow * oc * element_bytes(user.res);
  if (p > (n == 1 ? oh : n)) return false;
  for (memory::dim i = 0; i < p; ++i) {
    std::vector<memory::dim> part = v;
    size_t src_offset, dst_offset, res_offset;
    if (n == 1) {
      auto [o0, o1] = part_rows(oh, i, p);
      memory::dim first = o0 * sh - pt, last = (o1 - 1) * sh - pt + (kh - 1) * dh;
      memory::dim i0 = std::max<memory::dim>(first, 0), i1 = std::min<memory::dim>(last + 1, ih);
      if (i1 <= i0) return false;  // a part that reads only padding
      part[1] = i1 - i0;
      part[4] = o1 - o0;
      part[11] = i0 - first;
      part[13] = last + 1 - i1;
      src_offset = i0 * in_row;
      dst_offset = o0 * out_row;
      res_offset = o0 * res_row;
    } else {
      auto [b0, b1] = part_rows(n, i, p);
      part[0] = b1 - b0;
      src_offset = b0 * ih * in_row;
      dst_offset = b0 * oh * out_row;
      res_offset = b0 * oh * res_row;
    }
    Op* op = split->op_for(part, [&] { return make_conv(h, part); });
    if (!op) return false;
    split->parts.push_back({op, src_offset, dst_offset, 0, 0, res_offset});
  }
  return true;
}

// A conv in P parts along its output channels (the columns of its GEMM view): each part reads
// all of the source and its share of the weights, as many channels as the others give or take
// one 16-channel block (a register of f32, an AMX tile's width). A grouped conv has none.
bool split_conv_channels(const Head& h, const std::vector<memory::dim>& v, memory::dim p,
                         Split* split) {
  const memory::dim oc = v[6];
  const UserTypes& user = h.user;
  const memory::dim unit = oc % 16 == 0 ? 16 : 1;
  if (v[17] != 1 || p > oc / unit) return false;
  for (memory::dim i = 0; i < p; ++i) {
    auto [b0, b1] = part_rows(oc / unit, i, p);
    memory::dim c0 = b0 * unit, c1 = b1 * unit;
    std::vector<memory::dim> part = v;
    part[6] = c1 - c0;
    Op* op = split->op_for(part, [&] { return make_conv(h, part, oc); });
    if (!op) return false;
    split->parts.push_back({op, 0, c0 * element_bytes(user.dst), c0 * element_bytes(user.wei),
                            c0 * sizeof(float), c0 * element_bytes(user.res)});
  }
  return true;
}

// A matmul in P parts along its rows, or along its columns (each part then reads all of the
// source, its share of the weights' columns, and writes its columns of the output).
bool split_matmul(const Head& h, memory::dim m, memory::dim k, memory::dim n, memory::dim p,
                  bool columns, Split* split) {
  const UserTypes& user = h.user;
  if (p > (columns ? n : m)) return false;
  for (memory::dim i = 0; i < p; ++i) {
    if (columns) {
      auto [n0, n1] = part_rows(n, i, p);
      memory::dim cols = n1 - n0;
      Op* op = split->op_for({-cols}, [&] { return make_matmul(h, m, k, cols, n); });
      if (!op) return false;
      split->parts.push_back({op, 0, n0 * element_bytes(user.dst), n0 * element_bytes(user.wei),
                              n0 * sizeof(float), n0 * element_bytes(user.res)});
      continue;
    }
    auto [m0, m1] = part_rows(m, i, p);
    memory::dim rows = m1 - m0;
    Op* op = split->op_for({rows}, [&] { return make_matmul(h, rows, k, n, n); });
    if (!op) return false;
    split->parts.push_back({op, m0 * k * element_bytes(user.src), m0 * n * element_bytes(user.dst),
                            0, 0, m0 * n * element_bytes(user.res)});
  }
  return true;
}

// Both oneDNN builds this plugin is made with (pip's and Debian's) run their primitives on GNU
// OpenMP; a primitive made and run where OpenMP's thread count is 1 runs on the calling thread
// alone. The symbols are weak: with another threading runtime there is nothing to set (and no
// team to avoid).
extern "C" void omp_set_num_threads(int) __attribute__((weak));
extern "C" int omp_get_max_threads(void) __attribute__((weak));

// Sets OpenMP's thread count of the calling thread to 1 while it lives (primitives made under
// it plan for one thread).
struct OneThread {
  int before = 0;
  OneThread() {
    if (omp_get_max_threads && omp_set_num_threads) {
      before = omp_get_max_threads();
      omp_set_num_threads(1);
    }
  }
  ~OneThread() {
    if (before > 0) omp_set_num_threads(before);
  }
};

// Parameters of every import: the pointers of src, weights, [bias,] [residual,] [zero
// point,] [scales,] dst, in that order (the bias where the name says b, the residual where
// the post-ops add one, the source's zero point where an s8 name ends in r, the scales of an
// s8f or s8q one), then the workgroup's id.
int call_part(void* params, void* context, void* /*reserved*/) {
  Split* split = static_cast<Split*>(context);
  void* const* p = static_cast<void* const*>(params);
  // IREE's workers are threads OpenMP never started: their thread count stays 1 for good.
  thread_local bool one_thread = (omp_set_num_threads ? omp_set_num_threads(1) : void(), true);
  (void)one_thread;
  try {
    const Op* shape = split->parts[0].op;
    size_t i = 2;
    const char* bias = shape->has_bias ? static_cast<const char*>(p[i++]) : nullptr;
    const char* residual = shape->has_residual ? static_cast<const char*>(p[i++]) : nullptr;
    const void* zp = shape->runtime_zero_point ? p[i++] : nullptr;
    const char* scales = shape->has_scales ? static_cast<const char*>(p[i++]) : nullptr;
    char* dst = static_cast<char*>(p[i]);
    int64_t id = 0;
    if (!split->whole) std::memcpy(&id, &p[i + 1], sizeof(id));
    if (id < 0 || static_cast<size_t>(id) >= split->parts.size()) {
      std::fprintf(stderr, "xgen_mlir oneDNN plugin: workgroup %lld of %zu parts\n",
                   (long long)id, split->parts.size());
      return 1;
    }
    const Part& part = split->parts[id];
    const char* src = static_cast<const char*>(p[0]) + part.src_offset;
    const char* wei = static_cast<const char*>(p[1]) + part.wei_offset;
    // (scales are per output column, as the bias: a column share starts where its bias does)
    return part.op->run(src, wei, bias ? bias + part.bias_offset : nullptr,
                        residual ? residual + part.res_offset : nullptr, zp,
                        scales ? scales + part.bias_offset : nullptr, dst + part.dst_offset);
  } catch (const dnnl::error& e) {
    std::fprintf(stderr, "xgen_mlir oneDNN plugin: %s (status %d)\n", e.what(), (int)e.status);
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "xgen_mlir oneDNN plugin: %s\n", e.what());
    return 1;
  }
}

const char kPrefix[] = "xgen_dnnl_";

// Whether this CPU has an exact int8 dot product: AVX512-VNNI (CPUID 7.0 ECX bit 11),
// AVX-VNNI (7.1 EAX bit 4) or AMX-INT8 (7.0 EDX bit 25). Without one, oneDNN's u8 x s8
// kernels use vpmaddubsw, which saturates pairs of products at int16: the sums are wrong for
// large activations (seen on an AVX2-only AMD EPYC). The plugin refuses s8 there, so a module
// compiled where the CPU had VNNI fails to load on one without, instead of computing wrongly.
bool exact_int8_dot() {
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (!__get_cpuid_count(7, 0, &a, &b, &c, &d)) return false;
  if ((c >> 11) & 1u || (d >> 25) & 1u) return true;
  unsigned a1 = 0, b1 = 0, c1 = 0, d1 = 0;
  return a >= 1 && __get_cpuid_count(7, 1, &a1, &b1, &c1, &d1) && ((a1 >> 4) & 1u);
}

// Builds the operation an import name describes,
// "<kind>_<type>_<post>_<bias>_<sizes>[_ZP][_iF]_pP"; null if it cannot, with a message
// unless `quiet` (the compiler's question, whose answer it reports itself; a module loaded on
// the wrong CPU gets the message).
Split* make_op(const char* symbol, bool quiet = false) {
  std::string name(symbol);
  if (name.rfind(kPrefix, 0) != 0) return nullptr;
  std::vector<std::string> f = split(name.substr(sizeof(kPrefix) - 1));
  if (f.size() > 1 && (f[1].rfind("s8", 0) == 0 || f[1].rfind("u8", 0) == 0) &&
      !exact_int8_dot()) {
    if (quiet) return nullptr;
    std::fprintf(stderr,
                 "xgen_mlir oneDNN plugin: cannot build %s: an s8 primitive needs a CPU with "
                 "VNNI (AVX512-VNNI, AVX-VNNI or AMX-INT8); this one has none, and oneDNN's "
                 "int8 kernels without it saturate at int16\n",
                 symbol);
    return nullptr;
  }
  try {
    if (f.size() < 5) return nullptr;
    // A name without parts is a module compiled before operations were split: one
    // workgroup, no id passed; it runs whole, on the calling worker alone.
    const char along = f.back().size() < 2 ? 0 : f.back()[0];
    const bool whole = along != 'p' && along != 'c';
    memory::dim parts = whole ? 1 : std::stoll(f.back().substr(1));
    if (!whole) f.pop_back();
    auto [ct, user] = compute_type(f[1]);
    Head h{ct, user, f[2], f[3] == "b", "", ""};
    if (f.back().size() > 1 && f.back()[0] == 'i' && !std::isdigit(f.back()[1])) {
      h.impl = f.back().substr(1);  // "_i<family>": an implementation family
      f.pop_back();
    }
    const bool s8 = h.ct == memory::data_type::s8;
    if (s8) {
      // s8: an int32 accumulator, nothing after; s8f and s8q: dequantized (and requantized),
      // then bias and post-ops (no residual: the compiler fuses none into an int8 operation)
      const bool sums = h.user.dst == memory::data_type::s32;
      if (sums && (h.bias || h.post != "none")) return nullptr;
      if (h.post == "add" || h.post == "addrelu") return nullptr;
      h.zero_point = f.back();
      f.pop_back();
    }
    std::vector<memory::dim> sizes;
    for (size_t i = 4; i < f.size(); ++i) sizes.push_back(std::stoll(f[i]));
    if (parts < 1) return nullptr;
    OneThread one_thread;  // each part runs on one IREE worker
    auto made = std::make_unique<Split>();
    made->whole = whole;
    bool ok = false;
    if (f[0] == "conv" && sizes.size() == 18) {
      ok = along == 'c' ? split_conv_channels(h, sizes, parts, made.get())
                        : split_conv(h, sizes, parts, made.get());
    }
    if (f[0] == "matmul" && sizes.size() == 3) {
      ok = split_matmul(h, sizes[0], sizes[1], sizes[2], parts, along == 'c', made.get());
    }
    return ok ? made.release() : nullptr;
  } catch (const std::exception& e) {
    if (!quiet) {
      std::fprintf(stderr, "xgen_mlir oneDNN plugin: cannot build %s: %s\n", symbol, e.what());
    }
  }
  return nullptr;
}

struct Plugin {
  std::mutex mu;
  std::vector<std::unique_ptr<Split>> ops;
};

xgen_plugin_status_t plugin_load(const xgen_plugin_environment_t*, size_t,
                                 const xgen_plugin_string_pair_t*, void** out_self) {
  *out_self = new Plugin();
  return status(0);
}

void plugin_unload(void* self) { delete static_cast<Plugin*>(self); }

xgen_plugin_status_t plugin_resolve(void* self, const xgen_plugin_resolve_params_t* params,
                                    uint32_t* out_resolution) {
  Plugin* plugin = static_cast<Plugin*>(self);
  *out_resolution = 0;
  bool missing = false;
  for (size_t i = 0; i < params->count; ++i) {
    if (params->out_fn_ptrs[i]) continue;
    const char* symbol = params->symbol_names[i];
    bool optional = symbol[0] == '?';
    if (optional) ++symbol;
    Split* op =
        std::strncmp(symbol, kPrefix, sizeof(kPrefix) - 1) == 0 ? make_op(symbol) : nullptr;
    if (op) {
      std::lock_guard<std::mutex> lock(plugin->mu);
      plugin->ops.emplace_back(op);
      params->out_fn_ptrs[i] = reinterpret_cast<void*>(&call_part);
      params->out_fn_contexts[i] = op;
    } else if (optional) {
      *out_resolution |= kResolutionMissingOptional;
    } else if (std::strncmp(symbol, kPrefix, sizeof(kPrefix) - 1) == 0) {
      std::fprintf(stderr, "xgen_mlir oneDNN plugin: no primitive for import %s\n", symbol);
      missing = true;
    } else {
      missing = true;  // another plugin's import
    }
  }
  return missing ? status(kStatusNotFound) : status(0);
}

}  // namespace

extern "C" __attribute__((visibility("default"))) const xgen_plugin_header_t**
iree_hal_executable_plugin_query(uint32_t max_version, void* /*reserved*/) {
  static const xgen_plugin_header_t header = {
      kPluginVersion, "xgen_onednn", "xgen_mlir BYOC offload to oneDNN", 0, 0, {0}};
  static const xgen_plugin_v0_t plugin = {&header, plugin_load, plugin_unload, plugin_resolve};
  (void)kStatusInvalidArgument;
  return max_version >= kPluginVersion ? (const xgen_plugin_header_t**)&plugin : nullptr;
}

// For xgen_mlir's compile-time checks (ctypes): 1 if this build can make the import `symbol`.
extern "C" __attribute__((visibility("default"))) int xgen_dnnl_can_build(const char* symbol) {
  std::unique_ptr<Split> op(make_op(symbol));
  return op ? 1 : 0;
}

// The name of the implementation oneDNN runs import `symbol` with ("" if none): the tuner
// measures the other families only where they would change it.
extern "C" __attribute__((visibility("default"))) const char* xgen_dnnl_impl(
    const char* symbol) {
  thread_local std::string name;
  std::unique_ptr<Split> op(make_op(symbol, /*quiet=*/true));
  name = op ? op->parts[0].op->impl : "";
  return name.c_str();
}

// The compiler's question: the same answer, no message (it reports its own decision).
extern "C" __attribute__((visibility("default"))) int xgen_dnnl_can_build_quietly(
    const char* symbol) {
  std::unique_ptr<Split> op(make_op(symbol, /*quiet=*/true));
  return op ? 1 : 0;
}

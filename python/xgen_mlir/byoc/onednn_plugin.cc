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
// binding's offset included). Returns 0 on success.
//
// Weights are constants of the module: they are reordered into the primitive's preferred
// (blocked) layout on the first call that sees a given weights pointer and kept with the
// import's context, which lives as long as the plugin (a loaded module's constants do not
// move). The interface types below are declared from IREE's documented plugin ABI
// (iree/hal/local/executable_plugin.h, version 0.1); only what this plugin uses.

#include <cpuid.h>
#include <pthread.h>
#include <sched.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
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

memory::data_type compute_type(const std::string& name) {
  if (name == "f32") return memory::data_type::f32;
  if (name == "bf16") return memory::data_type::bf16;
  if (name == "s8") return memory::data_type::s8;
  throw std::invalid_argument("compute type " + name);
}

// The types of an operation's user-side tensors for compute type ``ct``: f32 activations,
// weights and output for f32/bf16 (bf16 converts on the way in), but int8 in and int32 out for
// s8: an integer contraction's own types, as linalg's quantized ops have them.
struct UserTypes {
  memory::data_type src, wei, dst;
};
UserTypes user_types(memory::data_type ct) {
  auto f32 = memory::data_type::f32;
  if (ct == memory::data_type::s8) return {ct, ct, memory::data_type::s32};
  return {f32, f32, f32};
}

// The source zero point of an s8 operation (the weights' is 0), from a name's last field:
// "m128" is -128, "r" one given at run time (an operand after the weights), as oneDNN's
// attribute. Its semantics are linalg's quantized ops' (sum of (src - zp) * wei), padding
// included: a padded tap is a real zero, i.e. zp in the stored values (checked against a
// reference loop when this was written). Returns whether the call passes it.
bool set_src_zero_point(dnnl::primitive_attr* attr, const std::string& field) {
  if (field == "r") {
    attr->set_zero_points(DNNL_ARG_SRC, 0, {DNNL_RUNTIME_S32_VAL});
    return true;
  }
  int32_t zp = field[0] == 'm' ? -std::stoi(field.substr(1)) : std::stoi(field);
  if (zp != 0) attr->set_zero_points(DNNL_ARG_SRC, 0, {zp});
  return false;
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
  bool has_bias = false;
  bool has_residual = false;  // a binary-add post-op reading a tensor shaped like dst
  bool runtime_zero_point = false;  // s8: the source's zero point is an operand (one int32)
  std::mutex mu;
  std::map<const void*, memory> weights;  // user weights pointer -> reordered copy

  memory prepared_weights(const void* user) {
    std::lock_guard<std::mutex> lock(mu);
    auto found = weights.find(user);
    if (found != weights.end()) return found->second;
    dnnl::engine& eng = cpu_engine();
    memory src(wei_user, eng, const_cast<void*>(user));
    memory dst(wei_prim, eng);
    dnnl::primitive_attr attr;
    attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);  // not the shared one (see Op)
    dnnl::reorder::primitive_desc pd(eng, wei_user, eng, wei_prim, attr);
    std::unordered_map<int, memory> args{{DNNL_ARG_FROM, src}, {DNNL_ARG_TO, dst}};
    if (pd.scratchpad_desc().get_size() != 0) {
      args.emplace(DNNL_ARG_SCRATCHPAD, memory(pd.scratchpad_desc(), eng));
    }
    dnnl::stream s(eng);
    dnnl::reorder(pd).execute(s, args);
    s.wait();
    weights.emplace(user, dst);
    return dst;
  }

  // The conversion of f32 activations to the compute type (bf16), made once.
  dnnl::reorder src_reorder;
  std::once_flag src_reorder_made;

  int run(const void* src_ptr, const void* wei_ptr, const void* bias_ptr, const void* res_ptr,
          const void* zp_ptr, void* dst_ptr) {
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
    memory dst(dst_desc, eng, dst_ptr);
    std::unordered_map<int, memory> args{
        {DNNL_ARG_SRC, src}, {DNNL_ARG_WEIGHTS, wei}, {DNNL_ARG_DST, dst}};
    if (has_bias) {
      args.emplace(DNNL_ARG_BIAS, memory(bias_desc, eng, const_cast<void*>(bias_ptr)));
    }
    if (runtime_zero_point) {
      memory::desc one({1}, memory::data_type::s32, memory::format_tag::x);
      args.emplace(DNNL_ARG_ATTR_ZERO_POINTS | DNNL_ARG_SRC,
                   memory(one, eng, const_cast<void*>(zp_ptr)));
    }
    if (has_residual) {
      args.emplace(DNNL_ARG_ATTR_MULTIPLE_POST_OP(0) | DNNL_ARG_SRC_1,
                   memory(dst_desc, eng, const_cast<void*>(res_ptr)));
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
    return 0;
  }
};

// The post-ops a name's <post> field asks for, after the primitive's sum and bias: none, relu,
// add (+ a tensor shaped like the output: a residual), addrelu (add, then relu). False: an
// unknown field.
bool post_ops(const std::string& post, const memory::desc& dst, dnnl::post_ops* ops,
              bool* residual) {
  *residual = post == "add" || post == "addrelu";
  if (*residual) ops->append_binary(dnnl::algorithm::binary_add, dst);
  if (post == "relu" || post == "addrelu") {
    ops->append_eltwise(1.0f, dnnl::algorithm::eltwise_relu, 0.0f, 0.0f);
  }
  return post == "none" || post == "relu" || *residual;
}

// "conv_<type>_<post>_<bias>_N_IH_IW_IC_OH_OW_OC_KH_KW_SH_SW_PT_PL_PB_PR_DH_DW_G[_ZP]": an
// NHWC convolution with HWIO (HWCF) weights; <type> the compute type, <post> as post_ops()
// reads it, <bias> b (a per-channel f32 bias) or nb. f32 and bf16: f32 in and out. s8: int8
// source and weights, int32 out, no bias or post-op, the source's zero point ZP last (a
// linalg.conv_2d_nhwc_hwcf_q with a weights zero point of 0).
Op* make_conv(const std::vector<std::string>& f) {
  memory::data_type ct = compute_type(f[1]);
  const bool s8 = ct == memory::data_type::s8;
  if (f.size() != 4 + 18 + (s8 ? 1 : 0)) return nullptr;
  const std::string post = f[2];
  const bool bias = f[3] == "b";
  if (s8 && (bias || post != "none")) return nullptr;  // an int32 accumulator, nothing after
  std::vector<memory::dim> v;
  for (size_t i = 4; i < 4 + 18; ++i) v.push_back(std::stoll(f[i]));
  memory::dim n = v[0], ih = v[1], iw = v[2], ic = v[3], oh = v[4], ow = v[5], oc = v[6],
              kh = v[7], kw = v[8], sh = v[9], sw = v[10], pt = v[11], pl = v[12], pb = v[13],
              pr = v[14], dh = v[15], dw = v[16], g = v[17];
  using tag = memory::format_tag;
  auto f32 = memory::data_type::f32;
  UserTypes user = user_types(ct);
  auto op = std::make_unique<Op>();
  op->src_user = memory::desc({n, ic, ih, iw}, user.src, tag::nhwc);
  op->src_prim = memory::desc({n, ic, ih, iw}, ct, tag::nhwc);
  op->dst_desc = memory::desc({n, oc, oh, ow}, user.dst, tag::nhwc);
  memory::dims wdims = g == 1 ? memory::dims{oc, ic, kh, kw}
                              : memory::dims{g, oc / g, ic / g, kh, kw};
  op->wei_user = memory::desc(wdims, user.wei, g == 1 ? tag::hwio : tag::hwigo);
  memory::desc wei_any(wdims, ct, tag::any);
  op->has_bias = bias;
  op->bias_desc = memory::desc({oc}, f32, tag::a);
  dnnl::post_ops ops;
  if (!post_ops(post, op->dst_desc, &ops, &op->has_residual)) return nullptr;
  dnnl::primitive_attr attr;
  attr.set_post_ops(ops);
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  if (s8) op->runtime_zero_point = set_src_zero_point(&attr, f.back());
  auto d = bias ? dnnl::convolution_forward::desc(
                      dnnl::prop_kind::forward_inference, dnnl::algorithm::convolution_direct,
                      op->src_prim, wei_any, op->bias_desc, op->dst_desc, {sh, sw},
                      {dh - 1, dw - 1}, {pt, pl}, {pb, pr})
                : dnnl::convolution_forward::desc(
                      dnnl::prop_kind::forward_inference, dnnl::algorithm::convolution_direct,
                      op->src_prim, wei_any, op->dst_desc, {sh, sw}, {dh - 1, dw - 1},
                      {pt, pl}, {pb, pr});
  dnnl::convolution_forward::primitive_desc pd(d, attr, cpu_engine());
  op->wei_prim = pd.weights_desc();
  op->scratch_desc = pd.scratchpad_desc();
  op->prim = dnnl::convolution_forward(pd);
  return op.release();
}

// "matmul_<type>_<post>_<bias>_M_K_N[_ZP]": row-major [M,K] x constant [K,N] (+ bias [N]);
// f32 in and out, or for s8 as for conv (a linalg.quantized_matmul).
Op* make_matmul(const std::vector<std::string>& f) {
  memory::data_type ct = compute_type(f[1]);
  const bool s8 = ct == memory::data_type::s8;
  if (f.size() != 4 + 3 + (s8 ? 1 : 0)) return nullptr;
  const std::string post = f[2];
  const bool bias = f[3] == "b";
  if (s8 && (bias || post != "none")) return nullptr;  // an int32 accumulator, nothing after
  memory::dim m = std::stoll(f[4]), k = std::stoll(f[5]), n = std::stoll(f[6]);
  using tag = memory::format_tag;
  auto f32 = memory::data_type::f32;
  UserTypes user = user_types(ct);
  auto op = std::make_unique<Op>();
  op->src_user = memory::desc({m, k}, user.src, tag::ab);
  op->src_prim = memory::desc({m, k}, ct, tag::ab);
  op->dst_desc = memory::desc({m, n}, user.dst, tag::ab);
  op->wei_user = memory::desc({k, n}, user.wei, tag::ab);
  memory::desc wei_any({k, n}, ct, tag::any);
  op->has_bias = bias;
  op->bias_desc = memory::desc({1, n}, f32, tag::ab);
  dnnl::post_ops ops;
  if (!post_ops(post, op->dst_desc, &ops, &op->has_residual)) return nullptr;
  dnnl::primitive_attr attr;
  attr.set_post_ops(ops);
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  if (s8) op->runtime_zero_point = set_src_zero_point(&attr, f.back());
  auto d = bias ? dnnl::matmul::desc(op->src_prim, wei_any, op->bias_desc, op->dst_desc)
                : dnnl::matmul::desc(op->src_prim, wei_any, op->dst_desc);
  dnnl::matmul::primitive_desc pd(d, attr, cpu_engine());
  op->wei_prim = pd.weights_desc();
  op->scratch_desc = pd.scratchpad_desc();
  op->prim = dnnl::matmul(pd);
  return op.release();
}

// Parameters of every import: the pointers of src, weights, [bias,] [residual,] [zero
// point,] dst, in that order (the bias where the name says b, the residual where the post-ops
// add one, the source's zero point where an s8 name ends in r).
// The CPUs the process may run on, read when the plugin loads (on the thread that creates
// IREE's device, before IREE's workers pin themselves).
cpu_set_t g_process_cpus;
bool g_have_process_cpus = false;

// Runs ``fn`` with the calling thread allowed on every CPU of the process. IREE pins each of
// its workers to one core, and OpenMP threads inherit the affinity of the thread that first
// enters a parallel region: a primitive called from a pinned worker would run all its threads
// on that worker's one core (measured: ResNet-18's convs no faster on 16 cores than on 2).
template <typename Fn>
int with_process_cpus(Fn fn) {
  cpu_set_t mine;
  pthread_t self = pthread_self();
  bool widen = g_have_process_cpus &&
               pthread_getaffinity_np(self, sizeof(mine), &mine) == 0 &&
               !CPU_EQUAL(&mine, &g_process_cpus) &&
               pthread_setaffinity_np(self, sizeof(g_process_cpus), &g_process_cpus) == 0;
  int rc = fn();
  if (widen) pthread_setaffinity_np(self, sizeof(mine), &mine);
  return rc;
}

// One primitive runs at a time. Each one already spreads over every CPU of the process (its
// OpenMP team), and IREE runs independent dispatches at once (a detector's parallel heads):
// two primitives called together became two OpenMP teams on the same cores, whose barriers
// then wait for preempted threads (measured on YOLOv8n, AVX2 host: the same conv 1.1 ms
// alone, 1.5-3.0 ms beside another). A worker that finds the library busy sleeps here.
std::mutex g_one_call;

int call_op(void* params, void* context, void* /*reserved*/) {
  Op* op = static_cast<Op*>(context);
  void* const* p = static_cast<void* const*>(params);
  try {
    std::lock_guard<std::mutex> one_at_a_time(g_one_call);
    return with_process_cpus([&] {
      // src, weights, [bias,] [residual,] [zero point,] dst
      size_t i = 2;
      const void* bias = op->has_bias ? p[i++] : nullptr;
      const void* residual = op->has_residual ? p[i++] : nullptr;
      const void* zp = op->runtime_zero_point ? p[i++] : nullptr;
      return op->run(p[0], p[1], bias, residual, zp, p[i]);
    });
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

// Builds the operation an import name describes; null (with a message) if it cannot.
Op* make_op(const char* symbol) {
  std::string name(symbol);
  if (name.rfind(kPrefix, 0) != 0) return nullptr;
  std::vector<std::string> f = split(name.substr(sizeof(kPrefix) - 1));
  if (f.size() > 1 && f[1] == "s8" && !exact_int8_dot()) {
    std::fprintf(stderr,
                 "xgen_mlir oneDNN plugin: cannot build %s: an s8 primitive needs a CPU with "
                 "VNNI (AVX512-VNNI, AVX-VNNI or AMX-INT8); this one has none, and oneDNN's "
                 "int8 kernels without it saturate at int16\n",
                 symbol);
    return nullptr;
  }
  try {
    if (f[0] == "conv") return make_conv(f);
    if (f[0] == "matmul") return make_matmul(f);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "xgen_mlir oneDNN plugin: cannot build %s: %s\n", symbol, e.what());
  }
  return nullptr;
}

struct Plugin {
  std::mutex mu;
  std::vector<std::unique_ptr<Op>> ops;
};

xgen_plugin_status_t plugin_load(const xgen_plugin_environment_t*, size_t,
                                 const xgen_plugin_string_pair_t*, void** out_self) {
  if (!g_have_process_cpus) {
    g_have_process_cpus = sched_getaffinity(0, sizeof(g_process_cpus), &g_process_cpus) == 0;
  }
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
    Op* op = std::strncmp(symbol, kPrefix, sizeof(kPrefix) - 1) == 0 ? make_op(symbol) : nullptr;
    if (op) {
      std::lock_guard<std::mutex> lock(plugin->mu);
      plugin->ops.emplace_back(op);
      params->out_fn_ptrs[i] = reinterpret_cast<void*>(&call_op);
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
  std::unique_ptr<Op> op(make_op(symbol));
  return op ? 1 : 0;
}

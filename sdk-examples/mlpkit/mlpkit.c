/* mlpkit: the worked example of the library author's guide. Every shapeml
 * call's status is mapped to an mlpkit_code and a message; every shapeml
 * object has one owner (comments say who). */
#define _GNU_SOURCE /* dladdr */
#include "mlpkit.h"

#include <dlfcn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mlpkit_memory.h"
#include "shapeml.h"

struct mlpkit {
  shapeml_memory* memory;    /* owned: mlpkit's own resource (host) */
  const void* memory_state;  /* borrowed from `memory` */
  shapeml_memory* device;    /* owned: device memory for a GPU model, else NULL */
  shapeml_module* module;    /* owned */
  shapeml_entry* entry;      /* borrowed from `module` */
  DLDevice where;            /* where the model's tensors live */
  shapeml_tensor* weights[4]; /* owned: w1, b1, w2, b2 (on `where`) */
};

static mlpkit_code fail(char* message, size_t size, mlpkit_code code, const char* fmt, ...) {
  if (message && size) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(message, size, fmt, ap);
    va_end(ap);
  }
  return code;
}

/* shapeml's status -> mlpkit's code and message; frees the status. */
static mlpkit_code from_status(shapeml_status* st, const char* what, char* message, size_t size) {
  mlpkit_code code;
  switch (shapeml_status_get_code(st)) {
    case SHAPEML_STATUS_INVALID_ARGUMENT:
    case SHAPEML_STATUS_FAILED_PRECONDITION: code = MLPKIT_ERR_ARGUMENT; break;
    case SHAPEML_STATUS_NOT_FOUND: code = MLPKIT_ERR_SHAPE; break;
    case SHAPEML_STATUS_IO_ERROR:
    case SHAPEML_STATUS_INCOMPATIBLE_MODULE: code = MLPKIT_ERR_MODEL; break;
    case SHAPEML_STATUS_RESOURCE_EXHAUSTED: code = MLPKIT_ERR_MEMORY; break;
    case SHAPEML_STATUS_UNAVAILABLE:
    case SHAPEML_STATUS_UNIMPLEMENTED: code = MLPKIT_ERR_UNAVAILABLE; break;
    default: code = MLPKIT_ERR_INTERNAL; break;
  }
  fail(message, size, code, "%s: %s (%s)", what, shapeml_status_get_message(st),
       shapeml_status_code_name(shapeml_status_get_code(st)));
  shapeml_status_free(st);
  return code;
}

const char* mlpkit_code_name(int code) {
  static const char* names[] = {"OK", "ERR_ARGUMENT", "ERR_SHAPE", "ERR_MODEL", "ERR_MEMORY", "ERR_UNAVAILABLE", "ERR_VERSION", "ERR_INTERNAL"};
  return code >= 0 && code < (int)(sizeof names / sizeof names[0]) ? names[code] : "UNKNOWN";
}

const char* mlpkit_shapeml_version(void) { return shapeml_version(); }

/* <directory of libmlpkit.so>/mlpkit/mlp_model.so */
static char* default_model_path(void) {
  Dl_info info;
  if (!dladdr((void*)&default_model_path, &info) || !info.dli_fname) return NULL;
  const char* slash = strrchr(info.dli_fname, '/');
  size_t dir = slash ? (size_t)(slash - info.dli_fname) : 1;
  char* path = malloc(dir + sizeof "/mlpkit/mlp_model.so");
  if (!path) return NULL;
  memcpy(path, slash ? info.dli_fname : ".", dir);
  strcpy(path + dir, "/mlpkit/mlp_model.so");
  return path;
}

/* A shapeml tensor that views a caller's DLTensor without copying (read-only:
 * shapeml never writes it). The caller keeps the DLTensor alive for the call. */
static shapeml_status* view(const DLTensor* t, shapeml_tensor** out) {
  if (t->dtype.code != kDLFloat || t->dtype.bits != 32 || t->dtype.lanes != 1)
    return shapeml_status_create(SHAPEML_STATUS_INVALID_ARGUMENT, "expected float32");
  shapeml_tensor* host = NULL;
  shapeml_status* st = shapeml_tensor_wrap(SHAPEML_DTYPE_F32, (size_t)t->ndim, t->shape, t->strides,
                                           (char*)t->data + t->byte_offset, NULL, NULL, SHAPEML_TENSOR_READ_ONLY, &host);
  if (st) return st;
  *out = host;
  return NULL;
}

static int is_cpu(const DLTensor* t) { return t->device.device_type == kDLCPU; }

mlpkit_code mlpkit_create(const mlpkit_options* options, const DLTensor* w1, const DLTensor* b1, const DLTensor* w2,
                          const DLTensor* b2, mlpkit** out, char* message, size_t message_size) {
  if (!out || !w1 || !b1 || !w2 || !b2) return fail(message, message_size, MLPKIT_ERR_ARGUMENT, "mlpkit_create: NULL argument");
  *out = NULL;
  mlpkit_options opts = MLPKIT_OPTIONS_INIT;
  if (options) {
    if (options->struct_size < sizeof(size_t)) return fail(message, message_size, MLPKIT_ERR_ARGUMENT, "mlpkit_create: bad struct_size");
    memcpy(&opts, options, options->struct_size < sizeof opts ? options->struct_size : sizeof opts);
  }
  /* Versioning: the header we were compiled with against the library we run with. */
  shapeml_capabilities caps = SHAPEML_CAPABILITIES_INIT;
  shapeml_status* st = shapeml_get_capabilities(&caps);
  if (st) return from_status(st, "shapeml_get_capabilities", message, message_size);
  if (caps.abi_major != SHAPEML_VERSION_MAJOR || caps.abi_minor < 3)
    return fail(message, message_size, MLPKIT_ERR_VERSION, "mlpkit needs shapeml %d.3 or newer, found %s", SHAPEML_VERSION_MAJOR,
                shapeml_version());

  mlpkit* m = calloc(1, sizeof *m);
  if (!m) return fail(message, message_size, MLPKIT_ERR_MEMORY, "mlpkit_create: out of memory");
  mlpkit_code code = MLPKIT_OK;
  char* default_path = opts.model_path ? NULL : default_model_path();
  const char* path = opts.model_path ? opts.model_path : default_path;

  if ((st = mlpkit_memory_create(opts.memory_budget, &m->memory, &m->memory_state))) {
    code = from_status(st, "mlpkit memory", message, message_size);
    goto out;
  }
  shapeml_module_options mo = SHAPEML_MODULE_OPTIONS_INIT;
  mo.memory = m->memory; /* outputs come from mlpkit's resource (the module retains it) */
  if ((st = shapeml_module_load(path ? path : "mlp_model.so", &mo, &m->module))) {
    code = from_status(st, "loading the model", message, message_size);
    if (code == MLPKIT_ERR_SHAPE || code == MLPKIT_ERR_ARGUMENT) code = MLPKIT_ERR_MODEL; /* no file, not a module */
    goto out;
  }
  /* The model's one entry: introspect instead of trusting the file. */
  if ((st = shapeml_module_get_entry_at(m->module, 0, &m->entry))) {
    code = from_status(st, "the model's entry", message, message_size);
    goto out;
  }
  if (shapeml_entry_param_count(m->entry) != 5 || shapeml_entry_result_count(m->entry) != 1 ||
      shapeml_entry_shape_variable_count(m->entry) != 4) {
    code = fail(message, message_size, MLPKIT_ERR_MODEL, "%s: entry %s is not an MLP (x w1 b1 w2 b2 -> y, dims B S D F)", path,
                shapeml_entry_name(m->entry));
    goto out;
  }
  shapeml_tensor_info info = SHAPEML_TENSOR_INFO_INIT;
  if ((st = shapeml_entry_get_tensor_info(m->entry, SHAPEML_IO_PARAM, 1, &info))) {
    code = from_status(st, "the model's signature", message, message_size);
    goto out;
  }
  m->where.device_type = (DLDeviceType)info.device_type;
  m->where.device_id = info.device_id;
  if (m->where.device_type == kDLCUDA) {
    /* A GPU model: weights live on the device, in a stream-ordered pool. */
    if ((st = shapeml_memory_create_cuda_async(m->where.device_id, UINT64_MAX, &m->device))) {
      code = from_status(st, "the model's GPU", message, message_size);
      goto out;
    }
  }
  const DLTensor* w[4] = {w1, b1, w2, b2};
  for (int i = 0; i < 4; ++i) {
    if (!is_cpu(w[i])) {
      code = fail(message, message_size, MLPKIT_ERR_ARGUMENT, "weight %d is not on the CPU", i);
      goto out;
    }
    shapeml_tensor* borrowed = NULL;
    if ((st = view(w[i], &borrowed))) {
      code = from_status(st, "a weight", message, message_size);
      goto out;
    }
    /* A copy we own: the caller's buffers may go away after create. */
    if (m->device)
      st = shapeml_tensor_copy_to_device(borrowed, m->device, NULL, &m->weights[i]);
    else
      st = shapeml_tensor_create_copy(m->memory, SHAPEML_DTYPE_F32, shapeml_tensor_rank(borrowed), shapeml_tensor_shape(borrowed),
                                      shapeml_tensor_data(borrowed), shapeml_tensor_byte_size(borrowed), &m->weights[i]);
    shapeml_tensor_release(borrowed);
    if (st) {
      code = from_status(st, "copying a weight", message, message_size);
      goto out;
    }
  }
  if (w1->ndim != 2 || b1->ndim != 1 || w2->ndim != 2 || b2->ndim != 1 || w1->shape[1] != b1->shape[0] ||
      w2->shape[0] != w1->shape[1] || w2->shape[1] != w1->shape[0] || b2->shape[0] != w1->shape[0]) {
    code = fail(message, message_size, MLPKIT_ERR_ARGUMENT, "weights must be w1 (D, F), b1 (F), w2 (F, D), b2 (D)");
    goto out;
  }
out:
  free(default_path);
  if (code != MLPKIT_OK) {
    mlpkit_destroy(m);
    return code;
  }
  *out = m;
  return MLPKIT_OK;
}

mlpkit_code mlpkit_run(mlpkit* m, const DLTensor* x, DLManagedTensorVersioned** y, char* message, size_t message_size) {
  if (!m || !x || !y) return fail(message, message_size, MLPKIT_ERR_ARGUMENT, "mlpkit_run: NULL argument");
  *y = NULL;
  shapeml_tensor* input = NULL;
  shapeml_status* st = NULL;
  if (is_cpu(x)) {
    shapeml_tensor* host = NULL;
    if ((st = view(x, &host))) return from_status(st, "mlpkit_run: x", message, message_size);
    if (m->device) { /* a GPU model: copy the input over */
      st = shapeml_tensor_copy_to_device(host, m->device, NULL, &input);
      shapeml_tensor_release(host);
      if (st) return from_status(st, "mlpkit_run: copying x to the GPU", message, message_size);
    } else {
      input = host;
    }
  } else {
    return fail(message, message_size, MLPKIT_ERR_ARGUMENT, "mlpkit_run: x must be on the CPU (it is on device type %d)",
                (int)x->device.device_type);
  }
  shapeml_tensor* inputs[5] = {input, m->weights[0], m->weights[1], m->weights[2], m->weights[3]};
  shapeml_tensor* result = NULL;
  shapeml_call_options co = SHAPEML_CALL_OPTIONS_INIT;
  co.memory = m->device ? m->device : m->memory;
  st = shapeml_entry_call(m->entry, inputs, 5, &result, 1, &co);
  shapeml_tensor_release(input);
  if (st) return from_status(st, "mlpkit_run", message, message_size);
  if (m->device) { /* the call is enqueued on the default stream: finish it */
    if ((st = shapeml_device_synchronize(m->where.device_id, NULL))) {
      shapeml_tensor_release(result);
      return from_status(st, "mlpkit_run: synchronizing", message, message_size);
    }
  }
  /* Hand the result out as DLPack: the managed tensor keeps it alive. */
  st = shapeml_tensor_export_dlpack_versioned(result, y);
  shapeml_tensor_release(result); /* our reference; the export holds its own */
  if (st) return from_status(st, "mlpkit_run: export", message, message_size);
  return MLPKIT_OK;
}

size_t mlpkit_shapes(const mlpkit* m, int64_t (*bindings)[4], size_t capacity) {
  if (!m) return 0;
  size_t n = shapeml_entry_aot_specialization_count(m->entry);
  for (size_t i = 0; i < n && i < capacity; ++i) {
    shapeml_status* st = shapeml_entry_get_aot_specialization(m->entry, i, bindings[i], 4);
    if (st) { /* cannot happen for a 4-variable entry; keep the contract anyway */
      shapeml_status_free(st);
      return i;
    }
  }
  return n;
}

mlpkit_code mlpkit_get_memory_stats(const mlpkit* m, mlpkit_memory_stats* out) {
  if (!m || !out) return MLPKIT_ERR_ARGUMENT;
  mlpkit_memory_read(m->memory_state, out);
  return MLPKIT_OK;
}

void mlpkit_destroy(mlpkit* m) {
  if (!m) return;
  for (int i = 0; i < 4; ++i) shapeml_tensor_release(m->weights[i]);
  shapeml_module_release(m->module); /* the entry is borrowed from it: gone too */
  shapeml_memory_release(m->device);
  shapeml_memory_release(m->memory); /* destroy() runs when the last tensor from it dies */
  free(m);
}

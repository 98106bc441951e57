/* Guide, step 9: what a language binding does -- dlopen the library, resolve
 * one symbol, check the version once, call through the table.
 *   cc dlopen.c -I/usr/include -ldl -o dlopen && ./dlopen libshapeml_runtime.so.0 */
#include <dlfcn.h>
#include <stdio.h>

#include "shapeml.h"

int main(int argc, char** argv) {
  const char* path = argc > 1 ? argv[1] : "libshapeml.so.0";
  void* h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    printf("dlopen: %s\n", dlerror());
    return 1;
  }
  const shapeml_api* (*get_api)(uint32_t) = (const shapeml_api* (*)(uint32_t))dlsym(h, "shapeml_get_api");
  const shapeml_api* api = get_api ? get_api(SHAPEML_VERSION_MAJOR) : NULL;
  if (!api) {
    printf("%s: no shapeml ABI %d\n", path, SHAPEML_VERSION_MAJOR);
    return 1;
  }
  /* A member newer than the library is absent: check before use. */
  if (api->abi_minor < 3 || !SHAPEML_API_HAS(api, entry_call)) {
    printf("%s is too old (0.%u)\n", path, api->abi_minor);
    return 1;
  }
  printf("%s: shapeml %s (ABI %u.%u), compiler %s\n", path, api->version(), api->abi_major, api->abi_minor,
         api->compiler ? "yes" : "no (runtime only: load AOT modules)");
  shapeml_status* st = api->status_create(SHAPEML_STATUS_NOT_FOUND, "example");
  printf("status through the table: %s\n", api->status_code_name(api->status_get_code(st)));
  api->status_free(st);
  return 0;
}

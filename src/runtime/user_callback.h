// Calls into the host program's callbacks (a C memory resource's vtable, a
// tensor's deleter, a logging adaptor's callback). They are C function
// pointers, but a C++ host may pass one that throws; an exception must not
// unwind through shapeml (many of these calls are inside noexcept functions
// and destructors, where it would terminate the process). `call_user`
// returns false when the callback threw; the caller then reports it where it
// can (a failed allocation names it) and otherwise goes on.
#pragma once
#include <utility>

namespace shapeml::runtime {

template <class F> bool call_user(F&& f) noexcept {
  try {
    std::forward<F>(f)();
    return true;
  } catch (...) {
    return false;
  }
}

}  // namespace shapeml::runtime

# shapeml_kernel_headers(DIR): writes DIR/kernel_headers.inc, the text of the
# headers a generated kernel includes (lower/gpu/generate_kernels.cpp), as
# `{"name", R"(text)"},` lines, so that NVRTC gets them in memory and needs no
# include path; the configure step re-runs when a header changes. Used by the
# top-level project and by tests/cuda's standalone build.
function(shapeml_kernel_headers dir)
  set(_src ${CMAKE_CURRENT_FUNCTION_LIST_DIR}/../..)  # src/
  set(_text "")
  foreach(_h cuda/executor/ops.h cuda/executor/numerics.cuh)
    file(READ ${_src}/${_h} _body)
    string(APPEND _text "{\"${_h}\", R\"shapeml_header(${_body})shapeml_header\"},\n")
    set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${_src}/${_h})
  endforeach()
  file(WRITE ${dir}/kernel_headers.inc.new "${_text}")
  configure_file(${dir}/kernel_headers.inc.new ${dir}/kernel_headers.inc COPYONLY)  # touched only when it changes
endfunction()

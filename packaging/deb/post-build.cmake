# CPACK_POST_BUILD_SCRIPTS (packaging/deb/cpack.cmake): two fixes of what
# CPack's DEB generator writes, which it has no switch for. Each generated
# .deb is unpacked, fixed and built again (dpkg-deb --root-owner-group):
#   1. CPack writes a postinst and a postrm that only run `ldconfig` for every
#      package with a library in /usr/lib. The packages carry the
#      `activate-noawait ldconfig` trigger, which is what Debian's policy asks
#      for (lintian: maintscript-calls-ldconfig), and a postrm keeps a removed
#      package in dpkg's `rc` state until it is purged: exactly those two
#      scripts are dropped.
#   2. Depends merges our hand-written entries with dpkg-shlibdeps' output, so
#      a package can be listed twice (`libllvm19 (>= 1:19.1.7), ...,
#      libllvm19`): an unversioned entry is dropped where the same package is
#      also listed with a version.
foreach(deb IN LISTS CPACK_PACKAGE_FILES)
  if(NOT deb MATCHES "\\.deb$")
    continue()
  endif()
  set(dir "${deb}.unpacked")
  file(REMOVE_RECURSE "${dir}")
  execute_process(COMMAND dpkg-deb -R "${deb}" "${dir}" RESULT_VARIABLE rc ERROR_VARIABLE err)
  if(rc)
    message(FATAL_ERROR "dpkg-deb -R ${deb}: ${err}")
  endif()
  set(changed FALSE)
  foreach(script postinst:configure postrm:remove)
    string(REPLACE ":" ";" parts "${script}")
    list(GET parts 0 name)
    list(GET parts 1 when)
    set(f "${dir}/DEBIAN/${name}")
    if(EXISTS "${f}")
      file(READ "${f}" text)
      if(text STREQUAL "#!/bin/sh\n\nset -e\n\nif [ \"$1\" = \"${when}\" ]; then\n\tldconfig\nfi\n")
        file(REMOVE "${f}")
        set(changed TRUE)
      endif()
    endif()
  endforeach()
  if(changed)
    file(STRINGS "${dir}/DEBIAN/triggers" triggers REGEX "ldconfig")
    if(NOT triggers)
      message(FATAL_ERROR "${deb}: dropping its ldconfig scripts needs the ldconfig trigger (packaging/deb/triggers)")
    endif()
  endif()
  # 2. Depends without a package listed twice.
  file(READ "${dir}/DEBIAN/control" control)
  if(control MATCHES "\nDepends: ([^\n]*)")
    set(depends_line "${CMAKE_MATCH_1}")
    string(REPLACE ", " ";" items "${depends_line}")
    set(kept)
    foreach(item IN LISTS items)
      if(NOT item MATCHES "[ (|]")  # an unversioned single package name
        set(versioned FALSE)
        foreach(other IN LISTS items)
          string(FIND "${other}" "${item} (" at)
          if(at EQUAL 0)
            set(versioned TRUE)
          endif()
        endforeach()
        if(versioned)
          continue()
        endif()
      endif()
      list(APPEND kept "${item}")
    endforeach()
    list(JOIN kept ", " fixed)
    if(NOT fixed STREQUAL depends_line)
      string(REPLACE "\nDepends: ${depends_line}" "\nDepends: ${fixed}" control "${control}")
      file(WRITE "${dir}/DEBIAN/control" "${control}")
      set(changed TRUE)
    endif()
  endif()
  if(changed)
    execute_process(COMMAND dpkg-deb --root-owner-group -Zxz -b "${dir}" "${deb}" RESULT_VARIABLE rc OUTPUT_QUIET ERROR_VARIABLE err)
    if(rc)
      message(FATAL_ERROR "dpkg-deb -b ${deb}: ${err}")
    endif()
  endif()
  file(REMOVE_RECURSE "${dir}")
endforeach()

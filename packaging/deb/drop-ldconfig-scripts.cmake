# CPACK_POST_BUILD_SCRIPTS (packaging/deb/cpack.cmake): CPack's DEB generator
# writes a postinst and a postrm that only run `ldconfig` for every package
# with a library in /usr/lib, and offers no switch to leave them out. The
# packages carry the `activate-noawait ldconfig` trigger, which is what
# Debian's policy asks for (lintian: maintscript-calls-ldconfig), and a
# postrm keeps a removed package in dpkg's `rc` state until it is purged.
# So each generated .deb is unpacked, those two scripts are dropped when they
# are exactly CPack's ldconfig scripts, and the package is built again.
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
    execute_process(COMMAND dpkg-deb --root-owner-group -Zxz -b "${dir}" "${deb}" RESULT_VARIABLE rc OUTPUT_QUIET ERROR_VARIABLE err)
    if(rc)
      message(FATAL_ERROR "dpkg-deb -b ${deb}: ${err}")
    endif()
  endif()
  file(REMOVE_RECURSE "${dir}")
endforeach()

# The documentation package, shapeml-doc (issue 26 item 3): what a library
# author reads, installed where Debian users look for it,
# /usr/share/doc/shapeml-doc:
#   guide/      the library author's guide and its example programs
#   spec/       the language specification
#   errors.md   the error index (every diagnostic code, wrong and fixed)
#   design/     the design notes, with the measurements behind them
#   html/       the C ABI reference (Doxygen over include/), when doxygen is
#               installed (scripts/install-deps.sh installs it)
#   examples/   the example programs (transformer block, MLP, StoryLM-0)
set(SHAPEML_DOC_DIR ${CMAKE_INSTALL_DATADIR}/doc/shapeml-doc)
install(DIRECTORY ${PROJECT_SOURCE_DIR}/docs/guide ${PROJECT_SOURCE_DIR}/docs/spec ${PROJECT_SOURCE_DIR}/docs/design
        DESTINATION ${SHAPEML_DOC_DIR} COMPONENT doc)
install(FILES ${PROJECT_SOURCE_DIR}/docs/errors.md ${PROJECT_SOURCE_DIR}/README.md DESTINATION ${SHAPEML_DOC_DIR} COMPONENT doc)
install(DIRECTORY ${PROJECT_SOURCE_DIR}/examples/ DESTINATION ${SHAPEML_DOC_DIR}/examples COMPONENT doc
        FILES_MATCHING PATTERN "*.sml" PATTERN "*.py" PATTERN "*.md" PATTERN "__pycache__" EXCLUDE)

find_program(SHAPEML_DOXYGEN doxygen)
if(SHAPEML_DOXYGEN)
  # The same Doxyfile as the `doxygen` test (warnings are errors there), into
  # the build tree; rebuilt when a public header changes.
  set(_html ${PROJECT_BINARY_DIR}/doc-html)
  file(GLOB _public_headers ${PROJECT_SOURCE_DIR}/include/*.h)
  add_custom_command(OUTPUT ${_html}/html/index.html
                     COMMAND sh -c "(cat '${PROJECT_SOURCE_DIR}/docs/api/Doxyfile'; echo 'OUTPUT_DIRECTORY=${_html}') | '${SHAPEML_DOXYGEN}' -"
                     DEPENDS ${_public_headers} ${PROJECT_SOURCE_DIR}/docs/api/Doxyfile
                     WORKING_DIRECTORY ${PROJECT_SOURCE_DIR}
                     COMMENT "Doxygen HTML of the C ABI (shapeml-doc)"
                     VERBATIM)
  add_custom_target(shapeml_doc_html ALL DEPENDS ${_html}/html/index.html)
  install(DIRECTORY ${_html}/html DESTINATION ${SHAPEML_DOC_DIR} COMPONENT doc)
endif()

# Op, attribute, type and pass documentation generated from ODS. The build
# regenerates it; `ninja moecomm-doc` copies it into docs/generated/ and the
# `docs-up-to-date` test fails when the committed copy is stale.
set(MOECOMM_GENERATED_DOCS MoECommDialect.md MoECommPasses.md MoECommConversionPasses.md)
add_custom_target(moecomm-doc-gen ALL DEPENDS MoECommDialectDocGen MoECommPassesDocGen
  MoECommConversionPassesDocGen)

set(copies)
foreach(doc ${MOECOMM_GENERATED_DOCS})
  list(APPEND copies COMMAND ${CMAKE_COMMAND} -E copy_if_different
       ${MOECOMM_BINARY_DIR}/docs/moecomm/${doc} ${MOECOMM_SOURCE_DIR}/docs/generated/${doc})
endforeach()
add_custom_target(moecomm-doc ${copies} DEPENDS moecomm-doc-gen
  COMMENT "Copying the ODS-generated docs into docs/generated/")

if(MOECOMM_ENABLE_TESTS)
  foreach(doc ${MOECOMM_GENERATED_DOCS})
    add_test(NAME docs-up-to-date-${doc}
      COMMAND ${CMAKE_COMMAND} -E compare_files
        ${MOECOMM_BINARY_DIR}/docs/moecomm/${doc} ${MOECOMM_SOURCE_DIR}/docs/generated/${doc})
  endforeach()
endif()

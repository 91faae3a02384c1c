# tsum_embed(<target> <namespace::function> <files>...)
# Builds a static library <target> defining `std::span<const tsum::EmbeddedFile> <namespace::function>()`
# that returns the files' contents, compiled in. Regenerated whenever a listed file changes.
function(tsum_embed target function)
  set(out ${CMAKE_CURRENT_BINARY_DIR}/${target}.cpp)
  # The file list travels '|'-separated: a ';' would split the shell command between two files.
  string(REPLACE ";" "|" files "${ARGN}")
  add_custom_command(
    OUTPUT ${out}
    COMMAND ${CMAKE_COMMAND} -DOUT=${out} -DFUNCTION=${function} "-DFILES=${files}"
            -P ${PROJECT_SOURCE_DIR}/cmake/EmbedGen.cmake
    DEPENDS ${ARGN} ${PROJECT_SOURCE_DIR}/cmake/EmbedGen.cmake
    COMMENT "Embedding ${target}"
    VERBATIM)
  add_library(${target} STATIC ${out})
  target_link_libraries(${target} PUBLIC tsum_common)
endfunction()

# Writes OUTPUT, a header naming the commit the tree was built from, for
# `llmpack --version` and bench's build_commit / build_number (llama-bench's
# fields). Run at every build (apps/llmpack/CMakeLists.txt); the file is
# rewritten only when its text changes, so a rebuild of the same commit
# recompiles nothing. A tree with uncommitted changes to tracked files gets
# "-dirty" after the hash, so a measurement is not credited to a commit it
# did not come from; outside a git checkout the commit is "unknown".
# The checkout must be llmpack's own: a copy inside another project's
# repository would otherwise name that project's commit.
execute_process(COMMAND git -C "${SOURCE_DIR}" rev-parse --show-toplevel
                OUTPUT_VARIABLE top RESULT_VARIABLE top_rc OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
get_filename_component(source_real "${SOURCE_DIR}" REALPATH)
if(top_rc EQUAL 0)
  get_filename_component(top "${top}" REALPATH)
endif()
execute_process(COMMAND git -C "${SOURCE_DIR}" rev-parse --short=7 HEAD
                OUTPUT_VARIABLE commit RESULT_VARIABLE commit_rc OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
execute_process(COMMAND git -C "${SOURCE_DIR}" rev-list --count HEAD
                OUTPUT_VARIABLE number RESULT_VARIABLE number_rc OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
execute_process(COMMAND git -C "${SOURCE_DIR}" status --porcelain --untracked-files=no
                OUTPUT_VARIABLE changes RESULT_VARIABLE status_rc OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
if(NOT top_rc EQUAL 0 OR NOT top STREQUAL source_real OR NOT commit_rc EQUAL 0 OR commit STREQUAL "")
  set(commit "unknown")
elseif(status_rc EQUAL 0 AND NOT changes STREQUAL "")
  string(APPEND commit "-dirty")
endif()
if(commit STREQUAL "unknown" OR NOT number_rc EQUAL 0 OR NOT number MATCHES "^[0-9]+$")
  set(number 0)
endif()
set(text "// Written by cmake/build_info.cmake at build time.\n#pragma once\n")
string(APPEND text "#define LLMPACK_BUILD_COMMIT \"${commit}\"\n#define LLMPACK_BUILD_NUMBER ${number}\n")
set(old "")
if(EXISTS "${OUTPUT}")
  file(READ "${OUTPUT}" old)
endif()
if(NOT old STREQUAL text)
  file(WRITE "${OUTPUT}" "${text}")
endif()

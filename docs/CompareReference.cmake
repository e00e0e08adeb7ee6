# SPDX-License-Identifier: Apache-2.0
# `cmake -DGENERATED=<built .md> -DREFERENCE=<docs/reference/.md> -P CompareReference.cmake`:
# fails when the checked-in reference differs from what the build generates
# (a .td changed without `make docs`).
execute_process(COMMAND ${CMAKE_COMMAND} -E compare_files --ignore-eol ${GENERATED} ${REFERENCE}
                RESULT_VARIABLE different)
if(different)
  message(FATAL_ERROR "${REFERENCE} is stale: it differs from ${GENERATED}, generated from the "
                      ".td sources. Run `make docs` and commit the result.")
endif()

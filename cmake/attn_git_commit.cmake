# Writes OUT, a header defining ATTN_GIT_COMMIT: the commit SOURCE_DIR's checkout is at
# (12 hex digits, "-dirty" when tracked files differ from it), or "unknown" without git.
# Run at every build (app/CMakeLists.txt) and rewritten only when the text changes, so
# `attn --version` names the commit that was built and nothing recompiles needlessly.
execute_process(COMMAND git -C "${SOURCE_DIR}" rev-parse --short=12 HEAD
                OUTPUT_VARIABLE commit OUTPUT_STRIP_TRAILING_WHITESPACE
                RESULT_VARIABLE rc ERROR_QUIET)
if(NOT rc EQUAL 0 OR commit STREQUAL "")
    set(commit "unknown")
else()
    execute_process(COMMAND git -C "${SOURCE_DIR}" status --porcelain --untracked-files=no
                    OUTPUT_VARIABLE changes RESULT_VARIABLE rc ERROR_QUIET)
    if(rc EQUAL 0 AND NOT changes STREQUAL "")
        string(APPEND commit "-dirty")
    endif()
endif()
set(text "#define ATTN_GIT_COMMIT \"${commit}\"\n")
set(old "")
if(EXISTS "${OUT}")
    file(READ "${OUT}" old)
endif()
if(NOT old STREQUAL text)
    file(WRITE "${OUT}" "${text}")
endif()

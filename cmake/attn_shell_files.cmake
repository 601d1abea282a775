# Writes the shell completions and the man page of ATTN (the built binary) into OUT_DIR:
# attn.bash, _attn (zsh), attn.fish and attn.1, each from `attn --completions SHELL` or
# `attn --man`, i.e. from the CLI11 definitions themselves (lib/src/cli/shell_files.cpp).
foreach(pair "bash;attn.bash" "zsh;_attn" "fish;attn.fish" "man;attn.1")
    list(GET pair 0 what)
    list(GET pair 1 file)
    if(what STREQUAL "man")
        set(args --man)
    else()
        set(args --completions ${what})
    endif()
    execute_process(COMMAND "${ATTN}" ${args} OUTPUT_FILE "${OUT_DIR}/${file}"
                    RESULT_VARIABLE rc)
    if(NOT rc EQUAL 0)
        message(FATAL_ERROR "attn ${args} failed (${rc})")
    endif()
endforeach()

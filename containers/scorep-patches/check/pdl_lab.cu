// The lab of 8.4-cupti-overlap-kept.patch: kernels that end inside an earlier kernel of their
// own stream. Each pair is a primary kernel that allows its dependants to start at once
// (cudaTriggerProgrammaticLaunchCompletion) and then spins on the device clock, and a secondary
// kernel launched after it on the same stream as a programmatic dependent launch
// (cudaLaunchAttributeProgrammaticStreamSerialization) that does not wait for the primary
// (no cudaGridDependencySynchronize): it runs, and ends, while the primary still spins.
// Each kernel writes its start and end on the device clock (%globaltimer), so the lab can say in
// how many pairs the secondary ended first, independently of any tracer. Needs sm_90 or newer.
//   nvcc -arch=sm_90 -shared -Xcompiler -fPIC -o libpdl_lab.so pdl_lab.cu
#include <cuda_runtime.h>

__device__ static unsigned long long clock_ns() {
    unsigned long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}

__global__ void pdl_primary(unsigned long long spin_ns, unsigned long long* times) {
    cudaTriggerProgrammaticLaunchCompletion();
    unsigned long long t0 = clock_ns(), t = t0;
    while (t - t0 < spin_ns) t = clock_ns();
    if (threadIdx.x == 0) { times[0] = t0; times[1] = t; }
}

__global__ void pdl_secondary(unsigned long long* times) {
    if (threadIdx.x == 0) { times[2] = clock_ns(); times[3] = clock_ns(); }
}

// Runs `pairs` pairs on a new stream; `contained` receives the number of pairs whose secondary
// ended before its primary. Returns 0, or the CUDA error code of the first call that failed.
extern "C" int pdl_pairs(int pairs, unsigned long long spin_ns, int* contained) {
    unsigned long long* times = nullptr;
    unsigned long long host[4];
    cudaStream_t stream = nullptr;
    cudaError_t err = cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking);
    if (err == cudaSuccess) err = cudaMalloc(&times, sizeof(unsigned long long) * 4 * pairs);
    *contained = 0;
    cudaLaunchAttribute attr[1];
    attr[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attr[0].val.programmaticStreamSerializationAllowed = 1;
    cudaLaunchConfig_t cfg = {};
    cfg.gridDim = dim3(1);
    cfg.blockDim = dim3(32);
    cfg.stream = stream;
    cfg.attrs = attr;
    cfg.numAttrs = 1;
    for (int i = 0; err == cudaSuccess && i < pairs; ++i) {
        pdl_primary<<<1, 32, 0, stream>>>(spin_ns, times + 4 * i);
        err = cudaGetLastError();
        if (err == cudaSuccess) err = cudaLaunchKernelEx(&cfg, pdl_secondary, times + 4 * i);
    }
    if (err == cudaSuccess) err = cudaStreamSynchronize(stream);
    for (int i = 0; err == cudaSuccess && i < pairs; ++i) {
        err = cudaMemcpy(host, times + 4 * i, sizeof(host), cudaMemcpyDeviceToHost);
        if (err == cudaSuccess && host[3] < host[1]) ++*contained;
    }
    if (times) cudaFree(times);
    if (stream) cudaStreamDestroy(stream);
    return (int)err;
}

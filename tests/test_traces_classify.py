"""Naming and classification rules shared by the readers, and C++ demangling."""

import pytest

from dnabert_scaling.traces import classify
from dnabert_scaling.traces.demangle import available, demangle


def test_demangle_via_libstdcxx():
    assert available()
    assert demangle("_Z13jacobi_kernelPKfPfiiS1_") == "jacobi_kernel(float const*, float*, int, int, float*)"
    assert demangle("_Z11copy_kernelPfPKfii") == "copy_kernel(float*, float const*, int, int)"
    assert (
        demangle("_ZN2at6native29vectorized_elementwise_kernelILi4EfEEviT0_")
        == "void at::native::vectorized_elementwise_kernel<4, float>(int, float)"
    )
    assert demangle("not_mangled") == "not_mangled"
    assert demangle("_Zgarbage!!") == "_Zgarbage!!"  # fails to demangle: returned unchanged


@pytest.mark.parametrize(
    "raw, shown",
    [
        ("_Z13jacobi_kernelPKfPfiiS1_", "jacobi_kernel"),
        ("_ZN2at6native29vectorized_elementwise_kernelILi4EfEEviT0_", "at::native::vectorized_elementwise_kernel<4, float>"),
        ("void at::native::f<(bool)1, float>(int, float*)", "at::native::f<(bool)1, float>"),
        (
            "ncclKernel_AllReduce_RING_LL_Sum_float(ncclDevComm*, unsigned long, ncclWork*)",
            "ncclKernel_AllReduce_RING_LL_Sum_float",
        ),
        ("Foo::operator()(int) const", "Foo::operator()(int) const"),
        ("Foo::operator()(int)", "Foo::operator()"),
        ("sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n", "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n"),
    ],
)
def test_kernel_display_name(raw, shown):
    assert classify.kernel_display_name(raw) == shown


@pytest.mark.parametrize(
    "name, collective",
    [
        ("ncclKernel_AllReduce_RING_LL_Sum_float", "AllReduce"),
        ("ncclDevKernel_AllReduce_Sum_f32_RING_LL", "AllReduce"),
        ("ncclDevKernel_ReduceScatter_Sum_bf16_RING_LL", "ReduceScatter"),
        ("ncclKernel_Broadcast_RING_LL_Sum_int8_t", "Broadcast"),
        ("ncclDevKernel_SendRecv", "SendRecv"),
        ("ncclSymkDevKernel_AllGather_LL", "AllGather"),
        ("ncclDevKernel_Generic", None),
        ("ncclDevKernel_Generic_1", None),
    ],
)
def test_collective_from_name(name, collective):
    assert classify.kernel_category(name) == "nccl"
    assert classify.collective_from_name(name) == collective


def test_categories_collectives_phases_launches():
    assert classify.kernel_category("NCCLkernel_whatever") == "nccl"  # case-insensitive prefix
    assert classify.kernel_category("at::native::nccl_like_but_not") == "compute"
    assert [
        classify.normalize_collective(x)
        for x in ("allreduce", "_allgather_base", "reduce_scatter_tensor_coalesced", "broadcast", "all_to_all", "", None)
    ] == ["AllReduce", "AllGather", "ReduceScatter", "Broadcast", "AllToAll", None, None]
    assert classify.dtype_bytes("BFloat16") == 2 and classify.dtype_bytes("Float") == 4 and classify.dtype_bytes("x") is None
    assert [
        classify.phase_name(x) for x in ("user:ds:step", "ds:backward", "ds:warmup", "user:ds:nope", "train_step", "user:forward")
    ] == ["step", "backward", "warmup", None, None, None]
    launches = [
        "cuLaunchKernel",
        "cuLaunchKernelEx",
        "cudaLaunchKernel",
        "cudaLaunchKernelExC_v11060",
        "cudaLaunchCooperativeKernel",
        "cuLaunchKernel_ptsz",
    ]
    assert all(classify.is_launch_api(x) for x in launches)
    assert not any(classify.is_launch_api(x) for x in ("cudaMemcpyAsync", "cuLaunchHostFunc", "cudaLaunchKernelFoo"))
    assert classify.memcpy_direction("Memcpy HtoD (Pageable -> Device)") == "HtoD"
    assert classify.memcpy_direction("Memcpy DtoD (Device -> Device)") == "DtoD"
    assert classify.memcpy_direction("Memset (Device)") is None


def test_names_are_shortened_in_the_middle_and_kept_distinct():
    from dnabert_scaling.traces.classify import distinct_short, shorten_middle

    name = "at::native::multi_tensor_apply_kernel<TensorListMetadata<1>, BinaryOpScalarFunctor<float>, std::multiplies<float>>"
    short = shorten_middle(name, 40, "...")
    assert len(short) == 40 and short.startswith("at::native::multi_ten") and short.endswith("plies<float>>")
    assert shorten_middle("short", 40) == "short"
    a = "at::native::multi_tensor_apply_kernel<" + "X" * 60 + ", std::multiplies<float>, float>"
    b = "at::native::multi_tensor_apply_kernel<" + "X" * 59 + "Y, std::multiplies<float>, float>"
    assert shorten_middle(a, 60) == shorten_middle(b, 60)  # the same head and tail
    got = distinct_short([a, b, "gemm"], 60)
    assert len(set(got)) == 3 and got[2] == "gemm" and all(len(x) < len(a) or x == a for x in got)


def test_classes_of_a_column_are_the_rule_of_each_row():
    """launch_classes / activity_classes classify each distinct value once; per row they give what the
    one-name rules give, a missing value included (read as its text: no class)."""
    import pandas as pd

    from dnabert_scaling.traces.classify import activity_class, activity_classes, launch_class, launch_classes

    names = pd.Series(["cudaLaunchKernel", "cuMemcpyAsync", None, "cudaLaunchKernel", "cuMemsetD8Async", "cuCtxGetDevice"])
    assert launch_classes(names).tolist() == [launch_class(str(n)) for n in names.astype(str)]
    assert launch_classes(names).tolist() == ["kernel", "copy", None, "kernel", "copy", None]
    kinds = pd.Series(["kernel", "memcpy", "memset", pd.NA, "kernel"], dtype="string")
    assert activity_classes(kinds).tolist() == ["kernel", "copy", "copy", None, "kernel"]
    assert activity_classes(kinds).tolist() == [activity_class(str(k)) for k in kinds.astype(str)]
    assert launch_classes(pd.Series([], dtype=object)).tolist() == []

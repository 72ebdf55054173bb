#!/usr/bin/env python3
"""Baseline times for bench/gpu-check.sh: cuBLAS GEMM through PyTorch (f32 with TF32
off, f32 with TF32 on, bf16) and PyTorch's scaled_dot_product_attention (one head; ATTN_H
causal heads), each the median of CUDA-event-timed runs after warm-up. Prints one
`NAME median_ms` line per baseline, or a line starting with `skip:` saying why there are
none (no torch, no GPU)."""
import statistics
import sys


def timed_ms(fn, repeat):
    import torch
    fn()
    torch.cuda.synchronize()
    samples = []
    for _ in range(repeat):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        torch.cuda.synchronize()
        samples.append(start.elapsed_time(end))
    return statistics.median(samples)


def main():
    if len(sys.argv) not in (5, 6):
        sys.exit("usage: baselines.py GEMM_N ATTN_N ATTN_D REPEAT [ATTN_H]")
    gemm_n, attn_n, attn_d, repeat = (int(a) for a in sys.argv[1:5])
    attn_h = int(sys.argv[5]) if len(sys.argv) == 6 else 16
    try:
        import torch
    except ImportError:
        print("skip: PyTorch is not installed (pip install torch) - no cuBLAS/PyTorch baselines")
        return
    if not torch.cuda.is_available():
        print("skip: torch.cuda.is_available() is False - no cuBLAS/PyTorch baselines")
        return
    print(f"# torch {torch.__version__}, CUDA {torch.version.cuda}, {torch.cuda.get_device_name(0)}")
    n = gemm_n
    for name, dtype, tf32 in (("gemm-f32", torch.float32, False), ("gemm-tf32", torch.float32, True),
                              ("gemm-bf16", torch.bfloat16, False)):
        torch.backends.cuda.matmul.allow_tf32 = tf32
        a = torch.randn(n, n, device="cuda", dtype=dtype)
        b = torch.randn(n, n, device="cuda", dtype=dtype)
        print(f"{name} {timed_ms(lambda: torch.matmul(a, b), repeat):.6g}")
    torch.backends.cuda.matmul.allow_tf32 = False
    q, k, v = (torch.randn(1, 1, attn_n, attn_d, device="cuda") for _ in range(3))
    sdpa = torch.nn.functional.scaled_dot_product_attention
    print(f"attention-f32 {timed_ms(lambda: sdpa(q, k, v), repeat):.6g}")
    q, k, v = (torch.randn(1, attn_h, attn_n, attn_d, device="cuda") for _ in range(3))
    print(f"causal-attention-f32 {timed_ms(lambda: sdpa(q, k, v, is_causal=True), repeat):.6g}")


if __name__ == "__main__":
    main()

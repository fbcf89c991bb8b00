#!/usr/bin/env python3
"""Compare normkit's LayerNorm / RMSNorm forward with PyTorch eager, torch.compile and a Triton row kernel,
and normkit's fused variants (residual add + RMSNorm out of and in place, add + LayerNorm, RMSNorm and LayerNorm
with the zero-centred weight, RMSNorm and LayerNorm quantized to fp8 e4m3, e5m2 or int8) with eager and
torch.compile.

    cmake -S . -B build -DNORMKIT_BUILD_CAPI=ON && cmake --build build --target normkit_capi
    python3 bench/compare_pytorch.py --lib build/bench/libnormkit_capi.so --out compare.json

All peers run on the same tensors: x uniform in [-1, 3) (mean 1, as in normkit_bench), weight in
[0.5, 1.5), bias in [-0.5, 0.5). Large batches: x about 512 MiB, the median of
triton.testing.do_bench (which clears the L2 cache before every call). Small batches: a CUDA graph of
back-to-back calls per peer, replayed, time divided by the call count. Every peer's output is checked
against eager within the dtype's tolerance; normkit's mean / rstd against an fp32 reference.

Bytes for TB/s: x read, y written, weight (and bias) read once, the same count for every peer, so TB/s
ratios are time ratios. normkit and Triton write no mean / rstd here (the inference call); eager's
kernel writes them anyway (8 bytes per row), torch.compile's does not. The large batches' copy ceiling: a
device-to-device copy (Tensor.copy_, i.e. cudaMemcpyAsync) moving the same bytes, timed the same way, and normkit's
share of it (column "share"; normkit_bench's ceiling is the same memcpy, timed with its own events).

RMSNorm quantized (bf16 x and weight): ops rms_norm_fp8 (e4m3), rms_norm_fp8_e5m2 and rms_norm_int8 with dynamic
per-row scales, and their _static forms with one static scale (1/32, normkit_bench's). normkit's
normkit_rms_norm_quant_fwd against eager `y = F.rms_norm(x.float(), (N,), w.float(), eps)`, per row
`s = max(amax|y| / Qmax, 1 / (Qmax * 512))` (Qmax 448, 57344, 127), `q = quantize(y / s)` (fp8: clamp to +-Qmax and
cast; int8: round half to even, clamp to [-128, 127]; the semantics of vLLM's rms_norm_dynamic_per_token_quant,
kept in fp32 throughout as normkit does; vLLM rounds x_hat to the input type before the weight), or
`q = quantize(y / scale)`, and the same function under torch.compile. Bytes: x read, y (1 byte) and the fp32 scales
(per row) written, weight read once. Checks: every peer's (eager's too) dequantized q * s, with its own scales,
against eager's unquantized fp32 y within half a step (fp8: 2^-(mantissa bits + 1) of |y|, or half a subnormal step;
int8: half the scale) and 1e-5 of slack, so a peer that truncated or rounded the wrong way would fail; its per-row
scales ('<peer>_scales') within 1e-3 of eager's. The copy "ceiling" of these ops (2 bytes read, 1 written an
element) is a reference rather than a bound: a copy moves as many bytes each way, and shares above 100% occur.
LayerNorm quantized to e4m3, e5m2 and int8 (ops layer_norm_fp8, layer_norm_fp8_e5m2 and layer_norm_int8, per-row
scales, and their _static forms; bf16 x, weight and bias):
normkit_layer_norm_quant_fwd against eager `y = F.layer_norm(x.float(), (N,), w.float(), b.float(), eps)`
quantized the same way, and the same under torch.compile. Bytes and checks as RMSNorm's, the bias read once too, and
the checks' slack also of |b| + |w| * rstd * (|x| + |mean|) (where the bias cancels x_hat * w, y's rounding is of
that size, not |y|'s).

Gemma's RMSNorm (op rms_norm_gemma, bf16; w uniform in [-0.5, 0.5), so scales 1 + w as the others' w): normkit's
normkit_rms_norm_gemma_fwd against eager `(F.rms_norm(x.float(), (N,), None, eps) * (1 + w.float())).to(bf16)`
(Hugging Face's Gemma) and the same under torch.compile. Bytes as rms_norm's. Checks: y within bf16's tolerance,
normkit's rstd against fp32. LayerNorm with the same zero-centred weight (op layer_norm_gemma, bf16; TransformerEngine's
zero_centered_gamma): normkit_layer_norm_gemma_fwd against eager
`(F.layer_norm(x.float(), (N,), None, None, eps) * (1 + w.float()) + b.float()).to(bf16)` and the same under
torch.compile. Bytes as layer_norm's. Checks: y within bf16's tolerance, normkit's mean and rstd against fp32.

Fused add + RMSNorm (op add_rms_norm, bf16 only, out of place; residual uniform in [-1, 1)): normkit's
normkit_add_rms_norm_fwd against eager `h = x + r; y = F.rms_norm(h, (N,), w, eps)` returning (h, y), and
the same function under torch.compile, which fuses it into one kernel. Bytes: 4 passes (x and r read,
h and y written) plus the weight; eager really moves more (it reads h back). Checks: each peer's y
against eager's within the dtype's tolerance, its h ("<peer>_residual") against eager's h within one
rounding step of the dtype, and normkit's rstd against fp32 statistics of eager's h.

Fused add + RMSNorm in place (op add_rms_norm_inplace, bf16, vLLM's fused_add_rms_norm: r = x + r, x = RMSNorm(r)):
normkit_add_rms_norm_fwd with residual_out = residual and y = x, against eager `r.add_(x); x.copy_(F.rms_norm(r, (N,),
w, eps))` and the same under torch.compile (whose in-place form moved about twice add_rms_norm's time from N = 65536
in device run 271). Timed calls rewrite x and r every time (r grows by about 1 a call; finite). Bytes as
add_rms_norm's. Checks: every peer, eager included, run on copies of x and r; the copies themselves, as rewritten,
against eager's out-of-place h and y.

Fused add + LayerNorm (op add_layer_norm, bf16 only, out of place, as add_rms_norm with a bias): eager
`h = x + r; y = F.layer_norm(h, (N,), w, b, eps)` and the same under torch.compile. Bytes: 4 passes plus
weight and bias. Checks as add_rms_norm's, normkit's mean and rstd against fp32 statistics of eager's h.
"""

import argparse
import ctypes
import json
import os
import signal
import statistics
import sys
import time

import torch
import torch.nn.functional as F
import triton
import triton.language as tl

DTYPES = {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}
DTYPE_CODES = {torch.float32: 0, torch.float16: 1, torch.bfloat16: 2}
# op -> (quantized dtype, per-row scales, norm): RMSNorm or LayerNorm of bf16 x quantized, with per-row or static
# scales.
QUANT_OPS = {
    "rms_norm_fp8": (torch.float8_e4m3fn, True, "rms_norm"),
    "rms_norm_fp8_e5m2": (torch.float8_e5m2, True, "rms_norm"),
    "rms_norm_int8": (torch.int8, True, "rms_norm"),
    "rms_norm_fp8_static": (torch.float8_e4m3fn, False, "rms_norm"),
    "rms_norm_fp8_e5m2_static": (torch.float8_e5m2, False, "rms_norm"),
    "rms_norm_int8_static": (torch.int8, False, "rms_norm"),
    "layer_norm_fp8": (torch.float8_e4m3fn, True, "layer_norm"),
    "layer_norm_fp8_static": (torch.float8_e4m3fn, False, "layer_norm"),
    "layer_norm_fp8_e5m2": (torch.float8_e5m2, True, "layer_norm"),
    "layer_norm_int8": (torch.int8, True, "layer_norm"),
    "layer_norm_fp8_e5m2_static": (torch.float8_e5m2, False, "layer_norm"),
    "layer_norm_int8_static": (torch.int8, False, "layer_norm"),
}
QTYPE_CODES = {torch.float8_e4m3fn: 0, torch.float8_e5m2: 1, torch.int8: 2}  # normkit_capi.h
QMAX = {torch.float8_e4m3fn: 448.0, torch.float8_e5m2: 57344.0, torch.int8: 127.0}
# Half a quantization step, the checks' bound for a dequantized value against the unquantized y:
# |q * s - y| <= rel * |y| + steps * s. fp8: half a step relative to the magnitude (2^-(mantissa bits + 1)) or half
# a subnormal step; int8: half a step of the scale.
QHALF_STEP = {torch.float8_e4m3fn: (2.0 ** -4, 2.0 ** -10), torch.float8_e5m2: (2.0 ** -3, 2.0 ** -17),
              torch.int8: (0.0, 0.5)}
# Of |y| + s (+ layer_norm_rounding_scale for LayerNorm): peers' fp32 y differ from eager's in the last bits, so ties
# may round apart; and where a LayerNorm's bias cancels x_hat * w, y's rounding is of its terms' size (|b|, and
# |w| * rstd * (|x| + |mean|): a mean summed in another order), not |y|'s, which e5m2's fine steps near zero under a
# per-row scale (2^-14 of e4m3's: a 128th of the scale, 2^-7 of the subnormal step) resolve: relative to |y| (and
# then |b|) alone, normkit's and torch.compile's y failed there against eager's (forty-sixth and forty-seventh
# sessions, H100).
QCHECK_SLACK = 1e-5
STATIC_SCALE = 1.0 / 32.0  # normkit_bench's kStaticScale: |y| < 3.2 here, so y / scale stays in every range
EPS = {"layer_norm": 1e-5, "rms_norm": 1e-6, "add_rms_norm": 1e-6, "add_rms_norm_inplace": 1e-6,
       "add_layer_norm": 1e-5, "rms_norm_gemma": 1e-6, "layer_norm_gemma": 1e-5,
       **{op: 1e-6 if norm == "rms_norm" else 1e-5 for op, (_, _, norm) in QUANT_OPS.items()}}  # PyTorch's defaults
ADD_OPS = ("add_rms_norm", "add_rms_norm_inplace", "add_layer_norm")
GEMMA_OPS = ("rms_norm_gemma", "layer_norm_gemma")  # the zero-centred weight: scale 1 + w
FUSED_OPS = ADD_OPS + GEMMA_OPS + tuple(QUANT_OPS)
FUSED_DTYPES = ["bf16"]
# |peer - eager| <= atol + rtol * |eager|: one or two rounding steps of the output type.
TOLERANCE = {torch.float32: (1e-4, 1e-4), torch.float16: (2e-3, 2e-3), torch.bfloat16: (2e-2, 2e-2)}
STATS_TOLERANCE = (1e-4, 1e-5)  # fp32 mean / rstd: (rtol, atol)
TRITON_MAX_BLOCK = 65536
DEFAULT_NS = [256, 1024, 4096, 8192, 16384, 32768, 65536, 131072]
QUICK_NS = [1024, 8192, 65536]
FUSED_NS = [256, 768, 1024, 4096, 8192, 16384, 32768, 65536]
SMALL_N = 8192
SMALL_MS = [1, 32, 128]
GRAPH_CALLS = 100
GRAPH_SAMPLES = 20


def log(msg):
    print(msg, file=sys.stderr, flush=True)


# ---------------------------------------------------------------- normkit through its C ABI


STATUS_UNSUPPORTED_SHAPE = 8  # normkit::Status::kErrorUnsupportedShape (include/normkit/status.cuh)


class NormkitError(RuntimeError):
    """A normkit call returned a status other than success (`status`, normkit::Status's value)."""

    def __init__(self, status, message):
        super().__init__(message)
        self.status = status


class Normkit:
    """libnormkit_capi.so (bench/capi/normkit_capi.h) through ctypes, on PyTorch's current stream."""

    def __init__(self, path):
        lib = ctypes.CDLL(path)
        p, i64, f32, i32 = ctypes.c_void_p, ctypes.c_int64, ctypes.c_float, ctypes.c_int
        lib.normkit_layer_norm_fwd.argtypes = [i32, p, p, p, p, p, p, i64, i64, f32, p]
        lib.normkit_rms_norm_fwd.argtypes = [i32, p, p, p, p, i64, i64, f32, p]
        lib.normkit_layer_norm_shape.argtypes = [i32, i64, ctypes.POINTER(ctypes.c_char_p)]
        lib.normkit_rms_norm_shape.argtypes = [i32, i64, ctypes.POINTER(ctypes.c_char_p)]
        lib.normkit_add_rms_norm_fwd.argtypes = [i32, p, p, p, p, p, p, i64, i64, f32, p]
        lib.normkit_add_rms_norm_shape.argtypes = [i32, i64, ctypes.POINTER(ctypes.c_char_p)]
        lib.normkit_add_layer_norm_fwd.argtypes = [i32, p, p, p, p, p, p, p, p, i64, i64, f32, p]
        lib.normkit_add_layer_norm_shape.argtypes = [i32, i64, ctypes.POINTER(ctypes.c_char_p)]
        lib.normkit_rms_norm_quant_fwd.argtypes = [i32, i32, p, p, p, f32, p, i64, i64, f32, p]
        lib.normkit_rms_norm_quant_shape.argtypes = [i32, i32, i32, i64, ctypes.POINTER(ctypes.c_char_p)]
        lib.normkit_layer_norm_quant_fwd.argtypes = [i32, i32, p, p, p, p, f32, p, i64, i64, f32, p]
        lib.normkit_layer_norm_quant_shape.argtypes = [i32, i32, i32, i64, ctypes.POINTER(ctypes.c_char_p)]
        lib.normkit_rms_norm_gemma_fwd.argtypes = [i32, p, p, p, p, i64, i64, f32, p]
        lib.normkit_rms_norm_gemma_shape.argtypes = [i32, i64, ctypes.POINTER(ctypes.c_char_p)]
        lib.normkit_layer_norm_gemma_fwd.argtypes = [i32, p, p, p, p, p, p, i64, i64, f32, p]
        lib.normkit_layer_norm_gemma_shape.argtypes = [i32, i64, ctypes.POINTER(ctypes.c_char_p)]
        lib.normkit_set_row_counter.argtypes = [p]
        lib.normkit_status_string.argtypes = [i32]
        lib.normkit_status_string.restype = ctypes.c_char_p
        for f in ("normkit_layer_norm_fwd", "normkit_rms_norm_fwd", "normkit_add_rms_norm_fwd",
                  "normkit_add_layer_norm_fwd", "normkit_layer_norm_shape",
                  "normkit_rms_norm_shape", "normkit_add_rms_norm_shape", "normkit_add_layer_norm_shape",
                  "normkit_rms_norm_quant_fwd", "normkit_rms_norm_quant_shape", "normkit_layer_norm_quant_fwd",
                  "normkit_layer_norm_quant_shape",
                  "normkit_rms_norm_gemma_fwd", "normkit_rms_norm_gemma_shape", "normkit_layer_norm_gemma_fwd",
                  "normkit_layer_norm_gemma_shape", "normkit_set_row_counter"):
            getattr(lib, f).restype = i32
        self._lib = lib
        self._shape_fns = {"layer_norm": lib.normkit_layer_norm_shape, "rms_norm": lib.normkit_rms_norm_shape,
                           "add_rms_norm": lib.normkit_add_rms_norm_shape,
                           "add_layer_norm": lib.normkit_add_layer_norm_shape,
                           "add_rms_norm_inplace": lib.normkit_add_rms_norm_shape,
                           "rms_norm_gemma": lib.normkit_rms_norm_gemma_shape,
                           "layer_norm_gemma": lib.normkit_layer_norm_gemma_shape}

    def use_row_counter(self):
        """Every later call passes a row counter (LaunchOptions::row_counter), as a caller after the fastest
        cluster rows would: two zeroed int32 words on the current device, which each call leaves zero."""
        self._row_counter = torch.zeros(2, dtype=torch.int32, device="cuda")
        self._check(self._lib.normkit_set_row_counter(self._row_counter.data_ptr()), "set_row_counter")

    def _check(self, rc, what):
        if rc != 0:
            raise NormkitError(rc, f"normkit {what}: {self._lib.normkit_status_string(rc).decode()}")

    @staticmethod
    def _ptr(t):
        return None if t is None else t.data_ptr()

    def forward(self, op, x, w, b, y, eps, mean=None, rstd=None):
        assert x.is_contiguous() and y.is_contiguous()
        m, n = x.shape
        stream = torch.cuda.current_stream().cuda_stream
        code = DTYPE_CODES[x.dtype]
        if op == "layer_norm":
            rc = self._lib.normkit_layer_norm_fwd(code, x.data_ptr(), y.data_ptr(), self._ptr(w), self._ptr(b),
                                                  self._ptr(mean), self._ptr(rstd), m, n, eps, stream)
        else:
            rc = self._lib.normkit_rms_norm_fwd(code, x.data_ptr(), y.data_ptr(), self._ptr(w), self._ptr(rstd),
                                                m, n, eps, stream)
        self._check(rc, op)
        return y

    def add_rms_norm(self, x, r, w, h, y, eps, rstd=None):
        """h = x + r (rounded), y = RMSNorm(h) * w; returns (h, y). h may be r and y may be x (in place)."""
        for t in (x, r, h, y):
            assert t.is_contiguous() and t.shape == x.shape and t.dtype == x.dtype
        m, n = x.shape
        stream = torch.cuda.current_stream().cuda_stream
        rc = self._lib.normkit_add_rms_norm_fwd(DTYPE_CODES[x.dtype], x.data_ptr(), r.data_ptr(), h.data_ptr(),
                                                y.data_ptr(), self._ptr(w), self._ptr(rstd), m, n, eps, stream)
        self._check(rc, "add_rms_norm")
        return h, y

    def add_layer_norm(self, x, r, w, b, h, y, eps, mean=None, rstd=None):
        """h = x + r (rounded), y = LayerNorm(h) * w + b; returns (h, y)."""
        for t in (x, r, h, y):
            assert t.is_contiguous() and t.shape == x.shape and t.dtype == x.dtype
        m, n = x.shape
        stream = torch.cuda.current_stream().cuda_stream
        rc = self._lib.normkit_add_layer_norm_fwd(DTYPE_CODES[x.dtype], x.data_ptr(), r.data_ptr(), h.data_ptr(),
                                                  y.data_ptr(), self._ptr(w), self._ptr(b), self._ptr(mean),
                                                  self._ptr(rstd), m, n, eps, stream)
        self._check(rc, "add_layer_norm")
        return h, y

    def add_norm(self, op, x, r, w, b, h, y, eps, mean=None, rstd=None):
        """add_rms_norm (b and mean unused) or add_layer_norm, by op."""
        if op == "add_layer_norm":
            return self.add_layer_norm(x, r, w, b, h, y, eps, mean=mean, rstd=rstd)
        return self.add_rms_norm(x, r, w, h, y, eps, rstd=rstd)

    def norm_quant(self, norm, x, w, b, q, s, static_scale, eps):
        """q = quantize(norm(x) * w (+ b) / scale), norm "rms_norm" (b unused) or "layer_norm", q's dtype the
        format: with s (fp32 [M]) the per-row scales, written; else the static scale. Returns (q, s)."""
        assert x.is_contiguous() and q.is_contiguous() and (s is None) == (static_scale is not None)
        m, n = x.shape
        stream = torch.cuda.current_stream().cuda_stream
        codes = (DTYPE_CODES[x.dtype], QTYPE_CODES[q.dtype], x.data_ptr(), q.data_ptr(), self._ptr(w))
        scaling = (static_scale or 0.0, self._ptr(s), m, n, eps, stream)
        if norm == "layer_norm":
            rc = self._lib.normkit_layer_norm_quant_fwd(*codes, self._ptr(b), *scaling)
        else:
            rc = self._lib.normkit_rms_norm_quant_fwd(*codes, *scaling)
        self._check(rc, norm + "_quant")
        return q, s

    def rms_norm_gemma(self, x, w, y, eps, rstd=None):
        """y = x * rstd * (1 + w) (Gemma's RMSNorm); returns y."""
        assert x.is_contiguous() and y.is_contiguous()
        m, n = x.shape
        stream = torch.cuda.current_stream().cuda_stream
        rc = self._lib.normkit_rms_norm_gemma_fwd(DTYPE_CODES[x.dtype], x.data_ptr(), y.data_ptr(), self._ptr(w),
                                                  self._ptr(rstd), m, n, eps, stream)
        self._check(rc, "rms_norm_gemma")
        return y

    def layer_norm_gemma(self, x, w, b, y, eps, mean=None, rstd=None):
        """y = (x - mean) * rstd * (1 + w) + b (LayerNorm's zero-centred weight); returns y."""
        assert x.is_contiguous() and y.is_contiguous()
        m, n = x.shape
        stream = torch.cuda.current_stream().cuda_stream
        rc = self._lib.normkit_layer_norm_gemma_fwd(DTYPE_CODES[x.dtype], x.data_ptr(), y.data_ptr(), self._ptr(w),
                                                    self._ptr(b), self._ptr(mean), self._ptr(rstd), m, n, eps, stream)
        self._check(rc, "layer_norm_gemma")
        return y

    def gemma(self, op, x, w, b, y, eps, mean=None, rstd=None):
        """rms_norm_gemma (b and mean unused) or layer_norm_gemma, by op."""
        if op == "layer_norm_gemma":
            return self.layer_norm_gemma(x, w, b, y, eps, mean=mean, rstd=rstd)
        return self.rms_norm_gemma(x, w, y, eps, rstd=rstd)

    def shape(self, op, dtype, n):
        name = ctypes.c_char_p()
        if op in QUANT_OPS:
            qdtype, per_row, norm = QUANT_OPS[op]
            shape_fn = self._lib.normkit_layer_norm_quant_shape if norm == "layer_norm" else \
                self._lib.normkit_rms_norm_quant_shape
            rc = shape_fn(DTYPE_CODES[dtype], QTYPE_CODES[qdtype], int(per_row), n, ctypes.byref(name))
        else:
            rc = self._shape_fns[op](DTYPE_CODES[dtype], n, ctypes.byref(name))
        self._check(rc, f"{op} shape")
        return name.value.decode()


# ---------------------------------------------------------------- Triton: one program per row, the row in registers


@triton.jit
def _layer_norm_row(X, Y, W, B, N, eps, BLOCK_N: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK_N)
    mask = cols < N
    x = tl.load(X + row * N + cols, mask=mask, other=0.0).to(tl.float32)
    mean = tl.sum(x, axis=0) / N
    d = tl.where(mask, x - mean, 0.0)
    rstd = tl.rsqrt(tl.sum(d * d, axis=0) / N + eps)
    w = tl.load(W + cols, mask=mask, other=0.0).to(tl.float32)
    b = tl.load(B + cols, mask=mask, other=0.0).to(tl.float32)
    tl.store(Y + row * N + cols, (d * rstd * w + b).to(Y.dtype.element_ty), mask=mask)


@triton.jit
def _rms_norm_row(X, Y, W, N, eps, BLOCK_N: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK_N)
    mask = cols < N
    x = tl.load(X + row * N + cols, mask=mask, other=0.0).to(tl.float32)
    rstd = tl.rsqrt(tl.sum(x * x, axis=0) / N + eps)
    w = tl.load(W + cols, mask=mask, other=0.0).to(tl.float32)
    tl.store(Y + row * N + cols, (x * rstd * w).to(Y.dtype.element_ty), mask=mask)


def triton_block(n):
    return triton.next_power_of_2(n)


def triton_forward(op, x, w, b, y, eps):
    m, n = x.shape
    block = triton_block(n)
    warps = min(max(block // 256, 1), 8)
    if op == "layer_norm":
        _layer_norm_row[(m,)](x, y, w, b, n, eps, BLOCK_N=block, num_warps=warps)
    else:
        _rms_norm_row[(m,)](x, y, w, n, eps, BLOCK_N=block, num_warps=warps)
    return y


# ---------------------------------------------------------------- the peers


def eager_forward(op, x, w, b, eps):
    n = x.shape[-1]
    return F.layer_norm(x, (n,), w, b, eps) if op == "layer_norm" else F.rms_norm(x, (n,), w, eps)


def fresh_compile(fn):
    """fn under a fresh torch.compile for one static shape. The caller compiles it by calling it once, outside
    any timing (warm_compile). dynamo is reset first, so earlier shapes count against no recompile limit."""
    torch._dynamo.reset()
    return torch.compile(fn, dynamic=False)


def compiled_forward(op, n, eps):
    """The eager call under fresh_compile."""
    if op == "layer_norm":
        return fresh_compile(lambda x, w, b: F.layer_norm(x, (n,), w, b, eps))
    return fresh_compile(lambda x, w: F.rms_norm(x, (n,), w, eps))


COMPILE_TIMEOUT_S = 90  # --compile-timeout
# Quantized norm ("layer_norm" / "rms_norm") -> the smallest N whose compile timed out: later quantized ops of that norm
# at that N or more go without the compile peer at once (their graphs share the norm and differ in the output's
# type and scale, per-row or static: the one that hung on the H200 was per-row LayerNorm at 65536).
COMPILE_GAVE_UP = {}


class CompileTimeout(BaseException):
    """torch.compile ran past COMPILE_TIMEOUT_S (raised by SIGALRM's handler). A BaseException, as
    KeyboardInterrupt is, so that torch's own `except Exception` handlers let it through; where they wrap it
    anyway, warm_compile still knows the alarm fired."""


def warm_compile(call):
    """Runs a torch.compile'd call once (compiling it), outside any timing; returns the call, or None when the
    compile runs past COMPILE_TIMEOUT_S: that shape then goes without the compile peer rather than the whole
    comparison running into its deadline (on the H200 with PyTorch 2.11, 2026-12-07, compiling per-row quantized
    LayerNorm at N = 65536 had not finished after 300 s). Compile workers of a timed-out compile may run on."""
    fired = []

    def on_alarm(signum, frame):
        fired.append(True)
        raise CompileTimeout()

    previous = signal.signal(signal.SIGALRM, on_alarm)
    t0 = time.time()
    try:
        signal.alarm(COMPILE_TIMEOUT_S)
        try:
            call()
            torch.cuda.synchronize()
        finally:
            signal.alarm(0)
    except BaseException:
        if not fired:  # not ours (whatever torch wrapped the alarm's exception in): as before
            raise
        log(f"    torch.compile still compiling after {COMPILE_TIMEOUT_S} s: left out of this shape")
        torch._dynamo.reset()
        return None
    finally:
        signal.signal(signal.SIGALRM, previous)
    log(f"    torch.compile took {time.time() - t0:.1f} s")
    return call


def add_compiled(peers, call):
    """peers["compile"] = call once warm_compile has compiled it; nothing when the compile timed out."""
    compiled = warm_compile(call)
    if compiled is not None:
        peers["compile"] = compiled


def make_peers(op, lib, x, w, b, eps, with_compile):
    """name -> a call returning the output, every peer on the same x, w, b. Compiles outside any timing."""
    y_nk, y_tr = torch.empty_like(x), torch.empty_like(x)
    peers = {
        "normkit": lambda: lib.forward(op, x, w, b, y_nk, eps),
        "eager": lambda: eager_forward(op, x, w, b, eps),
    }
    if with_compile:
        fn = compiled_forward(op, x.shape[-1], eps)
        add_compiled(peers, (lambda: fn(x, w, b)) if op == "layer_norm" else (lambda: fn(x, w)))
    if triton_block(x.shape[-1]) <= TRITON_MAX_BLOCK:
        peers["triton"] = lambda: triton_forward(op, x, w, b, y_tr, eps)
    return peers


def eager_add_norm(op, x, r, w, b, eps):
    """The unfused residual add + RMSNorm (b unused) or + LayerNorm: (h, y)."""
    h = x + r
    if op == "add_layer_norm":
        return h, F.layer_norm(h, (x.shape[-1],), w, b, eps)
    return h, F.rms_norm(h, (x.shape[-1],), w, eps)


def make_fused_peers(op, lib, x, r, w, b, eps, with_compile):
    """name -> a call returning (h, y), every peer on the same x, r, w (, b); normkit out of place."""
    h_nk, y_nk = torch.empty_like(x), torch.empty_like(x)
    peers = {
        "normkit": lambda: lib.add_norm(op, x, r, w, b, h_nk, y_nk, eps),
        "eager": lambda: eager_add_norm(op, x, r, w, b, eps),
    }
    if with_compile:
        fn = fresh_compile(lambda x, r, w, b: eager_add_norm(op, x, r, w, b, eps))
        add_compiled(peers, lambda: fn(x, r, w, b))
    return peers


def eager_inplace_add_rms_norm(x, r, w, eps):
    """vLLM's fused_add_rms_norm in eager ops: r += x, then x = RMSNorm(r) * w; returns (r, x)."""
    r.add_(x)
    x.copy_(F.rms_norm(r, (x.shape[-1],), w, eps))
    return r, x


def make_inplace_fns(lib, x, r, w, eps, with_compile):
    """name -> a call f(x, r) that rewrites x and r in place (r = x + r, x = RMSNorm(r) * w), returning (r, x);
    torch.compile's compiled (outside any timing) on copies of this x and r."""
    fns = {
        "normkit": lambda x, r: lib.add_rms_norm(x, r, w, r, x, eps),
        "eager": lambda x, r: eager_inplace_add_rms_norm(x, r, w, eps),
    }
    if with_compile:
        fn = fresh_compile(lambda x, r, w: eager_inplace_add_rms_norm(x, r, w, eps))
        if warm_compile(lambda: fn(x.clone(), r.clone(), w)) is not None:
            fns["compile"] = lambda x, r: fn(x, r, w)
    return fns


def eager_rms_norm_gemma(x, w, eps):
    """Gemma's RMSNorm as Hugging Face writes it: fp32 RMSNorm times (1 + w), cast back to x's type."""
    return (F.rms_norm(x.float(), (x.shape[-1],), None, eps) * (1.0 + w.float())).to(x.dtype)


def eager_layer_norm_gemma(x, w, b, eps):
    """LayerNorm with TransformerEngine's zero-centred weight: fp32 LayerNorm times (1 + w) plus b, cast back."""
    return (F.layer_norm(x.float(), (x.shape[-1],), None, None, eps) * (1.0 + w.float()) + b.float()).to(x.dtype)


def eager_gemma(op, x, w, b, eps):
    """eager_rms_norm_gemma (b unused) or eager_layer_norm_gemma, by op."""
    return eager_layer_norm_gemma(x, w, b, eps) if op == "layer_norm_gemma" else eager_rms_norm_gemma(x, w, eps)


def make_gemma_peers(op, lib, x, w, b, eps, with_compile):
    """name -> a call returning y, every peer on the same x, w (and b)."""
    y_nk = torch.empty_like(x)
    peers = {
        "normkit": lambda: lib.gemma(op, x, w, b, y_nk, eps),
        "eager": lambda: eager_gemma(op, x, w, b, eps),
    }
    if with_compile:
        fn = fresh_compile(lambda x, w, b: eager_gemma(op, x, w, b, eps))
        add_compiled(peers, lambda: fn(x, w, b))
    return peers


def quantize(v, qdtype):
    """v (fp32, already divided by its scale) to qdtype: round to nearest even, saturate to the finite range."""
    qmax = QMAX[qdtype]
    if qdtype == torch.int8:
        return torch.round(v).clamp(-128.0, 127.0).to(torch.int8)
    return v.clamp(-qmax, qmax).to(qdtype)


def norm_fp32(norm, x, w, b, eps):
    """RMSNorm of x with weight w, or LayerNorm with weight w and bias b, computed in fp32: the quantized ops' y
    before quantization."""
    if norm == "layer_norm":
        return F.layer_norm(x.float(), (x.shape[-1],), w.float(), b.float(), eps)
    return F.rms_norm(x.float(), (x.shape[-1],), w.float(), eps)


def row_scales(y, qdtype):
    """Each row's scale, max(max|y| / Qmax, 1 / (Qmax * 512)), as fp32 [M, 1]."""
    qmax = QMAX[qdtype]
    return (y.abs().amax(dim=-1, keepdim=True) / qmax).clamp(min=1.0 / (qmax * 512.0))


def eager_norm_quant(norm, x, w, b, eps, qdtype, per_row):
    """The norm in fp32, then quantized: (q, s) with s the per-row scales (fp32 [M]) from max|y|, or (q, None)
    with the static scale STATIC_SCALE."""
    y = norm_fp32(norm, x, w, b, eps)
    if not per_row:
        return quantize(y / STATIC_SCALE, qdtype), None
    s = row_scales(y, qdtype)
    return quantize(y / s, qdtype), s.squeeze(-1)


def make_quant_peers(op, lib, x, w, b, eps, with_compile):
    """name -> a call returning (q, s or None), every peer on the same x, w (and b)."""
    qdtype, per_row, norm = QUANT_OPS[op]
    q_nk = torch.empty(x.shape, device="cuda", dtype=qdtype)
    s_nk = torch.empty(x.shape[0], device="cuda", dtype=torch.float32) if per_row else None
    static = None if per_row else STATIC_SCALE
    peers = {
        "normkit": lambda: lib.norm_quant(norm, x, w, b, q_nk, s_nk, static, eps),
        "eager": lambda: eager_norm_quant(norm, x, w, b, eps, qdtype, per_row),
    }
    n = x.shape[-1]
    if with_compile and n >= COMPILE_GAVE_UP.get(norm, float("inf")):
        log(f"    torch.compile left out: it timed out for quantized {norm} at N = {COMPILE_GAVE_UP[norm]}")
    elif with_compile:
        fn = fresh_compile(lambda x, w, b: eager_norm_quant(norm, x, w, b, eps, qdtype, per_row))
        add_compiled(peers, lambda: fn(x, w, b))
        if "compile" not in peers:
            COMPILE_GAVE_UP[norm] = min(n, COMPILE_GAVE_UP.get(norm, n))
    return peers


def make_inputs(op, dtype, m, n):
    x = torch.empty(m, n, device="cuda", dtype=dtype).uniform_(-1.0, 3.0)
    # Gemma's zero-centred weight: scales 1 + w in [0.5, 1.5), as the others' w.
    lo = -0.5 if op in GEMMA_OPS else 0.5
    w = torch.empty(n, device="cuda", dtype=dtype).uniform_(lo, lo + 1.0)
    with_bias = op in ("layer_norm", "layer_norm_gemma") or QUANT_OPS.get(op, (None, None, None))[2] == "layer_norm"
    b = torch.empty(n, device="cuda", dtype=dtype).uniform_(-0.5, 0.5) if with_bias else None
    return x, w, b


def bytes_moved(x, w, b):
    per = x.element_size()
    return 2 * x.numel() * per + w.numel() * per + (0 if b is None else b.numel() * per)


def quant_bytes_moved(x, w, b, per_row):
    """A norm quantized: x read, y written at 1 byte, the fp32 per-row scales (if any) written, weight (and
    bias) read once."""
    params = w.numel() * w.element_size() + (0 if b is None else b.numel() * b.element_size())
    return x.numel() * x.element_size() + x.numel() + (4 * x.shape[0] if per_row else 0) + params


def fused_bytes_moved(x, w, b=None):
    """Residual add + norm: x and r read, h and y written (4 passes), weight (and bias) read once."""
    per = x.element_size()
    return 4 * x.numel() * per + w.numel() * per + (0 if b is None else b.numel() * per)


# ---------------------------------------------------------------- checks


def max_violation(out, ref, rtol, atol):
    """max |out - ref| / (atol + rtol |ref|): <= 1 passes. Also the max absolute error."""
    diff = (out.float() - ref.float()).abs()
    bound = atol + rtol * ref.float().abs()
    return (diff / bound).max().item(), diff.max().item()


def stats_match(rows, mean, rstd, eps):
    """Whether normkit's fp32 statistics of `rows` (its mean, LayerNorm's, or None for RMSNorm; its rstd) match
    fp32 ones computed here within STATS_TOLERANCE: biased variance (or the mean square) plus eps."""
    rf = rows.float()
    if mean is None:
        ref_rstd = torch.rsqrt(rf.square().mean(dim=-1) + eps)
    else:
        if max_violation(mean, rf.mean(dim=-1), *STATS_TOLERANCE)[0] > 1.0:
            return False
        ref_rstd = torch.rsqrt(rf.var(dim=-1, unbiased=False) + eps)
    return max_violation(rstd, ref_rstd, *STATS_TOLERANCE)[0] <= 1.0


def check_outputs(op, lib, x, w, b, eps, peers):
    """name -> {'ok', 'max_abs_err'} for every peer against eager, plus normkit's statistics."""
    rtol, atol = TOLERANCE[x.dtype]
    ref = eager_forward(op, x, w, b, eps)
    result = {}
    for name, fn in peers.items():
        if name == "eager":
            continue
        v, err = max_violation(fn(), ref, rtol, atol)
        result[name] = {"ok": v <= 1.0, "max_abs_err": err}
    del ref
    # normkit's mean and rstd against fp32 statistics of the same x.
    m, n = x.shape
    mean, rstd = torch.empty(m, device="cuda"), torch.empty(m, device="cuda")
    mean = mean if op == "layer_norm" else None
    lib.forward(op, x, w, b, torch.empty_like(x), eps, mean=mean, rstd=rstd)
    result["normkit_stats"] = {"ok": stats_match(x, mean, rstd, eps)}
    return result


def check_fused_outputs(op, lib, x, r, w, b, eps, peers):
    """name -> {'ok', 'max_abs_err'}: each peer's y ('<name>') and h ('<name>_residual') against eager's,
    and normkit's rstd (and mean) against fp32 statistics of eager's h ('normkit_stats')."""
    rtol, atol = TOLERANCE[x.dtype]
    # h: x + r added in fp32 and rounded once to the dtype, by every peer: one rounding step at most.
    h_rtol, h_atol = torch.finfo(x.dtype).eps, torch.finfo(x.dtype).tiny
    ref_h, ref_y = eager_add_norm(op, x, r, w, b, eps)
    result = {}
    for name, fn in peers.items():
        if name == "eager":
            continue
        h, y = fn()
        v, err = max_violation(y, ref_y, rtol, atol)
        result[name] = {"ok": v <= 1.0, "max_abs_err": err}
        v, err = max_violation(h, ref_h, h_rtol, h_atol)
        result[name + "_residual"] = {"ok": v <= 1.0, "max_abs_err": err}
        del h, y
    del ref_y
    mean, rstd = torch.empty(x.shape[0], device="cuda"), torch.empty(x.shape[0], device="cuda")
    mean = mean if op == "add_layer_norm" else None
    lib.add_norm(op, x, r, w, b, torch.empty_like(x), torch.empty_like(x), eps, mean=mean, rstd=rstd)
    result["normkit_stats"] = {"ok": stats_match(ref_h, mean, rstd, eps)}
    return result


def layer_norm_rounding_scale(x, w, b, eps):
    """|b| + |w| * rstd * (|x| + |mean|) per element: the size of the terms a LayerNorm's fp32 y is computed from,
    which its rounding (and any two implementations' different reduction orders for mean and rstd) is relative to.
    Where the bias cancels x_hat * w, y is near 0 but its error is not: e5m2's steps there under a per-row scale
    (about 1e-9) resolve a mean that differs by an ulp (x_hat shifts by ulp(mean) * rstd, some 1e-7), so a bound
    relative to |y| alone failed normkit and torch.compile against eager (forty-sixth and forty-seventh sessions)."""
    xf = x.float()
    mean = xf.mean(dim=-1, keepdim=True)
    rstd = torch.rsqrt(xf.var(dim=-1, unbiased=False, keepdim=True) + eps)
    return b.float().abs() + w.float().abs() * rstd * (xf.abs() + mean.abs())


def check_quant_outputs(op, x, w, b, eps, peers):
    """name -> {'ok', 'max_abs_err'}: each peer's (eager's too) dequantized q * s, with its own scales, against
    eager's unquantized fp32 y within half a step (QHALF_STEP) and QCHECK_SLACK (of |y|, s and, for LayerNorm,
    layer_norm_rounding_scale), and its per-row scales ('<name>_scales') within 1e-3 of eager's."""
    qdtype, per_row, norm = QUANT_OPS[op]
    rel, steps = QHALF_STEP[qdtype]
    y = norm_fp32(norm, x, w, b, eps)
    ref_s = row_scales(y, qdtype).squeeze(-1) if per_row else None
    terms = 0.0 if b is None else layer_norm_rounding_scale(x, w, b, eps)
    result = {}
    for name, fn in peers.items():
        q, s = fn()
        scale = s[:, None] if per_row else STATIC_SCALE
        err = (q.float() * scale - y).abs()
        bound = (rel * y.abs() + steps * scale) + QCHECK_SLACK * (y.abs() + scale + terms)
        result[name] = {"ok": bool((err <= bound).all().item()), "max_abs_err": err.max().item()}
        if per_row and name != "eager":
            v, e = max_violation(s, ref_s, 1e-3, 0.0)
            result[name + "_scales"] = {"ok": v <= 1.0, "max_abs_err": e}
        del q, s, err, bound
    return result


def check_gemma_outputs(op, lib, x, w, b, eps, peers):
    """name -> {'ok', 'max_abs_err'}: each peer's y against eager's, and normkit's statistics (rstd; LayerNorm:
    mean and rstd) against fp32."""
    rtol, atol = TOLERANCE[x.dtype]
    ref = eager_gemma(op, x, w, b, eps)
    result = {}
    for name, fn in peers.items():
        if name != "eager":
            v, err = max_violation(fn(), ref, rtol, atol)
            result[name] = {"ok": v <= 1.0, "max_abs_err": err}
    del ref
    rstd = torch.empty(x.shape[0], device="cuda")
    mean = torch.empty(x.shape[0], device="cuda") if op == "layer_norm_gemma" else None
    lib.gemma(op, x, w, b, torch.empty_like(x), eps, mean=mean, rstd=rstd)
    result["normkit_stats"] = {"ok": stats_match(x, mean, rstd, eps)}
    return result


def check_inplace_outputs(x, r, w, eps, fns):
    """name -> {'ok', 'max_abs_err'}: each peer's x (y) and r ('<name>_residual'), rewritten in place from
    copies of x and r, against the out-of-place eager add + RMSNorm of the same x and r."""
    rtol, atol = TOLERANCE[x.dtype]
    h_rtol, h_atol = torch.finfo(x.dtype).eps, torch.finfo(x.dtype).tiny
    ref_h, ref_y = eager_add_norm("add_rms_norm", x, r, w, None, eps)
    result = {}
    for name, fn in fns.items():  # eager in place too: the reference is out of place
        xc, rc = x.clone(), r.clone()
        fn(xc, rc)  # in place: the copies themselves are the outputs (y in xc, h in rc)
        v, err = max_violation(xc, ref_y, rtol, atol)
        result[name] = {"ok": v <= 1.0, "max_abs_err": err}
        v, err = max_violation(rc, ref_h, h_rtol, h_atol)
        result[name + "_residual"] = {"ok": v <= 1.0, "max_abs_err": err}
        del xc, rc
    return result


# ---------------------------------------------------------------- timing


def time_flushed_us(fn, quick):
    """Median microseconds per call; do_bench clears the L2 cache before each call by zeroing a 256 MB buffer,
    so each call starts with the L2 full of dirty lines, which it writes back as its own accesses evict them."""
    warmup, rep = (10, 40) if quick else (25, 100)
    return triton.testing.do_bench(fn, warmup=warmup, rep=rep, return_mode="median") * 1e3


_READ_FLUSH = []


def time_read_flushed_us(fn, quick):
    """Median microseconds per call, the L2 flushed before each call by a read of twice its size
    (normkit_bench's method): the lines left in the L2 are clean, so the timed call writes back none of the
    flush's (--flush read; a diagnostic of what do_bench's dirty lines cost each peer)."""
    if not _READ_FLUSH:
        l2 = getattr(torch.cuda.get_device_properties(torch.cuda.current_device()), "L2_cache_size", 0) or 64 << 20
        _READ_FLUSH.append(torch.ones(2 * l2 // 4, device="cuda", dtype=torch.int32))  # 2x the L2, in bytes
    buf = _READ_FLUSH[0]
    warmup, samples = (5, 15) if quick else (10, 50)
    for _ in range(warmup):
        fn()
    starts = [torch.cuda.Event(enable_timing=True) for _ in range(samples)]
    ends = [torch.cuda.Event(enable_timing=True) for _ in range(samples)]
    for start, end in zip(starts, ends):
        buf.amax()  # reads every line of the buffer; its one-element result is all it writes
        start.record()
        fn()
        end.record()
    torch.cuda.synchronize()
    return statistics.median(s.elapsed_time(e) for s, e in zip(starts, ends)) * 1e3


FLUSH_TIMERS = {"write": time_flushed_us, "read": time_read_flushed_us}
_COPY_TBPS = {}


def copy_tbps(nbytes, timer):
    """The copy ceiling for a call moving nbytes (read + write): a device-to-device copy of nbytes / 2 bytes
    (Tensor.copy_, which PyTorch runs as cudaMemcpyAsync for contiguous tensors of one dtype), timed as the
    peers are (timer: one of FLUSH_TIMERS, with the run's quick flag bound); once per byte count."""
    if nbytes not in _COPY_TBPS:
        src = torch.empty(nbytes // 2, device="cuda", dtype=torch.uint8)
        dst = torch.empty_like(src)
        _COPY_TBPS[nbytes] = 2 * src.numel() / (timer(lambda: dst.copy_(src)) * 1e-6) * 1e-12
        del src, dst
    return _COPY_TBPS[nbytes]


def time_graph_us(fn, calls=GRAPH_CALLS, samples=GRAPH_SAMPLES):
    """Median microseconds per call over replays of a CUDA graph of `calls` back-to-back calls."""
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):  # warm up off the default stream, as torch.cuda.graph asks
        for _ in range(3):
            fn()
    torch.cuda.current_stream().wait_stream(side)
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        for _ in range(calls):
            fn()
    graph.replay()
    starts = [torch.cuda.Event(enable_timing=True) for _ in range(samples)]
    ends = [torch.cuda.Event(enable_timing=True) for _ in range(samples)]
    for s, e in zip(starts, ends):
        s.record()
        graph.replay()
        e.record()
    torch.cuda.synchronize()
    ms = statistics.median(s.elapsed_time(e) for s, e in zip(starts, ends))
    del graph
    return ms * 1e3 / calls


# ---------------------------------------------------------------- the runs


def make_record(op, dtype_name, m, n, shape, nbytes, times, checks):
    return {
        "op": op, "dtype": dtype_name, "N": n, "M": m, "shape": shape, "bytes": nbytes,
        "time_us": times,
        "TBps": {k: nbytes / (t * 1e-6) * 1e-12 for k, t in times.items()},
        "normkit_speedup": {k: t / times["normkit"] for k, t in times.items() if k != "normkit"},
        "checks": checks,
    }


def run_case(op, dtype_name, m, n, lib, args, timer):
    dtype = DTYPES[dtype_name]
    eps = EPS[op]
    x, w, b = make_inputs(op, dtype, m, n)
    peers = make_peers(op, lib, x, w, b, eps, not args.no_compile)
    checks = check_outputs(op, lib, x, w, b, eps, peers)
    times = {name: timer(fn) for name, fn in peers.items()}
    rec = make_record(op, dtype_name, m, n, lib.shape(op, dtype, n), bytes_moved(x, w, b), times, checks)
    del peers, x, w, b
    torch.cuda.empty_cache()
    return rec


def finish_case(op, dtype_name, m, n, lib, nbytes, peers, checks, timer):
    """Times every peer and makes the record."""
    times = {name: timer(fn) for name, fn in peers.items()}
    return make_record(op, dtype_name, m, n, lib.shape(op, DTYPES[dtype_name], n), nbytes, times, checks)


def run_fused_case(op, dtype_name, m, n, lib, args, timer):
    """A fused variant (bf16): residual add + RMSNorm (out of place or in place) or + LayerNorm, Gemma's
    RMSNorm, or RMSNorm or LayerNorm quantized, against eager and torch.compile."""
    dtype = DTYPES[dtype_name]
    eps = EPS[op]
    with_compile = not args.no_compile
    if op in QUANT_OPS:
        x, w, b = make_inputs(op, dtype, m, n)
        peers = make_quant_peers(op, lib, x, w, b, eps, with_compile)
        checks = check_quant_outputs(op, x, w, b, eps, peers)
        rec = finish_case(op, dtype_name, m, n, lib, quant_bytes_moved(x, w, b, QUANT_OPS[op][1]), peers, checks,
                          timer)
        del b
    elif op in GEMMA_OPS:
        x, w, b = make_inputs(op, dtype, m, n)
        peers = make_gemma_peers(op, lib, x, w, b, eps, with_compile)
        checks = check_gemma_outputs(op, lib, x, w, b, eps, peers)
        rec = finish_case(op, dtype_name, m, n, lib, bytes_moved(x, w, b), peers, checks, timer)
        del b
    elif op == "add_rms_norm_inplace":
        # Timed calls rewrite x and r again and again: r grows by x's normalized values each call, finite.
        x, w, _ = make_inputs(op, dtype, m, n)
        r = torch.empty(m, n, device="cuda", dtype=dtype).uniform_(-1.0, 1.0)
        fns = make_inplace_fns(lib, x, r, w, eps, with_compile)
        checks = check_inplace_outputs(x, r, w, eps, fns)
        peers = {name: (lambda f=f: f(x, r)) for name, f in fns.items()}
        rec = finish_case(op, dtype_name, m, n, lib, fused_bytes_moved(x, w), peers, checks, timer)
        del fns, r
    else:
        x, w, b = make_inputs("layer_norm" if op == "add_layer_norm" else "rms_norm", dtype, m, n)
        r = torch.empty(m, n, device="cuda", dtype=dtype).uniform_(-1.0, 1.0)
        peers = make_fused_peers(op, lib, x, r, w, b, eps, with_compile)
        checks = check_fused_outputs(op, lib, x, r, w, b, eps, peers)
        rec = finish_case(op, dtype_name, m, n, lib, fused_bytes_moved(x, w, b), peers, checks, timer)
        del r, b
    del peers, x, w
    torch.cuda.empty_cache()
    return rec


PEER_ORDER = ["normkit", "eager", "compile", "triton"]


def print_table(title, records, show_tbps):
    print(f"\n{title}")
    peers = [p for p in PEER_ORDER if any(p in r["time_us"] for r in records)]
    head = f"{'op':<25}{'dtype':<6}{'N':>8}{'M':>9}  {'shape':<25}"
    for p in peers:
        head += f"{p + ' us':>13}" + (f"{'TB/s':>7}" if show_tbps else "") + ("" if p == "normkit" else f"{'nk x':>7}")
        if p == "normkit" and show_tbps:
            head += f"{'copy':>6}{'share':>6}"
    print(head + "  check")
    for r in records:
        line = f"{r['op']:<25}{r['dtype']:<6}{r['N']:>8}{r['M']:>9}  {r['shape']:<25}"
        for p in peers:
            if p not in r["time_us"]:
                line += " " * (13 + (7 if show_tbps else 0) + (0 if p == "normkit" else 7))
                continue
            line += f"{r['time_us'][p]:>13.2f}" + (f"{r['TBps'][p]:>7.2f}" if show_tbps else "")
            if p == "normkit" and show_tbps:
                line += f"{r['copy_TBps']:>6.2f}{r['normkit_share_of_copy']:>6.0%}"
            if p != "normkit":
                line += f"{r['normkit_speedup'][p]:>7.2f}"
        bad = [k for k, c in r["checks"].items() if not c["ok"]]
        print(line + "  " + ("ok" if not bad else "MISMATCH: " + ",".join(bad)))


def main():
    global COMPILE_TIMEOUT_S
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--lib", default="build/bench/libnormkit_capi.so", help="path of libnormkit_capi.so")
    ap.add_argument("--ops", default=",".join(EPS),
                    help="comma-separated, from: %(default)s (default: all)")
    ap.add_argument("--dtypes", default="bf16,fp32",
                    help="comma-separated: fp32, fp16, bf16 (default: %(default)s); the fused ops bf16 only")
    ap.add_argument("--ns", help="comma-separated row lengths (default: %s; the fused ops: %s)"
                    % (",".join(map(str, DEFAULT_NS)), ",".join(map(str, FUSED_NS))))
    ap.add_argument("--mib", type=int, default=512, help="size of x in MiB for the large batches (default: 512)")
    ap.add_argument("--quick", action="store_true", help=f"bf16 only, N in {QUICK_NS}, shorter timing")
    ap.add_argument("--no-compile", action="store_true", help="leave torch.compile out (it compiles every shape)")
    ap.add_argument("--compile-timeout", type=int, default=COMPILE_TIMEOUT_S,
                    help=f"seconds one shape's torch.compile may take before that shape goes without it "
                         f"(default: {COMPILE_TIMEOUT_S})")
    ap.add_argument("--no-small", action="store_true", help="leave the small-batch CUDA-graph runs out")
    ap.add_argument("--flush", choices=sorted(FLUSH_TIMERS), default="write",
                    help="how the L2 is flushed before each timed large-batch call: 'write', triton's do_bench "
                         "(zeroes a 256 MB buffer: the call starts with dirty lines to write back; the default), "
                         "or 'read', normkit_bench's (reads a buffer of 2x the L2: clean lines)")
    ap.add_argument("--no-row-counter", action="store_true",
                    help="call normkit without LaunchOptions::row_counter (rows split across a cluster then run "
                         "at a fixed stride)")
    ap.add_argument("--out", help="write the results as JSON here")
    args = ap.parse_args()
    if args.compile_timeout < 1:
        ap.error("--compile-timeout must be at least 1 (seconds)")
    COMPILE_TIMEOUT_S = args.compile_timeout

    if not torch.cuda.is_available():
        sys.exit("compare_pytorch.py: no CUDA device visible to PyTorch")
    ops = args.ops.split(",")
    unknown = [op for op in ops if op not in EPS]
    if unknown:
        sys.exit(f"compare_pytorch.py: unknown op(s) {','.join(unknown)}; known: {','.join(EPS)}")
    lib = Normkit(args.lib)
    if not args.no_row_counter:
        lib.use_row_counter()
    dtypes = ["bf16"] if args.quick else args.dtypes.split(",")
    torch.manual_seed(0)
    t_start = time.time()

    def op_ns(op):
        if args.ns:
            return [int(v) for v in args.ns.split(",")]
        return QUICK_NS if args.quick else (FUSED_NS if op in FUSED_OPS else DEFAULT_NS)

    def runner(op):
        return run_fused_case if op in FUSED_OPS else run_case

    flush_timer = FLUSH_TIMERS[args.flush]

    def large_timer(fn):
        return flush_timer(fn, args.quick)

    gpu = torch.cuda.get_device_name()
    meta = {"gpu": gpu, "torch": torch.__version__, "triton": triton.__version__, "mib": args.mib, "flush": args.flush,
            "graph_calls": GRAPH_CALLS, "graph_samples": GRAPH_SAMPLES, "row_counter": not args.no_row_counter}
    large = []
    small = []

    def save(partial):
        """--out, rewritten after every case (partial: true until the last), so that a run stopped by its
        deadline (.ci/gpu.sh's COMPARE_LIMIT) still leaves the cases it finished."""
        if args.out:
            with open(args.out + ".tmp", "w") as f:
                json.dump({"meta": dict(meta, partial=partial), "large": large, "small_batch": small}, f, indent=1)
            os.replace(args.out + ".tmp", args.out)

    for op in ops:
        for dtype_name in FUSED_DTYPES if op in FUSED_OPS else dtypes:
            for n in op_ns(op):
                m = max(1, args.mib * 2**20 // (n * DTYPES[dtype_name].itemsize))
                log(f"  {op} {dtype_name} N={n} M={m}")
                try:
                    rec = runner(op)(op, dtype_name, m, n, lib, args, large_timer)
                except NormkitError as e:
                    if e.status != STATUS_UNSUPPORTED_SHAPE:
                        raise
                    log(f"    left out: {e}")  # a length normkit has no shape for (as normkit_bench)
                    torch.cuda.empty_cache()
                    continue
                rec["copy_TBps"] = copy_tbps(rec["bytes"], large_timer)
                rec["normkit_share_of_copy"] = rec["TBps"]["normkit"] / rec["copy_TBps"]
                large.append(rec)
                save(partial=True)
    if not args.no_small:
        for op in ops:
            for m in SMALL_MS[::2] if args.quick else SMALL_MS:
                log(f"  {op} bf16 N={SMALL_N} M={m} (CUDA graph)")
                small.append(runner(op)(op, "bf16", m, SMALL_N, lib, args, time_graph_us))
                save(partial=True)

    print(f"normkit vs PyTorch {torch.__version__} / Triton {triton.__version__} on {gpu}"
          + (" (normkit without a row counter)" if args.no_row_counter else " (normkit with a row counter)"))
    print("time: median us per call; TB/s: (x + y + weight + bias bytes) / time, for the add_* ops "
          "(x + residual + residual_out + y + weight (+ bias) bytes) / time, for the quantized ops "
          "(x + 1-byte y + per-row scales + weight bytes) / time; nk x: peer time / normkit time; copy: TB/s of a "
          "device-to-device copy of the same bytes (cudaMemcpyAsync), share: normkit's TB/s / copy's")
    print("check: each peer's y against eager; for the add ops also its residual_out ('<peer>_residual') against "
          "eager's h; for the quantized ops each peer's dequantized y (its own scales) within half a step of "
          "eager's unquantized fp32 y, and the per-row scales ('<peer>_scales'); normkit's statistics "
          "('normkit_stats') against fp32")
    flushed = {"write": "L2 cleared before each call by do_bench's zeroing",
               "read": "L2 flushed before each call by a read of 2x its size"}[args.flush]
    print_table(f"large batches (x about {args.mib} MiB, {flushed})", large, show_tbps=True)
    if small:
        print_table(f"small batches (CUDA graph of {GRAPH_CALLS} calls, per call, no flush)", small, show_tbps=False)
    log(f"total {time.time() - t_start:.0f} s")

    save(partial=False)
    if any(not c["ok"] for r in large + small for c in r["checks"].values()):
        sys.exit("compare_pytorch.py: some outputs disagree with eager (see 'check')")


if __name__ == "__main__":
    main()

"""The CPU computation scripts/ml-wheels.sh runs in each of its two virtual
environments (original wheels, pruned wheels); the two outputs must be
equal, byte for byte.

    python cpu_run.py torch|cupy|jax

Prints what the framework computes on the CPU (seeded, so the numbers are
the same from run to run), then the libraries of its wheels that the
process mapped: the pruned libraries must have been loaded for the run to
count. The virtual environment's own path is printed as VENV, so that the
two environments can be compared.
"""

import hashlib
import os
import sys


def digest(data):
    """The SHA-256 of a buffer, in hex."""
    return hashlib.sha256(bytes(data)).hexdigest()


def run_torch():
    import torch

    torch.manual_seed(0)
    torch.set_num_threads(1)
    a = torch.randn(256, 256, dtype=torch.float64)
    b = torch.randn(256, 256, dtype=torch.float64)
    c = a @ b
    print("torch", torch.__version__, "cuda", torch.version.cuda)
    print("cuda available:", torch.cuda.is_available())
    print("cudnn version:", torch.backends.cudnn.version())
    print("matmul sum %.17g sha256 %s" % (c.sum().item(), digest(c.numpy().tobytes())))
    x = torch.randn(2, 3, 32, 32)
    conv = torch.nn.Conv2d(3, 8, 3, padding=1)
    y = conv(x)
    print("conv2d sum %.9g sha256 %s" % (y.sum().item(), digest(y.detach().numpy().tobytes())))
    s = torch.linalg.svdvals(a[:64, :64])
    print("svdvals %s" % digest(s.numpy().tobytes()))
    # torch loads its CUDA linear algebra library on the first such call on
    # a GPU; loaded here, its constructors (fatbin registration among them)
    # run as they would then.
    import ctypes

    lib = os.path.join(os.path.dirname(torch.__file__), "lib", "libtorch_cuda_linalg.so")
    ctypes.CDLL(lib)
    print("loaded", os.path.basename(lib))


def run_cupy():
    # CuPy needs a GPU for arrays. Without one it still imports, reports its
    # build (show_config), loads its extension modules (those with device
    # code among them), and drives NVRTC, which compiles CUDA C++ to PTX on
    # the CPU.
    import cupy
    import cupy.cuda.cub  # noqa: F401  (device code: CUB kernels)
    import cupy.cuda.thrust  # noqa: F401  (device code: Thrust kernels)
    import cupy.random._generator_api  # noqa: F401  (device code: cuRAND kernels)
    import cupyx.scipy.sparse  # noqa: F401
    import cupyx.scipy.special  # noqa: F401
    import io
    import contextlib
    import warnings
    import numpy as np
    from cupy_backends.cuda.libs import nvrtc

    print("cupy", cupy.__version__)
    out = io.StringIO()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with contextlib.redirect_stdout(out):
            cupy.show_config()
    for line in out.getvalue().splitlines():
        print("config:", line.replace(sys.prefix, "VENV"))
    host = np.random.default_rng(0).standard_normal((64, 64))
    print("get_array_module:", cupy.get_array_module(host).__name__)
    print("asnumpy sum %.17g" % cupy.asnumpy(host).sum())
    src = (
        'extern "C" __global__ void axpy(float a, const float *x, float *y, int n) {\n'
        "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
        "  if (i < n) y[i] = a * x[i] + y[i];\n"
        "}\n"
    )
    prog = nvrtc.createProgram(src, "axpy.cu", [], [])
    nvrtc.compileProgram(prog, ["--gpu-architecture=compute_90"])
    ptx = nvrtc.getPTX(prog)
    nvrtc.destroyProgram(prog)
    print("nvrtc", nvrtc.getVersion(), "ptx sha256", digest(ptx))


def run_jax():
    # The CUDA plugin registers itself (its version check, which needs a
    # driver, skipped), fails to find a GPU and leaves JAX on the CPU.
    import jax
    import jax.numpy as jnp
    import numpy as np

    key = jax.random.key(0)
    ka, kb = jax.random.split(key)
    a = jax.random.normal(ka, (256, 256), dtype=jnp.float32)
    b = jax.random.normal(kb, (256, 256), dtype=jnp.float32)
    c = jnp.matmul(a, b)
    print("jax", jax.__version__, "backend", jax.default_backend())
    print("devices", jax.devices())
    print("matmul sum %.9g sha256 %s" % (float(c.sum()), digest(np.asarray(c).tobytes())))
    f = jnp.fft.fft(a[0])
    print("fft sha256 %s" % digest(np.asarray(f).tobytes()))
    g = jax.grad(lambda x: jnp.sum(jnp.tanh(x) ** 2))(a)
    print("grad sha256 %s" % digest(np.asarray(g).tobytes()))


def mapped():
    """The libraries under site-packages the process mapped, sorted."""
    here = set()
    with open("/proc/self/maps") as maps:
        for line in maps:
            path = line.split()[-1]
            if "/site-packages/" in path and ".so" in path:
                here.add(path.split("/site-packages/", 1)[1])
    return sorted(here)


def main():
    which = sys.argv[1]
    {"torch": run_torch, "cupy": run_cupy, "jax": run_jax}[which]()
    for lib in mapped():
        print("mapped", lib)
    sys.stdout.flush()
    os._exit(0)


if __name__ == "__main__":
    main()

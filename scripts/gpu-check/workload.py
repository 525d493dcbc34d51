"""GPU work through the venv's libraries: prints one line per result,
`name sha256-of-bytes`, so two venvs (one pruned) can be compared line by
line. Usage: python3 workload.py torch|cupy|jax"""
import hashlib
import os
import sys


def h(arr):
    return hashlib.sha256(arr.tobytes()).hexdigest()[:16]


def say(name, value):
    print(f"{name} {value}", flush=True)


def loaded(words):
    seen = set()
    with open("/proc/self/maps") as m:
        for line in m:
            path = line.split()[-1] if "/" in line else ""
            if any(w in path for w in words) and path not in seen:
                seen.add(path)
    for p in sorted(seen):
        print(f"# loaded {p}", flush=True)


def torch_work():
    import torch
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cudnn.deterministic = True
    torch.backends.cudnn.benchmark = False
    dev = "cuda"
    say("torch.device", torch.cuda.get_device_name(0).replace(" ", "_"))
    g = torch.Generator(device="cpu").manual_seed(0)
    a = torch.randn(1024, 1024, generator=g).to(dev)
    b = torch.randn(1024, 1024, generator=g).to(dev)
    say("torch.matmul_f32", h((a @ b).cpu().numpy()))
    say("torch.matmul_bf16", h((a.bfloat16() @ b.bfloat16()).float().cpu().numpy()))
    say("torch.matmul_f16", h((a.half() @ b.half()).float().cpu().numpy()))
    x = torch.randn(8, 16, 64, 64, generator=g).to(dev)
    w = torch.randn(32, 16, 3, 3, generator=g).to(dev)
    say("torch.conv2d", h(torch.nn.functional.conv2d(x, w, padding=1).cpu().numpy()))
    say("torch.fft2", h(torch.fft.fft2(x[0, 0]).cpu().numpy()))
    m = torch.randn(256, 256, generator=g, dtype=torch.float64).to(dev)
    say("torch.solve", h(torch.linalg.solve(m, m[:, :4]).cpu().numpy()))
    say("torch.svdvals", "%.10e" % torch.linalg.svdvals(m).sum().item())
    idx = torch.arange(4096)
    s = torch.sparse_coo_tensor(torch.stack([idx, (idx * 7) % 4096]), torch.ones(4096), (4096, 4096)).to_sparse_csr().to(dev)
    v = torch.randn(4096, 8, generator=g).to(dev)
    say("torch.spmm", h((s @ v).cpu().numpy()))
    say("torch.softmax", h(torch.softmax(a, dim=1).cpu().numpy()))
    say("torch.sort", h(torch.sort(a.flatten())[0].cpu().numpy()))
    say("torch.cumsum", h(torch.cumsum(a.double(), 0).cpu().numpy()))
    torch.manual_seed(1)
    say("torch.cuda_rand", h(torch.rand(1000, device=dev).cpu().numpy()))
    torch.cuda.synchronize()
    loaded(["libtorch_cuda", "libcublas", "libcudnn", "libcusparse.", "libcufft.", "libcusolver"])


def cupy_work():
    import cupy as cp
    import cupyx.scipy.sparse as sp
    say("cupy.device", cp.cuda.runtime.getDeviceProperties(0)["name"].decode().replace(" ", "_"))
    cp.random.seed(0)
    say("cupy.random_rand", h(cp.random.rand(100000).get()))
    say("cupy.random_normal", h(cp.random.standard_normal(100000, dtype=cp.float32).get()))
    rs = cp.random.RandomState(5)
    a = rs.rand(512, 512, dtype=cp.float64)
    say("cupy.matmul", h((a @ a).get()))
    say("cupy.fft", h(cp.fft.fft(a[0]).get()))
    n = 1 << 16
    i = cp.arange(n)
    m = sp.csr_matrix((cp.full(n, 2.0), (i, (i * 3) % n)), shape=(n, n))
    x = cp.arange(n, dtype=cp.float64) / 7
    say("cupy.spmv", h((m @ x).get()))
    say("cupy.sum", "%.10e" % float(a.sum()))
    k = cp.ElementwiseKernel("float64 x", "float64 y", "y = x * x + 1", "sq")
    say("cupy.nvrtc_kernel", h(k(a).get()))
    loaded(["libcurand", "libcusparse.", "libcublas", "libcufft.", "cupy"])


def jax_work():
    import jax
    import jax.numpy as jnp
    say("jax.device", str(jax.devices()[0]).replace(" ", "_"))
    k = jax.random.PRNGKey(0)
    a = jax.random.normal(k, (512, 512))
    import numpy as np
    say("jax.random", h(np.asarray(a)))
    say("jax.matmul", h(np.asarray(jnp.matmul(a, a, precision="highest"))))
    say("jax.fft", h(np.asarray(jnp.fft.fft(a[0]))))
    say("jax.grad", h(np.asarray(jax.grad(lambda x: jnp.sum(jnp.tanh(x) ** 2))(a))))
    loaded(["jax", "libcublas", "libcufft", "libcudnn"])


{"torch": torch_work, "cupy": cupy_work, "jax": jax_work}[sys.argv[1]]()

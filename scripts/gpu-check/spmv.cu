// y = A x with cuSPARSE's generic SpMV on a CSR matrix (a 1-D Laplacian of
// n rows), in single and double precision; prints a checksum of each y and
// the path the cuSPARSE library was loaded from.
#include <cstdio>
#include <cstring>
#include <cstdlib>
#include <vector>
#include <cusparse.h>
#include <cuda_runtime.h>

#define CK(x) do { auto r_ = (x); if ((int)r_ != 0) { printf("error %d at %s:%d\n", (int)r_, __FILE__, __LINE__); exit(1); } } while (0)

template <typename T> double run(cudaDataType ty, int n) {
  std::vector<int> rp(n + 1), ci;
  std::vector<T> v, x(n);
  for (int i = 0; i < n; i++) {
    rp[i] = (int)ci.size();
    if (i > 0) { ci.push_back(i - 1); v.push_back(-1); }
    ci.push_back(i); v.push_back(2 + (T)(i % 7) / 8);
    if (i + 1 < n) { ci.push_back(i + 1); v.push_back(-1); }
    x[i] = (T)((i * 37) % 101) / 13;
  }
  rp[n] = (int)ci.size();
  int nnz = (int)ci.size();
  int *drp, *dci; T *dv, *dx, *dy;
  CK(cudaMalloc(&drp, (n + 1) * sizeof(int))); CK(cudaMalloc(&dci, nnz * sizeof(int)));
  CK(cudaMalloc(&dv, nnz * sizeof(T))); CK(cudaMalloc(&dx, n * sizeof(T))); CK(cudaMalloc(&dy, n * sizeof(T)));
  CK(cudaMemcpy(drp, rp.data(), (n + 1) * sizeof(int), cudaMemcpyHostToDevice));
  CK(cudaMemcpy(dci, ci.data(), nnz * sizeof(int), cudaMemcpyHostToDevice));
  CK(cudaMemcpy(dv, v.data(), nnz * sizeof(T), cudaMemcpyHostToDevice));
  CK(cudaMemcpy(dx, x.data(), n * sizeof(T), cudaMemcpyHostToDevice));
  cusparseHandle_t h; CK(cusparseCreate(&h));
  cusparseSpMatDescr_t A; cusparseDnVecDescr_t X, Y;
  CK(cusparseCreateCsr(&A, n, n, nnz, drp, dci, dv, CUSPARSE_INDEX_32I, CUSPARSE_INDEX_32I, CUSPARSE_INDEX_BASE_ZERO, ty));
  CK(cusparseCreateDnVec(&X, n, dx, ty)); CK(cusparseCreateDnVec(&Y, n, dy, ty));
  T alpha = 1, beta = 0; size_t sz = 0; void *buf = nullptr;
  CK(cusparseSpMV_bufferSize(h, CUSPARSE_OPERATION_NON_TRANSPOSE, &alpha, A, X, &beta, Y, ty, CUSPARSE_SPMV_ALG_DEFAULT, &sz));
  CK(cudaMalloc(&buf, sz + 1));
  CK(cusparseSpMV(h, CUSPARSE_OPERATION_NON_TRANSPOSE, &alpha, A, X, &beta, Y, ty, CUSPARSE_SPMV_ALG_DEFAULT, buf));
  CK(cudaDeviceSynchronize());
  std::vector<T> y(n);
  CK(cudaMemcpy(y.data(), dy, n * sizeof(T), cudaMemcpyDeviceToHost));
  double s = 0, err = 0;
  for (int i = 0; i < n; i++) {
    double want = 0;
    for (int k = rp[i]; k < rp[i + 1]; k++) want += (double)v[k] * x[ci[k]];
    s += y[i] * (double)(i % 11 + 1);
    double d = y[i] - want; if (d < 0) d = -d; if (d > err) err = d;
  }
  printf("spmv %s n=%d checksum %.17g max_abs_err %.3g\n", sizeof(T) == 4 ? "f32" : "f64", n, s, err);
  cusparseDestroy(h);
  return err;
}

int main() {
  int ver = 0; cusparseHandle_t vh; CK(cusparseCreate(&vh)); CK(cusparseGetVersion(vh, &ver)); cusparseDestroy(vh);
  run<float>(CUDA_R_32F, 1 << 20);
  run<double>(CUDA_R_64F, 1 << 20);
  FILE *m = fopen("/proc/self/maps", "r"); char line[4096];
  while (m && fgets(line, sizeof line, m))
    if (strstr(line, "libcusparse") && strstr(line, "r-xp")) { printf("loaded: %s", strchr(line, '/')); break; }
  printf("cusparse version %d\n", ver);
  return 0;
}

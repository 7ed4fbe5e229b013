//===- Matmul.cpp - moecomm_rt_matmul_f32: the expert GEMM via OpenBLAS ---===//
//
// `moecomm-matmul-to-blas` turns the f32 linalg.matmul of compiled graphs
// (the experts' gate/up/down projections and their input gradients) into
// calls of this function (moecomm_compiled.h), which hands them to OpenBLAS's
// cblas_sgemm: MLIR's loop lowering runs a GEMM at 0.1 to 2 GFLOP/s, a tuned
// BLAS near the core's vector peak (40 to 100 GFLOP/s here). Ranks are the
// parallelism (one thread each in the threads backend, one process each under
// MPI), so every call runs on its calling thread with one BLAS thread; OpenBLAS
// takes its work buffers per call, so rank threads may call it concurrently.
// On a device-bound thread (moecommCompiledBindDevice) the checked GEMM goes
// to the thread's device instead (cuBLAS on a CUDA device; this file's
// blasGemm on the host device), after checking its operands are device
// buffers.
//
//===----------------------------------------------------------------------===//

#include "Matmul.h"
#include "CompiledBuffers.h"
#include "CompiledError.h"
#include "moecomm/moecomm_compiled.h"

#include <cblas.h>

#include <algorithm>
#include <climits>
#include <cstdlib>
#include <mutex>
#include <string>

namespace {

/// A row-major matrix as cblas_sgemm takes it: `rows` x `cols` elements,
/// row i at data + i * ld.
struct Operand {
  float *data = nullptr;
  int64_t rows = 0, cols = 0, ld = 1;
};

std::string describe(const char *name, const moecommMemRef2D *m) {
  return std::string("GEMM operand ") + name + " (sizes [" +
         std::to_string(m->sizes[0]) + ", " + std::to_string(m->sizes[1]) +
         "], strides [" + std::to_string(m->strides[0]) + ", " +
         std::to_string(m->strides[1]) + "])";
}

/// Reads descriptor `m` (named `name` in messages) into `out`; records
/// moecommInvalidArgument and returns false for what cblas_sgemm cannot
/// take: no descriptor, negative or > 2^31 - 1 sizes (CBLAS's int), no data
/// with elements, a negative offset, a non-unit inner stride, a leading
/// dimension below the row length or above 2^31 - 1.
bool operand(const char *name, const moecommMemRef2D *m, Operand &out) {
  if (!m) {
    moecomm::compiledFail(moecommInvalidArgument,
                          std::string("compiled code passed no descriptor for "
                                      "GEMM operand ") +
                              name);
    return false;
  }
  auto bad = [&](const char *why) {
    moecomm::compiledFail(moecommInvalidArgument, "compiled code passed " +
                                                      describe(name, m) + ": " +
                                                      why);
    return false;
  };
  out.rows = m->sizes[0];
  out.cols = m->sizes[1];
  if (out.rows < 0 || out.cols < 0 || out.rows > INT_MAX || out.cols > INT_MAX)
    return bad("a size is outside [0, 2^31 - 1]");
  if (out.rows == 0 || out.cols == 0)
    return true; // no element is read or written
  if (!m->aligned)
    return bad("it has elements but no data");
  if (m->offset < 0)
    return bad("its offset is negative");
  if (out.cols > 1 && m->strides[1] != 1)
    return bad("its rows are not contiguous (inner stride is not 1)");
  // A single row's leading dimension is never used; CBLAS still wants one
  // of at least the row length.
  out.ld = out.rows > 1 ? m->strides[0] : out.cols;
  if (out.ld < out.cols || out.ld > INT_MAX)
    return bad("its row stride is below the row length or above 2^31 - 1");
  out.data = static_cast<float *>(m->aligned) + m->offset;
  return true;
}

/// One BLAS thread per calling thread, unless the user chose a count in the
/// environment (then OpenBLAS's one thread pool serves every rank's calls).
/// openblas_set_num_threads is process-wide, hence once per process.
void useCallingThreadOnly() {
  static std::once_flag once;
  std::call_once(once, [] {
    if (!std::getenv("OPENBLAS_NUM_THREADS"))
      openblas_set_num_threads(1);
  });
}

/// On a device-bound thread: records InvalidArgument unless operand `name`
/// lies in one device buffer (rows - 1 leading dimensions plus a row).
bool onDevice(const char *name, const Operand &op) {
  moecomm::Status st = moecomm::checkDeviceMemory(
      op.data, ((op.rows - 1) * op.ld + op.cols) * int64_t(sizeof(float)),
      std::string("GEMM operand ") + name);
  if (st.ok())
    return true;
  moecomm::compiledFail(st.code, st.message);
  return false;
}

} // namespace

extern "C" void _mlir_ciface_moecomm_rt_matmul_f32(int32_t transposeB,
                                                   moecommMemRef2D *a,
                                                   moecommMemRef2D *b,
                                                   moecommMemRef2D *c) {
  if (moecomm::compiledStopped())
    return;
  if (transposeB != 0 && transposeB != 1) {
    moecomm::compiledFail(moecommInvalidArgument,
                          "compiled code passed GEMM transposeB " +
                              std::to_string(transposeB) + " (0 or 1)");
    return;
  }
  Operand lhs, rhs, acc;
  if (!operand("A", a, lhs) || !operand("B", b, rhs) || !operand("C", c, acc))
    return;
  // B is [K][N], or [N][K] when transposed.
  int64_t k = transposeB ? rhs.cols : rhs.rows;
  int64_t n = transposeB ? rhs.rows : rhs.cols;
  if (lhs.cols != k || acc.rows != lhs.rows || acc.cols != n) {
    moecomm::compiledFail(
        moecommInvalidArgument,
        "compiled code passed a GEMM of mismatched shapes: C [" +
            std::to_string(acc.rows) + "][" + std::to_string(acc.cols) +
            "] += A [" + std::to_string(lhs.rows) + "][" +
            std::to_string(lhs.cols) + "] x B" + (transposeB ? "^T" : "") +
            " with B [" + std::to_string(rhs.rows) + "][" +
            std::to_string(rhs.cols) + "]");
    return;
  }
  if (acc.rows == 0 || acc.cols == 0 || k == 0)
    return; // C += nothing
  moecomm::GemmArgs args;
  args.transposeB = transposeB != 0;
  args.m = acc.rows;
  args.n = acc.cols;
  args.k = k;
  args.a = lhs.data;
  args.lda = lhs.ld;
  args.b = rhs.data;
  args.ldb = rhs.ld;
  args.c = acc.data;
  args.ldc = acc.ld;
  moecomm::CompiledDevice *device = moecomm::boundDevice();
  if (!device) {
    moecomm::blasGemm(args);
    return;
  }
  if (!onDevice("A", lhs) || !onDevice("B", rhs) || !onDevice("C", acc))
    return;
  moecomm::Status st = device->gemm(args);
  if (!st.ok())
    moecomm::compiledFail(st.code, st.message);
}

void moecomm::blasGemm(const GemmArgs &g) {
  useCallingThreadOnly();
  // C = 1 * A B + 1 * C: linalg.matmul accumulates into its output.
  cblas_sgemm(
      CblasRowMajor, CblasNoTrans, g.transposeB ? CblasTrans : CblasNoTrans,
      static_cast<blasint>(g.m), static_cast<blasint>(g.n),
      static_cast<blasint>(g.k), 1.0f, g.a, static_cast<blasint>(g.lda), g.b,
      static_cast<blasint>(g.ldb), 1.0f, g.c, static_cast<blasint>(g.ldc));
}

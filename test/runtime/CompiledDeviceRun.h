//===- CompiledDeviceRun.h - A layer through the device form -----*- C++
//-*-===//
//
// One rank's dispatch + combine made the way a cuda-target graph makes them
// (moecomm_compiled.h, "The device form"): bound with
// moecommCompiledBindDevice, arguments in moecommCompiledDeviceAlloc'd
// buffers filled with moecommCompiledDeviceCopy, outputs in moecomm_rt_alloc
// buffers (device 1; tokens_per_expert in host metadata, device 0), results
// read back after moecommCompiledDeviceSynchronize; the staged form frees
// each stage's send buffer after its wait, as the lowering does. It makes only
// driver and entry-point calls, so the host device (threads / mpi
// communicators, test/runtime) and the CUDA device (nccl, test/gpu) run the
// same sequence.
//
//===----------------------------------------------------------------------===//
#ifndef MOECOMM_TEST_RUNTIME_COMPILEDDEVICERUN_H
#define MOECOMM_TEST_RUNTIME_COMPILEDDEVICERUN_H

#include "TestUtil.h"

#include <functional>
#include <string>
#include <vector>

namespace moecomm {
namespace test {

/// What one rank's run produced.
struct CompiledDeviceRun {
  moecommResult_t status = moecommSuccess; ///< moecommCompiledStatus
  std::string error;                       ///< its message
  std::vector<float> dispatch;             ///< recv [R][H]
  std::vector<float> weights;              ///< recv_weights [R]
  std::vector<int64_t> tokensPerExpert;    ///< [E/W]
  std::vector<float> combineW;             ///< weighted combine of y [T][H]
  /// The same through gathers and exchange_start / wait per stage.
  std::vector<float> dispatchStaged, combineStagedW;
};

/// The problem these runs take: f32 rows and wire, W ranks, G per node,
/// 8 experts, top-2, H = 64, about T tokens per rank, uniform routing.
CaseSpec f32Spec(int W, int G, int64_t T);

/// For each strategy 0..3 (per_expert .. auto): `check(exp, strategy,
/// host)` with `host` the runtime's own run of every rank on threads
/// (runEveryRank), whose combine the device form must reproduce.
void forEveryStrategy(
    const CaseSpec &spec,
    const std::function<void(const Expected &, int32_t,
                             const std::vector<RankRun> &)> &check);

/// Runs `rank` of f32 problem `exp` (f32 wire, no placement) on `comm` with
/// `strategy` (0 per_expert .. 3 auto) on `stream` (NULL on the CPU
/// backends). Collective: every rank calls it.
CompiledDeviceRun runCompiledDevice(moecommComm_t comm, const Expected &exp,
                                    int rank, int32_t strategy,
                                    moecommStream_t stream);

/// Checks a run against the oracle: dispatch (one-shot and staged) and recv
/// weights bit-exact, tokens per expert equal, the weighted combines
/// bit-identical to `combineW` (the runtime's own host result for the same
/// strategy).
void checkCompiledDeviceRun(const Expected &exp, int rank,
                            const CompiledDeviceRun &run,
                            const std::vector<float> &combineW);

} // namespace test
} // namespace moecomm

#endif // MOECOMM_TEST_RUNTIME_COMPILEDDEVICERUN_H

/*===- pipeline.c - moecomm's passes and moecomm-pipeline from C ----------===*
 *
 * A C99 program that links libMoEComm-C.so alone and compiles a graph the way
 * an embedder would: registers the input's dialects through their handles
 * and moecomm-pipeline, parses the graph given as argv[1], runs
 * builtin.module(moecomm-pipeline{ranks=4 ranks-per-node=2
 * strategy=hierarchical}) through a pass manager, checks that only the LLVM
 * dialect is left, calling the runtime, and translates the result to LLVM
 * IR. Then one pass made by the generated C API
 * (mlirCreateMoECommMoECommSplitHierarchical) on a fresh copy, and the
 * errors: an unknown pass and a bad option value fail the pipeline's parse
 * with one message through the callback, and a topology the graph cannot
 * take fails the run with a diagnostic. Exit status 1 when a step does not
 * do what it should, 2 on bad usage. test/lit/CAPI/pipeline.test runs it on
 * examples/mixtral-8x7b.mlir and FileChecks this file. With
 * --pipeline-only it stops after the LLVM IR (the rest expects that graph):
 * test/lit/CAPI/pipeline-imported.test compiles an imported JAX graph so.
 *===----------------------------------------------------------------------===*/
#include "moecomm-c/Dialects.h"
#include "moecomm-c/Passes.h"

#include "mlir-c/BuiltinAttributes.h"
#include "mlir-c/Diagnostics.h"
#include "mlir-c/Dialect/Arith.h"
#include "mlir-c/Dialect/Func.h"
#include "mlir-c/Dialect/LLVM.h"
#include "mlir-c/Dialect/Linalg.h"
#include "mlir-c/Dialect/Math.h"
#include "mlir-c/Dialect/SCF.h"
#include "mlir-c/Dialect/Tensor.h"
#include "mlir-c/IR.h"
#include "mlir-c/Pass.h"
#include "mlir-c/RegisterEverything.h"
#include "mlir-c/Target/LLVMIR.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Everything goes to stdout, so messages and results keep their order for
 * FileCheck. */
static void printToStdout(MlirStringRef str, void *userData) {
  (void)userData;
  fwrite(str.data, 1, str.length, stdout);
}

static MlirLogicalResult printDiagnostic(MlirDiagnostic diag, void *userData) {
  (void)userData;
  printf("diagnostic: ");
  mlirDiagnosticPrint(diag, printToStdout, NULL);
  printf("\n");
  return mlirLogicalResultSuccess();
}

static int startsWith(MlirStringRef str, const char *prefix) {
  size_t length = strlen(prefix);
  return str.length >= length && memcmp(str.data, prefix, length) == 0;
}

static int equals(MlirStringRef str, const char *text) {
  return str.length == strlen(text) && startsWith(str, text);
}

/* What a walk over a module found. */
typedef struct {
  int notLLVM;      /* ops outside the LLVM dialect, the module aside */
  int runtimeCalls; /* llvm.call of a moecomm_rt_ function */
  int dispatches;   /* moecomm.dispatch */
  int exchanges;    /* moecomm.exchange */
} OpCounts;

static MlirWalkResult countOp(MlirOperation op, void *userData) {
  OpCounts *counts = (OpCounts *)userData;
  MlirStringRef name = mlirIdentifierStr(mlirOperationGetName(op));
  if (!startsWith(name, "llvm.") && !equals(name, "builtin.module"))
    ++counts->notLLVM;
  if (equals(name, "llvm.call")) {
    MlirAttribute callee = mlirOperationGetAttributeByName(
        op, mlirStringRefCreateFromCString("callee"));
    if (!mlirAttributeIsNull(callee) && mlirAttributeIsAFlatSymbolRef(callee) &&
        startsWith(mlirFlatSymbolRefAttrGetValue(callee), "moecomm_rt_"))
      ++counts->runtimeCalls;
  }
  counts->dispatches += equals(name, "moecomm.dispatch");
  counts->exchanges += equals(name, "moecomm.exchange");
  return MlirWalkResultAdvance;
}

static OpCounts countOps(MlirModule module) {
  OpCounts counts = {0, 0, 0, 0};
  mlirOperationWalk(mlirModuleGetOperation(module), countOp, &counts,
                    MlirWalkPreOrder);
  return counts;
}

/* Makes `pm` run `pipeline`; prints the parser's messages and whether it
 * parsed, which it returns. */
static int parsePipeline(MlirPassManager pm, const char *pipeline) {
  printf("parse %s\n", pipeline);
  MlirLogicalResult parsed = mlirParsePassPipeline(
      mlirPassManagerGetAsOpPassManager(pm),
      mlirStringRefCreateFromCString(pipeline), printToStdout, NULL);
  printf("parsed: %s\n", mlirLogicalResultIsSuccess(parsed) ? "yes" : "no");
  return mlirLogicalResultIsSuccess(parsed);
}

static MlirPassManager createModulePassManager(MlirContext ctx) {
  return mlirPassManagerCreateOnOperation(
      ctx, mlirStringRefCreateFromCString("builtin.module"));
}

int main(int argc, char **argv) {
  int pipelineOnly = argc == 3 && strcmp(argv[2], "--pipeline-only") == 0;
  if (argc != 2 && !pipelineOnly) {
    fprintf(stderr,
            "usage: moecomm-capi-pipeline-test GRAPH.mlir [--pipeline-only]\n");
    return 2;
  }
  MlirStringRef graph = mlirStringRefCreateFromCString(argv[1]);

  MlirContext ctx = mlirContextCreate();
  /* The dialects the examples' graphs (and imported JAX graphs) are written
   * in. The pipeline's passes load the dialects they create themselves. */
  MlirDialectHandle handles[] = {
      mlirGetDialectHandle__moecomm__(), mlirGetDialectHandle__func__(),
      mlirGetDialectHandle__arith__(),   mlirGetDialectHandle__math__(),
      mlirGetDialectHandle__tensor__(),  mlirGetDialectHandle__linalg__(),
      mlirGetDialectHandle__scf__(),     mlirGetDialectHandle__llvm__()};
  for (size_t i = 0; i < sizeof(handles) / sizeof(handles[0]); ++i)
    mlirDialectHandleRegisterDialect(handles[i], ctx);
  /* builtin and llvm to LLVM IR (and every other dialect that has one). */
  mlirRegisterAllLLVMTranslations(ctx);
  mlirRegisterMoECommPipeline();
  /* Registering again is allowed (an MLIR built with assertions aborts on a
   * second registerPassPipeline of a name). */
  mlirRegisterMoECommPipeline();
  mlirContextAttachDiagnosticHandler(ctx, printDiagnostic, NULL, NULL);
  int status = 0;

  /* The pipeline, then LLVM IR. */
  MlirModule module = mlirModuleCreateParseFromFile(ctx, graph);
  if (mlirModuleIsNull(module)) {
    printf("cannot parse %s\n", argv[1]);
    return 1;
  }
  MlirPassManager pm = createModulePassManager(ctx);
  // CHECK: parse builtin.module(moecomm-pipeline{ranks=4 ranks-per-node=2 strategy=hierarchical})
  // CHECK-NEXT: parsed: yes
  // CHECK-NEXT: pipeline: success
  if (!parsePipeline(pm, "builtin.module(moecomm-pipeline{ranks=4 "
                         "ranks-per-node=2 strategy=hierarchical})"))
    return 1;
  MlirLogicalResult ran =
      mlirPassManagerRunOnOp(pm, mlirModuleGetOperation(module));
  printf("pipeline: %s\n",
         mlirLogicalResultIsSuccess(ran) ? "success" : "failure");
  mlirPassManagerDestroy(pm);
  if (mlirLogicalResultIsFailure(ran))
    return 1;
  OpCounts lowered = countOps(module);
  // CHECK-NEXT: ops outside the LLVM dialect: 0, calls into the runtime: {{[1-9][0-9]*}}
  printf("ops outside the LLVM dialect: %d, calls into the runtime: %d\n",
         lowered.notLLVM, lowered.runtimeCalls);
  /* mlirTranslateModuleToLLVMIRToString has no way to report a failed
   * translation (it prints a null module): only the pipeline's output goes
   * in. */
  if (lowered.notLLVM != 0 || lowered.runtimeCalls == 0)
    return 1;
  /* A string of LLVMPrintModuleToString, which callers free with free()
   * (what LLVMDisposeMessage does). */
  char *llvmIR = mlirTranslateModuleToLLVMIRToString(
      mlirModuleGetOperation(module));
  // CHECK: declare void @moecomm_rt_wait(ptr)
  // CHECK: define {{.*}} @moe_layer(
  // CHECK: call ptr @moecomm_rt_layout_i32(
  // CHECK: [[REQUEST:%[0-9]+]] = call ptr @moecomm_rt_exchange_start_bf16(
  // CHECK-NEXT: call void @moecomm_rt_wait(ptr [[REQUEST]])
  printf("%s", llvmIR);
  free(llvmIR);
  mlirModuleDestroy(module);
  if (pipelineOnly) {
    mlirContextDestroy(ctx);
    printf("status: %d\n", status);
    return status;
  }

  /* One pass through the generated C API, with its default options (the
   * IR's topology, strategy=auto): the collectives become staged exchanges. */
  module = mlirModuleCreateParseFromFile(ctx, graph);
  pm = createModulePassManager(ctx);
  mlirPassManagerAddOwnedPass(pm, mlirCreateMoECommMoECommSplitHierarchical());
  ran = mlirPassManagerRunOnOp(pm, mlirModuleGetOperation(module));
  OpCounts split = countOps(module);
  // CHECK: moecomm-split-hierarchical: success, moecomm.dispatch: 0, moecomm.exchange: {{[1-9][0-9]*}}
  printf("moecomm-split-hierarchical: %s, moecomm.dispatch: %d, "
         "moecomm.exchange: %d\n",
         mlirLogicalResultIsSuccess(ran) ? "success" : "failure",
         split.dispatches, split.exchanges);
  if (mlirLogicalResultIsFailure(ran) || split.dispatches != 0 ||
      split.exchanges == 0)
    status = 1;
  mlirPassManagerDestroy(pm);
  mlirModuleDestroy(module);

  /* Errors. A pipeline string that does not parse: one message through the
   * callback, nothing added. */
  pm = createModulePassManager(ctx);
  // CHECK: parse builtin.module(moecomm-pipelin)
  // CHECK-NEXT: error: 'moecomm-pipelin' does not refer to a registered pass or pass pipeline
  // CHECK: parsed: no
  if (parsePipeline(pm, "builtin.module(moecomm-pipelin)"))
    status = 1;
  // CHECK: parse builtin.module(moecomm-pipeline{chunks=0})
  // CHECK-NEXT: moecomm-pipeline: chunks must be in [1, 64], got 0
  // CHECK: parsed: no
  if (parsePipeline(pm, "builtin.module(moecomm-pipeline{chunks=0})"))
    status = 1;
  /* Options that parse but that the graph cannot take: the run fails with a
   * diagnostic that says why. */
  // CHECK: parse builtin.module(moecomm-pipeline{ranks=3 ranks-per-node=2})
  // CHECK-NEXT: parsed: yes
  // CHECK-NEXT: diagnostic: cannot retarget 8 ranks x 8 per node to 3 ranks x 2 per node: ranks (3) must be a multiple of ranks_per_node (2)
  // CHECK: bad topology: failure
  module = mlirModuleCreateParseFromFile(ctx, graph);
  if (!parsePipeline(pm, "builtin.module(moecomm-pipeline{ranks=3 "
                         "ranks-per-node=2})"))
    status = 1;
  ran = mlirPassManagerRunOnOp(pm, mlirModuleGetOperation(module));
  printf("bad topology: %s\n",
         mlirLogicalResultIsSuccess(ran) ? "success" : "failure");
  if (mlirLogicalResultIsSuccess(ran))
    status = 1;
  mlirPassManagerDestroy(pm);
  mlirModuleDestroy(module);

  mlirContextDestroy(ctx);
  // CHECK: status: 0
  printf("status: %d\n", status);
  return status;
}

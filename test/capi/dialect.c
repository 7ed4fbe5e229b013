/*===- dialect.c - C API smoke test for the moecomm dialect ---------------===*
 *
 * Creates a context, registers and loads moecomm (and func) through their
 * dialect handles, parses and verifies a dispatch + combine function, builds
 * a topology attribute, and checks that an invalid topology yields a null
 * attribute with a diagnostic. test/lit/CAPI/dialect.test runs it and
 * FileChecks this file.
 *===----------------------------------------------------------------------===*/
#include "moecomm-c/Dialects.h"

#include "mlir-c/Diagnostics.h"
#include "mlir-c/Dialect/Func.h"
#include "mlir-c/IR.h"

#include <stdio.h>

static void printToStdout(MlirStringRef str, void *userData) {
  (void)userData;
  fwrite(str.data, 1, str.length, stdout);
}

static MlirLogicalResult countDiagnostic(MlirDiagnostic diag, void *userData) {
  (void)diag;
  ++*(int *)userData;
  return mlirLogicalResultSuccess();
}

static const char *kLayer =
    "func.func @layer(%x: tensor<?x64xbf16>, %i: tensor<?x2xi32>, "
    "%w: tensor<?x2xf32>) -> tensor<?x64xbf16> {\n"
    "  %r, %rw, %t, %h = moecomm.dispatch %x, %i, %w "
    "topology<ranks = 4, ranks_per_node = 2, experts = 8> "
    ": tensor<?x64xbf16>, tensor<?x2xi32>, tensor<?x2xf32>\n"
    "  %o = moecomm.combine %r, %h weighted : tensor<?x64xbf16>, "
    "!moecomm.handle<ranks = 4, ranks_per_node = 2, experts = 8> "
    "-> tensor<?x64xbf16>\n"
    "  return %o : tensor<?x64xbf16>\n"
    "}\n";

int main(void) {
  MlirContext ctx = mlirContextCreate();
  MlirDialectHandle moecomm = mlirGetDialectHandle__moecomm__();
  mlirDialectHandleRegisterDialect(moecomm, ctx);
  mlirDialectHandleRegisterDialect(mlirGetDialectHandle__func__(), ctx);
  MlirDialect dialect = mlirDialectHandleLoadDialect(moecomm, ctx);
  MlirStringRef ns = mlirDialectGetNamespace(dialect);
  // CHECK: loaded dialect: moecomm
  printf("loaded dialect: %.*s\n", (int)ns.length, ns.data);

  MlirOperation func = mlirOperationCreateParse(
      ctx, mlirStringRefCreateFromCString(kLayer),
      mlirStringRefCreateFromCString("layer.mlir"));
  if (mlirOperationIsNull(func)) {
    fprintf(stderr, "parse failed\n");
    return 1;
  }
  // CHECK: verified: 1
  printf("verified: %d\n", mlirOperationVerify(func));
  // CHECK: func.func @layer
  // CHECK: moecomm.dispatch %{{.*}} topology<ranks = 4, ranks_per_node = 2, experts = 8>
  // CHECK: moecomm.combine %{{.*}} weighted
  mlirOperationPrint(func, printToStdout, NULL);
  printf("\n");
  mlirOperationDestroy(func);

  MlirAttribute topo = mlirMoECommTopologyAttrGet(ctx, 8, 4, 64);
  // CHECK: topology: #moecomm.topology<ranks = 8, ranks_per_node = 4, experts = 64>
  printf("topology: ");
  mlirAttributePrint(topo, printToStdout, NULL);
  printf("\n");
  // CHECK: isa=1 ranks=8 per_node=4 experts=64
  printf("isa=%d ranks=%lld per_node=%lld experts=%lld\n",
         mlirAttributeIsAMoECommTopology(topo),
         (long long)mlirMoECommTopologyAttrGetRanks(topo),
         (long long)mlirMoECommTopologyAttrGetRanksPerNode(topo),
         (long long)mlirMoECommTopologyAttrGetExperts(topo));

  int diagnostics = 0;
  MlirDiagnosticHandlerID id = mlirContextAttachDiagnosticHandler(
      ctx, countDiagnostic, &diagnostics, NULL);
  MlirAttribute bad = mlirMoECommTopologyAttrGet(ctx, 6, 4, 0);
  mlirContextDetachDiagnosticHandler(ctx, id);
  // CHECK: invalid topology is null: 1, diagnostics: 1
  printf("invalid topology is null: %d, diagnostics: %d\n",
         mlirAttributeIsNull(bad), diagnostics);

  mlirContextDestroy(ctx);
  return 0;
}

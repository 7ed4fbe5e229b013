"""The compiler's C API, libMoEComm-C.so (dialect/include/moecomm-c/, with
MLIR's C API inside), loaded with cffi in ABI mode for moecomm.compile.

The declarations are a small hand-written cdef of the functions compile()
calls, as MLIR 22's headers declare them (mlir-c/IR.h, Diagnostics.h,
Pass.h, Target/LLVMIR.h, moecomm-c/Passes.h): MLIR's handles are structs of
one pointer passed by value, which cffi passes as C does. The LLVM-C calls
(LLVMContextCreate, LLVMPrintModuleToString, ...) are libLLVM's, which
libMoEComm-C.so links, so they resolve through it. MLIR's static inline
helpers (mlirLogicalResultIsFailure, mlirModuleIsNull) are not symbols: the
caller reads the struct fields instead.

The library is loaded on first use, not at `import moecomm`, so the runtime
half works where only the runtime is installed. Lookup, first match wins
(the runtime's, native.py): the environment variable MOECOMM_C_LIBRARY (a
path to the .so), libMoEComm-C.so inside the package folder, the install
prefix's library folder. When none exists, or it does not load, load()
raises CompileError saying what is missing and where it looked.
"""

import threading

import cffi

from .errors import CompileError
from .native import PACKAGE_DIR, find_file

_LIBRARY_NAME = "libMoEComm-C.so"

_DECLARATIONS = """
typedef struct { void *ptr; } MlirContext;
typedef struct { const void *ptr; } MlirDialectHandle;
typedef struct { const void *ptr; } MlirModule;
typedef struct { void *ptr; } MlirOperation;
typedef struct { const void *ptr; } MlirLocation;
typedef struct { const void *ptr; } MlirIdentifier;
typedef struct { void *ptr; } MlirDiagnostic;
typedef struct { void *ptr; } MlirPassManager;
typedef struct { void *ptr; } MlirOpPassManager;
typedef struct { const char *data; size_t length; } MlirStringRef;
typedef struct { int8_t value; } MlirLogicalResult;
typedef enum {
  MlirDiagnosticError, MlirDiagnosticWarning, MlirDiagnosticNote,
  MlirDiagnosticRemark
} MlirDiagnosticSeverity;
typedef uint64_t MlirDiagnosticHandlerID;
typedef void (*MlirStringCallback)(MlirStringRef, void *);
typedef MlirLogicalResult (*MlirDiagnosticHandler)(MlirDiagnostic, void *);

MlirContext mlirContextCreate(void);
void mlirContextDestroy(MlirContext context);
void mlirDialectHandleRegisterDialect(MlirDialectHandle handle, MlirContext context);
MlirDialectHandle mlirGetDialectHandle__moecomm__(void);
MlirDialectHandle mlirGetDialectHandle__func__(void);
MlirDialectHandle mlirGetDialectHandle__arith__(void);
MlirDialectHandle mlirGetDialectHandle__math__(void);
MlirDialectHandle mlirGetDialectHandle__tensor__(void);
MlirDialectHandle mlirGetDialectHandle__memref__(void);
MlirDialectHandle mlirGetDialectHandle__bufferization__(void);
MlirDialectHandle mlirGetDialectHandle__scf__(void);
MlirDialectHandle mlirGetDialectHandle__linalg__(void);
MlirDialectHandle mlirGetDialectHandle__llvm__(void);
MlirDialectHandle mlirGetDialectHandle__shard__(void);
void mlirRegisterAllLLVMTranslations(MlirContext context);
void mlirRegisterMoECommPipeline(void);

MlirDiagnosticHandlerID mlirContextAttachDiagnosticHandler(
    MlirContext context, MlirDiagnosticHandler handler, void *userData,
    void (*deleteUserData)(void *));
void mlirDiagnosticPrint(MlirDiagnostic diagnostic, MlirStringCallback callback,
                         void *userData);
MlirLocation mlirDiagnosticGetLocation(MlirDiagnostic diagnostic);
MlirDiagnosticSeverity mlirDiagnosticGetSeverity(MlirDiagnostic diagnostic);
intptr_t mlirDiagnosticGetNumNotes(MlirDiagnostic diagnostic);
MlirDiagnostic mlirDiagnosticGetNote(MlirDiagnostic diagnostic, intptr_t pos);
void mlirLocationPrint(MlirLocation location, MlirStringCallback callback,
                       void *userData);
_Bool mlirLocationIsAFileLineColRange(MlirLocation location);
MlirIdentifier mlirLocationFileLineColRangeGetFilename(MlirLocation location);
MlirStringRef mlirIdentifierStr(MlirIdentifier ident);
int mlirLocationFileLineColRangeGetStartLine(MlirLocation location);
int mlirLocationFileLineColRangeGetStartColumn(MlirLocation location);

MlirModule mlirModuleCreateParse(MlirContext context, MlirStringRef module);
MlirOperation mlirModuleGetOperation(MlirModule module);
void mlirModuleDestroy(MlirModule module);
void mlirOperationPrint(MlirOperation op, MlirStringCallback callback,
                        void *userData);

MlirPassManager mlirPassManagerCreateOnOperation(MlirContext context,
                                                 MlirStringRef anchorOp);
void mlirPassManagerDestroy(MlirPassManager passManager);
MlirOpPassManager mlirPassManagerGetAsOpPassManager(MlirPassManager passManager);
MlirLogicalResult mlirParsePassPipeline(MlirOpPassManager passManager,
                                        MlirStringRef pipeline,
                                        MlirStringCallback callback,
                                        void *userData);
MlirLogicalResult mlirPassManagerRunOnOp(MlirPassManager passManager,
                                         MlirOperation op);

typedef struct LLVMOpaqueContext *LLVMContextRef;
typedef struct LLVMOpaqueModule *LLVMModuleRef;
LLVMContextRef LLVMContextCreate(void);
void LLVMContextDispose(LLVMContextRef context);
LLVMModuleRef mlirTranslateModuleToLLVMIR(MlirOperation module,
                                          LLVMContextRef context);
char *LLVMPrintModuleToString(LLVMModuleRef module);
void LLVMDisposeMessage(char *message);
void LLVMDisposeModule(LLVMModuleRef module);
"""

ffi = cffi.FFI()
ffi.cdef(_DECLARATIONS)

_lock = threading.Lock()
_lib = None
_library_path = None


def load():
    """(lib, path): libMoEComm-C.so, loaded once per process. Raises
    CompileError naming what is missing and every place tried."""
    global _lib, _library_path
    with _lock:
        if _lib is None:
            try:
                path = find_file(
                    "the compiler's C API " + _LIBRARY_NAME,
                    "MOECOMM_C_LIBRARY",
                    lambda path: path,
                    [PACKAGE_DIR / _LIBRARY_NAME, PACKAGE_DIR.parents[2] / _LIBRARY_NAME],
                )
            except ImportError as error:
                raise CompileError("moecomm.compile needs the compiler", [str(error)]) from None
            try:
                lib = ffi.dlopen(str(path))
            except OSError as error:
                raise CompileError("moecomm.compile needs the compiler",
                                   [f"cannot load {path}: {error}"]) from None
            # Registering the pipeline twice is allowed; once is enough.
            lib.mlirRegisterMoECommPipeline()
            _lib, _library_path = lib, path
        return _lib, _library_path

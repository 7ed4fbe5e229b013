//===- UninstrumentedLLVM.cpp - ASan defaults for targets using libLLVM ---===//
//
// Linked into the fuzz targets that call Debian's libLLVM/libMLIR, which are
// built without ASan while this build is instrumented. LLVM's headers poison
// and unpoison allocator memory by hand (Allocator.h, Recycler.h) only where
// the including code is instrumented, so memory poisoned by our inlined copy
// is later handed out by the library's uninstrumented copy, and ASan reports
// a use-after-poison in MLIR's own storage (seen in fuzz_opt: memmove under
// FileLineColRange::get). allow_user_poisoning=0 turns the manual poisoning
// off; every other ASan check stays on. ASAN_OPTIONS still overrides this.
//
//===----------------------------------------------------------------------===//

extern "C" const char *__asan_default_options() {
  return "allow_user_poisoning=0";
}

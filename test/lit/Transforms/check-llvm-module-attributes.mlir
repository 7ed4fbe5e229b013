// moecomm-check-llvm-module-attributes (moecomm-pipeline's first pass)
// refuses the module attributes MLIR's translation to LLVM IR casts without
// checking; well-formed ones pass unchanged. (llvm.data_layout is the LLVM
// dialect verifier's: its kind and syntax are checked at the parse.)
// RUN: moecomm-opt %s -split-input-file -verify-diagnostics --moecomm-check-llvm-module-attributes | FileCheck %s

// expected-error @+1 {{module attribute 'llvm.target_triple' must be a string (the target triple), got 5 : i32}}
module attributes {llvm.target_triple = 5 : i32} {
}

// -----

// expected-error @+1 {{module attribute 'llvm.dependent_libraries' must be an array of strings (library names), got "m"}}
module attributes {llvm.dependent_libraries = "m"} {
}

// -----

// expected-error @+1 {{module attribute 'llvm.dependent_libraries' must be an array of strings (library names), got ["m", 1]}}
module attributes {llvm.dependent_libraries = ["m", 1]} {
}

// -----

// Every bad attribute is reported, each once.
// expected-error @+2 {{module attribute 'llvm.target_triple'}}
// expected-error @+1 {{module attribute 'llvm.dependent_libraries'}}
module attributes {llvm.target_triple = 5 : i32, llvm.dependent_libraries = 1 : i64} {
}

// -----

// CHECK: module attributes {llvm.data_layout = "e-m:e-i64:64-n32:64-S128", llvm.dependent_libraries = ["m"], llvm.target_triple = "x86_64-unknown-linux-gnu"}
module attributes {llvm.target_triple = "x86_64-unknown-linux-gnu", llvm.data_layout = "e-m:e-i64:64-n32:64-S128", llvm.dependent_libraries = ["m"]} {
}

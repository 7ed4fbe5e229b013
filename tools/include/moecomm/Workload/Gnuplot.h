//===- Gnuplot.h - driving Debian's gnuplot for PNGs ------------*- C++ -*-===//
//
// The tools draw their PNGs by writing a data file and a gnuplot script and
// running gnuplot on it (pngcairo where the gnuplot has it, else libgd's
// png). What every such figure needs: finding the program, quoting user
// text into a script, and running it with an error that quotes gnuplot's
// own last line.
//
//===----------------------------------------------------------------------===//
#ifndef MOECOMM_WORKLOAD_GNUPLOT_H
#define MOECOMM_WORKLOAD_GNUPLOT_H

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <string>

namespace moecomm::workload {

/// `text` as a gnuplot string expression that is exactly `text`: in single
/// quotes (gnuplot expands no escapes, backquotes or macros there; a quote
/// is written twice), each control character joined on as a double-quoted
/// octal escape: we"ir'd -> 'we"ir''d', a<LF>b -> 'a'."\012".'b'.
std::string gnuplotString(llvm::StringRef text);

/// `text` for a '#' comment line of a script or data file: control
/// characters (a line break would end the comment) become spaces.
std::string gnuplotComment(llvm::StringRef text);

/// The gnuplot program: `program` when given (it must be executable), else
/// `gnuplot` on PATH. io_error (one line, naming `option`, the flag that
/// asked for a PNG) when there is none.
llvm::Expected<std::string> findGnuplot(llvm::StringRef option,
                                        const std::string &program);

/// "pngcairo" when `program` has that terminal, else "png".
std::string pngTerminal(llvm::StringRef program);

/// Runs `program` on the script file `script`, in gnuplot's working
/// directory `directory` when one is given (a script's relative file names
/// are then in it; "" = this process's). io_error "gnuplot failed on
/// <script>: <gnuplot's last stderr line>" when it fails.
llvm::Error runGnuplot(llvm::StringRef program, llvm::StringRef script,
                       llvm::StringRef directory = "");

} // namespace moecomm::workload

#endif // MOECOMM_WORKLOAD_GNUPLOT_H

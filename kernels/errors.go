package kernels

import (
	"fmt"
	"strings"
)

// CompileError is a kernel the C compiler rejected.
type CompileError struct {
	// Name is the Source's name.
	Name string
	// SourcePath is the kept copy of the source in the cache directory.
	SourcePath string
	// Command is the compiler command line that failed.
	Command []string
	// Output is the compiler's diagnostics, trimmed to the first lines.
	Output string
	// Err is the process failure (exit status, or the context's error).
	Err error
}

func (e *CompileError) Error() string {
	return fmt.Sprintf("kernels: compiling %q failed (%s): %v; the source is kept at that path — fix the code generator, or report a ptgo bug attaching that file\n$ %s\n%s",
		e.Name, e.SourcePath, e.Err, strings.Join(e.Command, " "), e.Output)
}

func (e *CompileError) Unwrap() error { return e.Err }

// KernelError is a nonzero status returned by a kernel.
type KernelError struct {
	// Kernel is the symbol that was called.
	Kernel string
	// Status is its return value.
	Status int32
}

func (e *KernelError) Error() string {
	return fmt.Sprintf("kernels: kernel %s returned status %d; the generated code signals a runtime error (an index out of range?) for these inputs", e.Kernel, e.Status)
}

// Compiler diagnostics are trimmed to this many lines and bytes: the first
// errors matter, and gcc can print thousands of lines for one missing brace.
const (
	maxOutputLines = 40
	maxOutputBytes = 8 << 10
)

// trimOutput keeps the head of the compiler's output and says how much was cut.
func trimOutput(s string) string {
	s = strings.TrimSpace(s)
	if s == "" {
		return "(the compiler printed nothing)"
	}
	lines := strings.Split(s, "\n")
	kept, size := 0, 0
	for kept < len(lines) && kept < maxOutputLines && size+len(lines[kept]) <= maxOutputBytes {
		size += len(lines[kept]) + 1
		kept++
	}
	if kept == len(lines) {
		return s
	}
	if kept == 0 {
		return lines[0][:maxOutputBytes] + fmt.Sprintf("\n… (output cut at %d bytes)", maxOutputBytes)
	}
	return strings.Join(lines[:kept], "\n") + fmt.Sprintf("\n… (%d more lines)", len(lines)-kept)
}

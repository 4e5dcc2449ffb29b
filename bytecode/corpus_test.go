package bytecode

import (
	"bufio"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

// The corpus is every code object of the standard library and of torch.nn, dumped together
// with dis's view of it by testdata/dump_code.py (run once per test binary; the dump is
// ~50 MB, too large to commit). Records keep dis's instruction and exception lines as text
// and are parsed by the test that compares them.

// minCorpusCodes guards against a dump that silently lost most of its input: the standard
// library and torch.nn hold about 21,000 code objects with CPython 3.11.2.
const minCorpusCodes = 15000

type corpusRecord struct {
	Code    *Code
	DisIns  string // "I" line: offset opname arg target startsline line endline col endcol;...
	DisExc  string // "E" line: start end target depth lasti;...
	Summary string // where the code object comes from, for messages
}

var corpus struct {
	once    sync.Once
	records []corpusRecord
	err     error
}

// pythonPath is the CPython 3.11 with torch the tests compare against.
func pythonPath() string {
	if p := os.Getenv("PTGO_PYTHON"); p != "" {
		return p
	}
	return "/usr/bin/python3"
}

// requirePython fails the test when the reference interpreter is missing.
func requirePython(t *testing.T) string {
	t.Helper()
	p := pythonPath()
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("bytecode tests need CPython 3.11 with torch at %s (set PTGO_PYTHON to use another): %v", p, err)
	}
	return p
}

// loadCorpus runs the dump script once and parses its output.
func loadCorpus(t *testing.T) []corpusRecord {
	t.Helper()
	python := requirePython(t)
	corpus.once.Do(func() { corpus.records, corpus.err = dumpCorpus(python) })
	require.NoError(t, corpus.err)
	require.GreaterOrEqual(t, len(corpus.records), minCorpusCodes,
		"the dump holds implausibly few code objects; check testdata/dump_code.py's file walk")
	return corpus.records
}

func dumpCorpus(python string) ([]corpusRecord, error) {
	dir, err := os.MkdirTemp("", "ptgo-bytecode-corpus-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	workers := strconv.Itoa(min(runtime.NumCPU(), 4))
	cmd := exec.Command(python, filepath.Join("testdata", "dump_code.py"), dir, workers)
	if out, err := cmd.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("testdata/dump_code.py with %s failed: %v\n%s", python, err, out)
	}
	files, err := filepath.Glob(filepath.Join(dir, "dump-*.txt"))
	if err != nil || len(files) == 0 {
		return nil, fmt.Errorf("testdata/dump_code.py wrote no dump files in %s (%v)", dir, err)
	}
	var all []corpusRecord
	for _, f := range files {
		recs, err := parseDump(f)
		if err != nil {
			return nil, err
		}
		all = append(all, recs...)
	}
	return all, nil
}

func parseDump(path string) ([]corpusRecord, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 256<<20)
	var out []corpusRecord
	var cur *corpusRecord
	line := 0
	for sc.Scan() {
		line++
		tag, rest, _ := strings.Cut(sc.Text(), "\t")
		if tag != "C" && cur == nil {
			return nil, fmt.Errorf("%s:%d: %q record before any C record", path, line, tag)
		}
		var err error
		switch tag {
		case "C":
			out = append(out, corpusRecord{})
			cur = &out[len(out)-1]
			cur.Code, err = parseCodeHeader(rest)
			cur.Summary = cur.Code.where()
		case "B":
			err = parseCodeBytes(cur.Code, rest)
		case "N":
			cur.Code.Names = splitList(rest)
		case "V":
			cur.Code.VarNames = splitList(rest)
		case "L":
			cur.Code.CellVars = splitList(rest)
		case "F":
			cur.Code.FreeVars = splitList(rest)
		case "I":
			cur.DisIns = rest
		case "E":
			cur.DisExc = rest
		default:
			err = fmt.Errorf("unknown record tag %q", tag)
		}
		if err != nil {
			return nil, fmt.Errorf("%s:%d: %w", path, line, err)
		}
	}
	return out, sc.Err()
}

func splitList(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(s, ",")
}

func parseCodeHeader(s string) (*Code, error) {
	f := strings.Split(s, "\t")
	if len(f) != 11 {
		return nil, fmt.Errorf("C record has %d fields, want 11", len(f))
	}
	n := make([]int, 0, 8)
	for _, k := range []int{2, 4, 5, 6, 7, 8, 9, 10} {
		v, err := strconv.Atoi(f[k])
		if err != nil {
			return nil, fmt.Errorf("C record field %d: %w", k, err)
		}
		n = append(n, v)
	}
	return &Code{
		QualName: f[0], Filename: f[1], FirstLineNo: n[0], Name: f[3],
		ArgCount: n[1], PosOnlyArgCount: n[2], KwOnlyArgCount: n[3], NLocals: n[4],
		StackSize: n[5], Flags: CodeFlags(n[6]), NConsts: n[7],
	}, nil
}

func parseCodeBytes(c *Code, s string) error {
	f := strings.Split(s, "\t")
	if len(f) != 3 {
		return fmt.Errorf("B record has %d fields, want 3", len(f))
	}
	var err [3]error
	c.Bytecode, err[0] = hex.DecodeString(f[0])
	c.LineTable, err[1] = hex.DecodeString(f[1])
	c.ExceptionTable, err[2] = hex.DecodeString(f[2])
	for _, e := range err {
		if e != nil {
			return e
		}
	}
	return nil
}

// disInstr is one instruction as dis reports it; -1 stands for None, as in Position.
type disInstr struct {
	Offset     int
	Opname     string
	Arg        int // -1: None
	Target     int // -1: not a relative jump
	StartsLine int // -1: None
	Pos        Position
}

func parseDisInstrs(s string) ([]disInstr, error) {
	if s == "" {
		return nil, nil
	}
	items := strings.Split(s, ";")
	out := make([]disInstr, len(items))
	for i, it := range items {
		f := strings.Fields(it)
		if len(f) != 9 {
			return nil, fmt.Errorf("dis instruction %q has %d fields, want 9", it, len(f))
		}
		var v [9]int
		for k, x := range f {
			if k == 1 {
				continue
			}
			if x == "-" {
				v[k] = -1
				continue
			}
			n, err := strconv.Atoi(x)
			if err != nil {
				return nil, fmt.Errorf("dis instruction %q field %d: %w", it, k, err)
			}
			v[k] = n
		}
		out[i] = disInstr{Offset: v[0], Opname: f[1], Arg: v[2], Target: v[3], StartsLine: v[4],
			Pos: Position{Line: v[5], EndLine: v[6], Col: v[7], EndCol: v[8]}}
	}
	return out, nil
}

func parseDisExceptions(s string) ([]ExceptEntry, error) {
	if s == "" {
		return nil, nil
	}
	var out []ExceptEntry
	for _, it := range strings.Split(s, ";") {
		var e ExceptEntry
		var lasti int
		if _, err := fmt.Sscanf(it, "%d %d %d %d %d", &e.Start, &e.End, &e.Target, &e.Depth, &lasti); err != nil {
			return nil, fmt.Errorf("dis exception entry %q: %w", it, err)
		}
		e.Lasti = lasti != 0
		out = append(out, e)
	}
	return out, nil
}

// Package logs is ptgo's one set of named log channels (DESIGN §3: PTGO_LOGS).
//
// Every channel is registered here. A channel that is off costs one atomic load. Records are
// buffered and handed to a sink (pybridge forwards them to Python's logging, on the thread that
// holds the GIL, when a call into Go returns), so any goroutine may log.
//
// Configuration comes from the caller (pybridge passes what Python read from PTGO_LOGS); this
// package reads no environment variables.
package logs

import (
	"fmt"
	"sync"
	"sync/atomic"
)

// Channel is a log channel.
type Channel int

const (
	GraphCode Channel = iota
	Graph
	GraphBreaks
	Guards
	Recompiles
	Bytecode
	AOTGraphs
	OutputCode
	Fusion
	PerfHints
	CompileTimes
	Dynamo
	Inductor
	Dynamic
	NumChannels
)

var names = [NumChannels]string{"graph_code", "graph", "graph_breaks", "guards", "recompiles", "bytecode",
	"aot_graphs", "output_code", "fusion", "perf_hints", "compile_times", "dynamo", "inductor", "dynamic"}

func (c Channel) String() string { return names[c] }

// Level of a channel: off, info, or debug (more detail).
const (
	Off int32 = iota
	Info
	Debug
)

var levels [NumChannels]atomic.Int32

// ByName finds a channel.
func ByName(name string) (Channel, bool) {
	for i, n := range names {
		if n == name {
			return Channel(i), true
		}
	}
	return 0, false
}

// Configure sets every channel's level from a name → "info"/"debug" map; others go off.
func Configure(cfg map[string]string) error {
	var next [NumChannels]int32
	for name, lvl := range cfg {
		c, ok := ByName(name)
		if !ok {
			return fmt.Errorf("logs: unknown channel %q", name)
		}
		next[c] = Info
		if lvl == "debug" {
			next[c] = Debug
		}
	}
	for i := range levels {
		levels[i].Store(next[i])
	}
	return nil
}

// On reports whether c logs at info level.
func On(c Channel) bool { return levels[c].Load() >= Info }

// DebugOn reports whether c logs at debug level.
func DebugOn(c Channel) bool { return levels[c].Load() >= Debug }

// Record is one buffered log line.
type Record struct {
	Channel Channel
	Debug   bool
	Msg     string
}

var (
	mu      sync.Mutex
	pending []Record
)

// Printf logs at info level when c is on.
func Printf(c Channel, format string, args ...any) {
	if !On(c) {
		return
	}
	add(Record{Channel: c, Msg: fmt.Sprintf(format, args...)})
}

// Debugf logs at debug level when c is on at debug level.
func Debugf(c Channel, format string, args ...any) {
	if !DebugOn(c) {
		return
	}
	add(Record{Channel: c, Debug: true, Msg: fmt.Sprintf(format, args...)})
}

func add(r Record) {
	mu.Lock()
	pending = append(pending, r)
	mu.Unlock()
}

// Drain returns and clears the buffered records.
func Drain() []Record {
	mu.Lock()
	out := pending
	pending = nil
	mu.Unlock()
	return out
}

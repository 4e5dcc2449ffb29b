package main

import (
	"encoding/json"
	"fmt"

	"ptgo/bytecode/py"
	"ptgo/pipeline"
	"ptgo/primtorch"
)

// A torch.fx graph handed to ptgo's backend (torch.compile(m, backend="ptgo"), or
// ptgo.backends.torch_entry_point called by anyone): python/ptgo/fx_import.py serialises it,
// pipeline.ImportFX reads it, pipeline.Compile compiles it as it does captured graphs.

type fxOptions struct {
	GradEnabled bool     `json:"grad_enabled"`
	Freezing    bool     `json:"freezing"`
	Static      []string `json:"static"`
	Name        string   `json:"name"`
}

// fxSeq numbers the FX graphs for messages ("torch.fx graph 3").
var fxSeq int

// compileFX is ptgo_go_compile_fx: the options and the attrs dict turned into Go, then
// pipeline.CompileFX. The result is the tuple (compiled callable, guards JSON: fxGuardsJSON,
// {"frozen": bool, "inputs": [positions]}: what freezing made constants).
func compileFX(api py.API, graphJSON []byte, attrsDict py.Obj, optsJSON []byte, rerun py.Obj) (py.Obj, string, error) {
	var opts fxOptions
	if err := json.Unmarshal(optsJSON, &opts); err != nil {
		return 0, "", fmt.Errorf("ptgo BUG: bad fx compile options %s: %v", optsJSON, err)
	}
	fxSeq++
	attrs := map[string]py.Obj{}
	keys, vals := api.DictItems(attrsDict)
	for i, k := range keys {
		s, err := api.Str(k)
		if err != nil {
			return 0, "", fmt.Errorf("ptgo BUG: an attrs key that is not a str: %v", err)
		}
		attrs[s] = vals[i]
	}
	name := fmt.Sprintf("torch.fx graph %d", fxSeq)
	if opts.Name != "" && opts.Name != "forward" {
		name += " (" + opts.Name + ")"
	}
	req := &pipeline.FXRequest{Name: name, JSON: graphJSON, Attrs: attrs,
		GradEnabled: opts.GradEnabled, Freezing: opts.Freezing, Static: opts.Static}
	res, err := pipeline.CompileFX(&pyHost{api: api, rerun: rerun}, pipelineConfig(), req)
	if err != nil || res.Obj == 0 {
		if err != nil {
			return 0, "", err
		}
		return 0, res.Reason, nil
	}
	guards, err := fxGuardsJSON(res.Guards)
	if err != nil {
		return 0, "", err
	}
	frozen, err := json.Marshal(map[string]any{"frozen": res.Frozen, "inputs": res.FrozenInputs})
	if err != nil {
		return 0, "", err
	}
	return api.NewTuple([]py.Obj{res.Obj, api.NewStr(guards), api.NewStr(string(frozen))}), "", nil
}

// fxGuardsJSON writes the guards python/ptgo/fx_import.py checks on every call of a compiled
// symbolic FX graph: [{"sym": EXPR, "rel": ">=", "why": "..."}, ...], each asserting
// EXPR rel 0 with EXPR in fxgraph's {"sym": ...} form over the graph's symbols.
func fxGuardsJSON(gs []primtorch.SymGuard) (string, error) {
	out := make([]map[string]any, 0, len(gs))
	for _, g := range gs {
		c, terms := g.Left.Sub(g.Right).Terms()
		ts := make([][]any, len(terms))
		for i, t := range terms {
			ts[i] = []any{t.Coef, t.Syms}
		}
		out = append(out, map[string]any{"sym": map[string]any{"c": c, "terms": ts}, "rel": g.Rel.String(), "why": g.Why})
	}
	b, err := json.Marshal(out)
	return string(b), err
}

// fxImportText is the request "fx_import": the graph text ImportFX makes of a GraphModule's JSON
// (tests compare it with the captured graph's).
func fxImportText(in []byte) ([]byte, error) {
	var req struct {
		Graph       string `json:"graph"`
		GradEnabled bool   `json:"grad_enabled"`
	}
	if err := json.Unmarshal(in, &req); err != nil {
		return nil, err
	}
	g, err := pipeline.ImportFX([]byte(req.Graph), pipeline.ImportOptions{GradEnabled: req.GradEnabled})
	if err != nil {
		return json.Marshal(map[string]string{"unsupported": err.Error()})
	}
	return json.Marshal(map[string]string{"graph": g.String()})
}

package fxgraph

import (
	"testing"

	"ptgo/primtorch"
)

// A call to a torch function the registry does not hold has every effect until the tracer
// records what torch's schemas say of it; then it has those, plus a write when the call passes
// a keyword argument an overload writes (out=). A prims.fallback of it asks the same fact.
func TestEffectsOfFunctionsTheRegistryLacks(t *testing.T) {
	g := New("f")
	x := g.AddPlaceholder("x", &primtorch.TensorMeta{DType: primtorch.Float32, Shape: []int64{3}, Strides: []int64{1}})
	call := g.AddCall("torch.not_in_registry_x", []Arg{x}, nil, x.Meta)
	out := g.AddCall("torch.not_in_registry_x", []Arg{x}, []Kwarg{{Name: "out", Value: x}}, x.Meta)
	fb := g.AddCall("prims.fallback", []Arg{Const{V: "torch.not_in_registry_x"}, x}, nil, x.Meta)
	for _, n := range []*Node{call, out, fb} {
		if got := CallEffects(n); got != allEffects {
			t.Fatalf("before learning: %v, want every effect", got)
		}
	}
	primtorch.LearnTorchCallEffects("torch.not_in_registry_x", primtorch.EffectRaises, []string{"out"})
	if got := CallEffects(call); got != primtorch.EffectRaises {
		t.Errorf("call: %v, want raises only", got)
	}
	if got := CallEffects(out); got != primtorch.EffectRaises|primtorch.EffectWrites {
		t.Errorf("call with out=: %v, want raises and writes", got)
	}
	if got := CallEffects(fb); got != primtorch.EffectRaises {
		t.Errorf("fallback: %v, want raises only", got)
	}
}

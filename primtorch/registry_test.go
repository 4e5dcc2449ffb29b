package primtorch

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestRegistryInvariants(t *testing.T) {
	ops := Ops()
	require.Len(t, ops, int(NumOps))
	require.GreaterOrEqual(t, len(ops), 150, "the registry should cover at least 150 torch-level ops")
	for i := OpID(0); i < NumOps; i++ {
		op := i.Op()
		require.Equal(t, i, op.ID, "opsByID[%d] has ID %d", i, op.ID)
		require.Equal(t, op.Name, i.String())
		require.Same(t, op, LookupName(op.Name))
		require.NotEmpty(t, op.Targets, "%s has no targets", op.Name)
		require.Same(t, op.Schema, op.Sigs[0], "%s: Sigs[0] must be Schema", op.Name)
		require.Same(t, op, op.Canonical())
		require.Contains(t, op.Overloads(), op, "%s is not among its own overloads", op.Name)
		if op.DataDependent {
			require.Nil(t, op.meta, "%s is data-dependent but has a meta function", op.Name)
		} else {
			require.NotNil(t, op.meta, "%s has no meta function", op.Name)
		}
		if op.Functional != nil {
			require.Equal(t, AliasInPlace, op.Alias, "%s: in-place op", op.Name)
			require.Equal(t, []int{0}, op.Mutates, "%s mutates self", op.Name)
			require.Same(t, op, op.Functional.Inplace)
			require.True(t, strings.HasPrefix(op.Name, op.Functional.Schema.Name+"_"), "%s is the in-place form of %s", op.Name, op.Functional.Name)
		}
		if op.Kind == KindView && op.Name != "broadcast_tensors" {
			require.NotEqual(t, AliasNone, op.Alias, "%s is a view op without an alias annotation", op.Name)
		}
		for _, tgt := range op.Targets {
			v := Lookup(tgt)
			require.NotNil(t, v, tgt)
			found := false
			for _, o := range v.Overloads() {
				if o.ID == op.ID {
					found = true
					require.Same(t, op, o.Canonical())
				}
			}
			require.True(t, found, "target %s does not reach %s", tgt, op.Name)
		}
	}
	require.Nil(t, Lookup("torch.no_such_op"))
	require.Equal(t, "add.Tensor", OpAdd.String())
	require.Equal(t, "add_.Tensor", OpAddInplace.String())
}

var viewTests = []struct {
	target  string
	method  bool
	sigName string
}{
	{"torch.nn.functional.relu", false, "relu"},
	{"torch.relu", false, "relu"},
	{"Tensor.relu", true, "relu"},
	{"torch.nn.functional.softmax", false, "softmax"},
	{"torch.softmax", false, "softmax.int"},
}

func TestTargetViews(t *testing.T) {
	for _, tt := range viewTests {
		op := Lookup(tt.target)
		require.Equal(t, tt.method, op.method, tt.target)
		require.Equal(t, tt.sigName, op.Sigs[0].FullName(), tt.target)
		require.Same(t, op.Canonical(), LookupName(op.Name), tt.target)
	}
	// The registry's op accepts every signature: F-level calls work on it too.
	_, err := OpRelu.Op().Meta([]Value{f32(2)}, []KV{{"inplace", true}})
	require.NoError(t, err)
}

// TestTargetsExistInTorch checks that every registered target names a real callable of torch
// 1.13, so no row promises a target the capture stage can never see.
func TestTargetsExistInTorch(t *testing.T) {
	script := `
import operator, sys, torch
missing = []
for t in sys.stdin.read().split():
    try:
        if t.startswith("Tensor."):
            obj = getattr(torch.Tensor, t[len("Tensor."):])
        elif t.startswith("operator."):
            obj = getattr(operator, t[len("operator."):])
        else:
            obj = torch
            for part in t.split(".")[1:]:
                obj = getattr(obj, part)
        if not callable(obj):
            missing.append(t)
    except AttributeError:
        missing.append(t)
print(torch.__version__, " ".join(missing))
`
	var targets []string
	for _, tgt := range Targets() {
		if !Lookup(tgt).IsPrim() { // core ops are ptgo's own
			targets = append(targets, tgt)
		}
	}
	out := strings.Fields(runPython(t, strings.Join(targets, "\n"), "-c", script))
	require.NotEmpty(t, out)
	v, err := ParseTorchVersion(out[0])
	require.NoError(t, err)
	var missing []string
	for _, tgt := range out[1:] {
		if Lookup(tgt).InTorch(v) { // an op of a later torch (Op.Since) is missing there
			missing = append(missing, tgt)
		}
	}
	require.Empty(t, missing, "targets torch %s does not have; remove them from their registry rows", v)
}

var requiresGradTests = []struct {
	name        string
	gradEnabled bool
	inputs      []*TensorMeta
	out         *TensorMeta
	op          *Op
	want        bool
}{
	{"float result of grad input", true, []*TensorMeta{{DType: Float32, RequiresGrad: true}}, &TensorMeta{DType: Float32}, OpAdd.Op(), true},
	{"no grad mode", false, []*TensorMeta{{DType: Float32, RequiresGrad: true}}, &TensorMeta{DType: Float32}, OpAdd.Op(), false},
	{"integer result", true, []*TensorMeta{{DType: Float32, RequiresGrad: true}}, &TensorMeta{DType: Int64}, OpArgmax.Op(), false},
	{"non-differentiable", true, []*TensorMeta{{DType: Float32, RequiresGrad: true}}, &TensorMeta{DType: Float32}, OpZerosLike.Op(), false},
	{"factory requires_grad=True", false, nil, &TensorMeta{DType: Float32, RequiresGrad: true}, OpZeros.Op(), true},
	{"in-place on a grad tensor", false, []*TensorMeta{{DType: Float32, RequiresGrad: true}}, &TensorMeta{DType: Float32}, OpAddInplace.Op(), true},
	{"detach", true, []*TensorMeta{{DType: Float32, RequiresGrad: true}}, &TensorMeta{DType: Float32}, OpDetach.Op(), false},
	{"no grad inputs", true, []*TensorMeta{{DType: Float32}}, &TensorMeta{DType: Float32}, nil, false},
}

func TestResultRequiresGrad(t *testing.T) {
	for _, tt := range requiresGradTests {
		require.Equal(t, tt.want, ResultRequiresGrad(tt.gradEnabled, tt.inputs, tt.out, tt.op), tt.name)
	}
}

package bytecode

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"ptgo/bytecode/py"
	"ptgo/pybridge/embed"
)

// The capture corpus: each testdata/capture/<name>.py defines fn and args() (and optionally
// kwargs()); the golden <name>.txt holds the captured graph, the guards and the break reason.
// The interpreter runs on the real objects, in an interpreter embedded in the test binary.

const slotsHelper = `
import inspect

def slots(fn, args, kwargs):
    """The frame's argument slots for fn(*args, **kwargs), in co_varnames order."""
    sig = inspect.signature(fn)
    bound = sig.bind(*args, **kwargs)
    bound.apply_defaults()
    code = fn.__code__
    n = code.co_argcount + code.co_kwonlyargcount
    names = list(code.co_varnames[:n])
    if code.co_flags & inspect.CO_VARARGS:
        names.append(code.co_varnames[n])
        n += 1
    if code.co_flags & inspect.CO_VARKEYWORDS:
        names.append(code.co_varnames[n])
    return [bound.arguments.get(nm, () if p.kind == p.VAR_POSITIONAL else {}) if (p := sig.parameters.get(nm)) else None
            for nm in names]
`

func getGlobal(api py.API, g py.Obj, name string) (py.Obj, bool) {
	o, err := api.GetItem(g, api.NewStr(name))
	return o, err == nil
}

// captureCase captures fn of a corpus file and renders the result as text.
func captureCase(api py.API, name, src string) (string, error) {
	helper, err := embed.Exec(api, "ptgo_slots", slotsHelper)
	if err != nil {
		return "", err
	}
	g, err := embed.Exec(api, name, src)
	if err != nil {
		return "", fmt.Errorf("running %s.py: %w", name, err)
	}
	fn, ok := getGlobal(api, g, "fn")
	if !ok {
		return "", fmt.Errorf("%s.py defines no fn", name)
	}
	argsFn, ok := getGlobal(api, g, "args")
	if !ok {
		return "", fmt.Errorf("%s.py defines no args()", name)
	}
	args, err := api.Call(argsFn, nil, nil)
	if err != nil {
		return "", err
	}
	kwargs, _ := api.NewDict(nil, nil)
	if kwFn, ok := getGlobal(api, g, "kwargs"); ok {
		if kwargs, err = api.Call(kwFn, nil, nil); err != nil {
			return "", err
		}
	}
	slotsFn, _ := getGlobal(api, helper, "slots")
	slots, err := api.Call(slotsFn, []py.Obj{fn, args, kwargs}, nil)
	if err != nil {
		return "", err
	}
	n, _ := api.Len(slots)
	argv := make([]py.Obj, n)
	for i := range argv {
		argv[i], _ = api.Index(slots, i)
	}
	code, err := api.GetAttr(fn, "__code__")
	if err != nil {
		return "", err
	}
	// A case's global `model` is the module the user compiled (ptgo.compile(model)): captures
	// specialise to it. Other modules reached from arguments go by class.
	root, _ := getGlobal(api, g, "model")
	cap, err := CaptureFrame(NewEnv(api), &FrameRequest{Func: fn, Code: code, Args: argv, AllowBreaks: true, Root: root})
	return renderCapture(cap, err), nil
}

func renderCapture(cap *Capture, err error) string {
	var b strings.Builder
	if cap != nil && cap.Graph != nil {
		b.WriteString(cap.Graph.String())
	} else if err == nil {
		b.WriteString("no graph (the frame does no tensor work)\n")
	}
	if err != nil {
		if u, ok := err.(*Unsupported); ok {
			fmt.Fprintf(&b, "runs eagerly: %s\n  at: %s\n  hint: %s\n", u.Reason, u.Where, u.Hint)
		} else if ue, ok := err.(*UserError); ok {
			fmt.Fprintf(&b, "runs eagerly, eager raises %s: %s\n  at: %s\n", ue.PyType, ue.Msg, ue.Where)
		} else {
			fmt.Fprintf(&b, "error: %v\n", err)
		}
	}
	if cap != nil && cap.Break != nil {
		br := cap.Break
		fmt.Fprintf(&b, "graph break at %d %s %d: %s\n  at: %s\n", br.Instr.Offset, br.Instr.Op, br.Instr.Arg, br.Reason.Reason, br.Reason.Where)
		var stack []string
		for _, v := range br.Stack {
			stack = append(stack, v.Describe())
		}
		fmt.Fprintf(&b, "  stack: [%s]\n", strings.Join(stack, ", "))
	}
	if cap != nil && cap.Effects != nil && !cap.Effects.Empty() {
		b.WriteString("side effects:\n")
		for _, l := range cap.Effects.lists {
			fmt.Fprintf(&b, "  %s[:] = list of %d\n", l.Source.Name(), len(l.Items))
		}
		for _, d := range cap.Effects.deques {
			fmt.Fprintf(&b, "  %s = deque of %d\n", d.Source.Name(), len(d.Items))
		}
		for _, d := range cap.Effects.dicts {
			fmt.Fprintf(&b, "  %s = dict of %d\n", d.Source.Name(), len(d.Keys))
		}
		for _, a := range cap.Effects.attrs {
			fmt.Fprintf(&b, "  %s.%s = %s\n", a.obj.Source.Name(), a.name, a.value.Describe())
		}
		for _, g := range cap.Effects.globals {
			fmt.Fprintf(&b, "  global %s = %s\n", g.name, g.value.Describe())
		}
		for _, c := range cap.Effects.cells {
			fmt.Fprintf(&b, "  cell %s = %s\n", c.cell.Source.Name(), c.value.Describe())
		}
	}
	if cap != nil && cap.Guards != nil {
		b.WriteString("guards:\n")
		for _, c := range cap.Guards.Checks() {
			// Object reprs carry addresses and install paths: keep the stable part.
			if i := strings.Index(c, " from '"); i >= 0 {
				c = c[:i] + ">"
			}
			if i := strings.Index(c, " at 0x"); i >= 0 {
				c = c[:i] + ">"
			}
			b.WriteString("  " + c + "\n")
		}
	}
	return b.String()
}

func TestCaptureCorpus(t *testing.T) {
	if !embed.Available {
		t.Skip("capture tests embed CPython and need cgo")
	}
	files, err := filepath.Glob("testdata/capture/*.py")
	require.NoError(t, err)
	require.GreaterOrEqual(t, len(files), 20, "the capture corpus is missing")
	for _, file := range files {
		name := strings.TrimSuffix(filepath.Base(file), ".py")
		t.Run(name, func(t *testing.T) {
			src, err := os.ReadFile(file)
			require.NoError(t, err)
			var got string
			require.NoError(t, embed.Do(func(api py.API) error {
				var err error
				got, err = captureCase(api, name, string(src))
				return err
			}))
			checkGolden(t, "capture/"+name+".txt", got)
		})
	}
}

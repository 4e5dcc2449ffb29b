package bytecode

// InstallCompileShapeGuards turns the guards the backend added to the graph's ShapeEnv while
// compiling (a derivative formula that decided a size at its hint, a symbol it specialised:
// aotautograd's split) into guard instructions, like those the trace assumed: the compiled
// code is only right where they hold. Guards already installed are not added twice.
func (c *Capture) InstallCompileShapeGuards() {
	if c == nil || c.Graph == nil || c.Graph.Shapes == nil || c.Guards == nil {
		return
	}
	for _, g := range c.Graph.Shapes.Guards() {
		c.Guards.Sym(g, c.SymSources)
	}
	installFloatGuards(c.Guards, c.Graph.Shapes, c.FloatSources)
}

package inductor

func (cg *cgen) splitOK() bool { return false }
func (cg *cgen) split()        {}

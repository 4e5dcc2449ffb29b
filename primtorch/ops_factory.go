package primtorch

// factoryKw are the keyword-only options torch's factories take.
const factoryKw = "ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None, bool requires_grad=False"

// Factories: new tensors from sizes, scalars or another tensor's meta.
var factoryDefs = []*def{
	row(OpZeros, KindFactory, PromoteNone, "zeros(int[] size, *, "+factoryKw+") -> Tensor", "torch.zeros", metaFactory).with(fOut | fNonDiff | fSymbolic),
	row(OpOnes, KindFactory, PromoteNone, "ones(int[] size, *, "+factoryKw+") -> Tensor", "torch.ones", metaFactory).with(fOut | fNonDiff | fSymbolic),
	row(OpEmpty, KindFactory, PromoteNone, "empty(int[] size, *, "+factoryKw+", MemoryFormat? memory_format=None) -> Tensor", "torch.empty", metaFactory).with(fOut | fNonDiff | fSymbolic),
	row(OpFull, KindFactory, PromoteNone, "full(int[] size, Scalar fill_value, *, "+factoryKw+") -> Tensor", "torch.full", metaFactory).with(fOut | fNonDiff | fSymbolic),
	row(OpRand, KindFactory, PromoteNone, "rand(int[] size, *, Generator? generator=None, "+factoryKw+") -> Tensor", "torch.rand", metaFactory).with(fOut | fNonDiff | fRandom | fSymbolic),
	row(OpRandn, KindFactory, PromoteNone, "randn(int[] size, *, Generator? generator=None, "+factoryKw+") -> Tensor", "torch.randn", metaFactory).with(fOut | fNonDiff | fRandom | fSymbolic),
	row(OpRandint, KindFactory, PromoteNone, "randint.low(int low, int high, int[] size, *, Generator? generator=None, "+factoryKw+") -> Tensor", "torch.randint", metaFactory).
		alt("randint(int high, int[] size, *, Generator? generator=None, " + factoryKw + ") -> Tensor").with(fOut | fNonDiff | fRandom | fSymbolic),
	row(OpRandperm, KindFactory, PromoteNone, "randperm(int n, *, Generator? generator=None, "+factoryKw+") -> Tensor", "torch.randperm", metaRandperm).with(fOut | fNonDiff | fRandom | fSymbolic),
	row(OpArange, KindFactory, PromoteNone, "arange.start_step(Scalar start, Scalar end, Scalar step=1, *, "+factoryKw+") -> Tensor", "torch.arange", metaArange).
		alt("arange(Scalar end, *, " + factoryKw + ") -> Tensor").with(fOut | fNonDiff | fSymbolic),
	row(OpLinspace, KindFactory, PromoteNone, "linspace(Scalar start, Scalar end, int steps, *, "+factoryKw+") -> Tensor", "torch.linspace", metaLinspace).with(fOut | fNonDiff | fSymbolic),
	row(OpLogspace, KindFactory, PromoteNone, "logspace(Scalar start, Scalar end, int steps, float base=10.0, *, "+factoryKw+") -> Tensor", "torch.logspace", metaLinspace).with(fOut | fNonDiff | fSymbolic),
	row(OpEye, KindFactory, PromoteNone, "eye(int n, int? m=None, *, "+factoryKw+") -> Tensor", "torch.eye", metaEye).with(fOut | fNonDiff | fSymbolic),
	row(OpEmptyStrided, KindFactory, PromoteNone, "empty_strided(int[] size, int[] stride, *, "+factoryKw+") -> Tensor", "torch.empty_strided", metaEmptyStrided).with(fNonDiff | fSymbolic),
	row(OpTensor, KindFactory, PromoteNone, "tensor(Any data, *, ScalarType? dtype=None, Device? device=None, bool requires_grad=False, bool pin_memory=False) -> Tensor", "torch.tensor", metaTensor).with(fNonDiff | fSymbolic),
	row(OpScalarTensor, KindFactory, PromoteNone, "scalar_tensor(Scalar s, *, "+factoryKw+") -> Tensor", "torch.scalar_tensor", metaScalarTensor).with(fNonDiff | fSymbolic),
	row(OpZerosLike, KindFactory, PromoteNone, "zeros_like(Tensor self, *, "+factoryKw+", MemoryFormat? memory_format=None) -> Tensor", "torch.zeros_like", metaLike).with(fNonDiff | fSymbolic),
	row(OpOnesLike, KindFactory, PromoteNone, "ones_like(Tensor self, *, "+factoryKw+", MemoryFormat? memory_format=None) -> Tensor", "torch.ones_like", metaLike).with(fNonDiff | fSymbolic),
	row(OpEmptyLike, KindFactory, PromoteNone, "empty_like(Tensor self, *, "+factoryKw+", MemoryFormat? memory_format=None) -> Tensor", "torch.empty_like", metaLike).with(fNonDiff | fSymbolic),
	row(OpFullLike, KindFactory, PromoteNone, "full_like(Tensor self, Scalar fill_value, *, "+factoryKw+", MemoryFormat? memory_format=None) -> Tensor", "torch.full_like", metaLike).with(fNonDiff | fSymbolic),
	row(OpRandLike, KindFactory, PromoteNone, "rand_like(Tensor self, *, "+factoryKw+", MemoryFormat? memory_format=None) -> Tensor", "torch.rand_like", metaLike).with(fNonDiff | fRandom | fSymbolic),
	row(OpRandnLike, KindFactory, PromoteNone, "randn_like(Tensor self, *, "+factoryKw+", MemoryFormat? memory_format=None) -> Tensor", "torch.randn_like", metaLike).with(fNonDiff | fRandom | fSymbolic),
	row(OpRandintLike, KindFactory, PromoteNone, "randint_like.low_dtype(Tensor self, int low, int high, *, "+factoryKw+", MemoryFormat? memory_format=None) -> Tensor", "torch.randint_like", metaLike).
		alt("randint_like(Tensor self, int high, *, " + factoryKw + ", MemoryFormat? memory_format=None) -> Tensor").with(fNonDiff | fRandom | fSymbolic),
	// Tensor.bernoulli_ fills self with draws of torch's generator (torchvision's stochastic
	// depth, timm's drop_path: a fresh tensor's noise); torch.bernoulli (whose .p form requires
	// grad on torch 2 but not on 1.13) has no row: torch's meta and kernel serve it.
	row(OpBernoulliInplace, KindOther, PromoteNone, "bernoulli_.float(Tensor(a!) self, float p=0.5, *, Generator? generator=None) -> Tensor(a!)", "Tensor.bernoulli_", metaBernoulliInplace).
		alt("bernoulli_.Tensor(Tensor(a!) self, Tensor p, *, Generator? generator=None) -> Tensor(a!)").with(fRandom | fSymbolic).
		raises(bernoulliTensorP),
	row(OpNewZeros, KindFactory, PromoteNone, "new_zeros(Tensor self, int[] size, *, "+factoryKw+") -> Tensor", "Tensor.new_zeros", metaNew).with(fNonDiff | fSymbolic),
	row(OpNewOnes, KindFactory, PromoteNone, "new_ones(Tensor self, int[] size, *, "+factoryKw+") -> Tensor", "Tensor.new_ones", metaNew).with(fNonDiff | fSymbolic),
	row(OpNewEmpty, KindFactory, PromoteNone, "new_empty(Tensor self, int[] size, *, "+factoryKw+") -> Tensor", "Tensor.new_empty", metaNew).with(fNonDiff | fSymbolic),
	row(OpNewFull, KindFactory, PromoteNone, "new_full(Tensor self, int[] size, Scalar fill_value, *, "+factoryKw+") -> Tensor", "Tensor.new_full", metaNew).with(fNonDiff | fSymbolic),
}

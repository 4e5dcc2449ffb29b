// The depthwise kernel's body (ptgo_depthwise.cpp includes it once per instruction set, in a
// namespace of its own, under that set's target pragma; PTGO_DW_MASKED: AVX-512's masked
// loads and stores are there).

// Unaligned vector access to floats.
template <typename V>
inline __attribute__((always_inline)) V loadu(const float* p) {
  typedef float VU __attribute__((vector_size(sizeof(V)), aligned(4)));
  return *reinterpret_cast<const VU*>(p);
}
template <typename V>
inline __attribute__((always_inline)) void storeu(float* p, V v) {
  typedef float VU __attribute__((vector_size(sizeof(V)), aligned(4)));
  *reinterpret_cast<VU*>(p) = v;
}

// x in every lane (x + -0.0 is x, which gcc folds to a broadcast; 0.0 + x would cost an add).
template <typename V>
inline __attribute__((always_inline)) V splat(float x) {
  return x + -V{};
}

// e^x per lane (Cephes' expf: x = n·ln2 + r, a degree-6 polynomial in r, 2^n from the exponent
// bits; within 2 ulp of the correctly rounded value), inf above 88.72, 0 below -87.33, NaN kept
// (x / (1 + e^-x) of a NaN is NaN whatever e^-x gives).
template <typename V>
inline __attribute__((always_inline)) V vexp(V x) {
  typedef int VI __attribute__((vector_size(sizeof(V))));
  const V lo = splat<V>(-87.0f), hi = splat<V>(88.0f);
  V c = x < lo ? lo : x;
  c = c > hi ? hi : c;
  const V n = (c * splat<V>(1.44269504088896341f) + splat<V>(12582912.0f)) - splat<V>(12582912.0f);
  V r = c - n * splat<V>(0.693359375f);
  r = r - n * splat<V>(-2.12194440e-4f);
  V p = splat<V>(1.9875691500e-4f);
  p = p * r + splat<V>(1.3981999507e-3f);
  p = p * r + splat<V>(8.3334519073e-3f);
  p = p * r + splat<V>(4.1665795894e-2f);
  p = p * r + splat<V>(1.6666665459e-1f);
  p = p * r + splat<V>(5.0000001201e-1f);
  const V y = p * r * r + r + splat<V>(1.0f);
  const VI bits = (__builtin_convertvector(n, VI) + 127) << 23;
  V e = y * reinterpret_cast<const V&>(bits);
  e = x > splat<V>(88.72f) ? splat<V>(__builtin_inff()) : e;
  return x < splat<V>(-87.33f) ? V{} : e;
}

// The vector of floats S..S+L-1 of the concatenation lo:hi (one valignd on AVX-512).
template <typename V, int L, int S, size_t... I>
inline __attribute__((always_inline)) V shifted(V lo, V hi, std::index_sequence<I...>) {
  typedef int VI __attribute__((vector_size(sizeof(V))));
  if constexpr (S == 0) return lo;
  else return __builtin_shuffle(lo, hi, VI{static_cast<int>(S + I)...});
}

// The even (P = 0) or odd (P = 1) floats of the concatenation lo:hi.
template <typename V, int P, size_t... I>
inline __attribute__((always_inline)) V strided2(V lo, V hi, std::index_sequence<I...>) {
  typedef int VI __attribute__((vector_size(sizeof(V))));
  return __builtin_shuffle(lo, hi, VI{static_cast<int>(2 * I + P)...});
}

// A group of taps: the taps of one kernel row that read one column phase, at shifts
// 0..NS-1 of it, with weights w[0], w[ws], w[2·ws], ...
struct Group {
  int64_t off;  // into the phase planes, at the block's first output
  int w, ws, ns;
};

// Tap S of a group: acc += w · (x shifted by S floats).
template <typename V, int L, int NB, int S>
inline __attribute__((always_inline)) void tap(V* acc, const V* x, float w) {
  constexpr int Q = S / L, R = S % L;
  const V wv = splat<V>(w);
#pragma GCC unroll 16
  for (int v = 0; v < NB; v++) acc[v] += wv * shifted<V, L, R>(x[v + Q], x[v + Q + 1], std::make_index_sequence<L>{});
}

template <typename V, int L, int NB, size_t... S>
inline __attribute__((always_inline)) void taps(V* acc, const V* x, const float* w, int ws, std::index_sequence<S...>) {
  (tap<V, L, NB, static_cast<int>(S)>(acc, x, w[S * ws]), ...);
}

template <typename V, int L, int NB, int NS>
inline __attribute__((always_inline)) void group(V* acc, const float* p, const float* w, int ws) {
  constexpr int extra = (NS - 1 + L - 1) / L;  // vectors past the block the shifts reach into
  V x[NB + extra + 1];
#pragma GCC unroll 16
  for (int v = 0; v < NB + extra; v++) x[v] = loadu<V>(p + v * L);
  taps<V, L, NB>(acc, x, w, ws, std::make_index_sequence<NS>{});
}

// NB vectors of outputs from the flat position f0 on, activated, into t.
template <typename V, int L, int NB>
inline __attribute__((always_inline)) void block(const float* q, const Group* gs, int ngroups, const float* wk,
                                                 int64_t f0, float bias, int act, float* t) {
  V acc[NB];
#pragma GCC unroll 16
  for (int v = 0; v < NB; v++) acc[v] = splat<V>(bias);
  for (int k = 0; k < ngroups; k++) {
    const Group& g = gs[k];
    const float* p = q + g.off + f0;
    const float* w = wk + g.w;
    switch (g.ns) {
      case 1: group<V, L, NB, 1>(acc, p, w, g.ws); break;
      case 2: group<V, L, NB, 2>(acc, p, w, g.ws); break;
      case 3: group<V, L, NB, 3>(acc, p, w, g.ws); break;
      case 4: group<V, L, NB, 4>(acc, p, w, g.ws); break;
      case 5: group<V, L, NB, 5>(acc, p, w, g.ws); break;
      case 6: group<V, L, NB, 6>(acc, p, w, g.ws); break;
      default: group<V, L, NB, 7>(acc, p, w, g.ws); break;
    }
  }
  const V zero = V{}, six = splat<V>(6.f);
#pragma GCC unroll 16
  for (int v = 0; v < NB; v++) {
    V a = acc[v];
    // as torch's relu and hardtanh: NaN stays NaN
    if (act == PTGO_DW_RELU) a = a < zero ? zero : a;
    else if (act == PTGO_DW_RELU6) a = a < zero ? zero : (a > six ? six : a);
    else if (act == PTGO_DW_SILU) a = a / (vexp<V>(-a) + splat<V>(1.0f));  // torch's x / (exp(-x) + 1)
    storeu<V>(t + f0 + v * L, a);
  }
}

// n floats from src to dst.
template <typename V, int L>
inline __attribute__((always_inline)) void copy(float* dst, const float* src, int64_t n) {
  int64_t c = 0;
  for (; c + L <= n; c += L) storeu<V>(dst + c, loadu<V>(src + c));
#ifdef PTGO_DW_MASKED
  if (c < n) {
    const __mmask16 m = static_cast<__mmask16>((1u << (n - c)) - 1);
    _mm512_mask_storeu_ps(dst + c, m, _mm512_maskz_loadu_ps(m, src + c));
  }
#else
  for (; c < n; c++) dst[c] = src[c];
#endif
}

// n floats from src to dst, and zeros up to the next multiple of L where masked loads are
// there (the phase planes have room: the zeros land on padding, or on a later row's place before
// that row is copied). Full-width stores: the tap loads that soon read them forward better.
template <typename V, int L>
inline __attribute__((always_inline)) void copy_in(float* dst, const float* src, int64_t n) {
  int64_t c = 0;
  for (; c + L <= n; c += L) storeu<V>(dst + c, loadu<V>(src + c));
#ifdef PTGO_DW_MASKED
  if (c < n) storeu<V>(dst + c, _mm512_maskz_loadu_ps(static_cast<__mmask16>((1u << (n - c)) - 1), src + c));
#else
  for (; c < n; c++) dst[c] = src[c];
#endif
}

template <typename V, int L, int NB>
__attribute__((noinline)) void planes(const float* x, const float* w, const float* b, float* y, const Geo& g, int act,
                                      int64_t C, int64_t p0, int64_t p1, float* scratch) {
  const int64_t nph = g.sh * g.sw;
  // two sets of phase planes: the next plane's input is copied while this one's taps run
  float* qs[2] = {scratch, scratch + nph * g.plane};
  float* t = scratch + 2 * nph * g.plane;  // Ho×Wq results
  Group gs[64];
  int ngroups = 0;
  for (int64_t a = 0; a < g.kh; a++)
    for (int64_t pc = 0; pc < g.sw && pc < g.kw; pc++)
      gs[ngroups++] = Group{((a % g.sh) * g.sw + pc) * g.plane + (a / g.sh) * g.Wq, static_cast<int>(a * g.kw + pc),
                            static_cast<int>(g.sw), static_cast<int>((g.kw - pc + g.sw - 1) / g.sw)};
  // where each input row goes: its row phase's planes, at its row there; rows past the last
  // phase row are never read
  std::vector<int64_t> rowoff;
  for (int64_t r = 0; r < g.H; r++) {
    const int64_t pr = (r + g.ph) % g.sh, rq = (r + g.ph) / g.sh;
    if (rq >= g.Rq) break;
    rowoff.push_back(pr * g.sw * g.plane + rq * g.Wq);
  }
  const int64_t rows = static_cast<int64_t>(rowoff.size());
  // the input columns any tap reads, and (stride 2) how many of them are even and odd
  const int64_t cols = std::min(g.W, g.sw * g.Wq - g.pw);
  const int64_t n0 = (cols + 1) / 2;
  const int64_t e0 = (g.pw & 1) * g.plane + (g.pw >> 1), e1 = ((g.pw + 1) & 1) * g.plane + ((g.pw + 1) >> 1);
  // plane pl's input into the phase planes q (the zero padding around it was written once)
  const auto fill = [&](int64_t pl, float* q) {
    const float* xp = x + pl * g.H * g.W;
    for (int64_t r = 0; r < rows; r++) {
      const float* src = xp + r * g.W;
      float* row = q + rowoff[r];
      if (g.sw == 1) {
        copy_in<V, L>(row + g.pw, src, cols);
        continue;
      }
      // even input columns go to one column phase, odd ones to the other
      float *d0 = row + e0, *d1 = row + e1;
      int64_t c = 0;
      for (; 2 * c + 2 * L <= cols; c += L) {
        const V lo = loadu<V>(src + 2 * c), hi = loadu<V>(src + 2 * c + L);
        storeu<V>(d0 + c, strided2<V, 0>(lo, hi, std::make_index_sequence<L>{}));
        storeu<V>(d1 + c, strided2<V, 1>(lo, hi, std::make_index_sequence<L>{}));
      }
#ifdef PTGO_DW_MASKED
      if (c < n0) {  // the rest, zeros after it (as copy_in)
        const int64_t m = cols - 2 * c;
        const V lo = _mm512_maskz_loadu_ps(static_cast<__mmask16>((1u << std::min<int64_t>(m, L)) - 1), src + 2 * c);
        const V hi = _mm512_maskz_loadu_ps(static_cast<__mmask16>((1u << std::max<int64_t>(m - L, 0)) - 1),
                                           src + 2 * c + L);
        storeu<V>(d0 + c, strided2<V, 0>(lo, hi, std::make_index_sequence<L>{}));
        storeu<V>(d1 + c, strided2<V, 1>(lo, hi, std::make_index_sequence<L>{}));
      }
#else
      for (int64_t e = c; e < n0; e++) d0[e] = src[2 * e];
      for (int64_t e = c; e < cols / 2; e++) d1[e] = src[2 * e + 1];
#endif
    }
  };
  if (p0 < p1) fill(p0, qs[0]);
  for (int64_t pl = p0; pl < p1; pl++) {
    const float* q = qs[(pl - p0) & 1];
    if (pl + 1 < p1) fill(pl + 1, qs[(pl + 1 - p0) & 1]);
    const int64_t ch = pl % C;
    const float* wk = w + ch * g.ntaps;
    const float bv = b ? b[ch] : 0.f;
    int64_t f = 0;
    for (; f + NB * L <= g.flat; f += NB * L) block<V, L, NB>(q, gs, ngroups, wk, f, bv, act, t);
    // the rest in one block: each weight is broadcast once more, each group loads once more
    switch ((g.flat - f) / L) {
      case 0: break;
      case 1: block<V, L, 1>(q, gs, ngroups, wk, f, bv, act, t); break;
      case 2: block<V, L, 2>(q, gs, ngroups, wk, f, bv, act, t); break;
      case 3: block<V, L, 3>(q, gs, ngroups, wk, f, bv, act, t); break;
      case 4: block<V, L, 4>(q, gs, ngroups, wk, f, bv, act, t); break;
      case 5: block<V, L, 5>(q, gs, ngroups, wk, f, bv, act, t); break;
      case 6: block<V, L, 6>(q, gs, ngroups, wk, f, bv, act, t); break;
      default: block<V, L, 7>(q, gs, ngroups, wk, f, bv, act, t); break;
    }
    float* yp = y + pl * g.Ho * g.Wo;
    if (g.Wq == g.Wo) {
      copy<V, L>(yp, t, g.Ho * g.Wo);
    } else {
      for (int64_t i = 0; i < g.Ho; i++) copy<V, L>(yp + i * g.Wo, t + i * g.Wq, g.Wo);
    }
  }
}

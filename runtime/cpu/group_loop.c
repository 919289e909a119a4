/* The contract's group loop (docs/PRECISION.md 5.2) over int8 weights, for the CPU engine.
 *
 * Weights come in panels of 16 output rows, pairs of inputs interleaved (what pmaddwd eats):
 *
 *   w      int8    [n_panels][K/2][16][2]   w[p][j][l][i] = q[16p + l][2j + i]
 *   scale  float32 [n_panels][G][16]        scale[p][g][l] of row 16p + l, group g
 *   offset float32 [n_panels][G][16]        (NULL for types without a min)
 *
 * Activations (contract 3.1), row-major:
 *
 *   qa     int16   [M][K]                   q_a, |q_a| <= 2048
 *   p2e    float32 [M][K/32]                2^e_a of each 32-block
 *   psum   float32 [M][G]                   (sum of q_a over group g) * 2^e_a, exact
 *
 * For each row m, output n and group g in ascending order:
 *   isum = sum q * q_a                       int32, exact: |isum| <= 2^23
 *   t    = (float)isum * 2^e_a * scale       the first product exact, the second rounded
 *   t    = t + psum * offset                 (types with a min) each operation rounded
 *   acc  = acc + t                           acc from +0.0
 * y[m][n] = acc. Every float operation is a single IEEE binary32 operation in this order:
 * compile with -ffp-contract=off so no multiply and add fuse into an FMA. The integer
 * products may run in any order (they are exact), which is what the SIMD variants exploit.
 *
 * One entry point per instruction set, each computing panels [p0, p1) for all M rows;
 * y is [M][ldy] and panel p writes columns 16p..16p+15. The caller picks a variant only
 * after running it in a child process (runtime/cpu/build.py): a VM may list a feature it
 * traps.
 */
#include <stdint.h>
#include <stddef.h>
#include <immintrin.h>

#define LANES 16
#define ROWS 4 /* activation rows sharing one pass over a panel */

/* ---- portable C: the definition, and the fallback on any CPU ---- */

void es_group_loop_scalar(const int8_t *w, const float *scale, const float *offset,
                          int K, int group, const int16_t *qa, const float *p2e,
                          const float *psum, int M, int p0, int p1, float *y, int ldy) {
    const int G = K / group, pairs = group / 2;
    for (int p = p0; p < p1; p++) {
        const int8_t *wp = w + (size_t)p * K * LANES;
        for (int m = 0; m < M; m++) {
            const int16_t *a = qa + (size_t)m * K;
            float acc[LANES];
            for (int l = 0; l < LANES; l++) acc[l] = 0.0f;
            for (int g = 0; g < G; g++) {
                int32_t isum[LANES] = {0};
                for (int j = g * pairs; j < (g + 1) * pairs; j++) {
                    const int8_t *wj = wp + (size_t)j * 2 * LANES;
                    const int32_t a0 = a[2 * j], a1 = a[2 * j + 1];
                    for (int l = 0; l < LANES; l++)
                        isum[l] += wj[2 * l] * a0 + wj[2 * l + 1] * a1;
                }
                const float e = p2e[(size_t)m * (K / 32) + g * group / 32];
                const float *sc = scale + ((size_t)p * G + g) * LANES;
                for (int l = 0; l < LANES; l++) {
                    float t = (float)isum[l] * e;
                    t = t * sc[l];
                    if (offset) {
                        const float u = psum[(size_t)m * G + g] * offset[((size_t)p * G + g) * LANES + l];
                        t = t + u;
                    }
                    acc[l] = acc[l] + t;
                }
            }
            for (int l = 0; l < LANES; l++) y[(size_t)m * ldy + (size_t)p * LANES + l] = acc[l];
        }
    }
}

/* ---- AVX2: a panel is two 8-lane halves ---- */

__attribute__((target("avx2"))) static inline void panel_avx2(
    const int8_t *wp, const float *sp, const float *op, int K, int group, const int16_t *qa,
    const float *p2e, const float *psum, int m0, int R, float *y, int ldy, int col) {
    const int G = K / group, pairs = group / 2;
    __m256 acc[ROWS][2];
    for (int r = 0; r < ROWS; r++) acc[r][0] = acc[r][1] = _mm256_setzero_ps();
    for (int g = 0; g < G; g++) {
        __m256i isum[ROWS][2];
        for (int r = 0; r < ROWS; r++) isum[r][0] = isum[r][1] = _mm256_setzero_si256();
        for (int j = g * pairs; j < (g + 1) * pairs; j++) {
            const int8_t *wj = wp + (size_t)j * 2 * LANES;
            const __m256i w0 = _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)wj));
            const __m256i w1 = _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)(wj + 16)));
            for (int r = 0; r < R; r++) {
                const int32_t *ar = (const int32_t *)(qa + (size_t)(m0 + r) * K);
                const __m256i a = _mm256_set1_epi32(ar[j]);
                isum[r][0] = _mm256_add_epi32(isum[r][0], _mm256_madd_epi16(w0, a));
                isum[r][1] = _mm256_add_epi32(isum[r][1], _mm256_madd_epi16(w1, a));
            }
        }
        for (int r = 0; r < R; r++) {
            const int m = m0 + r;
            const __m256 e = _mm256_set1_ps(p2e[(size_t)m * (K / 32) + g * group / 32]);
            for (int h = 0; h < 2; h++) {
                __m256 t = _mm256_mul_ps(_mm256_cvtepi32_ps(isum[r][h]), e);
                t = _mm256_mul_ps(t, _mm256_loadu_ps(sp + (size_t)g * LANES + 8 * h));
                if (op) {
                    const __m256 s = _mm256_set1_ps(psum[(size_t)m * G + g]);
                    t = _mm256_add_ps(t, _mm256_mul_ps(s, _mm256_loadu_ps(op + (size_t)g * LANES + 8 * h)));
                }
                acc[r][h] = _mm256_add_ps(acc[r][h], t);
            }
        }
    }
    for (int r = 0; r < R; r++)
        for (int h = 0; h < 2; h++)
            _mm256_storeu_ps(y + (size_t)(m0 + r) * ldy + col + 8 * h, acc[r][h]);
}

__attribute__((target("avx2"))) void es_group_loop_avx2(
    const int8_t *w, const float *scale, const float *offset, int K, int group,
    const int16_t *qa, const float *p2e, const float *psum, int M, int p0, int p1, float *y,
    int ldy) {
    const int G = K / group;
    for (int p = p0; p < p1; p++) {
        const int8_t *wp = w + (size_t)p * K * LANES;
        const float *sp = scale + (size_t)p * G * LANES;
        const float *op = offset ? offset + (size_t)p * G * LANES : NULL;
        int m = 0;
        for (; m + ROWS <= M; m += ROWS)
            panel_avx2(wp, sp, op, K, group, qa, p2e, psum, m, ROWS, y, ldy, p * LANES);
        for (; m < M; m++)
            panel_avx2(wp, sp, op, K, group, qa, p2e, psum, m, 1, y, ldy, p * LANES);
    }
}

/* ---- AVX-512 (BW for the 16-bit multiply-add; VNNI fuses it with the add) ---- */

#define PANEL_AVX512(NAME, TARGET, MADD)                                                        \
    __attribute__((target(TARGET))) static inline void NAME(                                   \
        const int8_t *wp, const float *sp, const float *op, int K, int group,                  \
        const int16_t *qa, const float *p2e, const float *psum, int m0, int R, float *y,       \
        int ldy, int col) {                                                                    \
        const int G = K / group, pairs = group / 2;                                            \
        __m512 acc[ROWS];                                                                      \
        for (int r = 0; r < ROWS; r++) acc[r] = _mm512_setzero_ps();                           \
        for (int g = 0; g < G; g++) {                                                          \
            __m512i isum[ROWS];                                                                \
            for (int r = 0; r < ROWS; r++) isum[r] = _mm512_setzero_si512();                   \
            for (int j = g * pairs; j < (g + 1) * pairs; j++) {                                \
                const __m512i wj = _mm512_cvtepi8_epi16(                                       \
                    _mm256_loadu_si256((const __m256i *)(wp + (size_t)j * 2 * LANES)));        \
                for (int r = 0; r < R; r++) {                                                  \
                    const int32_t *ar = (const int32_t *)(qa + (size_t)(m0 + r) * K);          \
                    const __m512i a = _mm512_set1_epi32(ar[j]);                                \
                    isum[r] = MADD(isum[r], wj, a);                                            \
                }                                                                              \
            }                                                                                  \
            for (int r = 0; r < R; r++) {                                                      \
                const int m = m0 + r;                                                          \
                const __m512 e = _mm512_set1_ps(p2e[(size_t)m * (K / 32) + g * group / 32]);   \
                __m512 t = _mm512_mul_ps(_mm512_cvtepi32_ps(isum[r]), e);                      \
                t = _mm512_mul_ps(t, _mm512_loadu_ps(sp + (size_t)g * LANES));                 \
                if (op) {                                                                      \
                    const __m512 s = _mm512_set1_ps(psum[(size_t)m * G + g]);                  \
                    t = _mm512_add_ps(t, _mm512_mul_ps(s, _mm512_loadu_ps(op + (size_t)g * LANES))); \
                }                                                                              \
                acc[r] = _mm512_add_ps(acc[r], t);                                             \
            }                                                                                  \
        }                                                                                      \
        for (int r = 0; r < R; r++) _mm512_storeu_ps(y + (size_t)(m0 + r) * ldy + col, acc[r]); \
    }

#define LOOP_AVX512(NAME, TARGET, PANEL)                                                       \
    __attribute__((target(TARGET))) void NAME(                                                 \
        const int8_t *w, const float *scale, const float *offset, int K, int group,            \
        const int16_t *qa, const float *p2e, const float *psum, int M, int p0, int p1,         \
        float *y, int ldy) {                                                                   \
        const int G = K / group;                                                               \
        for (int p = p0; p < p1; p++) {                                                        \
            const int8_t *wp = w + (size_t)p * K * LANES;                                      \
            const float *sp = scale + (size_t)p * G * LANES;                                   \
            const float *op = offset ? offset + (size_t)p * G * LANES : NULL;                  \
            int m = 0;                                                                         \
            for (; m + ROWS <= M; m += ROWS)                                                   \
                PANEL(wp, sp, op, K, group, qa, p2e, psum, m, ROWS, y, ldy, p * LANES);        \
            for (; m < M; m++) PANEL(wp, sp, op, K, group, qa, p2e, psum, m, 1, y, ldy, p * LANES); \
        }                                                                                      \
    }

#define MADD_BW(acc, w, a) _mm512_add_epi32((acc), _mm512_madd_epi16((w), (a)))
#define MADD_VNNI(acc, w, a) _mm512_dpwssd_epi32((acc), (w), (a))

PANEL_AVX512(panel_avx512, "avx512f,avx512bw", MADD_BW)
LOOP_AVX512(es_group_loop_avx512, "avx512f,avx512bw", panel_avx512)
PANEL_AVX512(panel_avx512vnni, "avx512f,avx512bw,avx512vnni", MADD_VNNI)
LOOP_AVX512(es_group_loop_avx512vnni, "avx512f,avx512bw,avx512vnni", panel_avx512vnni)

/* ---- Row-wise ops of the contract, in the same float operations as the reference ----
 * Each is written once as a plain loop (static inline, below) and compiled for every
 * instruction set by the wrappers at the end; without -ffast-math the compiler vectorises
 * them without changing a single rounding. */

typedef union { float f; int32_t i; } bits32;

static inline float pow2f_bits(int32_t k) { /* 2^k, k in [-126, 127], from its exponent */
    bits32 u; u.i = (k + 127) << 23; return u.f;
}

#define MAGIC 12582912.0f /* 1.5 * 2^23: (v + MAGIC) - MAGIC rounds v to an integer (2.2) */

/* Contract 4.1 (reference/activations.py exp), operation for operation. */
static inline float contract_exp(float x) {
    x = x < -104.0f ? -104.0f : x;
    x = x > 88.75f ? 88.75f : x;
    const float k = (x * 1.44269504088896341f + MAGIC) - MAGIC;
    float r = x - k * 0.693359375f;
    r = r - k * -2.12194440e-4f;
    float p = 1.9875691500e-4f;
    p = p * r + 1.3981999507e-3f;
    p = p * r + 8.3334519073e-3f;
    p = p * r + 4.1665795894e-2f;
    p = p * r + 1.6666665459e-1f;
    p = p * r + 5.0000001201e-1f;
    p = (p * (r * r) + r) + 1.0f;
    const int32_t ki = (k == k) ? (int32_t)k : 0; /* NaN: p is NaN whatever the scale */
    const int32_t k1 = ki >> 1;
    return (p * pow2f_bits(k1)) * pow2f_bits(ki - k1);
}

/* Contract 4.3-4.5: out = act(gate) * up; activation 0 = SiLU, 1 = GELU (tanh form). */
static inline void gated_body(const float *gate, const float *up, float *out, long n,
                              int activation) {
    if (activation == 0) {
        for (long i = 0; i < n; i++) {
            const float x = gate[i];
            out[i] = (x / (1.0f + contract_exp(-x))) * up[i];
        }
    } else {
        for (long i = 0; i < n; i++) {
            const float x = gate[i];
            const float v = 1.0f + (0.044715f * x) * x;
            const float y = (0.79788456080286535587989211986876f * x) * v;
            out[i] = (x / (1.0f + contract_exp(-2.0f * y))) * up[i];
        }
    }
}

/* Contract 3.1 on rows x [m][k]: q int16 [m][k], 2^e float32 [m][k/32], values = q * 2^e. */
static inline void quantize_body(const float *x, long m, int k, int16_t *q, float *p2e,
                                 float *values) {
    const long n_blocks = m * (long)(k / 32);
    for (long b = 0; b < n_blocks; b++) {
        const float *xb = x + b * 32;
        int32_t amax_bits = 0; /* integer max of |x| bit patterns: NaN above +inf */
        for (int j = 0; j < 32; j++) {
            bits32 u; u.f = xb[j];
            const int32_t a = u.i & 0x7FFFFFFF;
            amax_bits = a > amax_bits ? a : amax_bits;
        }
        bits32 amax; amax.i = amax_bits;
        const int is_zero = !(amax.f >= 0x1p-100f) || amax_bits >= 0x7F800000;
        const int32_t e = is_zero ? 0 : ((amax_bits >> 23) & 0xFF) - 127 - 10;
        const float down = pow2f_bits(-e), up = pow2f_bits(e);
        p2e[b] = up;
        for (int j = 0; j < 32; j++) {
            const float r = is_zero ? 0.0f : (xb[j] * down + MAGIC) - MAGIC;
            q[b * 32 + j] = (int16_t)r;
            values[b * 32 + j] = r * up;
        }
    }
}

#define ROW_OPS(SUFFIX, TARGET)                                                                \
    TARGET void es_gated_##SUFFIX(const float *gate, const float *up, float *out, long n,      \
                                  int activation) {                                            \
        gated_body(gate, up, out, n, activation);                                              \
    }                                                                                          \
    TARGET void es_quantize_##SUFFIX(const float *x, long m, int k, int16_t *q, float *p2e,   \
                                     float *values) {                                          \
        quantize_body(x, m, k, q, p2e, values);                                                \
    }

ROW_OPS(scalar, )
ROW_OPS(avx2, __attribute__((target("avx2"))))
ROW_OPS(avx512, __attribute__((target("avx512f,avx512bw"))))
ROW_OPS(avx512vnni, __attribute__((target("avx512f,avx512bw,avx512vnni"))))

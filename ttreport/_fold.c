/* ttreport._fold: one pass over a chunk of (actual, golden) pairs for ttreport.metrics.compare_tensors.
 *
 * The optional accelerator of metrics._Accumulator (built by setup.py; TTREPORT_PURE=1 or no compiler: the numpy
 * path runs). Its numpy path reads each chunk ~18 times (a sum, a dot, an abs, a max, ... each one pass, each
 * with its own temporary), where this reads the two inputs once, as bfloat16 or float32, and keeps every total
 * in registers:
 *
 *   fold(a_ptr, a_bf16, g_ptr, g_bf16, n, rtol, atol, ulp_min, best) -> tuple | None
 *
 * a_ptr, g_ptr: the data of two contiguous arrays of n elements (a_bf16 / g_bf16: bfloat16, else float32).
 * Returns (sum a, sum g, sum a^2, sum g^2, sum d^2, sum d, max d, its first index or -1, max |g|,
 * max (d - rtol |g|), count of d - rtol |g| > atol, max d / |g|, max d / max(2^exponent(g), ulp_min)), with
 * d = |a - g|, each max and count as the numpy path computes it (float32, 0/0 left out, x/0 = inf); the index
 * only when max d > best (the caller's running max: the rescan that finds it is then worth it). None when a sum
 * is not finite (a NaN or an inf among the inputs): the caller's exact float64 path takes that chunk.
 * The GIL is let go during the pass: metrics._fold_all's threads fold chunks side by side.
 *
 * Sums are kept in float32 over blocks of 1024 elements, in eight lanes (a GCC/Clang vector: SIMD without
 * -ffast-math, each lane's order fixed), and in double across blocks: closer to the exact sums than torch's
 * float32 dot and sum. No FMA contraction (-ffp-contract=off): d - rtol |g| rounds as on every machine.
 * tests/test_metrics.py holds its results to the numpy path's (the torch path's until issue 33).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#define BLOCK 1024 /* elements summed in float32 before the double totals */

static inline float bf16_at(const uint16_t *p, Py_ssize_t i) {
    uint32_t bits = (uint32_t)p[i] << 16;
    float f;
    memcpy(&f, &bits, 4);
    return f;
}

static inline float at(const void *p, int bf16, Py_ssize_t i) {
    return bf16 ? bf16_at((const uint16_t *)p, i) : ((const float *)p)[i];
}

static inline float exponent_value(float g) { /* 2^exponent(g) as float (0 for a zero or a subnormal) */
    uint32_t bits;
    memcpy(&bits, &g, 4);
    bits &= 0x7F800000u;
    float e;
    memcpy(&e, &bits, 4);
    return e;
}

typedef struct {
    double sa, sg, saa, sgg, sdd, sd;
    float dmax, gmax, emax, rmax, umax;
    long long count;
} Totals;

/* Eight lanes as GCC's and Clang's vector types: one AVX register, or two SSE ones in the baseline build. */
typedef float v8f __attribute__((vector_size(32)));
typedef int32_t v8i __attribute__((vector_size(32)));
typedef uint32_t v8u __attribute__((vector_size(32)));
typedef uint16_t v8h __attribute__((vector_size(16)));

static inline v8f load8(const void *p, int bf16, Py_ssize_t i) {
    if (bf16) {
        v8h h;
        memcpy(&h, (const uint16_t *)p + i, sizeof h);
        v8u bits = __builtin_convertvector(h, v8u) << 16;
        return (v8f)bits;
    }
    v8f f;
    memcpy(&f, (const float *)p + i, sizeof f);
    return f;
}

static inline v8f vmax(v8f x, v8f m) { /* x > m ? x : m, lane by lane: a NaN x never wins */
    v8i gt = x > m;
    return (v8f)(((v8i)x & gt) | ((v8i)m & ~gt));
}

static inline v8f vabs(v8f x) { return (v8f)((v8u)x & 0x7FFFFFFFu); }

static inline float hmax(v8f v, float m) {
    for (int j = 0; j < 8; j++) m = v[j] > m ? v[j] : m;
    return m;
}

/* The pass, specialised by the compiler for each pair of element types (a_bf16, g_bf16 are constants at each
 * call below) and, on x86-64, built twice: for AVX2 and for the baseline, chosen when the module loads. */
static inline __attribute__((always_inline)) void pass(const void *A, int a_bf16, const void *G, int g_bf16,
                                                       Py_ssize_t n, float rtol, float atol, float ulp_min,
                                                       int ulp, Totals *t) {
    const v8f zero = {0}, minus_inf = zero - INFINITY;
    v8f dmax = zero, gmax = zero, emax = minus_inf, rmax = zero, umax = zero;
    Py_ssize_t whole = n - n % 8;
    for (Py_ssize_t lo = 0; lo < whole; lo += BLOCK) {
        Py_ssize_t hi = lo + BLOCK < whole ? lo + BLOCK : whole;
        v8f sa = zero, sg = zero, saa = zero, sgg = zero, sdd = zero, sd = zero;
        v8i count = {0};
        for (Py_ssize_t i = lo; i < hi; i += 8) {
            v8f a = load8(A, a_bf16, i), g = load8(G, g_bf16, i);
            v8f d = vabs(a - g), ag = vabs(g);
            sa += a;
            sg += g;
            saa += a * a;
            sgg += g * g;
            sdd += d * d;
            sd += d;
            dmax = vmax(d, dmax);
            gmax = vmax(ag, gmax);
            v8f e = d - rtol * ag;
            emax = vmax(e, emax);
            count -= e > atol; /* true is -1 */
            rmax = vmax(d / ag, rmax); /* 0/0 is NaN: never the max, so left out, as the numpy path's */
            if (ulp) {
                v8f ue = (v8f)((v8u)g & 0x7F800000u); /* 2^exponent(g), 0 for a zero or a subnormal */
                ue = vmax(ue, zero + ulp_min);
                umax = vmax(d / ue, umax);
            }
        }
        for (int j = 0; j < 8; j++) {
            t->sa += sa[j];
            t->sg += sg[j];
            t->saa += saa[j];
            t->sgg += sgg[j];
            t->sdd += sdd[j];
            t->sd += sd[j];
            t->count += count[j];
        }
    }
    float dm = hmax(dmax, 0.0f), gm = hmax(gmax, 0.0f), em = hmax(emax, -INFINITY), rm = hmax(rmax, 0.0f),
          um = hmax(umax, 0.0f);
    for (Py_ssize_t i = whole; i < n; i++) { /* the tail: one lane */
        float a = at(A, a_bf16, i), g = at(G, g_bf16, i);
        float d = fabsf(a - g), ag = fabsf(g);
        t->sa += a;
        t->sg += g;
        t->saa += (double)(a * a);
        t->sgg += (double)(g * g);
        t->sdd += (double)(d * d);
        t->sd += d;
        dm = d > dm ? d : dm;
        gm = ag > gm ? ag : gm;
        float e = d - rtol * ag;
        em = e > em ? e : em;
        t->count += e > atol;
        float r = d / ag;
        rm = r > rm ? r : rm;
        if (ulp) {
            float ue = exponent_value(g);
            ue = ue < ulp_min ? ulp_min : ue;
            float u = d / ue;
            um = u > um ? u : um;
        }
    }
    t->dmax = dm;
    t->gmax = gm;
    t->emax = em;
    t->rmax = rm;
    t->umax = um;
}

#if defined(__x86_64__) && defined(__GNUC__) && defined(__linux__)
#define CLONES __attribute__((target_clones("avx2", "default")))
#else
#define CLONES
#endif

CLONES static void pass_bb(const void *A, const void *G, Py_ssize_t n, float r, float a, float u, int ulp, Totals *t) {
    pass(A, 1, G, 1, n, r, a, u, ulp, t);
}
CLONES static void pass_bf(const void *A, const void *G, Py_ssize_t n, float r, float a, float u, int ulp, Totals *t) {
    pass(A, 1, G, 0, n, r, a, u, ulp, t);
}
CLONES static void pass_fb(const void *A, const void *G, Py_ssize_t n, float r, float a, float u, int ulp, Totals *t) {
    pass(A, 0, G, 1, n, r, a, u, ulp, t);
}
CLONES static void pass_ff(const void *A, const void *G, Py_ssize_t n, float r, float a, float u, int ulp, Totals *t) {
    pass(A, 0, G, 0, n, r, a, u, ulp, t);
}

static Py_ssize_t first_index_of(const void *A, int a_bf16, const void *G, int g_bf16, Py_ssize_t n, float dmax) {
    for (Py_ssize_t i = 0; i < n; i++)
        if (fabsf(at(A, a_bf16, i) - at(G, g_bf16, i)) == dmax) return i;
    return -1;
}

static PyObject *fold(PyObject *module, PyObject *args) {
    unsigned long long a_addr, g_addr;
    int a_bf16, g_bf16;
    Py_ssize_t n;
    double rtol, atol, ulp_min, best;
    if (!PyArg_ParseTuple(args, "KpKpndddd:fold", &a_addr, &a_bf16, &g_addr, &g_bf16, &n, &rtol, &atol, &ulp_min,
                          &best))
        return NULL;
    if (n < 0 || (n > 0 && (a_addr == 0 || g_addr == 0))) {
        PyErr_SetString(PyExc_ValueError, "fold: n must be >= 0 and the data pointers non-null");
        return NULL;
    }
    const void *A = (const void *)(uintptr_t)a_addr, *G = (const void *)(uintptr_t)g_addr;
    Totals t = {0};
    float r = (float)rtol, a = (float)atol, u = (float)ulp_min;
    int ulp = ulp_min > 0.0;
    Py_ssize_t index = -1;
    Py_BEGIN_ALLOW_THREADS
    if (a_bf16 && g_bf16) pass_bb(A, G, n, r, a, u, ulp, &t);
    else if (a_bf16) pass_bf(A, G, n, r, a, u, ulp, &t);
    else if (g_bf16) pass_fb(A, G, n, r, a, u, ulp, &t);
    else pass_ff(A, G, n, r, a, u, ulp, &t);
    if (isfinite(t.sa + t.sg + t.saa + t.sgg + t.sdd) && (double)t.dmax > best)
        index = first_index_of(A, a_bf16, G, g_bf16, n, t.dmax);
    Py_END_ALLOW_THREADS
    if (!isfinite(t.sa + t.sg + t.saa + t.sgg + t.sdd)) Py_RETURN_NONE;
    return Py_BuildValue("(ddddddfnfdLff)", t.sa, t.sg, t.saa, t.sgg, t.sdd, t.sd, t.dmax, index, t.gmax,
                         (double)t.emax, t.count, t.rmax, t.umax);
}

static PyMethodDef methods[] = {
    {"fold", fold, METH_VARARGS,
     "fold(a_ptr, a_bf16, g_ptr, g_bf16, n, rtol, atol, ulp_min, best): one chunk's totals (see the module's comment)"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_fold", NULL, -1, methods};

PyMODINIT_FUNC PyInit__fold(void) { return PyModule_Create(&module); }

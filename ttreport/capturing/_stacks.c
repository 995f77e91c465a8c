/* ttreport.capturing._stacks: the walk over an op's caller frames, in C.
 *
 * The optional accelerator of ttreport/capturing/stacks.py, which documents the walk, holds the pure-Python
 * function it must equal call for call (tests/test_stacks.py), and picks one (TTREPORT_PURE=1 picks the
 * Python one). One function:
 *
 *   user_frames(skip, stop, n, cache, classify) -> (id(code), line, id(code), line, ...)
 *
 * Why C: the recorder walks every op's stack on the model's thread. In Python each frame costs a handful of
 * bytecodes (f_code, id(), a dict lookup, f_lineno, f_back), ~0.3 us; here it is a few pointer reads and
 * one dict lookup. Nothing is allocated but the ints and the result tuple.
 *
 *   >>> from ttreport.capturing import stacks
 *   >>> stacks.NATIVE   # True when this module is built
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <frameobject.h>

#define MAX_ITEMS 1024 /* 512 frames: Config.stack_depth is far below it */

#if PY_VERSION_HEX < 0x030B0000 /* 3.10: no PyFrame_GetLasti; the field is public there */
static int PyFrame_GetLasti(PyFrameObject *f) { return f->f_lasti; }
#endif

/* What the walk learnt about a (code, instruction) pair: whether its code is the library's and, if not, the
 * line and id(code) ints it records. A model calls its ops from a few hundred places, each seen again every
 * step: without it each frame cost a dict lookup, an int for id(code) and a line number computed from the code's
 * line table (a walk from its start: ~0.3 us for a script's long <module>). Direct-mapped; an entry holds its
 * code, so no other code object can take its address while it is here. Entries belong to one `cache` dict (one
 * capture's): a walk with another one empties the table, since that dict must hear of every code it names. */
#define SEEN_SIZE 4096
typedef struct {
    PyCodeObject *code; /* strong */
    int lasti;
    int library;
    PyObject *key, *line; /* strong: id(code) and the line, or NULL for a library frame */
} Seen;
static Seen seen[SEEN_SIZE];
static PyObject *seen_cache; /* strong: the cache dict the entries were made with */

static void forget_seen(void) {
    for (int i = 0; i < SEEN_SIZE; i++) {
        Py_CLEAR(seen[i].code);
        Py_CLEAR(seen[i].key);
        Py_CLEAR(seen[i].line);
    }
    Py_CLEAR(seen_cache);
}

/* The entry for frame `f` running `code`, made (with classify when the cache lacks the code) if not there. */
static Seen *see_frame(PyFrameObject *f, PyCodeObject *code, PyObject *cache, PyObject *classify) {
    int lasti = PyFrame_GetLasti(f);
    size_t h = ((size_t)code >> 4) * 31u + (size_t)(unsigned)lasti;
    Seen *e = &seen[(h ^ (h >> 12)) & (SEEN_SIZE - 1)];
    if (e->code == code && e->lasti == lasti) return e;
    PyObject *key = PyLong_FromVoidPtr(code);
    if (key == NULL) return NULL;
    PyObject *entry = PyDict_GetItemWithError(cache, key); /* borrowed: (code, is_library) */
    if (entry != NULL) {
        Py_INCREF(entry);
    } else {
        if (PyErr_Occurred()) { Py_DECREF(key); return NULL; }
        entry = PyObject_CallOneArg(classify, (PyObject *)code); /* stores it in the cache */
        if (entry == NULL) { Py_DECREF(key); return NULL; }
    }
    if (!PyTuple_Check(entry) || PyTuple_GET_SIZE(entry) != 2) {
        Py_DECREF(entry);
        Py_DECREF(key);
        PyErr_SetString(PyExc_TypeError, "user_frames: a cache entry must be (code, is_library)");
        return NULL;
    }
    int library = PyObject_IsTrue(PyTuple_GET_ITEM(entry, 1));
    Py_DECREF(entry);
    if (library < 0) { Py_DECREF(key); return NULL; }
    PyObject *line = NULL;
    if (!library) {
        int lineno = PyFrame_GetLineNumber(f);
        line = lineno < 0 ? Py_NewRef(Py_None) : PyLong_FromLong(lineno); /* as f.f_lineno */
        if (line == NULL) { Py_DECREF(key); return NULL; }
    } else {
        Py_CLEAR(key);
    }
    /* classify ran Python: the slot may have been refilled meanwhile; it is ours now */
    Py_XSETREF(e->code, (PyCodeObject *)Py_NewRef(code));
    Py_XSETREF(e->key, key);
    Py_XSETREF(e->line, line);
    e->lasti = lasti;
    e->library = library;
    return e;
}

static PyObject *user_frames(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 5) {
        PyErr_SetString(PyExc_TypeError, "user_frames(skip, stop, n, cache, classify) takes 5 arguments");
        return NULL;
    }
    long skip = PyLong_AsLong(args[0]);
    Py_ssize_t n = PyLong_AsSsize_t(args[2]);
    if (PyErr_Occurred()) return NULL;
    PyObject *stop = args[1], *cache = args[3], *classify = args[4];
    if (!PyDict_Check(cache)) {
        PyErr_SetString(PyExc_TypeError, "user_frames: cache must be a dict");
        return NULL;
    }
    if (n > MAX_ITEMS) {
        PyErr_Format(PyExc_ValueError, "user_frames: at most %d items (n=%zd); stacks.walker() picks the Python "
                     "walk for a deeper Config.stack_depth", MAX_ITEMS, n);
        return NULL;
    }
    PyObject *items[MAX_ITEMS + 2];
    Py_ssize_t count = 0;
    PyCodeObject *code = NULL;

    /* The current frame is the Python function that called this one (the recorder's begin). */
    PyFrameObject *f = PyEval_GetFrame();
    Py_XINCREF(f);
    for (long i = 0; i < skip && f != NULL; i++) {
        PyFrameObject *back = PyFrame_GetBack(f);
        Py_DECREF(f);
        f = back;
    }
    if (seen_cache != cache) {
        forget_seen();
        seen_cache = Py_NewRef(cache);
    }
    while (f != NULL) {
        code = PyFrame_GetCode(f);
        if ((PyObject *)code == stop) break;
        Seen *e = see_frame(f, code, cache, classify);
        if (e == NULL) goto error;
        Py_CLEAR(code);
        if (!e->library) {
            items[count++] = Py_NewRef(e->key);
            items[count++] = Py_NewRef(e->line);
            if (count >= n) break;
        }
        PyFrameObject *back = PyFrame_GetBack(f);
        Py_DECREF(f);
        f = back;
    }
    Py_XDECREF(code);
    Py_XDECREF(f);
    PyObject *out = PyTuple_New(count);
    if (out == NULL) {
        for (Py_ssize_t i = 0; i < count; i++) Py_DECREF(items[i]);
        return NULL;
    }
    for (Py_ssize_t i = 0; i < count; i++) PyTuple_SET_ITEM(out, i, items[i]); /* steals */
    return out;

error:
    Py_XDECREF(code);
    Py_XDECREF(f);
    for (Py_ssize_t i = 0; i < count; i++) Py_DECREF(items[i]);
    return NULL;
}

static PyMethodDef methods[] = {
    {"user_frames", (PyCFunction)(void (*)(void))user_frames, METH_FASTCALL,
     "user_frames(skip, stop, n, cache, classify): the innermost non-library frames of the caller's stack as "
     "(id(code), line, ...), at most n items; see ttreport/capturing/stacks.py."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_stacks", NULL, -1, methods};

PyMODINIT_FUNC PyInit__stacks(void) { return PyModule_Create(&module); }

/* ttreport.capture._stacks: the walk over an op's caller frames, in C.
 *
 * The optional accelerator of ttreport/capture/stacks.py, which documents the walk, holds the pure-Python
 * function it must equal call for call (tests/test_stacks.py), and picks one (TTREPORT_PURE=1 picks the
 * Python one). One function:
 *
 *   user_frames(skip, stop, n, cache, classify) -> (id(code), line, id(code), line, ...)
 *
 * Why C: the recorder walks every op's stack on the model's thread. In Python each frame costs a handful of
 * bytecodes (f_code, id(), a dict lookup, f_lineno, f_back), ~0.3 us; here it is a few pointer reads and
 * one dict lookup. Nothing is allocated but the ints and the result tuple.
 *
 *   >>> from ttreport.capture import stacks
 *   >>> stacks.NATIVE   # True when this module is built
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <frameobject.h>

#define MAX_ITEMS 1024 /* 512 frames: Config.stack_depth is far below it */

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
    PyObject *key = NULL;

    /* The current frame is the Python function that called this one (the recorder's begin). */
    PyFrameObject *f = PyEval_GetFrame();
    Py_XINCREF(f);
    for (long i = 0; i < skip && f != NULL; i++) {
        PyFrameObject *back = PyFrame_GetBack(f);
        Py_DECREF(f);
        f = back;
    }
    while (f != NULL) {
        code = PyFrame_GetCode(f);
        if ((PyObject *)code == stop) break;
        key = PyLong_FromVoidPtr(code);
        if (key == NULL) goto error;
        PyObject *entry = PyDict_GetItemWithError(cache, key); /* borrowed: (code, is_library) */
        if (entry != NULL) {
            Py_INCREF(entry);
        } else {
            if (PyErr_Occurred()) goto error;
            entry = PyObject_CallOneArg(classify, (PyObject *)code); /* stores it in the cache */
            if (entry == NULL) goto error;
        }
        if (!PyTuple_Check(entry) || PyTuple_GET_SIZE(entry) != 2) {
            Py_DECREF(entry);
            PyErr_SetString(PyExc_TypeError, "user_frames: a cache entry must be (code, is_library)");
            goto error;
        }
        int library = PyObject_IsTrue(PyTuple_GET_ITEM(entry, 1));
        Py_DECREF(entry);
        if (library < 0) goto error;
        Py_CLEAR(code);
        if (library) {
            Py_CLEAR(key);
        } else {
            int lineno = PyFrame_GetLineNumber(f);
            PyObject *line = lineno < 0 ? Py_NewRef(Py_None) : PyLong_FromLong(lineno); /* as f.f_lineno */
            if (line == NULL) goto error;
            items[count++] = key;
            key = NULL;
            items[count++] = line;
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
    Py_XDECREF(key);
    Py_XDECREF(code);
    Py_XDECREF(f);
    for (Py_ssize_t i = 0; i < count; i++) Py_DECREF(items[i]);
    return NULL;
}

static PyMethodDef methods[] = {
    {"user_frames", (PyCFunction)(void (*)(void))user_frames, METH_FASTCALL,
     "user_frames(skip, stop, n, cache, classify): the innermost non-library frames of the caller's stack as "
     "(id(code), line, ...), at most n items; see ttreport/capture/stacks.py."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_stacks", NULL, -1, methods};

PyMODINIT_FUNC PyInit__stacks(void) { return PyModule_Create(&module); }

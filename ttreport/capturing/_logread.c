/* ttreport.capturing._logread: the writer process's read of its own op log, in C.
 *
 * The optional accelerator of oplog.LogTail for a trusted log (the writer process's own capture's). One type:
 *
 *   Reader(stacks, programs, configs, objects, wired, tensors, mesh, operands, estimates, skip, max_tensors,
 *          max_objects, TensorArg, Program, columns)
 *   reader.writes(tail, mm, out, n) -> LogTail._writes' result, tail.off past the last write decoded
 *
 * writes() reads a segment's length-prefixed writes, unmarshals each from the mmap (no bytes copy) and runs
 * LogTail._decode's loop over its records. Only the common case of each record is done here: an OP record
 * that did not raise, with its references made into values as LogTail._op and _unwire make them, its specs' operands
 * known (LogPerf.note) and its estimate known (LogPerf.row, the same key); the records _decode passes on as they are
 * (FREE, ALLOC, rows, VALUES, ...); a PROGRAM launch of a program defined. Everything else, and each part of an op
 * that misses (an error, a new operand, a new estimate, a tensor cache at its bound), is handed to the Python method
 * that does it (tail._op, tail.perf.note, tail.perf.row, or tail._decode for the whole record), so oplog.py and
 * log_perf.py stay the specification: TTREPORT_PURE=1 runs them alone, and tests/test_logread.py holds the two
 * routes' records equal. The dicts are LogTail's and LogPerf's own (never rebound, only cleared), read and, for
 * a spec's tensor, written as the Python writes them.
 *
 * Why C: the writer process spent ~6.8 us of CPU an op reading the log (marshal.loads ~2, _decode and _op ~2.5,
 * LogPerf's note and row ~2.2) of ~31 us; SQLite alone is ~10. Here: 5.9-6.3 -> 2.5-2.9 us an op of a 20,000-add
 * log, 8.4-8.9 -> 3.6-4.0 of a small encoder layer's, of which marshal is ~1.4 (bench/README.md, issue 33, logread;
 * bench 11 prints the writer's rate with the Python read beside it).
 *
 *   >>> from ttreport.capturing import oplog
 *   >>> oplog.NATIVE   # True when this module is built (and TTREPORT_PURE is not set)
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <marshal.h>

#include "_records.h"

#define END_LENGTH 0xFFFFFFFFu /* oplog.END */
enum { FULL = 0, WAIT = 1, NEXT = 2 }; /* oplog._FULL, _WAIT, _NEXT */

typedef struct {
    PyObject_HEAD
    PyObject *stacks, *programs, *configs, *objects, *wired;      /* Definitions' and LogTail's dicts */
    PyObject *tensors, *mesh, *operands, *estimates, *skip;        /* LogPerf's */
    Py_ssize_t max_tensors, max_objects;                           /* log_perf.MAX_TENSORS, oplog.MAX_OBJECTS */
    PyObject *tensor_arg;                                          /* records.TensorArg */
    PyTypeObject *program;                                         /* device_work.Program (a tuple) */
    PyObject *columns;                                             /* log_perf.COLUMNS */
} Reader;

static PyObject *s_op, *s_decode, *s_perf, *s_note, *s_row, *s_off, *s_device_perf, *s_transpose_a, *row_tag;

/* LogTail._unwire(v): a reference (b"t<id>", b"o<n>") made into its value (a TensorArg, or the text an OBJ record
 * defined) and remembered in the dict of those read (emptied first once it holds max_objects); a list or tuple made
 * again of its items so; anything else as it is. NULL with no error set: the Python's to do (a reference not of the
 * form the log writes, or an object it never defined: int() or the definitions raise there). */
static PyObject *unwire(Reader *self, PyObject *v) {
    PyTypeObject *t = Py_TYPE(v);
    if (t == &PyBytes_Type) {
        const char *s = PyBytes_AS_STRING(v);
        Py_ssize_t n = PyBytes_GET_SIZE(v);
        if (n < 2 || n > 19) return NULL; /* 18 digits fit a long long */
        long long k = 0;
        for (Py_ssize_t i = 1; i < n; i++) {
            if (s[i] < '0' || s[i] > '9') return NULL;
            k = k * 10 + (s[i] - '0');
        }
        PyObject *number = PyLong_FromLongLong(k), *value;
        if (number == NULL) return NULL;
        if (s[0] == 't') {
            value = PyObject_CallOneArg(self->tensor_arg, number);
        } else {
            value = Py_XNewRef(PyDict_GetItemWithError(self->objects, number));
        }
        Py_DECREF(number);
        if (value == NULL) return NULL;
        if (PyDict_GET_SIZE(self->wired) >= self->max_objects) PyDict_Clear(self->wired);
        if (PyDict_SetItem(self->wired, v, value) < 0) Py_CLEAR(value);
        return value;
    }
    if (t == &PyList_Type || t == &PyTuple_Type) {
        Py_ssize_t n = Py_SIZE(v);
        PyObject *out = t == &PyList_Type ? PyList_New(n) : PyTuple_New(n);
        if (out == NULL) return NULL;
        for (Py_ssize_t i = 0; i < n; i++) {
            PyObject *w = unwire(self, t == &PyList_Type ? PyList_GET_ITEM(v, i) : PyTuple_GET_ITEM(v, i));
            if (w == NULL) {
                Py_DECREF(out);
                return NULL;
            }
            if (t == &PyList_Type) PyList_SET_ITEM(out, i, w);
            else PyTuple_SET_ITEM(out, i, w);
        }
        return out;
    }
    return Py_NewRef(v);
}

/* A value of an op's args or kwargs as LogTail._op gives it: a reference by the dict of those read, else _unwire's. */
static PyObject *unwired(Reader *self, PyObject *v) {
    if (Py_TYPE(v) == &PyBytes_Type) {
        PyObject *w = PyDict_GetItemWithError(self->wired, v);
        if (w != NULL && w != Py_None) return Py_NewRef(w);
        if (w == NULL && PyErr_Occurred()) return NULL;
    }
    return unwire(self, v);
}

/* LogTail._op(rec), NULL with no error set where the Python makes it: an op that raised, a stack not defined (it
 * raises), an args or kwargs of another type, a reference unwire() leaves to it (the Python raises there, so what
 * this one remembered before it does not matter). */
static PyObject *op_hit(Reader *self, PyObject *rec) {
    PyObject *stack = PyTuple_GET_ITEM(rec, OP_STACK), *args = PyTuple_GET_ITEM(rec, OP_ARGS);
    PyObject *kwargs = PyTuple_GET_ITEM(rec, OP_KWARGS);
    if (PyTuple_GET_ITEM(rec, OP_ERROR) != Py_None) return NULL;
    if (stack != Py_None && (stack = PyDict_GetItemWithError(self->stacks, stack)) == NULL) return NULL;
    if (args != Py_None && !PyTuple_CheckExact(args)) return NULL;
    if (kwargs != Py_None && !PyDict_CheckExact(kwargs)) return NULL;
    PyObject *out = PyTuple_New(OP_WIDTH), *new_args = NULL, *new_kwargs = NULL;
    if (out == NULL) return NULL;
    if (args != Py_None && PyTuple_GET_SIZE(args) > 0) {
        Py_ssize_t n = PyTuple_GET_SIZE(args);
        if ((new_args = PyTuple_New(n)) == NULL) goto miss;
        for (Py_ssize_t i = 0; i < n; i++) {
            PyObject *w = unwired(self, PyTuple_GET_ITEM(args, i));
            if (w == NULL) goto miss;
            PyTuple_SET_ITEM(new_args, i, w);
        }
    } else {
        new_args = Py_NewRef(args);
    }
    if (kwargs != Py_None && PyDict_GET_SIZE(kwargs) > 0) {
        if ((new_kwargs = PyDict_New()) == NULL) goto miss;
        Py_ssize_t pos = 0;
        PyObject *k, *v;
        while (PyDict_Next(kwargs, &pos, &k, &v)) {
            PyObject *w = unwired(self, v);
            if (w == NULL) goto miss;
            int failed = PyDict_SetItem(new_kwargs, k, w);
            Py_DECREF(w);
            if (failed) goto miss;
        }
    } else {
        new_kwargs = Py_NewRef(kwargs);
    }
    for (Py_ssize_t i = 0; i < OP_WIDTH; i++) {
        PyObject *v = i == OP_STACK ? Py_NewRef(stack) : i == OP_ARGS ? new_args : i == OP_KWARGS ? new_kwargs
                                                                                  : Py_NewRef(PyTuple_GET_ITEM(rec, i));
        PyTuple_SET_ITEM(out, i, v);
    }
    return out;
miss:
    Py_DECREF(out);
    Py_XDECREF(new_args);
    Py_XDECREF(new_kwargs);
    return NULL;
}

/* LogPerf.note(spec, configs) for a spec whose operand is known: 1 done, 0 a miss (nothing changed that the Python
 * would not do the same again), -1 an error. */
static int note_hit(Reader *self, PyObject *spec) {
    if (!PyTuple_CheckExact(spec) || PyTuple_GET_SIZE(spec) != SPEC_WIDTH) return 0;
    PyObject *tid = PyTuple_GET_ITEM(spec, SPEC_TENSOR_ID), *device_id = PyTuple_GET_ITEM(spec, SPEC_DEVICE_ID);
    PyObject *buffer_type = PyTuple_GET_ITEM(spec, SPEC_BUFFER_TYPE);
    PyObject *key = PyTuple_Pack(7, PyTuple_GET_ITEM(spec, SPEC_SHAPE), PyTuple_GET_ITEM(spec, SPEC_DTYPE),
                                 PyTuple_GET_ITEM(spec, SPEC_LAYOUT), PyTuple_GET_ITEM(spec, SPEC_CONFIG_ID),
                                 buffer_type, PyTuple_GET_ITEM(spec, SPEC_SIZE),
                                 PyTuple_GET_ITEM(spec, SPEC_ADDRESS) == Py_None ? Py_True : Py_False);
    if (key == NULL) return -1;
    PyObject *operand = PyDict_GetItemWithError(self->operands, key); /* borrowed; None is an operand */
    Py_DECREF(key);
    if (operand == NULL) return PyErr_Occurred() ? -1 : 0;
    int held = PyDict_Contains(self->tensors, tid); /* tensors.pop(tid, None): re-sent, newest again */
    if (held < 0 || (held && PyDict_DelItem(self->tensors, tid) < 0)) return -1;
    if (PyDict_GET_SIZE(self->tensors) >= self->max_tensors) return 0; /* the Python halves the cache */
    PyObject *mesh = device_id == Py_None && buffer_type != Py_None ? Py_True : Py_False;
    PyObject *entry = PyTuple_Pack(3, operand, device_id, mesh);
    if (entry == NULL) return -1;
    int failed = PyDict_SetItem(self->tensors, tid, entry);
    Py_DECREF(entry);
    return failed ? -1 : 1;
}

/* Put id(operand) of each tensor of `tids` into key[at...]; 1 done, 0 no row (a mesh tensor or one whose spec is
 * gone), 2 a miss, -1 an error. *device_id: the first tensor's device that is not None (borrowed). */
static int key_tensors(Reader *self, PyObject *tids, PyObject *key, Py_ssize_t at, PyObject **device_id) {
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(tids); i++) {
        PyObject *tid = PyTuple_GET_ITEM(tids, i);
        PyObject *t = PyDict_GetItemWithError(self->tensors, tid);
        if (t == NULL) return PyErr_Occurred() ? -1 : 0;
        if (!PyTuple_CheckExact(t) || PyTuple_GET_SIZE(t) != 3) return 2;
        int on_mesh = PyObject_IsTrue(PyTuple_GET_ITEM(t, 2));
        if (on_mesh < 0) return -1;
        if (!on_mesh && (on_mesh = PySet_Contains(self->mesh, tid)) < 0) return -1;
        if (on_mesh) return 0;
        if (*device_id == Py_None) *device_id = PyTuple_GET_ITEM(t, 1);
        PyObject *ident = PyLong_FromVoidPtr(PyTuple_GET_ITEM(t, 0)); /* id(operand) */
        if (ident == NULL) return -1;
        PyTuple_SET_ITEM(key, at + i, ident);
    }
    return 1;
}

/* LogPerf.row(rec) for an op whose estimate is known: 1 done (*row the values, or NULL for no row), 0 a miss,
 * -1 an error. The key is row()'s: (name, (device id, transpose_a), id(operand) of each output, None, of each
 * input). */
static int row_hit(Reader *self, PyObject *rec, PyObject **row) {
    *row = NULL;
    PyObject *name = PyTuple_GET_ITEM(rec, OP_NAME), *kwargs = PyTuple_GET_ITEM(rec, OP_KWARGS);
    PyObject *outputs = PyTuple_GET_ITEM(rec, OP_OUTPUTS), *inputs = PyTuple_GET_ITEM(rec, OP_INPUTS);
    PyObject *skip = PyDict_GetItemWithError(self->skip, name);
    if (skip == NULL) return PyErr_Occurred() ? -1 : 0;
    int skipped = PyObject_IsTrue(skip);
    if (skipped) return skipped < 0 ? -1 : 1;
    if (!PyTuple_CheckExact(outputs) || !PyTuple_CheckExact(inputs)) return 0;
    if (kwargs != Py_None && !PyDict_CheckExact(kwargs)) return 0;
    Py_ssize_t n_out = PyTuple_GET_SIZE(outputs), n_in = PyTuple_GET_SIZE(inputs);
    PyObject *key = PyTuple_New(3 + n_out + n_in);
    if (key == NULL) return -1;
    PyTuple_SET_ITEM(key, 0, Py_NewRef(name));
    PyTuple_SET_ITEM(key, 2 + n_out, Py_NewRef(Py_None));
    PyObject *device_id = Py_None;
    int found = key_tensors(self, outputs, key, 2, &device_id);
    if (found == 1) found = key_tensors(self, inputs, key, 3 + n_out, &device_id);
    if (found != 1) {
        Py_DECREF(key); /* its unset items are NULL, which a tuple's dealloc skips */
        return found == 0 ? 1 : found == 2 ? 0 : -1; /* no row; a miss; an error */
    }
    int transpose_a = 0;
    if (kwargs != Py_None && PyDict_GET_SIZE(kwargs) > 0) {
        PyObject *v = PyDict_GetItemWithError(kwargs, s_transpose_a);
        if (v == NULL && PyErr_Occurred()) goto error;
        if (v != NULL && (transpose_a = PyObject_IsTrue(v)) < 0) goto error;
    }
    PyObject *call = PyTuple_Pack(2, device_id, transpose_a ? Py_True : Py_False);
    if (call == NULL) goto error;
    PyTuple_SET_ITEM(key, 1, call);
    PyObject *hit = PyDict_GetItemWithError(self->estimates, key);
    Py_DECREF(key);
    if (hit == NULL) return PyErr_Occurred() ? -1 : 0;
    if (!PyTuple_CheckExact(hit) || PyTuple_GET_SIZE(hit) != 2) return 0;
    PyObject *est = PyTuple_GET_ITEM(hit, 0);
    if (est == Py_None) return 1;
    if (!PyTuple_CheckExact(est)) return 0;
    Py_ssize_t n = PyTuple_GET_SIZE(est);
    if ((*row = PyTuple_New(1 + n)) == NULL) return -1;
    PyTuple_SET_ITEM(*row, 0, Py_NewRef(PyTuple_GET_ITEM(rec, OP_OPERATION_ID)));
    for (Py_ssize_t i = 0; i < n; i++) PyTuple_SET_ITEM(*row, 1 + i, Py_NewRef(PyTuple_GET_ITEM(est, i)));
    return 1;
error:
    Py_DECREF(key);
    return -1;
}

static int append_new(PyObject *out, PyObject *v) {
    if (v == NULL) return -1;
    int failed = PyList_Append(out, v);
    Py_DECREF(v);
    return failed;
}

/* LogTail._decode's OP branch: the op, its specs noted, its device_perf row (records.RowValues). */
static int decode_op(Reader *self, PyObject *tail, PyObject *rec, PyObject *out) {
    PyObject *op = op_hit(self, rec);
    if (op == NULL) {
        if (PyErr_Occurred()) return -1;
        op = PyObject_CallMethodOneArg(tail, s_op, rec);
    }
    if (append_new(out, op) < 0) return -1;
    PyObject *perf = NULL, *specs = PyTuple_GET_ITEM(rec, OP_SPECS);
    int any = PyObject_IsTrue(specs);
    if (any < 0) return -1;
    if (any) {
        PyObject *seq = PySequence_Fast(specs, "an op's specs");
        if (seq == NULL) return -1;
        for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(seq); i++) {
            PyObject *spec = PySequence_Fast_GET_ITEM(seq, i);
            int done = note_hit(self, spec);
            if (done == 0) {
                if (perf == NULL && (perf = PyObject_GetAttr(tail, s_perf)) == NULL) done = -1;
                else {
                    PyObject *r = PyObject_CallMethodObjArgs(perf, s_note, spec, self->configs, NULL);
                    done = r == NULL ? -1 : 1;
                    Py_XDECREF(r);
                }
            }
            if (done < 0) {
                Py_DECREF(seq);
                Py_XDECREF(perf);
                return -1;
            }
        }
        Py_DECREF(seq);
    }
    if (PyTuple_GET_ITEM(rec, OP_ERROR) != Py_None) {
        Py_XDECREF(perf);
        return 0;
    }
    PyObject *row;
    int done = row_hit(self, rec, &row);
    if (done == 0) {
        if (perf == NULL && (perf = PyObject_GetAttr(tail, s_perf)) == NULL) return -1;
        row = PyObject_CallMethodOneArg(perf, s_row, rec);
        if (row == NULL) done = -1;
        else if (row == Py_None) Py_CLEAR(row);
    }
    Py_XDECREF(perf);
    if (done < 0) return -1;
    if (row == NULL) return 0;
    PyObject *r = PyTuple_Pack(4, row_tag, s_device_perf, self->columns, row);
    Py_DECREF(row);
    return append_new(out, r);
}

/* A launch (records.ProgramLaunch) as (PROGRAM, op id, Program(*its PROG's static part, program id, device, cb base));
 * NULL with no error: a program not defined (the Python raises). */
static PyObject *launch(Reader *self, PyObject *rec) {
    PyObject *prog = PyDict_GetItemWithError(self->programs, PyTuple_GET_ITEM(rec, PROGRAM_PROGRAM_NUMBER));
    if (prog == NULL || !PyTuple_CheckExact(prog) || PyTuple_GET_SIZE(prog) != 5) return NULL;
    PyObject *p = self->program->tp_alloc(self->program, 8); /* tuple.__new__(Program, ...), as the Python does */
    if (p == NULL) return NULL;
    for (Py_ssize_t i = 0; i < 5; i++) PyTuple_SET_ITEM(p, i, Py_NewRef(PyTuple_GET_ITEM(prog, i)));
    for (Py_ssize_t i = 0; i < 3; i++) PyTuple_SET_ITEM(p, 5 + i, Py_NewRef(PyTuple_GET_ITEM(rec, PROGRAM_PROGRAM_ID + i)));
    PyObject *r = PyTuple_Pack(3, PyTuple_GET_ITEM(rec, 0), PyTuple_GET_ITEM(rec, PROGRAM_OPERATION_ID), p);
    Py_DECREF(p);
    return r;
}

/* Whether LogTail._decode passes the record on as it is: an op's FREE and ALLOC (every op), a row (a matmul's
 * device_perf: most of a model's ops) but a mesh tensor's device_tensors row (its tensor noted), a stored tensor's
 * VALUES, and the rarer tags that fall to its last branch. */
static int as_it_is(long tag, Py_ssize_t width, PyObject *rec) {
    switch (tag) {
    case TAG_FREE: case TAG_TENSOR: case TAG_DEVICE: case TAG_META: case TAG_FILE_LOST: case TAG_VALUES:
        return 1;
    case TAG_ALLOC:
        return width == ALLOC_WIDTH;
    case TAG_ROW:
        return width != 3 || (PyUnicode_CheckExact(PyTuple_GET_ITEM(rec, 1)) &&
                              PyUnicode_CompareWithASCIIString(PyTuple_GET_ITEM(rec, 1), "device_tensors") != 0);
    default:
        return 0;
    }
}

static int decode(Reader *self, PyObject *tail, PyObject *recs, PyObject *out) {
    if (!PyList_CheckExact(recs)) { /* a write is a list (LogSink's); anything else as the Python reads it */
        PyObject *r = PyObject_CallMethodObjArgs(tail, s_decode, recs, out, NULL);
        Py_XDECREF(r);
        return r == NULL ? -1 : 0;
    }
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(recs); i++) {
        PyObject *rec = PyList_GET_ITEM(recs, i);
        long tag = -1;
        if (PyTuple_CheckExact(rec) && PyTuple_GET_SIZE(rec) > 0 && PyLong_CheckExact(PyTuple_GET_ITEM(rec, 0))) {
            int overflow;
            tag = PyLong_AsLongAndOverflow(PyTuple_GET_ITEM(rec, 0), &overflow);
            if (overflow) tag = -1;
        }
        Py_ssize_t width = tag < 0 ? 0 : PyTuple_GET_SIZE(rec);
        if (tag == TAG_OP && width == OP_WIDTH) {
            if (decode_op(self, tail, rec, out) < 0) return -1;
            continue;
        }
        if (as_it_is(tag, width, rec)) {
            if (PyList_Append(out, rec) < 0) return -1;
            continue;
        }
        if (tag == TAG_PROGRAM && width == PROGRAM_WIDTH) {
            PyObject *r = launch(self, rec);
            if (r != NULL) {
                if (append_new(out, r) < 0) return -1;
                continue;
            }
            if (PyErr_Occurred()) return -1;
        }
        /* any other record, or one that missed: LogTail._decode((rec,), out) */
        PyObject *one = PyTuple_Pack(1, rec);
        if (one == NULL) return -1;
        PyObject *r = PyObject_CallMethodObjArgs(tail, s_decode, one, out, NULL);
        Py_DECREF(one);
        if (r == NULL) return -1;
        Py_DECREF(r);
    }
    return 0;
}

/* LogTail._writes(mm, out, n) for a trusted log: tail.off is read at the start and set past each write decoded. */
static PyObject *Reader_writes(Reader *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 4 || !PyList_Check(args[2])) {
        PyErr_SetString(PyExc_TypeError, "writes(tail, mm, out: list, n)");
        return NULL;
    }
    PyObject *tail = args[0], *out = args[2], *result = NULL;
    Py_ssize_t n = PyLong_AsSsize_t(args[3]);
    if (n == -1 && PyErr_Occurred()) return NULL;
    PyObject *o = PyObject_GetAttr(tail, s_off);
    if (o == NULL) return NULL;
    Py_ssize_t off = PyLong_AsSsize_t(o), start = off;
    Py_DECREF(o);
    if (off < 0) return PyErr_Occurred() ? NULL : PyErr_Format(PyExc_ValueError, "an offset of %zd", off);
    Py_buffer view;
    if (PyObject_GetBuffer(args[1], &view, PyBUF_SIMPLE) < 0) return NULL;
    const unsigned char *buf = view.buf;
    Py_ssize_t size = view.len;
    int stop = FULL;
    while (PyList_GET_SIZE(out) < n) {
        if (off + 4 > size) {
            stop = NEXT;
            break;
        }
        uint32_t length = (uint32_t)buf[off] | (uint32_t)buf[off + 1] << 8 | (uint32_t)buf[off + 2] << 16 |
                          (uint32_t)buf[off + 3] << 24; /* little-endian, as oplog._LEN */
        if (length == 0 || length == END_LENGTH) {
            stop = length == 0 ? WAIT : NEXT;
            break;
        }
        Py_ssize_t end = off + 4 + (Py_ssize_t)length;
        PyObject *recs = NULL;
        if (end > size) PyErr_SetString(PyExc_ValueError, "a record runs past its segment");
        else recs = PyMarshal_ReadObjectFromString((const char *)buf + off + 4, (Py_ssize_t)length);
        if (recs == NULL) {
            if (!PyErr_ExceptionMatches(PyExc_ValueError) && !PyErr_ExceptionMatches(PyExc_EOFError) &&
                !PyErr_ExceptionMatches(PyExc_TypeError))
                goto done;
            PyObject *type, *value, *tb;
            PyErr_Fetch(&type, &value, &tb);
            PyErr_NormalizeException(&type, &value, &tb);
            Py_XDECREF(type);
            Py_XDECREF(tb);
            result = Py_BuildValue("(nN)", off, value); /* (its offset, the error): the log ends there */
            goto done;
        }
        int failed = decode(self, tail, recs, out);
        Py_DECREF(recs);
        if (failed) goto done;
        off = end;
    }
    result = PyLong_FromLong(stop);
done:
    PyBuffer_Release(&view);
    if (off != start) {
        PyObject *type, *value, *tb;
        PyErr_Fetch(&type, &value, &tb); /* an error of the write after: raised once off is set */
        PyObject *o2 = PyLong_FromSsize_t(off);
        int failed = o2 == NULL || PyObject_SetAttr(tail, s_off, o2) < 0;
        Py_XDECREF(o2);
        if (failed) {
            Py_XDECREF(type);
            Py_XDECREF(value);
            Py_XDECREF(tb);
            Py_CLEAR(result);
        } else {
            PyErr_Restore(type, value, tb);
        }
    }
    return result;
}

static int Reader_init(Reader *self, PyObject *args, PyObject *kwds) {
    PyObject *stacks, *programs, *configs, *objects, *wired, *tensors, *mesh, *operands, *estimates, *skip, *columns;
    PyTypeObject *tensor_arg, *program;
    Py_ssize_t max_tensors, max_objects;
    if (!PyArg_ParseTuple(args, "O!O!O!O!O!O!O!O!O!O!nnO!O!O!:Reader", &PyDict_Type, &stacks, &PyDict_Type,
                          &programs, &PyDict_Type, &configs, &PyDict_Type, &objects, &PyDict_Type, &wired,
                          &PyDict_Type, &tensors, &PySet_Type, &mesh, &PyDict_Type, &operands, &PyDict_Type,
                          &estimates, &PyDict_Type, &skip, &max_tensors, &max_objects, &PyType_Type, &tensor_arg,
                          &PyType_Type, &program, &PyTuple_Type, &columns))
        return -1;
    if (!PyType_IsSubtype(program, &PyTuple_Type)) {
        PyErr_SetString(PyExc_TypeError, "Program must be a tuple type");
        return -1;
    }
    Py_XSETREF(self->stacks, Py_NewRef(stacks));
    Py_XSETREF(self->programs, Py_NewRef(programs));
    Py_XSETREF(self->configs, Py_NewRef(configs));
    Py_XSETREF(self->objects, Py_NewRef(objects));
    Py_XSETREF(self->wired, Py_NewRef(wired));
    Py_XSETREF(self->tensors, Py_NewRef(tensors));
    Py_XSETREF(self->mesh, Py_NewRef(mesh));
    Py_XSETREF(self->operands, Py_NewRef(operands));
    Py_XSETREF(self->estimates, Py_NewRef(estimates));
    Py_XSETREF(self->skip, Py_NewRef(skip));
    Py_XSETREF(self->tensor_arg, Py_NewRef(tensor_arg));
    Py_XSETREF(self->program, (PyTypeObject *)Py_NewRef(program));
    Py_XSETREF(self->columns, Py_NewRef(columns));
    self->max_tensors = max_tensors;
    self->max_objects = max_objects;
    return 0;
}

static void Reader_dealloc(Reader *self) {
    Py_XDECREF(self->stacks);
    Py_XDECREF(self->programs);
    Py_XDECREF(self->configs);
    Py_XDECREF(self->objects);
    Py_XDECREF(self->wired);
    Py_XDECREF(self->tensors);
    Py_XDECREF(self->mesh);
    Py_XDECREF(self->operands);
    Py_XDECREF(self->estimates);
    Py_XDECREF(self->skip);
    Py_XDECREF(self->tensor_arg);
    Py_XDECREF(self->program);
    Py_XDECREF(self->columns);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyMethodDef Reader_methods[] = {
    {"writes", (PyCFunction)(void (*)(void))Reader_writes, METH_FASTCALL,
     "writes(tail, mm, out, n): oplog.LogTail._writes for a trusted log (see ttreport/capturing/_logread.c)."},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject ReaderType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "ttreport.capturing._logread.Reader",
    .tp_basicsize = sizeof(Reader),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "The op log's writes read for oplog.LogTail (trusted), its caches' hits in C, the rest by its Python.",
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)Reader_init,
    .tp_dealloc = (destructor)Reader_dealloc,
    .tp_methods = Reader_methods,
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_logread", NULL, -1, NULL};

PyMODINIT_FUNC PyInit__logread(void) {
    if (PyType_Ready(&ReaderType) < 0) return NULL;
    if (!(s_op = PyUnicode_InternFromString("_op")) || !(s_decode = PyUnicode_InternFromString("_decode")) ||
        !(s_perf = PyUnicode_InternFromString("perf")) || !(s_note = PyUnicode_InternFromString("note")) ||
        !(s_row = PyUnicode_InternFromString("row")) || !(s_off = PyUnicode_InternFromString("off")) ||
        !(s_device_perf = PyUnicode_InternFromString("device_perf")) ||
        !(s_transpose_a = PyUnicode_InternFromString("transpose_a")) || !(row_tag = PyLong_FromLong(TAG_ROW)))
        return NULL;
    PyObject *m = PyModule_Create(&module);
    if (m == NULL) return NULL;
    if (PyModule_AddObjectRef(m, "Reader", (PyObject *)&ReaderType) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}

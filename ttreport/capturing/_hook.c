/* ttreport.capturing._hook: the recorder's per-op path in C, for a capture that writes an op log.
 *
 * The optional accelerator of ttreport/capturing/recorder.py (built by setup.py; TTREPORT_PURE=1 or no
 * compiler: the Python methods run). Hook(...) takes the recorder's own objects (its counters, its dicts of
 * seen tensors, stacks and configs, its thread-local op stack, the log's pending list, lock and segment), so
 * the C path and the Python one share one state and may take turns op by op. Three callables:
 *
 *   hook.begin(op, args, kwargs) -> token   Recorder.begin's token (records.Token)
 *   hook.end(token, output, exc)            Recorder.end: the OP record (records.Op), appended to the log
 *   hook.on_buffer(event, buf)              Recorder._buffer_listener: "alloc", "free", a known "program"
 *
 * Each does the common case itself (tensors and plain values as arguments, one new device tensor out, no
 * error, no golden, no stored inputs, no buffer pages; a stored output of up to 64 KiB after
 * hook.store_with(...)) and hands anything else to the Python method with
 * the same arguments, so the records are the Python path's record for record (tests/test_hook_native.py
 * holds a log of each equal).
 *
 * Why C: the Python begin, end and listener cost the model's thread ~7 us an op of a 32x32 add (bench/README.md,
 * "Issue 14, round 6"), most of it bytecodes around a few dict lookups and tuple builds.
 *
 *   >>> from ttreport.capturing import recorder
 *   >>> recorder.NATIVE   # True when this module is built and TTREPORT_PURE is not set
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <marshal.h>
#include <structmember.h>
#include <string.h>
#include <time.h>

#if PY_VERSION_HEX < 0x030B0000 /* 3.10: marshal's float packer before it was public */
#define PyFloat_Pack8(x, p, le) _PyFloat_Pack8((x), (unsigned char *)(p), (le))
#endif

/* The records' tags and field positions (TAG_OP, OP_SPECS, TOKEN_DEPTH, ...), rendered from records.py */
#include "_records.h"

static PyObject *S_deferred_signal, *S_golden, *S_boundary, *S_stack, *S_thread, *S_shape, *S_device_id, *S_name,
    *S_bytes_per_bank_used, *S_num_banks, *S_off, *S_room, *S_mm, *S_write, *S_check_at, *S_pace, *S_behind,
    *S_back_pressure, *S_nbytes, *S_is_cpu, *S_is_contiguous, *S_data_ptr, *S_dtype, *S_budget, *S_tensor_bytes,
    *S_acquire_name, *S_release_name, *S_steps, *S_ev_free, *S_ev_alloc, *S_ev_program;

typedef struct {
    PyObject_HEAD
    PyObject *rec;          /* the Recorder */
    PyObject *begin_py;     /* Recorder.begin (the function): called with rec first */
    PyObject *end_py;       /* Recorder.end */
    PyObject *listener_py;  /* the Python listener (program events, buffer pages) */
    PyObject *op_ids, *seq; /* itertools.count */
    PyObject *local;        /* threading.local: .stack, .thread */
    PyObject *seen;         /* dict: tensor id -> None */
    PyObject *stacks;       /* dict: frames -> stack number */
    PyObject *define_stack; /* rec._define_stack */
    PyObject *walk;         /* stacks.walker(depth) */
    PyObject *code_is_lib, *classify, *stack_items;
    PyObject *allocators;   /* list of (L1, DRAM) BankAllocator */
    PyObject *tensor_type, *buffer_type, *default_tile;
    PyObject *strip, *see;  /* rec._strip, rec._see */
    PyObject *devices, *configs;
    PyObject *estimating;   /* dict: op -> whether end() asks rec.estimate about it */
    PyObject *estimates;    /* rec._estimates(op) */
    PyObject *pending;      /* LogSink._pending */
    PyObject *sink;
    PyObject *programs;     /* LogSink._programs: a program's static part -> (number, CBs, ranges) */
    PyObject *program_type; /* device_sim.device_work.Program */
    PyObject *acquire, *release; /* LogSink._lock's */
    long long t0;
    Py_ssize_t max_seen;
    int stack_traces;
    int pages;              /* buffer pages recorded: the Python listener makes those records */
    int store_inputs, store_outputs; /* tensors="all" / not "none": the Python begin / end plan the files */
    int graphs;             /* Config.device_graphs: programs are recorded */
    /* The thread-local op stack and name of the thread that ran the last op, by its thread state's unique id: a
     * model's ops mostly come from one thread, and threading.local's getattr cost ~0.05 us a read, 4 an op. The
     * list is the one local.stack holds for good (the Python begin makes it once a thread). */
    uint64_t cached_thread_id;
    PyObject *cached_stack, *cached_thread;
    /* Stored outputs in C (store_with(...)): NULL until it is called, and then the Python end stores them. */
    PyObject *stored;        /* rec._stored: ids whose values are stored */
    PyObject *stored_values; /* rec._stored_values: id -> (weakref of the Tensor, weakref of the values stored) */
    PyObject *prune;         /* rec._prune_stored: forgets the gone tensors, returns the size to prune at next */
    Py_ssize_t prune_at;
    PyObject *storage;       /* the LogStorage: its _budget of log bytes before it looks at the disk again */
    PyObject *storage_lock;  /* rec._storage_lock, taken without waiting (else the Python end runs) */
    PyObject *shared;        /* device_sim.views.SHARED: while a view exists the Python end plans the files */
    PyObject *dtype_text;    /* log_tensors._TEXT: torch dtype -> its text */
    PyObject *suffix;        /* ".pt" */
    PyObject *torch_tensor;  /* torch.Tensor: a plain one's values only */
    PyObject *values_tag;    /* log_tensors.VALUES */
    PyObject *handoff;       /* storage.handoff: the model's file threads take each VALUES record (None: none) */
    long long max_tensor_bytes, log_max_bytes;
} Hook;

/* A plain Tensor's slots, read at their offsets as CPython's slot descriptors do (device_sim/_native.c does the
 * same): ~0.03 us a read less than PyObject_GetAttr, ~10 reads an op. */
enum { T_VALUE, T_DTYPE, T_LAYOUT, T_TILE, T_DEVICE, T_MEMORY_CONFIG, T_SOURCE, T_BUFFER, T_ID, N_SLOTS };
static const char *slot_names[N_SLOTS] = {"_value", "dtype", "layout", "tile", "_device", "_memory_config",
                                          "memory_config_source", "buffer", "tensor_id"};
static Py_ssize_t slot_offset[N_SLOTS];
#define SLOT(obj, i) (*(PyObject **)((char *)(obj) + slot_offset[i])) /* borrowed; NULL when unset */

static int find_slots(PyObject *tensor_type) {
    for (int i = 0; i < N_SLOTS; i++) {
        PyObject *d = PyObject_GetAttrString(tensor_type, slot_names[i]);
        if (d == NULL) return -1;
        int ok = Py_IS_TYPE(d, &PyMemberDescr_Type) && ((PyMemberDescrObject *)d)->d_member->type == T_OBJECT_EX;
        if (ok) slot_offset[i] = ((PyMemberDescrObject *)d)->d_member->offset;
        Py_DECREF(d);
        if (!ok) {
            PyErr_Format(PyExc_TypeError, "Hook: Tensor.%s is not a slot", slot_names[i]);
            return -1;
        }
    }
    return 0;
}

/* This thread's op stack (local.stack) and name (local.thread): 1 with new references, 0 when the thread has
 * none yet (its first op: the Python begin makes them), -1 on an error. */
static int thread_state(Hook *h, PyObject **stack, PyObject **thread) {
    uint64_t id = PyThreadState_GetID(PyThreadState_Get());
    if (h->cached_stack != NULL && h->cached_thread_id == id) {
        *stack = Py_NewRef(h->cached_stack);
        *thread = Py_NewRef(h->cached_thread);
        return 1;
    }
    PyObject *s = PyObject_GetAttr(h->local, S_stack);
    if (s == NULL) {
        if (!PyErr_ExceptionMatches(PyExc_AttributeError)) return -1;
        PyErr_Clear();
        return 0;
    }
    PyObject *t = PyObject_GetAttr(h->local, S_thread);
    if (t == NULL || !PyList_CheckExact(s)) {
        Py_DECREF(s);
        Py_XDECREF(t);
        if (PyErr_ExceptionMatches(PyExc_AttributeError)) PyErr_Clear();
        return PyErr_Occurred() ? -1 : 0;
    }
    Py_XSETREF(h->cached_stack, Py_NewRef(s));
    Py_XSETREF(h->cached_thread, Py_NewRef(t));
    h->cached_thread_id = id;
    *stack = s;
    *thread = t;
    return 1;
}


static long long now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts); /* time.perf_counter_ns()'s clock on Linux */
    return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static int is_primitive(PyObject *x) {
    PyTypeObject *t = Py_TYPE(x);
    return t == &PyLong_Type || t == &PyFloat_Type || t == &PyBool_Type || t == &PyUnicode_Type || x == Py_None;
}

/* -- the log's bytes --------------------------------------------------------------------------------------------- */

/* marshal.dumps(obj, 2)'s bytes for what records hold (None, bools, ints, floats, bytes, str, and tuples, lists
 * and dicts of them), written by hand into a buffer kept between ops: marshal's own writer costs ~1 us an op of
 * the 32x32 add loop (a type test chain per value, a list and a bytes object per write). Anything else (an int
 * past 64 bits, a subclass) is left to marshal. tests/test_hook_native.py holds the bytes equal to marshal's. */
typedef struct {
    char *data;
    Py_ssize_t len, cap;
} Out;

static int out_room(Out *o, Py_ssize_t n) {
    if (o->len + n <= o->cap) return 0;
    Py_ssize_t cap = o->cap ? o->cap : 4096;
    while (cap < o->len + n) cap *= 2;
    char *data = PyMem_Realloc(o->data, cap);
    if (data == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    o->data = data;
    o->cap = cap;
    return 0;
}

static void put_u32(Out *o, uint32_t v) { /* marshal's little-endian int32 */
    unsigned char *d = (unsigned char *)o->data + o->len;
    d[0] = (unsigned char)v;
    d[1] = (unsigned char)(v >> 8);
    d[2] = (unsigned char)(v >> 16);
    d[3] = (unsigned char)(v >> 24);
    o->len += 4;
}

#define ENC_UNSUPPORTED 1

static int encode(Out *o, PyObject *v, int depth) {
    if (depth > 32) return ENC_UNSUPPORTED;
    if (out_room(o, 5) < 0) return -1;
    if (v == Py_None || v == Py_True || v == Py_False) {
        o->data[o->len++] = v == Py_None ? 'N' : v == Py_True ? 'T' : 'F';
        return 0;
    }
    PyTypeObject *t = Py_TYPE(v);
    if (t == &PyLong_Type) {
        int overflow;
        long long x = PyLong_AsLongLongAndOverflow(v, &overflow);
        if (overflow) return ENC_UNSUPPORTED;
        if (x >= -2147483648LL && x <= 2147483647LL) {
            o->data[o->len++] = 'i';
            put_u32(o, (uint32_t)(int32_t)x);
            return 0;
        }
        /* TYPE_LONG: the count of 15-bit digits (negative for a negative number), then the digits, low first */
        unsigned long long m = x < 0 ? 0ULL - (unsigned long long)x : (unsigned long long)x;
        int n = 0;
        for (unsigned long long r = m; r; r >>= 15) n++;
        if (out_room(o, 5 + 2 * n) < 0) return -1;
        o->data[o->len++] = 'l';
        put_u32(o, (uint32_t)(int32_t)(x < 0 ? -n : n));
        for (int i = 0; i < n; i++, m >>= 15) {
            o->data[o->len++] = (char)(m & 0xFF);
            o->data[o->len++] = (char)((m >> 8) & 0x7F);
        }
        return 0;
    }
    if (t == &PyBytes_Type || t == &PyUnicode_Type) {
        const char *text;
        Py_ssize_t n;
        if (t == &PyBytes_Type) {
            text = PyBytes_AS_STRING(v);
            n = PyBytes_GET_SIZE(v);
        } else {
            text = PyUnicode_AsUTF8AndSize(v, &n); /* marshal writes str as UTF-8 ("surrogatepass" aside) */
            if (text == NULL) {
                PyErr_Clear();
                return ENC_UNSUPPORTED;
            }
        }
        if (n > 0x7FFFFFFF) return ENC_UNSUPPORTED;
        if (out_room(o, 5 + n) < 0) return -1;
        o->data[o->len++] = t == &PyBytes_Type ? 's' : 'u';
        put_u32(o, (uint32_t)n);
        memcpy(o->data + o->len, text, n);
        o->len += n;
        return 0;
    }
    if (t == &PyFloat_Type) {
        if (out_room(o, 9) < 0) return -1;
        o->data[o->len++] = 'g'; /* TYPE_BINARY_FLOAT: 8 bytes, little-endian */
        if (PyFloat_Pack8(PyFloat_AS_DOUBLE(v), o->data + o->len, 1) < 0) return -1;
        o->len += 8;
        return 0;
    }
    if (t == &PyDict_Type) {
        o->data[o->len++] = '{'; /* key, value, ..., then TYPE_NULL */
        Py_ssize_t pos = 0;
        PyObject *key, *value;
        while (PyDict_Next(v, &pos, &key, &value)) { /* no Python runs here: the dict cannot change */
            int r = encode(o, key, depth + 1);
            if (!r) r = encode(o, value, depth + 1);
            if (r) return r;
        }
        if (out_room(o, 1) < 0) return -1;
        o->data[o->len++] = '0';
        return 0;
    }
    if (t == &PyTuple_Type || t == &PyList_Type) {
        Py_ssize_t n = Py_SIZE(v);
        PyObject **items = t == &PyTuple_Type ? ((PyTupleObject *)v)->ob_item : ((PyListObject *)v)->ob_item;
        o->data[o->len++] = t == &PyTuple_Type ? '(' : '[';
        put_u32(o, (uint32_t)n);
        for (Py_ssize_t i = 0; i < n; i++) {
            int r = encode(o, items[i], depth + 1);
            if (r) return r;
        }
        return 0;
    }
    return ENC_UNSUPPORTED;
}

/* A tuple of `n` items given by position (a record's fields set by their _records.h positions), new references
 * taken; a field left NULL is one that records.py declares and this file does not fill: an error, not a crash. */
static PyObject *pack(PyObject *const *items, Py_ssize_t n) {
    for (Py_ssize_t i = 0; i < n; i++)
        if (items[i] == NULL) {
            PyErr_Format(PyExc_SystemError, "_hook.c fills no field %zd of a record of records.py", i);
            return NULL;
        }
    PyObject *t = PyTuple_New(n);
    if (t == NULL) return NULL;
    for (Py_ssize_t i = 0; i < n; i++) PyTuple_SET_ITEM(t, i, Py_NewRef(items[i]));
    return t;
}

/* A record given as its fields, without the tuple: those in `as_tuple` (a bit per field) are lists that the
 * record holds as tuples. */
typedef struct {
    PyObject **fields;
    int n;
    unsigned as_tuple;
} Fields;

static PyObject *fields_tuple(const Fields *f) { /* the record itself, for marshal */
    PyObject *t = PyTuple_New(f->n);
    if (t == NULL) return NULL;
    for (int i = 0; i < f->n; i++) {
        PyObject *x = f->as_tuple >> i & 1 ? PyList_AsTuple(f->fields[i]) : Py_NewRef(f->fields[i]);
        if (x == NULL) {
            Py_DECREF(t);
            return NULL;
        }
        PyTuple_SET_ITEM(t, i, x);
    }
    return t;
}

/* [*pending[:k], record] as marshal.dumps(..., 2) writes it, into o: 0, ENC_UNSUPPORTED or -1. */
static int encode_write(Out *o, PyObject *pending, Py_ssize_t k, const Fields *f) {
    o->len = 0;
    if (out_room(o, 10) < 0) return -1;
    o->data[o->len++] = '[';
    put_u32(o, (uint32_t)(k + 1));
    for (Py_ssize_t i = 0; i < k; i++) {
        int r = encode(o, PyList_GET_ITEM(pending, i), 0);
        if (r) return r;
    }
    o->data[o->len++] = '(';
    put_u32(o, (uint32_t)f->n);
    for (int i = 0; i < f->n; i++) {
        PyObject *x = f->fields[i];
        int r;
        if (f->as_tuple >> i & 1) { /* a list written as the tuple the record holds */
            Py_ssize_t m = PyList_GET_SIZE(x);
            if (out_room(o, 5) < 0) return -1;
            o->data[o->len++] = '(';
            put_u32(o, (uint32_t)m);
            r = 0;
            for (Py_ssize_t j = 0; j < m && !r; j++) r = encode(o, PyList_GET_ITEM(x, j), 1);
        } else {
            r = encode(o, x, 1);
        }
        if (r) return r;
    }
    return 0;
}

static Out scratch; /* append_op's: no Python code runs while it is filled and copied (the GIL is held) */

static PyObject *dumps(PyObject *module, PyObject *obj) {
    Out o = {NULL, 0, 0};
    int r = encode(&o, obj, 0);
    PyObject *out = r < 0 ? NULL : r ? Py_NewRef(Py_None) : PyBytes_FromStringAndSize(o.data, o.len);
    PyMem_Free(o.data);
    return out;
}

/* -- begin ------------------------------------------------------------------------------------------------- */

/* One argument as the log records it, appending tensor ids to `inputs`: a seen Tensor as b"t<id>", a plain
 * value as it is, anything else as Recorder._strip records it. New reference. */
static PyObject *record_arg(Hook *h, PyObject *a, PyObject *inputs, PyObject *specs) {
    PyObject *tid;
    if (Py_TYPE(a) == (PyTypeObject *)h->tensor_type && (tid = SLOT(a, T_ID)) != NULL) {
        Py_INCREF(tid);
        int hit = PyDict_Contains(h->seen, tid);
        if (hit < 0) { Py_DECREF(tid); return NULL; }
        if (hit) {
            Py_ssize_t v = PyLong_AsSsize_t(tid);
            if (v == -1 && PyErr_Occurred()) { Py_DECREF(tid); return NULL; }
            int err = PyList_Append(inputs, tid);
            Py_DECREF(tid);
            if (err < 0) return NULL;
            char text[32], *end = text + sizeof text, *p = end; /* b"t%d" % tid, without printf's parsing */
            size_t u = v < 0 ? 0 - (size_t)v : (size_t)v;
            do {
                *--p = (char)('0' + u % 10);
                u /= 10;
            } while (u);
            if (v < 0) *--p = '-';
            *--p = 't';
            return PyBytes_FromStringAndSize(p, end - p);
        }
        Py_DECREF(tid);
    } else if (is_primitive(a)) {
        return Py_NewRef(a);
    }
    PyObject *call[3] = {a, inputs, specs};
    return PyObject_Vectorcall(h->strip, call, 3, NULL);
}

/* 1 when the Python begin must run instead (a first op on this thread, a signal to deliver, goldens,
 * stored inputs), 0 when not, -1 on an error. */
static int begin_is_slow(Hook *h) {
    PyObject *v = PyObject_GetAttr(h->rec, S_deferred_signal);
    if (v == NULL) return -1;
    int slow = v != Py_None;
    Py_DECREF(v);
    if (slow) return 1;
    v = PyObject_GetAttr(h->rec, S_golden);
    if (v == NULL) return -1;
    slow = v != Py_None;
    Py_DECREF(v);
    return slow;
}

static PyObject *stack_ref(Hook *h) {
    if (!h->stack_traces) return Py_NewRef(Py_None);
    PyObject *boundary = PyObject_GetAttr(h->rec, S_boundary);
    if (boundary == NULL) return NULL;
    PyObject *zero = PyLong_FromLong(0);
    if (zero == NULL) { Py_DECREF(boundary); return NULL; }
    /* skip 0: this C function has no frame, so the innermost Python frame is the op's caller (the registry's
     * wrapper), where the Python begin's walk starts with skip 1. */
    PyObject *call[5] = {zero, boundary, h->stack_items, h->code_is_lib, h->classify};
    PyObject *frames = PyObject_Vectorcall(h->walk, call, 5, NULL);
    Py_DECREF(zero);
    Py_DECREF(boundary);
    if (frames == NULL) return NULL;
    PyObject *ref = PyDict_GetItemWithError(h->stacks, frames);
    if (ref != NULL) {
        Py_INCREF(ref);
    } else if (!PyErr_Occurred()) {
        ref = PyObject_CallOneArg(h->define_stack, frames);
    }
    Py_DECREF(frames);
    return ref;
}

static PyObject *Hook_begin(Hook *h, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 3) {
        PyErr_SetString(PyExc_TypeError, "begin(op, args, kwargs) takes 3 arguments");
        return NULL;
    }
    PyObject *op = args[0], *op_args = args[1], *kwargs = args[2];
    int slow = h->store_inputs ? 1 : begin_is_slow(h);
    if (slow < 0) return NULL;
    PyObject *stack = NULL, *thread = NULL;
    if (!slow && PyTuple_Check(op_args) && (kwargs == Py_None || PyDict_Check(kwargs))) {
        if (thread_state(h, &stack, &thread) < 0) return NULL; /* none: the Python begin sets them up */
    }
    if (stack == NULL) {
        PyObject *call[4] = {h->rec, op, op_args, kwargs};
        return PyObject_Vectorcall(h->begin_py, call, 4, NULL);
    }
    long long start = now_ns();
    PyObject *op_id = NULL, *parent = NULL, *depth = NULL, *ref = NULL, *inputs = NULL,
             *specs = NULL, *files = NULL, *args_q = NULL, *kwargs_q = NULL, *start_o = NULL, *token = NULL,
             *step = NULL;
    op_id = PyIter_Next(h->op_ids);
    if (op_id == NULL) goto done;
    Py_ssize_t n = PyList_GET_SIZE(stack);
    parent = n ? Py_NewRef(PyList_GET_ITEM(stack, n - 1)) : Py_NewRef(Py_None);
    if (PyList_Append(stack, op_id) < 0) goto done;
    depth = PyLong_FromSsize_t(PyList_GET_SIZE(stack) - 1);
    if (depth == NULL) goto done;
    ref = stack_ref(h);
    if (ref == NULL) goto done;
    inputs = PyList_New(0);
    specs = PyList_New(0);
    files = PyList_New(0);
    if (inputs == NULL || specs == NULL || files == NULL) goto done;
    Py_ssize_t na = PyTuple_GET_SIZE(op_args);
    args_q = PyTuple_New(na);
    if (args_q == NULL) goto done;
    for (Py_ssize_t i = 0; i < na; i++) {
        PyObject *q = record_arg(h, PyTuple_GET_ITEM(op_args, i), inputs, specs);
        if (q == NULL) goto done;
        PyTuple_SET_ITEM(args_q, i, q);
    }
    if (kwargs != Py_None && PyDict_GET_SIZE(kwargs)) {
        kwargs_q = PyDict_New();
        if (kwargs_q == NULL) goto done;
        Py_ssize_t pos = 0;
        PyObject *k, *v;
        while (PyDict_Next(kwargs, &pos, &k, &v)) {
            Py_INCREF(k);
            Py_INCREF(v); /* held: _strip runs Python, which may change the dict (it must not) */
            PyObject *call[3] = {v, inputs, specs};
            PyObject *q = PyObject_Vectorcall(h->strip, call, 3, NULL);
            Py_DECREF(v);
            int err = q == NULL ? -1 : PyDict_SetItem(kwargs_q, k, q);
            Py_DECREF(k);
            Py_XDECREF(q);
            if (err < 0) goto done;
        }
    } else {
        kwargs_q = Py_NewRef(Py_None);
    }
    start_o = PyLong_FromLongLong(start);
    if (start_o == NULL) goto done;
    step = PyObject_GetAttr(h->rec, S_steps); /* Recorder.steps: Capture.step() counts it */
    if (step == NULL) goto done;
    PyObject *items[TOKEN_WIDTH] = {[TOKEN_OP] = op, [TOKEN_OPERATION_ID] = op_id, [TOKEN_START_NS] = start_o,
        [TOKEN_PARENT_OPERATION_ID] = parent, [TOKEN_DEPTH] = depth, [TOKEN_THREAD] = thread, [TOKEN_STACK] = ref,
        [TOKEN_ARGS] = args_q, [TOKEN_KWARGS] = kwargs_q, [TOKEN_INPUTS] = inputs, [TOKEN_SPECS] = specs,
        [TOKEN_FILES] = files, [TOKEN_GOLDEN_ARGS] = Py_None, [TOKEN_OP_ARGS] = op_args, [TOKEN_OP_KWARGS] = kwargs,
        [TOKEN_STEP] = step};
    token = pack(items, TOKEN_WIDTH);
done:
    if (token == NULL && op_id != NULL && PyList_GET_SIZE(stack) && PyList_GET_ITEM(stack, PyList_GET_SIZE(stack) - 1)
        == op_id) {
        PyObject *type, *value, *tb;
        PyErr_Fetch(&type, &value, &tb);
        if (PySequence_DelItem(stack, -1) < 0) PyErr_Clear(); /* the op is not recorded: end() is not called */
        PyErr_Restore(type, value, tb);
    }
    Py_XDECREF(stack);
    Py_XDECREF(thread);
    Py_XDECREF(op_id);
    Py_XDECREF(parent);
    Py_XDECREF(depth);
    Py_XDECREF(ref);
    Py_XDECREF(inputs);
    Py_XDECREF(specs);
    Py_XDECREF(files);
    Py_XDECREF(args_q);
    Py_XDECREF(kwargs_q);
    Py_XDECREF(start_o);
    Py_XDECREF(step);
    return token;
}

/* -- end --------------------------------------------------------------------------------------------------- */

static PyObject *as_int(PyObject *x) { /* int(x) of an IntEnum member: marshal takes exact ints only */
    return PyLong_CheckExact(x) ? Py_NewRef(x) : PyNumber_Long(x);
}

/* The spec of a new plain Tensor `t` on a known device, as Recorder._see makes it, marked seen; Py_None when
 * it is not that case (Recorder._see must make it), NULL on an error. `tid` is t.tensor_id. */
static PyObject *output_spec(Hook *h, PyObject *t, PyObject *tid, PyObject *producer) {
    if (PyDict_GET_SIZE(h->seen) >= h->max_seen) return Py_NewRef(Py_None);
    /* the slots behind t.device(), t.memory_config(), ...: `t` is a plain Tensor */
    PyObject *device = SLOT(t, T_DEVICE), *cfg = SLOT(t, T_MEMORY_CONFIG), *buf = SLOT(t, T_BUFFER),
             *tile = SLOT(t, T_TILE), *value = SLOT(t, T_VALUE), *l = SLOT(t, T_LAYOUT), *d = SLOT(t, T_DTYPE),
             *source = SLOT(t, T_SOURCE);
    if (device == NULL || cfg == NULL || buf == NULL || tile == NULL || value == NULL || l == NULL || d == NULL ||
        source == NULL || device == Py_None || cfg == Py_None || tile != h->default_tile ||
        Py_TYPE(buf) != (PyTypeObject *)h->buffer_type || PyTuple_GET_SIZE(buf) < 9)
        return Py_NewRef(Py_None);
    PyObject *shape = NULL, *layout = NULL, *dtype = NULL, *device_id = NULL, *cfg_id = NULL, *bt = NULL,
             *size = NULL, *out = NULL;
    Py_INCREF(device);
    Py_INCREF(cfg);
    Py_INCREF(buf);
    Py_INCREF(value);
    Py_INCREF(source);
    int known = PyDict_Contains(h->devices, device);
    if (known <= 0) {
        out = known < 0 ? NULL : Py_NewRef(Py_None);
        goto done;
    }
    cfg_id = PyLong_FromVoidPtr(cfg);
    if (cfg_id == NULL) goto done;
    known = PyDict_Contains(h->configs, cfg_id);
    if (known <= 0) {
        out = known < 0 ? NULL : Py_NewRef(Py_None);
        goto done;
    }
    if (value == Py_None) { /* deallocated: no shape (t.is_allocated() is False) */
        shape = Py_NewRef(Py_None);
    } else {
        PyObject *s = PyObject_GetAttr(value, S_shape);
        if (s == NULL) goto done;
        shape = PySequence_Tuple(s);
        Py_DECREF(s);
        if (shape == NULL) goto done;
    }
    layout = as_int(l);
    dtype = layout ? as_int(d) : NULL;
    device_id = dtype ? PyObject_GetAttr(device, S_device_id) : NULL;
    if (device_id == NULL) goto done;
    bt = as_int(PyTuple_GET_ITEM(buf, 2)); /* Buffer: buffer_type */
    size = bt ? PyNumber_Multiply(PyTuple_GET_ITEM(buf, 6), PyTuple_GET_ITEM(buf, 7)) : NULL; /* pages */
    if (size == NULL) goto done;
    if (PyDict_SetItem(h->seen, tid, Py_None) < 0) goto done;
    PyObject *items[SPEC_WIDTH] = {[SPEC_TENSOR_ID] = tid, [SPEC_SHAPE] = shape, [SPEC_DTYPE] = dtype,
        [SPEC_LAYOUT] = layout, [SPEC_CONFIG_ID] = cfg_id, [SPEC_MEMORY_CONFIG_SOURCE] = source,
        [SPEC_DEVICE_ID] = device_id, [SPEC_ADDRESS] = PyTuple_GET_ITEM(buf, 4), [SPEC_BUFFER_TYPE] = bt,
        [SPEC_SIZE] = size, [SPEC_PRODUCER_OPERATION_ID] = producer};
    out = pack(items, SPEC_WIDTH);
done:
    Py_DECREF(device);
    Py_DECREF(cfg);
    Py_DECREF(buf);
    Py_DECREF(value);
    Py_DECREF(source);
    Py_XDECREF(shape);
    Py_XDECREF(layout);
    Py_XDECREF(dtype);
    Py_XDECREF(device_id);
    Py_XDECREF(cfg_id);
    Py_XDECREF(bt);
    Py_XDECREF(size);
    return out;
}

/* L1 and DRAM bytes in use over the capture's devices (Recorder.end's loop). */
static int bytes_used(Hook *h, PyObject **l1, PyObject **dram) {
    long long sums[2] = {0, 0};
    Py_ssize_t n = PyList_GET_SIZE(h->allocators);
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *pair = PyList_GET_ITEM(h->allocators, i);
        for (int j = 0; j < 2; j++) {
            PyObject *a = PyTuple_GET_ITEM(pair, j);
            PyObject *used = PyObject_GetAttr(a, S_bytes_per_bank_used);
            if (used == NULL) return -1;
            PyObject *banks = PyObject_GetAttr(a, S_num_banks);
            if (banks == NULL) { Py_DECREF(used); return -1; }
            long long u = PyLong_AsLongLong(used), b = PyLong_AsLongLong(banks);
            Py_DECREF(used);
            Py_DECREF(banks);
            if (PyErr_Occurred()) return -1;
            sums[j] += u * b;
        }
    }
    *l1 = PyLong_FromLongLong(sums[0]);
    *dram = PyLong_FromLongLong(sums[1]);
    return *l1 && *dram ? 0 : -1;
}

static int set_long(PyObject *o, PyObject *name, Py_ssize_t v) {
    PyObject *x = PyLong_FromSsize_t(v);
    if (x == NULL) return -1;
    int r = PyObject_SetAttr(o, name, x);
    Py_DECREF(x);
    return r;
}

static int get_ssize(PyObject *o, PyObject *name, Py_ssize_t *v) {
    PyObject *x = PyObject_GetAttr(o, name);
    if (x == NULL) return -1;
    *v = PyLong_AsSsize_t(x);
    Py_DECREF(x);
    return *v == -1 && PyErr_Occurred() ? -1 : 0;
}

/* LogSink.append of an OP record without an error: the records pending before it and it, marshalled, copied
 * into the segment, its length last; then the writer's pace, outside the lock. */
static int append_op(Hook *h, const Fields *record) {
    PyObject *r = PyObject_CallNoArgs(h->acquire);
    if (r == NULL) return -1;
    Py_DECREF(r);
    int rc = -1;
    PyObject *out = NULL, *data = NULL, *mm = NULL;
    Py_ssize_t k = PyList_GET_SIZE(h->pending), n, off, room;
    const char *bytes;
    /* Encoding runs no Python code: nothing can append to the pending list or close the log until the records
     * are in the segment and taken off the list. */
    int enc = encode_write(&scratch, h->pending, k, record);
    PyObject *whole = NULL;
    if (enc < 0) goto unlock;
    if (enc == 0) {
        bytes = scratch.data;
        n = scratch.len;
    } else { /* a value only marshal writes (a float, a dict): the Python append's way */
        /* the list is built before the offset is read: a collection it sets off may run a finalizer that frees a
         * buffer (a pending FREE) or a signal handler that closes the log (re-entrant lock) in between */
        whole = fields_tuple(record);
        if (whole == NULL) goto unlock;
        out = PyList_GetSlice(h->pending, 0, k);
        if (out == NULL || PyList_SetSlice(h->pending, 0, k, NULL) < 0 || PyList_Append(out, whole) < 0)
            goto unlock;
        data = PyMarshal_WriteObjectToString(out, 2);
        if (data == NULL) goto unlock;
        bytes = PyBytes_AS_STRING(data);
        n = PyBytes_GET_SIZE(data);
    }
    if (get_ssize(h->sink, S_off, &off) < 0 || get_ssize(h->sink, S_room, &room) < 0) goto unlock;
    mm = PyObject_GetAttr(h->sink, S_mm);
    if (mm == NULL) goto unlock;
    Py_buffer view;
    if (off + n + 8 > room || mm == Py_None || PyObject_GetBuffer(mm, &view, PyBUF_WRITABLE) < 0) {
        PyErr_Clear(); /* LogSink._write rolls to a new segment, or counts the loss, or raises as the mmap does */
        if (data == NULL) {
            data = PyBytes_FromStringAndSize(bytes, n);
            if (data == NULL || PyList_SetSlice(h->pending, 0, k, NULL) < 0) goto unlock;
        }
        r = PyObject_CallMethodOneArg(h->sink, S_write, data);
        Py_XDECREF(r);
        rc = r == NULL ? -1 : 1;
        goto unlock;
    }
    if (off + 4 + n > view.len) {
        PyBuffer_Release(&view);
        PyErr_SetString(PyExc_ValueError, "the op log's segment is shorter than its room");
        goto unlock;
    }
    char *base = (char *)view.buf;
    memcpy(base + off + 4, bytes, n);
    unsigned char len[4] = {(unsigned char)n, (unsigned char)(n >> 8), (unsigned char)(n >> 16),
                            (unsigned char)(n >> 24)}; /* little-endian, as struct "<I" */
    memcpy(base + off, len, 4); /* last: the record is whole once its length is there */
    PyBuffer_Release(&view);
    if (data == NULL && PyList_SetSlice(h->pending, 0, k, NULL) < 0) goto unlock; /* written: off the list */
    rc = set_long(h->sink, S_off, off + 4 + n);
unlock:
    Py_XDECREF(whole);
    Py_XDECREF(out);
    Py_XDECREF(data);
    Py_XDECREF(mm);
    {
        PyObject *type, *value, *tb;
        PyErr_Fetch(&type, &value, &tb);
        r = PyObject_CallNoArgs(h->release);
        if (type != NULL) {
            Py_XDECREF(r);
            PyErr_Clear();
            PyErr_Restore(type, value, tb);
        } else if (r == NULL) {
            return -1;
        } else {
            Py_DECREF(r);
        }
    }
    if (rc != 0) return rc < 0 ? -1 : 0; /* after a _write the Python append returns at once too */
    /* waits happen here, not holding the lock (LogSink.append's reason) */
    Py_ssize_t check_at;
    if (get_ssize(h->sink, S_off, &off) < 0 || get_ssize(h->sink, S_check_at, &check_at) < 0) return -1;
    if (off >= check_at) {
        r = PyObject_CallMethodNoArgs(h->sink, S_pace);
        if (r == NULL) return -1;
        Py_DECREF(r);
    }
    PyObject *behind = PyObject_GetAttr(h->sink, S_behind);
    if (behind == NULL) return -1;
    int b = PyObject_IsTrue(behind);
    Py_DECREF(behind);
    if (b < 0) return -1;
    if (b) {
        if (PyObject_SetAttr(h->sink, S_behind, Py_False) < 0) return -1;
        r = PyObject_CallMethodNoArgs(h->sink, S_back_pressure);
        if (r == NULL) return -1;
        Py_DECREF(r);
    }
    return 0;
}


/* -- stored outputs ---------------------------------------------------------------------------------------- */

/* Recorder._plan_storage + LogStorage.put_with_op for the common case: a new plain Tensor whose values (a plain
 * contiguous CPU torch tensor of at most log_max_bytes, a dtype seen before) fit in max_tensor_bytes and in the
 * log's budget, while no view shares a buffer. 1: its VALUES record is on the pending list and *files is the OP
 * record's ((id, path),); 0: not that case, nothing changed (the Python end runs); -1: an error. */
static int store_values(Hook *h, PyObject *t, PyObject *tid, PyObject *value, PyObject **files);

static int store_output(Hook *h, PyObject *t, PyObject **files) {
    *files = NULL;
    PyObject *tid = SLOT(t, T_ID), *value = SLOT(t, T_VALUE);
    if (tid == NULL || value == NULL || Py_TYPE(value) != (PyTypeObject *)h->torch_tensor || PyDict_GET_SIZE(h->shared))
        return 0;
    /* held: Python code runs below (the prune, a collection it sets off), and the slots are only borrowed */
    Py_INCREF(tid);
    Py_INCREF(value);
    int rc = store_values(h, t, tid, value, files);
    Py_DECREF(tid);
    Py_DECREF(value);
    return rc;
}

static int store_values(Hook *h, PyObject *t, PyObject *tid, PyObject *value, PyObject **files) {
    int known = PySet_Contains(h->stored, tid);
    if (known) return known < 0 ? -1 : 0;
    Py_ssize_t budget;
    if (get_ssize(h->storage, S_budget, &budget) < 0) return -1;
    PyObject *v = PyObject_GetAttr(value, S_is_cpu);
    if (v == NULL) return -1;
    int ok = v == Py_True;
    Py_DECREF(v);
    if (!ok) return 0;
    v = PyObject_CallMethodNoArgs(value, S_is_contiguous);
    if (v == NULL) return -1;
    ok = v == Py_True;
    Py_DECREF(v);
    if (!ok) return 0;
    Py_ssize_t n;
    if (get_ssize(value, S_nbytes, &n) < 0) return -1;
    if (n > h->log_max_bytes || n > budget) return 0; /* the tensor thread's, or the disk is to be looked at */
    PyObject *dtype = PyObject_GetAttr(value, S_dtype);
    if (dtype == NULL) return -1;
    PyObject *text = PyDict_GetItemWithError(h->dtype_text, dtype); /* borrowed: log_tensors._TEXT only grows */
    Py_DECREF(dtype);
    if (text == NULL) return PyErr_Occurred() ? -1 : 0;
    /* Recorder._reserve: the lock only if it is free (another thread reserving: the Python end waits for it) */
    PyObject *r = PyObject_CallMethodOneArg(h->storage_lock, S_acquire_name, Py_False);
    if (r == NULL) return -1;
    ok = r == Py_True;
    Py_DECREF(r);
    if (!ok) return 0;
    Py_ssize_t used;
    int err = get_ssize(h->rec, S_tensor_bytes, &used);
    if (!err && used + n <= h->max_tensor_bytes) err = set_long(h->rec, S_tensor_bytes, used + n);
    else if (!err) ok = 0; /* over max_tensor_bytes: the Python end warns */
    r = PyObject_CallMethodNoArgs(h->storage_lock, S_release_name);
    if (r == NULL || err < 0) {
        Py_XDECREF(r);
        return -1;
    }
    Py_DECREF(r);
    if (!ok) return 0;
    /* from here on the values are the capture's: the Python path's state changes, then the record */
    if (set_long(h->storage, S_budget, budget - n) < 0 || PySet_Add(h->stored, tid) < 0) return -1;
    PyObject *ref = PyWeakref_NewRef(value, NULL), *tref = ref ? PyWeakref_NewRef(t, NULL) : NULL;
    PyObject *refs = tref ? PyTuple_Pack(2, tref, ref) : NULL;
    if (refs != NULL) {
        /* Kept until the tensor is gone, and in no cycle (weakrefs without callbacks hold nothing): out of the
         * collector's lists, or every collection would walk the capture's stored tensors */
        PyObject_GC_UnTrack(ref);
        PyObject_GC_UnTrack(tref);
        PyObject_GC_UnTrack(refs);
    }
    Py_XDECREF(ref);
    Py_XDECREF(tref);
    if (refs == NULL) return -1;
    err = PyDict_SetItem(h->stored_values, tid, refs);
    Py_DECREF(refs);
    if (err < 0) return -1;
    if (PyDict_GET_SIZE(h->stored_values) >= h->prune_at) {
        PyObject *at = PyObject_CallNoArgs(h->prune);
        if (at == NULL) return -1;
        h->prune_at = PyLong_AsSsize_t(at);
        Py_DECREF(at);
        if (h->prune_at == -1 && PyErr_Occurred()) return -1;
    }
    PyObject *path = NULL, *shape = NULL, *data = NULL, *rec = NULL, *pair = NULL;
    int rc = -1;
    path = PyUnicode_FromFormat("tensors/%S%U", tid, h->suffix);
    v = path ? PyObject_GetAttr(value, S_shape) : NULL;
    if (v == NULL) goto done;
    shape = PySequence_Tuple(v);
    Py_DECREF(v);
    if (shape == NULL) goto done;
    if (n) {
        v = PyObject_CallMethodNoArgs(value, S_data_ptr);
        if (v == NULL) goto done;
        void *ptr = PyLong_AsVoidPtr(v);
        Py_DECREF(v);
        if (ptr == NULL && PyErr_Occurred()) goto done;
        data = PyBytes_FromStringAndSize((const char *)ptr, n); /* one copy, as ctypes.string_at */
    } else {
        data = PyBytes_FromStringAndSize(NULL, 0);
    }
    if (data == NULL) goto done;
    PyObject *empty = PyTuple_New(0);
    if (empty == NULL) goto done;
    /* records.Values: log_tensors.py's record of a .pt */
    PyObject *items[VALUES_WIDTH] = {h->values_tag, [VALUES_TENSOR_ID] = tid, [VALUES_PATH] = path,
        [VALUES_DTYPE] = text, [VALUES_SHAPE] = shape, [VALUES_DATA] = data, [VALUES_EXTRA] = empty,
        [VALUES_DEVICE] = Py_None};
    rec = pack(items, VALUES_WIDTH);
    Py_DECREF(empty);
    if (rec == NULL || PyList_Append(h->pending, rec) < 0) goto done;
    if (h->handoff != NULL && h->handoff != Py_None) { /* after the log has it: the threads' row comes later */
        v = PyObject_CallOneArg(h->handoff, rec);
        if (v == NULL) goto done;
        Py_DECREF(v);
    }
    pair = PyTuple_Pack(2, tid, path);
    *files = pair ? PyTuple_Pack(1, pair) : NULL;
    rc = *files ? 1 : -1;
done:
    Py_XDECREF(path);
    Py_XDECREF(shape);
    Py_XDECREF(data);
    Py_XDECREF(rec);
    Py_XDECREF(pair);
    return rc;
}

/* store_with(...): stored outputs in C from now on (Recorder._use_native, with a LogStorage that writes .pt). */
static PyObject *Hook_store_with(Hook *h, PyObject *args, PyObject *kw) {
    static char *names[] = {"stored", "stored_values", "storage", "lock", "shared", "dtype_text", "suffix",
                            "torch_tensor", "values_tag", "max_tensor_bytes", "log_max_bytes", "prune", "prune_at",
                            NULL};
    PyObject *o[10];
    long long max_tensor_bytes, log_max_bytes;
    Py_ssize_t prune_at;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O!O!OOO!O!UO!O!LLOn:store_with", names, &PySet_Type, &o[0],
                                     &PyDict_Type, &o[1], &o[2], &o[3], &PyDict_Type, &o[4], &PyDict_Type, &o[5],
                                     &o[6], &PyType_Type, &o[7], &PyLong_Type, &o[8], &max_tensor_bytes,
                                     &log_max_bytes, &o[9], &prune_at))
        return NULL;
    PyObject **fields[] = {&h->stored, &h->stored_values, &h->storage, &h->storage_lock, &h->shared, &h->dtype_text,
                           &h->suffix, &h->torch_tensor, &h->values_tag, &h->prune};
    for (int i = 0; i < 10; i++) Py_XSETREF(*fields[i], Py_NewRef(o[i]));
    /* LogStorage.handoff, read once: a storage without one (a test's) leaves its files to the writer process */
    PyObject *handoff = PyObject_GetAttrString(h->storage, "handoff");
    if (handoff == NULL) {
        if (!PyErr_ExceptionMatches(PyExc_AttributeError)) return NULL;
        PyErr_Clear();
        handoff = Py_NewRef(Py_None);
    }
    Py_XSETREF(h->handoff, handoff);
    h->prune_at = prune_at;
    h->max_tensor_bytes = max_tensor_bytes;
    h->log_max_bytes = log_max_bytes;
    Py_RETURN_NONE;
}

static PyObject *end_py(Hook *h, PyObject *const *args) {
    PyObject *call[4] = {h->rec, args[0], args[1], args[2]};
    return PyObject_Vectorcall(h->end_py, call, 4, NULL);
}

/* Whether end() asks rec.estimate about `op`: rec._estimates(op), remembered per op. */
static int estimating(Hook *h, PyObject *op) {
    PyObject *v = PyDict_GetItemWithError(h->estimating, op);
    if (v == NULL) {
        if (PyErr_Occurred()) return -1;
        v = PyObject_CallOneArg(h->estimates, op);
        if (v == NULL) return -1;
        int r = PyDict_SetItem(h->estimating, op, v);
        Py_DECREF(v);
        if (r < 0) return -1;
    }
    return PyObject_IsTrue(v);
}

static PyObject *Hook_end(Hook *h, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 3) {
        PyErr_SetString(PyExc_TypeError, "end(token, output, exc) takes 3 arguments");
        return NULL;
    }
    PyObject *token = args[0], *output = args[1], *exc = args[2];
    if (exc != Py_None || Py_TYPE(output) != (PyTypeObject *)h->tensor_type || !PyTuple_CheckExact(token) ||
        PyTuple_GET_SIZE(token) != TOKEN_WIDTH || PyTuple_GET_ITEM(token, TOKEN_GOLDEN_ARGS) != Py_None ||
        !PyList_CheckExact(PyTuple_GET_ITEM(token, TOKEN_INPUTS)) ||
        !PyList_CheckExact(PyTuple_GET_ITEM(token, TOKEN_SPECS)) ||
        !PyList_CheckExact(PyTuple_GET_ITEM(token, TOKEN_FILES)) ||
        PyList_GET_SIZE(PyTuple_GET_ITEM(token, TOKEN_FILES)) != 0)
        return end_py(h, args);
    if (h->store_outputs && h->stored == NULL) return end_py(h, args);
    PyObject *op = PyTuple_GET_ITEM(token, TOKEN_OP), *op_id = PyTuple_GET_ITEM(token, TOKEN_OPERATION_ID);
    int est = estimating(h, op);
    if (est < 0) return NULL;
    if (est) return end_py(h, args);
    PyObject *files = NULL; /* the OP record's ((id, path),) of a stored output */
    if (h->store_outputs) {
        int stored = store_output(h, output, &files);
        if (stored < 0) return NULL;
        if (stored == 0) return end_py(h, args);
    }
    long long end = now_ns();
    PyObject *tid = NULL, *specs = NULL, *spec = NULL, *l1 = NULL, *dram = NULL, *stack = NULL, *name = NULL,
             *start = NULL, *stop = NULL, *outputs = NULL, *seq = NULL, *result = NULL;
    PyObject *thread = NULL;
    int found = thread_state(h, &stack, &thread);
    Py_XDECREF(thread);
    if (found <= 0) {
        if (found == 0) PyErr_SetString(PyExc_RuntimeError, "Hook.end: this thread has no op stack (no begin)");
        goto done;
    }
    if (PySequence_DelItem(stack, -1) < 0) goto done;
    tid = SLOT(output, T_ID);
    if (tid == NULL) {
        PyErr_SetString(PyExc_AttributeError, "tensor_id");
        goto done;
    }
    Py_INCREF(tid);
    specs = PyTuple_GET_ITEM(token, TOKEN_SPECS); /* borrowed: begin's list of the arguments' specs */
    int hit = PyDict_Contains(h->seen, tid);
    if (hit < 0) goto done;
    if (!hit) {
        spec = output_spec(h, output, tid, op_id);
        if (spec == NULL) goto done;
        if (spec == Py_None) { /* not the common case: Recorder._see makes it */
            PyObject *ids = PyList_New(0);
            if (ids == NULL) goto done;
            PyObject *call[4] = {output, op_id, ids, specs};
            PyObject *r = PyObject_Vectorcall(h->see, call, 4, NULL);
            Py_DECREF(ids);
            if (r == NULL) goto done;
            Py_DECREF(r);
        } else if (PyList_Append(specs, spec) < 0) {
            goto done;
        }
    }
    if (bytes_used(h, &l1, &dram) < 0) goto done;
    name = PyObject_GetAttr(op, S_name);
    if (name == NULL) goto done;
    start = PyLong_FromLongLong(PyLong_AsLongLong(PyTuple_GET_ITEM(token, TOKEN_START_NS)) - h->t0);
    stop = start ? PyLong_FromLongLong(end - h->t0) : NULL;
    outputs = stop ? PyTuple_Pack(1, tid) : NULL;
    seq = outputs ? PyIter_Next(h->seq) : NULL;
    if (seq == NULL) goto done;
    PyObject *tag = PyLong_FromLong(TAG_OP); /* a small int: never fails */
    /* Recorder.end's OP record, written field by field (no tuple): begin's lists of inputs and specs as tuples */
    PyObject *fields[OP_WIDTH] = {tag, [OP_NAME] = name, [OP_OPERATION_ID] = op_id, [OP_START_NS] = start,
        [OP_END_NS] = stop, [OP_PARENT_OPERATION_ID] = PyTuple_GET_ITEM(token, TOKEN_PARENT_OPERATION_ID),
        [OP_DEPTH] = PyTuple_GET_ITEM(token, TOKEN_DEPTH), [OP_THREAD] = PyTuple_GET_ITEM(token, TOKEN_THREAD),
        [OP_STACK] = PyTuple_GET_ITEM(token, TOKEN_STACK), [OP_ARGS] = PyTuple_GET_ITEM(token, TOKEN_ARGS),
        [OP_KWARGS] = PyTuple_GET_ITEM(token, TOKEN_KWARGS), [OP_INPUTS] = PyTuple_GET_ITEM(token, TOKEN_INPUTS),
        [OP_OUTPUTS] = outputs, [OP_SPECS] = specs, [OP_FILES] = files ? files : Py_None, [OP_END_SEQ] = seq,
        [OP_L1_BYTES] = l1, [OP_DRAM_BYTES] = dram, [OP_ERROR] = Py_None,
        [OP_STEP] = PyTuple_GET_ITEM(token, TOKEN_STEP)};
    Fields record = {fields, OP_WIDTH, 1u << OP_INPUTS | 1u << OP_SPECS};
    int err = 0;
    for (int i = 0; i < OP_WIDTH; i++)
        if (fields[i] == NULL) { /* a field of records.Op that this file does not fill */
            PyErr_Format(PyExc_SystemError, "_hook.c fills no field %d of records.Op", i);
            err = -1;
        }
    if (!err) err = append_op(h, &record);
    Py_DECREF(tag);
    if (err < 0) goto done;
    result = Py_NewRef(Py_None);
done:
    Py_XDECREF(files);
    Py_XDECREF(tid);
    Py_XDECREF(spec);
    Py_XDECREF(l1);
    Py_XDECREF(dram);
    Py_XDECREF(stack);
    Py_XDECREF(name);
    Py_XDECREF(start);
    Py_XDECREF(stop);
    Py_XDECREF(outputs);
    Py_XDECREF(seq);
    return result;
}

/* -- the memory listener ------------------------------------------------------------------------------------- */

/* The innermost op running on this thread (the op a buffer or program belongs to), or None. New reference. */
static PyObject *current_op(Hook *h) {
    PyObject *op_id = Py_None, *stack = NULL, *thread = NULL;
    int found = thread_state(h, &stack, &thread);
    if (found < 0) return NULL;
    if (found && PyList_GET_SIZE(stack)) op_id = PyList_GET_ITEM(stack, PyList_GET_SIZE(stack) - 1);
    Py_INCREF(op_id);
    Py_XDECREF(stack);
    Py_XDECREF(thread);
    return op_id;
}

/* A program launch (LogSink.program) whose static part the log has defined: (PROGRAM, op_id, n, program_id,
 * device_id, cb_base); the Python listener defines a new one. `p` is a Program (a named tuple). */
static PyObject *on_program(Hook *h, PyObject *p, PyObject *const *args) {
    if (!h->graphs) return Py_NewRef(Py_None);
    PyObject *cbs = PyTuple_GET_ITEM(p, 2), *ranges = PyTuple_GET_ITEM(p, 3);
    PyObject *cbs_id = PyLong_FromVoidPtr(cbs), *ranges_id = cbs_id ? PyLong_FromVoidPtr(ranges) : NULL;
    PyObject *key = ranges_id ? PyTuple_Pack(5, cbs_id, ranges_id, PyTuple_GET_ITEM(p, 0), PyTuple_GET_ITEM(p, 1),
                                             PyTuple_GET_ITEM(p, 4)) : NULL;
    Py_XDECREF(cbs_id);
    Py_XDECREF(ranges_id);
    if (key == NULL) return NULL;
    PyObject *hit = PyDict_GetItemWithError(h->programs, key); /* borrowed */
    Py_DECREF(key);
    if (hit == NULL && PyErr_Occurred()) return NULL;
    if (hit == NULL || !PyTuple_Check(hit) || PyTuple_GET_SIZE(hit) != 3 || PyTuple_GET_ITEM(hit, 1) != cbs ||
        PyTuple_GET_ITEM(hit, 2) != ranges)
        return PyObject_Vectorcall(h->listener_py, args, 2, NULL); /* defined first (PROG) */
    PyObject *op_id = current_op(h);
    if (op_id == NULL) return NULL;
    PyObject *tag = PyLong_FromLong(TAG_PROGRAM);
    /* records.ProgramLaunch; p is a device_work.Program: (name, factory, cbs, ranges, cb_bytes, program_id, device_id,
     * cb_base) */
    PyObject *items[PROGRAM_WIDTH] = {tag, [PROGRAM_OPERATION_ID] = op_id, [PROGRAM_PROGRAM_NUMBER] =
        PyTuple_GET_ITEM(hit, 0), [PROGRAM_PROGRAM_ID] = PyTuple_GET_ITEM(p, 5), [PROGRAM_DEVICE_ID] =
        PyTuple_GET_ITEM(p, 6), [PROGRAM_CB_BASE] = PyTuple_GET_ITEM(p, 7)};
    PyObject *rec = tag ? pack(items, PROGRAM_WIDTH) : NULL;
    Py_XDECREF(tag);
    Py_DECREF(op_id);
    if (rec == NULL) return NULL;
    int err = PyList_Append(h->pending, rec);
    Py_DECREF(rec);
    return err < 0 ? NULL : Py_NewRef(Py_None);
}

/* Whether the str `s` is `text`, whose interned copy is `interned`: two interned strings are equal only when they are
 * one object, and device_sim's events ("alloc", "free" and "program") are interned, so the usual test is a pointer
 * compare (three text compares an op cost the model's thread ~0.1 us). */
static int is_text(PyObject *s, PyObject *interned, const char *text) {
    if (s == interned) return 1;
    return !PyUnicode_CHECK_INTERNED(s) && PyUnicode_CompareWithASCIIString(s, text) == 0;
}

static PyObject *Hook_on_buffer(Hook *h, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 2) {
        PyErr_SetString(PyExc_TypeError, "on_buffer(event, buf) takes 2 arguments");
        return NULL;
    }
    PyObject *event = args[0], *buf = args[1];
    int is_free = 0, is_alloc = 0;
    if (PyUnicode_Check(event)) {
        is_free = is_text(event, S_ev_free, "free");
        is_alloc = !is_free && !h->pages && is_text(event, S_ev_alloc, "alloc");
        if (!is_free && !is_alloc && Py_TYPE(buf) == (PyTypeObject *)h->program_type && PyTuple_GET_SIZE(buf) == 8 &&
            is_text(event, S_ev_program, "program"))
            return on_program(h, buf, args);
    }
    if ((!is_free && !is_alloc) || Py_TYPE(buf) != (PyTypeObject *)h->buffer_type || PyTuple_GET_SIZE(buf) < 9)
        return PyObject_Vectorcall(h->listener_py, args, 2, NULL); /* programs, pages, anything else */
    PyObject *seq = NULL, *rec = NULL, *tag = NULL;
    if (is_free) {
        tag = PyLong_FromLong(TAG_FREE);
        seq = tag ? PyIter_Next(h->seq) : NULL;
        PyObject *items[FREE_WIDTH] = {tag, [FREE_BUFFER_ID] = PyTuple_GET_ITEM(buf, 0), [FREE_FREED_SEQ] = seq};
        rec = seq ? pack(items, FREE_WIDTH) : NULL;
    } else {
        PyObject *op_id = current_op(h); /* the op whose buffer it is */
        if (op_id == NULL) return NULL;
        PyObject *bt = as_int(PyTuple_GET_ITEM(buf, 2)), *bl = bt ? as_int(PyTuple_GET_ITEM(buf, 3)) : NULL;
        PyObject *size = bl ? PyNumber_Multiply(PyTuple_GET_ITEM(buf, 6), PyTuple_GET_ITEM(buf, 7)) : NULL;
        tag = size ? PyLong_FromLong(TAG_ALLOC) : NULL;
        seq = tag ? PyIter_Next(h->seq) : NULL;
        /* device_sim's Buffer: (buffer_id, device_id, buffer_type, buffer_layout, address, max_size_per_bank,
         * page_size, num_pages, ...) */
        PyObject *items[ALLOC_WIDTH] = {tag, [ALLOC_BUFFER_ID] = PyTuple_GET_ITEM(buf, 0), [ALLOC_DEVICE_ID] =
            PyTuple_GET_ITEM(buf, 1), [ALLOC_ADDRESS] = PyTuple_GET_ITEM(buf, 4), [ALLOC_MAX_SIZE_PER_BANK] =
            PyTuple_GET_ITEM(buf, 5), [ALLOC_BUFFER_TYPE] = bt, [ALLOC_BUFFER_LAYOUT] = bl, [ALLOC_SIZE] = size,
            [ALLOC_ALLOCATED_SEQ] = seq, [ALLOC_ALLOCATED_BY_OPERATION_ID] = op_id};
        if (seq != NULL) rec = pack(items, ALLOC_WIDTH);
        Py_DECREF(op_id);
        Py_XDECREF(bt);
        Py_XDECREF(bl);
        Py_XDECREF(size);
    }
    Py_XDECREF(tag);
    Py_XDECREF(seq);
    if (rec == NULL) return NULL;
    int err = PyList_Append(h->pending, rec); /* goes into the log with the next op (LogSink.event) */
    Py_DECREF(rec);
    return err < 0 ? NULL : Py_NewRef(Py_None);
}

/* -- the type ------------------------------------------------------------------------------------------------ */

static int Hook_init(Hook *h, PyObject *args, PyObject *kw) {
    static char *names[] = {"rec", "begin_py", "end_py", "listener_py", "op_ids", "seq", "local", "seen", "stacks",
                            "define_stack", "walk", "code_is_lib", "classify", "stack_items", "allocators",
                            "tensor_type", "buffer_type", "default_tile", "strip", "see", "devices", "configs",
                            "estimates", "sink", "t0", "max_seen", "stack_traces", "pages", "store_inputs",
                            "store_outputs", "program_type", "graphs", NULL};
    PyObject *o[24];
    long long t0;
    Py_ssize_t max_seen;
    int stack_traces, pages, store_inputs, store_outputs, graphs;
    PyObject *program_type;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "OOOOOOOO!O!OOO!OOO!OOOOOO!O!OOLnppppOp:Hook", names, &o[0], &o[1], &o[2],
                                     &o[3], &o[4], &o[5], &o[6], &PyDict_Type, &o[7], &PyDict_Type, &o[8], &o[9],
                                     &o[10], &PyDict_Type, &o[11], &o[12], &o[13], &PyList_Type, &o[14], &o[15],
                                     &o[16], &o[17], &o[18], &o[19], &PyDict_Type, &o[20], &PyDict_Type, &o[21],
                                     &o[22], &o[23], &t0, &max_seen, &stack_traces, &pages, &store_inputs,
                                     &store_outputs, &program_type, &graphs))
        return -1;
    PyObject *pending = PyObject_GetAttrString(o[23], "_pending");
    if (pending == NULL) return -1;
    PyObject *lock = PyObject_GetAttrString(o[23], "_lock");
    PyObject *programs = lock ? PyObject_GetAttrString(o[23], "_programs") : NULL;
    if (programs == NULL || !PyList_CheckExact(pending) || !PyDict_CheckExact(programs)) {
        Py_DECREF(pending);
        Py_XDECREF(lock);
        Py_XDECREF(programs);
        if (!PyErr_Occurred())
            PyErr_SetString(PyExc_TypeError, "Hook: the sink's _pending must be a list, its _programs a dict");
        return -1;
    }
    h->acquire = PyObject_GetAttrString(lock, "acquire");
    h->release = PyObject_GetAttrString(lock, "release");
    Py_DECREF(lock);
    if (h->acquire == NULL || h->release == NULL) {
        Py_DECREF(pending);
        Py_DECREF(programs);
        return -1;
    }
    Py_XSETREF(h->pending, pending);
    Py_XSETREF(h->programs, programs);
    Py_XSETREF(h->program_type, Py_NewRef(program_type));
    h->graphs = graphs;
    if (find_slots(o[15]) < 0) return -1;
    PyObject **fields[] = {&h->rec, &h->begin_py, &h->end_py, &h->listener_py, &h->op_ids, &h->seq, &h->local,
                           &h->seen, &h->stacks, &h->define_stack, &h->walk, &h->code_is_lib, &h->classify,
                           &h->stack_items, &h->allocators, &h->tensor_type, &h->buffer_type, &h->default_tile,
                           &h->strip, &h->see, &h->devices, &h->configs, &h->estimates, &h->sink};
    for (int i = 0; i < 24; i++) Py_XSETREF(*fields[i], Py_NewRef(o[i]));
    h->estimating = PyDict_New();
    if (h->estimating == NULL) return -1;
    h->t0 = t0;
    h->max_seen = max_seen;
    h->stack_traces = stack_traces;
    h->pages = pages;
    h->store_inputs = store_inputs;
    h->store_outputs = store_outputs;
    return 0;
}

static int Hook_traverse(Hook *h, visitproc visit, void *arg) {
    Py_VISIT(h->rec);
    Py_VISIT(h->begin_py);
    Py_VISIT(h->end_py);
    Py_VISIT(h->listener_py);
    Py_VISIT(h->op_ids);
    Py_VISIT(h->seq);
    Py_VISIT(h->local);
    Py_VISIT(h->seen);
    Py_VISIT(h->stacks);
    Py_VISIT(h->define_stack);
    Py_VISIT(h->walk);
    Py_VISIT(h->code_is_lib);
    Py_VISIT(h->classify);
    Py_VISIT(h->stack_items);
    Py_VISIT(h->allocators);
    Py_VISIT(h->tensor_type);
    Py_VISIT(h->buffer_type);
    Py_VISIT(h->default_tile);
    Py_VISIT(h->strip);
    Py_VISIT(h->see);
    Py_VISIT(h->devices);
    Py_VISIT(h->configs);
    Py_VISIT(h->estimating);
    Py_VISIT(h->estimates);
    Py_VISIT(h->pending);
    Py_VISIT(h->sink);
    Py_VISIT(h->acquire);
    Py_VISIT(h->release);
    Py_VISIT(h->programs);
    Py_VISIT(h->program_type);
    Py_VISIT(h->cached_stack);
    Py_VISIT(h->cached_thread);
    Py_VISIT(h->stored);
    Py_VISIT(h->stored_values);
    Py_VISIT(h->storage);
    Py_VISIT(h->storage_lock);
    Py_VISIT(h->shared);
    Py_VISIT(h->dtype_text);
    Py_VISIT(h->suffix);
    Py_VISIT(h->torch_tensor);
    Py_VISIT(h->values_tag);
    Py_VISIT(h->handoff);
    Py_VISIT(h->prune);
    return 0;
}

static int Hook_clear(Hook *h) {
    Py_CLEAR(h->rec);
    Py_CLEAR(h->begin_py);
    Py_CLEAR(h->end_py);
    Py_CLEAR(h->listener_py);
    Py_CLEAR(h->op_ids);
    Py_CLEAR(h->seq);
    Py_CLEAR(h->local);
    Py_CLEAR(h->seen);
    Py_CLEAR(h->stacks);
    Py_CLEAR(h->define_stack);
    Py_CLEAR(h->walk);
    Py_CLEAR(h->code_is_lib);
    Py_CLEAR(h->classify);
    Py_CLEAR(h->stack_items);
    Py_CLEAR(h->allocators);
    Py_CLEAR(h->tensor_type);
    Py_CLEAR(h->buffer_type);
    Py_CLEAR(h->default_tile);
    Py_CLEAR(h->strip);
    Py_CLEAR(h->see);
    Py_CLEAR(h->devices);
    Py_CLEAR(h->configs);
    Py_CLEAR(h->estimating);
    Py_CLEAR(h->estimates);
    Py_CLEAR(h->pending);
    Py_CLEAR(h->sink);
    Py_CLEAR(h->acquire);
    Py_CLEAR(h->release);
    Py_CLEAR(h->programs);
    Py_CLEAR(h->program_type);
    Py_CLEAR(h->cached_stack);
    Py_CLEAR(h->cached_thread);
    Py_CLEAR(h->stored);
    Py_CLEAR(h->stored_values);
    Py_CLEAR(h->storage);
    Py_CLEAR(h->storage_lock);
    Py_CLEAR(h->shared);
    Py_CLEAR(h->dtype_text);
    Py_CLEAR(h->suffix);
    Py_CLEAR(h->torch_tensor);
    Py_CLEAR(h->values_tag);
    Py_CLEAR(h->handoff);
    Py_CLEAR(h->prune);
    return 0;
}

static void Hook_dealloc(Hook *h) {
    PyObject_GC_UnTrack(h);
    Hook_clear(h);
    Py_TYPE(h)->tp_free((PyObject *)h);
}

static PyMethodDef Hook_methods[] = {
    {"begin", (PyCFunction)(void (*)(void))Hook_begin, METH_FASTCALL, "Recorder.begin(op, args, kwargs)"},
    {"end", (PyCFunction)(void (*)(void))Hook_end, METH_FASTCALL, "Recorder.end(token, output, exc)"},
    {"on_buffer", (PyCFunction)(void (*)(void))Hook_on_buffer, METH_FASTCALL,
     "the memory listener: on_buffer(event, buf)"},
    {"store_with", (PyCFunction)(void (*)(void))Hook_store_with, METH_VARARGS | METH_KEYWORDS,
     "store_with(stored=, stored_values=, storage=, lock=, shared=, dtype_text=, suffix=, torch_tensor=, "
     "values_tag=, max_tensor_bytes=, log_max_bytes=, prune=, prune_at=): stored outputs recorded in C"},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject HookType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "ttreport.capturing._hook.Hook",
    .tp_basicsize = sizeof(Hook),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_doc = "The recorder's per-op path in C (see the module's comment).",
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)Hook_init,
    .tp_dealloc = (destructor)Hook_dealloc,
    .tp_traverse = (traverseproc)Hook_traverse,
    .tp_clear = (inquiry)Hook_clear,
    .tp_methods = Hook_methods,
};

static PyMethodDef module_methods[] = {
    {"dumps", (PyCFunction)dumps, METH_O,
     "dumps(obj): marshal.dumps(obj, 2) as the hook writes it, or None for a value it leaves to marshal"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_hook", NULL, -1, module_methods};

#define INTERN(var, text) if ((var = PyUnicode_InternFromString(text)) == NULL) return NULL

PyMODINIT_FUNC PyInit__hook(void) {
    INTERN(S_deferred_signal, "deferred_signal");
    INTERN(S_golden, "golden");
    INTERN(S_boundary, "boundary");
    INTERN(S_stack, "stack");
    INTERN(S_thread, "thread");
    INTERN(S_shape, "shape");
    INTERN(S_device_id, "device_id");
    INTERN(S_name, "name");
    INTERN(S_bytes_per_bank_used, "bytes_per_bank_used");
    INTERN(S_num_banks, "num_banks");
    INTERN(S_off, "_off");
    INTERN(S_room, "_room");
    INTERN(S_mm, "_mm");
    INTERN(S_write, "_write");
    INTERN(S_check_at, "_check_at");
    INTERN(S_pace, "_pace");
    INTERN(S_behind, "_behind");
    INTERN(S_back_pressure, "_back_pressure");
    INTERN(S_nbytes, "nbytes");
    INTERN(S_is_cpu, "is_cpu");
    INTERN(S_is_contiguous, "is_contiguous");
    INTERN(S_data_ptr, "data_ptr");
    INTERN(S_dtype, "dtype");
    INTERN(S_budget, "_budget");
    INTERN(S_tensor_bytes, "tensor_bytes");
    INTERN(S_acquire_name, "acquire");
    INTERN(S_release_name, "release");
    INTERN(S_steps, "steps");
    INTERN(S_ev_free, "free");
    INTERN(S_ev_alloc, "alloc");
    INTERN(S_ev_program, "program");
    if (PyType_Ready(&HookType) < 0) return NULL;
    PyObject *m = PyModule_Create(&module);
    if (m == NULL) return NULL;
    if (PyModule_AddObjectRef(m, "Hook", (PyObject *)&HookType) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}

/* device_sim._native: the bank allocator's first-fit bookkeeping and an op output's buffer, in C.
 *
 * The optional accelerator of device_sim/allocator.py (which documents the allocator and selects this
 * module or the pure-Python classes; DEVICE_SIM_PURE=1 selects the pure ones). Two types:
 *
 *   Banks   one buffer type's sorted free list of [start, end) blocks, its live buffers and bytes used:
 *           the state and methods of allocator.BankAllocator, with the same results call for call.
 *   Memory  the base of allocator.NativeDeviceMemory: allocate_like() and free(), the two calls every
 *           element-wise op makes (its output's buffer, and the free when the tensor dies), and
 *           tensor_like(), the whole output tensor of ops.common.like_output. While the chip's mesh
 *           allocates in lock step (its `lockstep` set) allocate_like hands over to the Python method.
 *   Dispatch a registered op's public function: a call goes straight to the body, between the hook's begin
 *           and end when one is installed (registry's Python wrapper for `memory=`, output keywords, meshes).
 *   bf16_min_magnitude  one pass over a bfloat16 buffer for device_sim/matmul_kernel.py's denormal guard.
 *   launch   device_work.launch's usual call: the program-cache entry, a program id and the listener told, once
 *            the CBs fit.
 *
 * Why no lock here, where the pure path holds DeviceMemory's RLock: the pure path's free-list edits take
 * several bytecodes, so another thread, or a Tensor.__del__ run by the garbage collector inside an
 * allocation, could see a half-edited list. Here each edit runs under the GIL without calling back into
 * Python, and Python code (a collection triggered by building the Buffer tuple, the listener) only runs
 * once the free list and the live dict agree again.
 *
 *   >>> import device_sim as ttnn
 *   >>> device = ttnn.open_device(0)
 *   >>> type(device.memory).__name__   # 'NativeDeviceMemory' when this module is built
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>
#include <stdint.h>

/* Set once by configure() from allocator.py: the error class, the Buffer NamedTuple and the buffer-id
 * counter, shared with the pure path so ids stay unique in a process that uses both. */
static PyObject *OutOfMemory = NULL;
static PyTypeObject *BufferType = NULL;
static PyObject *BufferIds = NULL;
static PyObject *S_alloc = NULL, *S_free = NULL, *S_raise_oom_like = NULL, *S_memory = NULL;
static PyObject *S_allocate_like_in_lockstep = NULL;

#define N_BUFFER_TYPES 8 /* BufferType values: DRAM 0, L1 1, SYSTEM_MEMORY 2, L1_SMALL 3, TRACE 4 */
#define BUFFER_FIELDS 10 /* Buffer's fields: buffer_id, device_id, type, layout, address, per bank, ... */

typedef struct {
    long long start, end;
} Block;

typedef struct {
    PyObject_HEAD
    long long base, bank_size, alignment, used;
    char bottom_up;
    Py_ssize_t n, cap;
    Block *blocks; /* sorted by start, never empty blocks */
    PyObject *live; /* dict: buffer_id -> Buffer */
} Banks;

/* size_per_bank rounded up to the alignment, as the pure path: -(-max(size, 1) // alignment) * alignment.
 * -1 (no error set) when it does not fit in 62 bits: no bank is that large, so it cannot be placed. */
static long long rounded(Banks *s, PyObject *size_obj) {
    int overflow = 0;
    long long size = PyLong_AsLongLongAndOverflow(size_obj, &overflow);
    if (size == -1 && PyErr_Occurred())
        return -2;
    if (overflow > 0 || size > (1LL << 62))
        return -1;
    if (size < 1)
        size = 1;
    return (size + s->alignment - 1) / s->alignment * s->alignment;
}

static void remove_block(Banks *s, Py_ssize_t i) {
    memmove(&s->blocks[i], &s->blocks[i + 1], (size_t)(s->n - i - 1) * sizeof(Block));
    s->n--;
}

/* First fit: DRAM takes the lowest free block's bottom, L1 the highest block's top. -1 if none fits. */
static long long take(Banks *s, long long size) {
    if (s->bottom_up) {
        for (Py_ssize_t i = 0; i < s->n; i++) {
            Block *b = &s->blocks[i];
            if (b->end - b->start < size)
                continue;
            long long addr = b->start;
            b->start += size;
            if (b->start == b->end)
                remove_block(s, i);
            s->used += size;
            return addr;
        }
    } else {
        for (Py_ssize_t i = s->n - 1; i >= 0; i--) {
            Block *b = &s->blocks[i];
            if (b->end - b->start < size)
                continue;
            long long addr = b->end - size;
            b->end = addr;
            if (b->start == b->end)
                remove_block(s, i);
            s->used += size;
            return addr;
        }
    }
    return -1;
}

/* Give [addr, addr + size) back, merged with its neighbours (the pure path's release, step for step). */
static int room_for_one_more(Banks *s) {
    if (s->n == s->cap) {
        Py_ssize_t cap = s->cap ? s->cap * 2 : 8;
        Block *grown = PyMem_Realloc(s->blocks, (size_t)cap * sizeof(Block));
        if (grown == NULL) {
            PyErr_NoMemory();
            return -1;
        }
        s->blocks = grown;
        s->cap = cap;
    }
    return 0;
}

static int give_back(Banks *s, long long addr, long long size) {
    if (room_for_one_more(s) < 0)
        return -1;
    s->used -= size;
    Py_ssize_t i = 0;
    while (i < s->n && s->blocks[i].start < addr)
        i++;
    memmove(&s->blocks[i + 1], &s->blocks[i], (size_t)(s->n - i) * sizeof(Block));
    s->blocks[i].start = addr;
    s->blocks[i].end = addr + size;
    s->n++;
    if (i + 1 < s->n && s->blocks[i].end == s->blocks[i + 1].start) {
        s->blocks[i].end = s->blocks[i + 1].end;
        remove_block(s, i + 1);
    }
    if (i > 0 && s->blocks[i - 1].end == s->blocks[i].start) {
        s->blocks[i - 1].end = s->blocks[i].end;
        remove_block(s, i);
    }
    return 0;
}

/* The free block that holds all of [addr, addr + size), or -1: a mesh buffer's address on one chip. */
static Py_ssize_t holding(Banks *s, long long addr, long long size) {
    for (Py_ssize_t i = 0; i < s->n && s->blocks[i].start <= addr; i++)
        if (addr + size <= s->blocks[i].end)
            return i;
    return -1;
}

/* Take exactly [addr, addr + size) out of the free block holding it (the pure path's allocate_at, step for
 * step): 1 taken, 0 when it is not wholly free, -1 with an error set. */
static int take_at(Banks *s, long long addr, long long size) {
    Py_ssize_t i = holding(s, addr, size);
    if (i < 0)
        return 0;
    Block *b = &s->blocks[i];
    if (b->start < addr && addr + size < b->end) {  /* from the middle: the block splits in two */
        if (room_for_one_more(s) < 0)
            return -1;
        b = &s->blocks[i];
        memmove(&s->blocks[i + 2], &s->blocks[i + 1], (size_t)(s->n - i - 1) * sizeof(Block));
        s->blocks[i + 1].start = addr + size;
        s->blocks[i + 1].end = b->end;
        b->end = addr;
        s->n++;
    } else if (b->start == addr) {
        b->start += size;
        if (b->start == b->end)
            remove_block(s, i);
    } else {
        b->end = addr;
    }
    s->used += size;
    return 1;
}

static int Banks_init(Banks *s, PyObject *args, PyObject *kwds) {
    static char *kwlist[] = {"base", "bank_size", "alignment", "bottom_up", NULL};
    long long base, bank_size, alignment;
    int bottom_up;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "LLLp", kwlist, &base, &bank_size, &alignment, &bottom_up))
        return -1;
    if (alignment < 1 || base < 0 || bank_size < base) {
        PyErr_Format(PyExc_ValueError, "Banks: need 0 <= base <= bank_size and alignment >= 1, got base=%lld, "
                     "bank_size=%lld, alignment=%lld", base, bank_size, alignment);
        return -1;
    }
    PyObject *live = PyDict_New();
    if (live == NULL)
        return -1;
    Py_XSETREF(s->live, live);
    s->base = base;
    s->bank_size = bank_size;
    s->alignment = alignment;
    s->bottom_up = (char)bottom_up;
    s->used = 0;
    s->n = 0;
    if (bank_size > base) {
        if (s->cap == 0) {
            s->blocks = PyMem_Malloc(8 * sizeof(Block));
            if (s->blocks == NULL) {
                PyErr_NoMemory();
                return -1;
            }
            s->cap = 8;
        }
        s->blocks[0].start = base;
        s->blocks[0].end = bank_size;
        s->n = 1;
    }
    return 0;
}

/* Static types: a Python subclass's own traverse and dealloc visit and release the subclass itself. */
static int Banks_traverse(Banks *s, visitproc visit, void *arg) {
    Py_VISIT(s->live);
    return 0;
}

static int Banks_clear(Banks *s) {
    Py_CLEAR(s->live);
    return 0;
}

static void Banks_dealloc(Banks *s) {
    PyObject_GC_UnTrack(s);
    Banks_clear(s);
    PyMem_Free(s->blocks);
    Py_TYPE(s)->tp_free((PyObject *)s);
}

static PyObject *Banks_allocate(Banks *s, PyObject *size_obj) {
    long long size = rounded(s, size_obj);
    if (size == -2)
        return NULL;
    long long addr = size < 0 ? -1 : take(s, size);
    if (addr < 0) {
        PyObject *arg = size < 0 ? (Py_INCREF(size_obj), size_obj) : PyLong_FromLongLong(size);
        if (arg != NULL) {
            PyErr_SetObject(OutOfMemory, arg);
            Py_DECREF(arg);
        }
        return NULL;
    }
    return PyLong_FromLongLong(addr);
}

static PyObject *Banks_release(Banks *s, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 2) {
        PyErr_SetString(PyExc_TypeError, "release(addr, size_per_bank) takes two arguments");
        return NULL;
    }
    long long addr = PyLong_AsLongLong(args[0]);
    if (addr == -1 && PyErr_Occurred())
        return NULL;
    long long size = rounded(s, args[1]);
    if (size == -2)
        return NULL;
    if (size < 0) {
        PyErr_Format(PyExc_ValueError, "release: size_per_bank %R is larger than any bank", args[1]);
        return NULL;
    }
    if (give_back(s, addr, size) < 0)
        return NULL;
    Py_RETURN_NONE;
}

/* (addr, size_per_bank) as allocate_at and is_free take them: 0, or -1 with an error set; *size -1 when no
 * bank is that large (never free). */
static int at_args(Banks *s, PyObject *const *args, Py_ssize_t nargs, const char *name, long long *addr,
                   long long *size) {
    if (nargs != 2) {
        PyErr_Format(PyExc_TypeError, "%s(addr, size_per_bank) takes two arguments", name);
        return -1;
    }
    *addr = PyLong_AsLongLong(args[0]);
    if (*addr == -1 && PyErr_Occurred())
        return -1;
    *size = rounded(s, args[1]);
    return *size == -2 ? -1 : 0;
}

static PyObject *Banks_allocate_at(Banks *s, PyObject *const *args, Py_ssize_t nargs) {
    long long addr, size;
    if (at_args(s, args, nargs, "allocate_at", &addr, &size) < 0)
        return NULL;
    int taken = size < 0 ? 0 : take_at(s, addr, size);
    if (taken < 0)
        return NULL;
    return PyBool_FromLong(taken);
}

static PyObject *Banks_is_free(Banks *s, PyObject *const *args, Py_ssize_t nargs) {
    long long addr, size;
    if (at_args(s, args, nargs, "is_free", &addr, &size) < 0)
        return NULL;
    return PyBool_FromLong(size >= 0 && holding(s, addr, size) >= 0);
}

static PyObject *Banks_free_bytes_per_bank(Banks *s, PyObject *unused) {
    long long total = 0;
    for (Py_ssize_t i = 0; i < s->n; i++)
        total += s->blocks[i].end - s->blocks[i].start;
    return PyLong_FromLongLong(total);
}

static PyObject *Banks_largest_free_block(Banks *s, PyObject *unused) {
    long long largest = 0;
    for (Py_ssize_t i = 0; i < s->n; i++)
        if (s->blocks[i].end - s->blocks[i].start > largest)
            largest = s->blocks[i].end - s->blocks[i].start;
    return PyLong_FromLongLong(largest);
}

static PyObject *Banks_lowest_occupied_address(Banks *s, PyObject *unused) {
    if (PyDict_GET_SIZE(s->live) == 0)
        Py_RETURN_NONE;
    if (s->n > 0 && s->blocks[0].start == s->base)
        return PyLong_FromLongLong(s->blocks[0].end);
    return PyLong_FromLongLong(s->base);
}

static PyObject *Banks_free_blocks(Banks *s, PyObject *unused) {
    PyObject *out = PyList_New(s->n);
    if (out == NULL)
        return NULL;
    for (Py_ssize_t i = 0; i < s->n; i++) {
        PyObject *pair = Py_BuildValue("[LL]", s->blocks[i].start, s->blocks[i].end);
        if (pair == NULL) {
            Py_DECREF(out);
            return NULL;
        }
        PyList_SET_ITEM(out, i, pair);
    }
    return out;
}

static PyMethodDef Banks_methods[] = {
    {"allocate", (PyCFunction)Banks_allocate, METH_O,
     "allocate(size_per_bank) -> the address of a free block of that size (rounded up to the alignment), "
     "first fit; raises OutOfMemoryError(rounded size) when none is large enough."},
    {"release", (PyCFunction)(void (*)(void))Banks_release, METH_FASTCALL,
     "release(addr, size_per_bank): give the block back, merged with its free neighbours."},
    {"free_bytes_per_bank", (PyCFunction)Banks_free_bytes_per_bank, METH_NOARGS, "Free bytes in each bank."},
    {"largest_free_block", (PyCFunction)Banks_largest_free_block, METH_NOARGS, "The largest free block, 0 if none."},
    {"lowest_occupied_address", (PyCFunction)Banks_lowest_occupied_address, METH_NOARGS,
     "The lowest address a live buffer holds, or None when none is live."},
    {"free_blocks", (PyCFunction)Banks_free_blocks, METH_NOARGS, "The free list: [start, end) pairs, sorted."},
    {"allocate_at", (PyCFunction)(void (*)(void))Banks_allocate_at, METH_FASTCALL,
     "allocate_at(addr, size_per_bank) -> True once exactly that block (rounded up to the alignment) is taken, "
     "False (nothing taken) when it is not wholly free: a mesh buffer's one address on this chip."},
    {"is_free", (PyCFunction)(void (*)(void))Banks_is_free, METH_FASTCALL,
     "is_free(addr, size_per_bank) -> whether allocate_at would take it."},
    {NULL},
};

static PyMemberDef Banks_members[] = {
    {"base", T_LONGLONG, offsetof(Banks, base), READONLY, NULL},
    {"bank_size", T_LONGLONG, offsetof(Banks, bank_size), READONLY, NULL},
    {"alignment", T_LONGLONG, offsetof(Banks, alignment), READONLY, NULL},
    {"bottom_up", T_BOOL, offsetof(Banks, bottom_up), READONLY, NULL},
    {"bytes_per_bank_used", T_LONGLONG, offsetof(Banks, used), READONLY, NULL},
    {"live", T_OBJECT, offsetof(Banks, live), READONLY, "buffer_id -> Buffer of every live buffer"},
    {NULL},
};

static PyTypeObject Banks_Type = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "device_sim._native.Banks",
    .tp_doc = "Banks(base, bank_size, alignment, bottom_up): one buffer type's free list and live buffers.",
    .tp_basicsize = sizeof(Banks),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE | Py_TPFLAGS_HAVE_GC,
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)Banks_init,
    .tp_dealloc = (destructor)Banks_dealloc,
    .tp_traverse = (traverseproc)Banks_traverse,
    .tp_clear = (inquiry)Banks_clear,
    .tp_methods = Banks_methods,
    .tp_members = Banks_members,
};

typedef struct {
    PyObject_HEAD
    PyObject *listener; /* called with ("alloc" | "free", Buffer); ttreport's seam */
    PyObject *lockstep; /* allocator.LockStep while a mesh allocates in lock step, else NULL/None */
    PyObject *banks[N_BUFFER_TYPES]; /* Banks by BufferType value, NULL where the device has none */
} Memory;

static int Memory_traverse(Memory *m, visitproc visit, void *arg) {
    Py_VISIT(m->listener);
    Py_VISIT(m->lockstep);
    for (int i = 0; i < N_BUFFER_TYPES; i++)
        Py_VISIT(m->banks[i]);
    return 0;
}

static int Memory_clear(Memory *m) {
    Py_CLEAR(m->listener);
    Py_CLEAR(m->lockstep);
    for (int i = 0; i < N_BUFFER_TYPES; i++)
        Py_CLEAR(m->banks[i]);
    return 0;
}

static void Memory_dealloc(Memory *m) {
    PyObject_GC_UnTrack(m);
    Memory_clear(m);
    Py_TYPE(m)->tp_free((PyObject *)m);
}

/* The Banks of a Buffer's type (its field 2, a BufferType IntEnum), or NULL with the KeyError a dict gives. */
static Banks *banks_of(Memory *m, PyObject *buffer_type) {
    long i = PyLong_AsLong(buffer_type);
    if (i == -1 && PyErr_Occurred())
        return NULL;
    if (i < 0 || i >= N_BUFFER_TYPES || m->banks[i] == NULL) {
        PyErr_SetObject(PyExc_KeyError, buffer_type);
        return NULL;
    }
    return (Banks *)m->banks[i];
}

static int is_buffer(PyObject *buf) {
    if (Py_TYPE(buf) != BufferType || PyTuple_GET_SIZE(buf) != BUFFER_FIELDS) {
        PyErr_Format(PyExc_TypeError, "expected a device_sim Buffer, got %.100s", Py_TYPE(buf)->tp_name);
        return 0;
    }
    return 1;
}

static PyObject *Memory_attach(Memory *m, PyObject *allocators) {
    if (!PyDict_Check(allocators)) {
        PyErr_SetString(PyExc_TypeError, "_attach(allocators): a dict of BufferType -> Banks");
        return NULL;
    }
    PyObject *key, *value;
    Py_ssize_t pos = 0;
    while (PyDict_Next(allocators, &pos, &key, &value)) {
        long i = PyLong_AsLong(key);
        if (i == -1 && PyErr_Occurred())
            return NULL;
        if (i < 0 || i >= N_BUFFER_TYPES || !PyObject_TypeCheck(value, &Banks_Type)) {
            PyErr_Format(PyExc_TypeError, "_attach: %R -> %R is not a BufferType -> Banks", key, value);
            return NULL;
        }
        Py_INCREF(value);
        Py_XSETREF(m->banks[i], value);
    }
    Py_RETURN_NONE;
}

static int tell_listener(Memory *m, PyObject *event, PyObject *buf) {
    PyObject *listener = m->listener;
    if (listener == NULL || listener == Py_None)
        return 0;
    Py_INCREF(listener);
    PyObject *args[2] = {event, buf};
    PyObject *r = PyObject_Vectorcall(listener, args, 2, NULL);
    Py_DECREF(listener);
    if (r == NULL)
        return -1;
    Py_DECREF(r);
    return 0;
}

/* DeviceMemory.allocate_like: a new interleaved buffer of `like`'s type, layout and size. */
static PyObject *Memory_allocate_like(Memory *m, PyObject *like) {
    if (!is_buffer(like))
        return NULL;
    if (m->lockstep != NULL && m->lockstep != Py_None)  /* a mesh's buffer: its address is the mesh's */
        return PyObject_CallMethodOneArg((PyObject *)m, S_allocate_like_in_lockstep, like);
    Banks *s = banks_of(m, PyTuple_GET_ITEM(like, 2));
    if (s == NULL)
        return NULL;
    long long size = rounded(s, PyTuple_GET_ITEM(like, 5));
    if (size == -2)
        return NULL;
    long long addr = size < 0 ? -1 : take(s, size);
    if (addr < 0)  /* the pure path's message, made by the same Python method */
        return PyObject_CallMethodOneArg((PyObject *)m, S_raise_oom_like, like);
    /* The block is taken: from here Python code may run (a collection), so the state is consistent. */
    PyObject *addr_obj = PyLong_FromLongLong(addr);
    PyObject *id = addr_obj ? PyIter_Next(BufferIds) : NULL;
    PyObject *buf = id ? BufferType->tp_alloc(BufferType, BUFFER_FIELDS) : NULL;
    if (buf == NULL) {
        Py_XDECREF(addr_obj);
        Py_XDECREF(id);
        if (!PyErr_Occurred())
            PyErr_SetString(PyExc_RuntimeError, "the buffer id counter is exhausted");
        PyObject *type, *value, *tb;
        PyErr_Fetch(&type, &value, &tb);
        give_back(s, addr, size);
        PyErr_Restore(type, value, tb);
        return NULL;
    }
    PyTuple_SET_ITEM(buf, 0, id);
    PyTuple_SET_ITEM(buf, 4, addr_obj);
    for (int i = 1; i < BUFFER_FIELDS; i++) {
        if (i == 4)
            continue;
        PyObject *v = PyTuple_GET_ITEM(like, i);
        Py_INCREF(v);
        PyTuple_SET_ITEM(buf, i, v);
    }
    if (PyDict_SetItem(s->live, id, buf) < 0) {
        PyObject *type, *value, *tb;
        PyErr_Fetch(&type, &value, &tb);
        give_back(s, addr, size);
        PyErr_Restore(type, value, tb);
        Py_DECREF(buf);
        return NULL;
    }
    if (tell_listener(m, S_alloc, buf) < 0) {
        Py_DECREF(buf);
        return NULL;
    }
    return buf;
}

/* DeviceMemory.free: give a live buffer back (a second free of one buffer does nothing). */
static PyObject *Memory_free(Memory *m, PyObject *buf) {
    if (!is_buffer(buf))
        return NULL;
    Banks *s = banks_of(m, PyTuple_GET_ITEM(buf, 2));
    if (s == NULL)
        return NULL;
    PyObject *id = PyTuple_GET_ITEM(buf, 0);
    PyObject *held = PyDict_GetItemWithError(s->live, id);
    if (held == NULL) {
        if (PyErr_Occurred())
            return NULL;
        Py_RETURN_NONE;  /* already freed: deallocate() then garbage collection */
    }
    long long addr = PyLong_AsLongLong(PyTuple_GET_ITEM(buf, 4));
    if (addr == -1 && PyErr_Occurred())
        return NULL;
    long long size = rounded(s, PyTuple_GET_ITEM(buf, 5));
    if (size < 0) {
        if (size == -1)
            PyErr_Format(PyExc_ValueError, "free: buffer %R has an impossible size", id);
        return NULL;
    }
    /* The dict holds one reference to the Buffer and `buf` (the caller's) another: deleting frees nothing. */
    if (PyDict_DelItem(s->live, id) < 0)
        return NULL;
    if (give_back(s, addr, size) < 0)
        return NULL;
    if (tell_listener(m, S_free, buf) < 0)
        return NULL;
    Py_RETURN_NONE;
}

/* Tensor's slots, read and written at their offsets as CPython's own slot descriptors do (configure_tensor). */
static PyTypeObject *TensorType = NULL;
static PyObject *DefaultTile = NULL, *TileLayout = NULL, *TensorIds = NULL, *S_inputs = NULL;
static const char *const slot_names[] = {"_value", "dtype", "layout", "tile", "_device", "_memory_config",
                                         "memory_config_source", "buffer", "tensor_id"};
enum { S_VALUE, S_DTYPE, S_LAYOUT, S_TILE, S_DEVICE, S_CONFIG, S_SOURCE, S_BUFFER, S_ID, N_SLOTS };
static Py_ssize_t slot_offset[N_SLOTS];
#define SLOT(obj, i) (*(PyObject **)((char *)(obj) + slot_offset[i]))

/* common.like_output's new tensor, once its checks passed: `value` (already in like's dtype), like's dtype,
 * layout, tile (TILE layout; else the default tile), device and memory config, source "inputs", a new
 * tensor id, and a buffer of like's geometry (allocate_like). One call where Python made ten steps. */
static PyObject *Memory_tensor_like(Memory *m, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 2 || TensorType == NULL || Py_TYPE(args[1]) != TensorType) {
        PyErr_SetString(PyExc_TypeError, "tensor_like(value, like): like must be a device_sim Tensor "
                        "(and configure_tensor called)");
        return NULL;
    }
    PyObject *value = args[0], *like = args[1];
    PyObject *like_buffer = SLOT(like, S_BUFFER);
    if (like_buffer == NULL || SLOT(like, S_DTYPE) == NULL || SLOT(like, S_LAYOUT) == NULL ||
        SLOT(like, S_TILE) == NULL || SLOT(like, S_DEVICE) == NULL || SLOT(like, S_CONFIG) == NULL) {
        PyErr_SetString(PyExc_ValueError, "tensor_like: like is not a whole device tensor");
        return NULL;
    }
    PyObject *layout = SLOT(like, S_LAYOUT);
    int tiled = layout == TileLayout ? 1 : PyObject_RichCompareBool(layout, TileLayout, Py_EQ);
    if (tiled < 0)
        return NULL;
    PyObject *id = PyIter_Next(TensorIds);
    if (id == NULL) {
        if (!PyErr_Occurred())
            PyErr_SetString(PyExc_RuntimeError, "the tensor id counter is exhausted");
        return NULL;
    }
    PyObject *t = TensorType->tp_alloc(TensorType, 0);
    if (t == NULL) {
        Py_DECREF(id);
        return NULL;
    }
    PyObject *fields[N_SLOTS] = {value, SLOT(like, S_DTYPE), layout, tiled ? SLOT(like, S_TILE) : DefaultTile,
                                 SLOT(like, S_DEVICE), SLOT(like, S_CONFIG), S_inputs, Py_None, NULL};
    for (int i = 0; i < S_ID; i++)
        SLOT(t, i) = Py_NewRef(fields[i]);
    SLOT(t, S_ID) = id;
    /* As in Python: the buffer is None until allocate_like returns, so an out-of-memory error drops a
     * tensor that frees nothing. like's buffer is held across the call, which may run Python code. */
    Py_INCREF(like_buffer);
    PyObject *buf = Memory_allocate_like(m, like_buffer);
    Py_DECREF(like_buffer);
    if (buf == NULL) {
        Py_DECREF(t);
        return NULL;
    }
    Py_SETREF(SLOT(t, S_BUFFER), buf);
    return t;
}

static PyObject *configure_tensor(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 4 || !PyType_Check(args[0])) {
        PyErr_SetString(PyExc_TypeError, "configure_tensor(Tensor, DEFAULT_TILE, Layout.TILE, tensor_ids)");
        return NULL;
    }
    PyTypeObject *cls = (PyTypeObject *)args[0];
    for (int i = 0; i < N_SLOTS; i++) {
        PyObject *d = PyDict_GetItemString(cls->tp_dict, slot_names[i]);
        if (d == NULL || !Py_IS_TYPE(d, &PyMemberDescr_Type) ||
            ((PyMemberDescrObject *)d)->d_member->type != T_OBJECT_EX) {
            PyErr_Format(PyExc_TypeError, "configure_tensor: %s.%s is not a __slots__ slot", cls->tp_name,
                         slot_names[i]);
            return NULL;
        }
        slot_offset[i] = ((PyMemberDescrObject *)d)->d_member->offset;
    }
    Py_INCREF(cls);
    Py_XSETREF(TensorType, cls);
    Py_INCREF(args[1]);
    Py_XSETREF(DefaultTile, args[1]);
    Py_INCREF(args[2]);
    Py_XSETREF(TileLayout, args[2]);
    Py_INCREF(args[3]);
    Py_XSETREF(TensorIds, args[3]);
    Py_RETURN_NONE;
}

static PyMethodDef Memory_methods[] = {
    {"tensor_like", (PyCFunction)(void (*)(void))Memory_tensor_like, METH_FASTCALL,
     "tensor_like(value, like) -> a new Tensor with like's spec over `value`, in a buffer like like's."},
    {"_attach", (PyCFunction)Memory_attach, METH_O, "_attach({BufferType: Banks}): the banks this memory uses."},
    {"allocate_like", (PyCFunction)Memory_allocate_like, METH_O,
     "allocate_like(like) -> a new Buffer of like's type, layout and size, at a free address."},
    {"free", (PyCFunction)Memory_free, METH_O, "free(buf): give a live buffer back; a freed one is ignored."},
    {NULL},
};

static PyMemberDef Memory_members[] = {
    {"listener", T_OBJECT, offsetof(Memory, listener), 0, "called with ('alloc' | 'free', Buffer), or None"},
    {"lockstep", T_OBJECT, offsetof(Memory, lockstep), 0,
     "allocator.LockStep while the chip's mesh allocates in lock step (allocate_like then runs in Python), or None"},
    {NULL},
};

static PyTypeObject Memory_Type = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "device_sim._native.Memory",
    .tp_doc = "The hot half of allocator.DeviceMemory: allocate_like() and free() over Banks.",
    .tp_basicsize = sizeof(Memory),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE | Py_TPFLAGS_HAVE_GC,
    .tp_new = PyType_GenericNew,
    .tp_dealloc = (destructor)Memory_dealloc,
    .tp_traverse = (traverseproc)Memory_traverse,
    .tp_clear = (inquiry)Memory_clear,
    .tp_methods = Memory_methods,
    .tp_members = Memory_members,
};

/* Tensor.__del__, tensor.py's Python one step for step: the tensor's buffer back to its device's memory, unless
 * a view still shares it (views.SHARED not empty: views.release(buf) says whether this was its last holder).
 * Every op's output is dropped this way; the Python __del__ (a frame, getattr with a default, the module global,
 * the method lookups) cost a 32x32 add ~1 us of 10. tensor_finalizer(SHARED, release) gives it as a method. */
static PyObject *Shared = NULL, *Release = NULL;

static PyObject *tensor_del(PyObject *module, PyObject *self) {
    if (TensorType == NULL || Shared == NULL || !PyObject_TypeCheck(self, TensorType)) {
        PyErr_SetString(PyExc_TypeError, "tensor_del: self is not a Tensor (configure_tensor, tensor_finalizer)");
        return NULL;
    }
    PyObject *buf = SLOT(self, S_BUFFER);
    if (buf == NULL || buf == Py_None) /* getattr(self, "buffer", None): never set, or freed */
        Py_RETURN_NONE;
    Py_INCREF(buf); /* release() runs Python code: the buffer stays held whatever it does to the tensor */
    PyObject *result = NULL;
    if (PyDict_GET_SIZE(Shared) != 0) {
        PyObject *last = PyObject_CallOneArg(Release, buf);
        if (last == NULL)
            goto done;
        int yes = PyObject_IsTrue(last);
        Py_DECREF(last);
        if (yes <= 0) {
            result = yes == 0 ? Py_NewRef(Py_None) : NULL;
            goto done;
        }
    }
    PyObject *device = SLOT(self, S_DEVICE);
    if (device == NULL) {
        PyErr_SetString(PyExc_AttributeError, "'Tensor' object has no attribute '_device'");
        goto done;
    }
    Py_INCREF(device);
    PyObject *memory = PyObject_GetAttr(device, S_memory);
    Py_DECREF(device);
    if (memory == NULL)
        goto done;
    result = PyObject_TypeCheck(memory, &Memory_Type) ? Memory_free((Memory *)memory, buf)
                                                      : PyObject_CallMethodOneArg(memory, S_free, buf);
    Py_DECREF(memory);
done:
    Py_DECREF(buf);
    return result;
}

static PyMethodDef tensor_del_def = {"__del__", (PyCFunction)tensor_del, METH_O,
                                     "Give the tensor's buffer back to its device's memory (the last holder)."};

static PyObject *tensor_finalizer(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 2 || !PyDict_Check(args[0]) || !PyCallable_Check(args[1])) {
        PyErr_SetString(PyExc_TypeError, "tensor_finalizer(views.SHARED, views.release)");
        return NULL;
    }
    PyObject *f = PyCFunction_New(&tensor_del_def, module);
    if (f == NULL)
        return NULL;
    PyObject *method = PyInstanceMethod_New(f); /* bound to the tensor, as a Python function in a class is */
    Py_DECREF(f);
    if (method == NULL)
        return NULL;
    Py_INCREF(args[0]);
    Py_XSETREF(Shared, args[0]);
    Py_INCREF(args[1]);
    Py_XSETREF(Release, args[1]);
    return method;
}

/* bf16_min_magnitude(data_ptr, n): the smallest magnitude among the nonzero values of n contiguous bfloat16 at
 * data_ptr, as its 15 bits (sign dropped: 0x0001 the smallest denormal, 0x0080 2**-126, 0x7F80 inf), or 0x8000
 * when all are zero. device_sim/matmul_kernel.py asks it of both operands to tell whether a product or a
 * partial sum could be a float32 denormal (where torch's bfloat16 kernel flushes to zero). One pass over the
 * 2 MiB of a 1024x1024 operand: ~0.05 ms, where torch's three passes ((bits - 1) & 0x7FFF, then min) take
 * ~0.27. (x - 1) & 0x7FFF sends +-0 to 0x7FFF, above every other magnitude, so one min serves; 16 independent
 * minima let the compiler keep them in a vector register at -O2 (one running min: 0.8 ms). The caller passes
 * the pointer of a live, contiguous torch tensor that it holds for the call. */
static PyObject *bf16_min_magnitude(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 2) {
        PyErr_SetString(PyExc_TypeError, "bf16_min_magnitude(data_ptr, n)");
        return NULL;
    }
    const uint16_t *p = (const uint16_t *)PyLong_AsVoidPtr(args[0]);
    Py_ssize_t n = PyLong_AsSsize_t(args[1]);
    if (PyErr_Occurred())
        return NULL;
    if (n < 0 || (p == NULL && n > 0)) {
        PyErr_Format(PyExc_ValueError, "bf16_min_magnitude: %zd values at a null pointer or a negative count", n);
        return NULL;
    }
    int16_t lanes[16]; /* signed: the values fit in 15 bits, and SSE2's pminsw is signed (pminuw is SSE4.1) */
    for (int j = 0; j < 16; j++)
        lanes[j] = 0x7FFF;
    Py_ssize_t i = 0;
    for (; i + 16 <= n; i += 16)
        for (int j = 0; j < 16; j++) {
            int16_t v = (int16_t)((uint16_t)(p[i + j] - 1) & 0x7FFF);
            lanes[j] = v < lanes[j] ? v : lanes[j];
        }
    long m = 0x7FFF;
    for (int j = 0; j < 16; j++)
        m = lanes[j] < m ? lanes[j] : m;
    for (; i < n; i++) {
        long v = (long)((unsigned)(p[i] - 1) & 0x7FFF);
        m = v < m ? v : m;
    }
    return PyLong_FromLong(m + 1);
}

static PyObject *configure(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 3 || !PyType_Check(args[1]) || !PyType_IsSubtype((PyTypeObject *)args[1], &PyTuple_Type)) {
        PyErr_SetString(PyExc_TypeError, "configure(OutOfMemoryError, Buffer, buffer_ids)");
        return NULL;
    }
    Py_INCREF(args[0]);
    Py_XSETREF(OutOfMemory, args[0]);
    Py_INCREF(args[1]);
    Py_XSETREF(BufferType, (PyTypeObject *)args[1]);
    Py_INCREF(args[2]);
    Py_XSETREF(BufferIds, args[2]);
    Py_RETURN_NONE;
}

/* Dispatch: the public function of a registered op (registry.register_op). A call while no mesh runner is
 * installed (registry's _per_device None) goes straight to the op's body, as registry's Python wrapper would,
 * without that wrapper's frame and argument packing (0.2 us of a 3.4 us 32x32 add): through the hook's begin
 * and end when one is installed (registry's _hook), as the wrapper calls them. The wrapper keeps the calls it
 * changes the keywords of (`memory=`, the op's output keyword) and every call on a mesh. Every attribute (__name__,
 * __doc__, __wrapped__, __signature__, op, golden_function, ...) is the Python wrapper's, so inspect,
 * help() and the registry's own lookups see what they saw before. */
typedef struct {
    PyObject_HEAD
    PyObject *body;     /* the op's function */
    PyObject *wrapper;  /* registry's Python wrapper: hooks, keywords, meshes */
    PyObject *globals;  /* registry's module dict, where _hook and _per_device live */
    PyObject *plain;    /* register_op(plain=): (tensor, tensor or number) -> output or None; or NULL */
    PyObject *op;       /* the registry's Op, which hook.begin is given; or NULL: hooked calls are the wrapper's */
    PyObject *out_kw;   /* the op's output keyword (op.output_keyword, a str), or NULL */
    PyObject *weakrefs;
    vectorcallfunc vectorcall;
} Dispatch;

static PyObject *S_hook = NULL, *S_per_device = NULL, *S_begin = NULL, *S_end = NULL,
                *S_output_keyword = NULL;

/* 1 when a call with these keywords is the Python wrapper's to make: `memory=` (which it renames memory_config)
 * or the op's output keyword (it writes into the given tensor, or drops a None); 0 when not. */
static int wrapper_keywords(Dispatch *d, PyObject *kwnames) {
    Py_ssize_t n = PyTuple_GET_SIZE(kwnames);
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *k = PyTuple_GET_ITEM(kwnames, i);
        if (k == S_memory || PyUnicode_Compare(k, S_memory) == 0)
            return 1;
        if (d->out_kw != NULL && (k == d->out_kw || PyUnicode_Compare(k, d->out_kw) == 0))
            return 1;
    }
    return 0;
}

/* The op's output for a call with no keywords: a binary op's usual call, ttnn.add(a, b), is its plain() at once,
 * and the body only if plain declines. */
static PyObject *call_body(Dispatch *d, PyObject *const *args, size_t nargsf) {
    if (d->plain != NULL && PyVectorcall_NARGS(nargsf) == 2 && TensorType != NULL && Py_TYPE(args[0]) == TensorType &&
        (Py_TYPE(args[1]) == TensorType || PyFloat_CheckExact(args[1]) || PyLong_CheckExact(args[1]))) {
        PyObject *out = PyObject_Vectorcall(d->plain, args, 2, NULL);
        if (out != Py_None)
            return out;  /* the output, or NULL with its error */
        Py_DECREF(out);
    }
    return PyObject_Vectorcall(d->body, args, nargsf, NULL);
}

/* A call while a hook is installed: what registry's Python wrapper does, without its frame and argument packing
 * (issue 14: the seam was ~0.5 us of the capture's ~4 us an op).
 *     token = hook.begin(op, args, kwargs)
 *     try: output = body(*args, **kwargs)
 *     except BaseException as exc: hook.end(token, None, exc); raise
 *     hook.end(token, output, None)
 * No Python code runs between begin returning and the body starting, nor between the body returning and end
 * starting: a signal's KeyboardInterrupt lands inside one of the three calls, never between them. */
static PyObject *call_hooked(Dispatch *d, PyObject *hook, PyObject *const *args, size_t nargsf,
                             PyObject *kwnames) {
    Py_ssize_t n = PyVectorcall_NARGS(nargsf);
    PyObject *tuple = PyTuple_New(n);
    if (tuple == NULL)
        return NULL;
    for (Py_ssize_t i = 0; i < n; i++)
        PyTuple_SET_ITEM(tuple, i, Py_NewRef(args[i]));
    PyObject *kwargs = PyDict_New();
    if (kwargs == NULL) {
        Py_DECREF(tuple);
        return NULL;
    }
    Py_ssize_t nk = kwnames == NULL ? 0 : PyTuple_GET_SIZE(kwnames);
    for (Py_ssize_t i = 0; i < nk; i++) {
        if (PyDict_SetItem(kwargs, PyTuple_GET_ITEM(kwnames, i), args[n + i]) < 0) {
            Py_DECREF(tuple);
            Py_DECREF(kwargs);
            return NULL;
        }
    }
    Py_INCREF(hook); /* held: begin or the body may install another hook meanwhile; this call ends with this one */
    PyObject *call[4] = {hook, d->op, tuple, kwargs};
    PyObject *token = PyObject_VectorcallMethod(S_begin, call, 4, NULL);
    Py_DECREF(kwargs);
    PyObject *out = NULL, *r;
    if (token == NULL)
        goto done;
    out = kwnames == NULL ? call_body(d, args, nargsf) : PyObject_Vectorcall(d->body, args, nargsf, kwnames);
    if (out == NULL) {
        PyObject *type, *value, *tb;
        PyErr_Fetch(&type, &value, &tb);
        PyErr_NormalizeException(&type, &value, &tb);
        if (tb != NULL)
            PyException_SetTraceback(value, tb);
        PyObject *end_call[4] = {hook, token, Py_None, value};
        r = PyObject_VectorcallMethod(S_end, end_call, 4, NULL);
        if (r == NULL) { /* end's own error goes on, the op's as its context (`raise` inside `except` does so) */
            PyObject *t2, *v2, *tb2;
            PyErr_Fetch(&t2, &v2, &tb2);
            PyErr_NormalizeException(&t2, &v2, &tb2);
            if (v2 != value)
                PyException_SetContext(v2, Py_NewRef(value));
            Py_XDECREF(type);
            Py_XDECREF(value);
            Py_XDECREF(tb);
            PyErr_Restore(t2, v2, tb2);
        } else {
            Py_DECREF(r);
            PyErr_Restore(type, value, tb);
        }
        goto done;
    }
    PyObject *end_call[4] = {hook, token, out, Py_None};
    r = PyObject_VectorcallMethod(S_end, end_call, 4, NULL);
    if (r == NULL)
        Py_CLEAR(out);
    else
        Py_DECREF(r);
done:
    Py_XDECREF(token);
    Py_DECREF(tuple);
    Py_DECREF(hook);
    return out;
}

static PyObject *Dispatch_vectorcall(Dispatch *d, PyObject *const *args, size_t nargsf, PyObject *kwnames) {
    if (kwnames == NULL || !wrapper_keywords(d, kwnames)) {
        PyObject *hook = PyDict_GetItemWithError(d->globals, S_hook);
        PyObject *per_device = hook == NULL ? NULL : PyDict_GetItemWithError(d->globals, S_per_device);
        if (per_device == Py_None) {
            if (hook == Py_None)
                return kwnames == NULL ? call_body(d, args, nargsf)
                                       : PyObject_Vectorcall(d->body, args, nargsf, kwnames);
            if (d->op != NULL)
                return call_hooked(d, hook, args, nargsf, kwnames);
        }
        if (PyErr_Occurred())
            return NULL;
    }
    return PyObject_Vectorcall(d->wrapper, args, nargsf, kwnames);
}

static PyObject *Dispatch_new(PyTypeObject *type, PyObject *args, PyObject *kwds) {
    PyObject *body, *wrapper, *globals, *plain = Py_None, *op = Py_None;
    if (kwds != NULL ||
        !PyArg_ParseTuple(args, "OOO!|OO:Dispatch", &body, &wrapper, &PyDict_Type, &globals, &plain, &op))
        return NULL;
    if (!PyCallable_Check(body) || !PyCallable_Check(wrapper) || (plain != Py_None && !PyCallable_Check(plain))) {
        PyErr_SetString(PyExc_TypeError, "Dispatch(body, wrapper, registry_globals, plain=None, op=None): body, "
                        "wrapper and plain must be callable");
        return NULL;
    }
    Dispatch *d = (Dispatch *)type->tp_alloc(type, 0);
    if (d == NULL)
        return NULL;
    d->body = Py_NewRef(body);
    d->wrapper = Py_NewRef(wrapper);
    d->globals = Py_NewRef(globals);
    d->plain = plain == Py_None ? NULL : Py_NewRef(plain);
    d->op = op == Py_None ? NULL : Py_NewRef(op);
    if (d->op != NULL) {
        PyObject *kw = PyObject_GetAttr(op, S_output_keyword);
        if (kw == NULL || (kw != Py_None && !PyUnicode_Check(kw))) {
            if (kw != NULL)
                PyErr_SetString(PyExc_TypeError, "Dispatch: op.output_keyword must be a str or None");
            Py_XDECREF(kw);
            Py_DECREF(d);
            return NULL;
        }
        if (kw == Py_None)
            Py_DECREF(kw);
        else
            d->out_kw = kw;
    }
    d->vectorcall = (vectorcallfunc)Dispatch_vectorcall;
    return (PyObject *)d;
}

static int Dispatch_traverse(Dispatch *d, visitproc visit, void *arg) {
    Py_VISIT(d->body);
    Py_VISIT(d->wrapper);
    Py_VISIT(d->globals);
    Py_VISIT(d->plain);
    Py_VISIT(d->op);
    Py_VISIT(d->out_kw);
    return 0;
}

static int Dispatch_clear(Dispatch *d) {
    Py_CLEAR(d->body);
    Py_CLEAR(d->wrapper);
    Py_CLEAR(d->globals);
    Py_CLEAR(d->plain);
    Py_CLEAR(d->op);
    Py_CLEAR(d->out_kw);
    return 0;
}

static void Dispatch_dealloc(Dispatch *d) {
    PyObject_GC_UnTrack(d);
    if (d->weakrefs != NULL)
        PyObject_ClearWeakRefs((PyObject *)d);
    Dispatch_clear(d);
    Py_TYPE(d)->tp_free((PyObject *)d);
}

/* Pickled, copied and deep-copied as a function is: by its module and qualified name. */
static PyObject *Dispatch_reduce(Dispatch *d, PyObject *unused) {
    return PyObject_GetAttrString(d->wrapper, "__qualname__");
}

static PyMethodDef Dispatch_methods[] = {
    {"__reduce__", (PyCFunction)Dispatch_reduce, METH_NOARGS, NULL},
    {NULL},
};

static PyObject *Dispatch_getattro(Dispatch *d, PyObject *name) {
    if (PyUnicode_Check(name) && (PyUnicode_CompareWithASCIIString(name, "__reduce__") == 0 ||
                                  PyUnicode_CompareWithASCIIString(name, "__reduce_ex__") == 0))
        return PyObject_GenericGetAttr((PyObject *)d, name);
    return PyObject_GetAttr(d->wrapper, name);
}

static int Dispatch_setattro(Dispatch *d, PyObject *name, PyObject *value) {
    return PyObject_SetAttr(d->wrapper, name, value);
}

static PyObject *Dispatch_repr(Dispatch *d) {
    return PyObject_Repr(d->wrapper);
}

/* Bound as a method when it is a class attribute, as a function is. */
static PyObject *Dispatch_descr_get(PyObject *self, PyObject *obj, PyObject *type) {
    if (obj == NULL || obj == Py_None)
        return Py_NewRef(self);
    return PyMethod_New(self, obj);
}

static PyTypeObject Dispatch_Type = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "device_sim._native.Dispatch",
    .tp_doc = "Dispatch(body, wrapper, registry_globals, plain=None, op=None): a registered op's public function.",
    .tp_basicsize = sizeof(Dispatch),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL | Py_TPFLAGS_METHOD_DESCRIPTOR,
    .tp_new = Dispatch_new,
    .tp_dealloc = (destructor)Dispatch_dealloc,
    .tp_traverse = (traverseproc)Dispatch_traverse,
    .tp_clear = (inquiry)Dispatch_clear,
    .tp_vectorcall_offset = offsetof(Dispatch, vectorcall),
    .tp_call = PyVectorcall_Call,
    .tp_getattro = (getattrofunc)Dispatch_getattro,
    .tp_setattro = (setattrofunc)Dispatch_setattro,
    .tp_repr = (reprfunc)Dispatch_repr,
    .tp_descr_get = Dispatch_descr_get,
    .tp_weaklistoffset = offsetof(Dispatch, weakrefs),
    .tp_methods = Dispatch_methods,
};

/* device_work.launch for the usual call, in C: a chip whose memory is this module's Memory, a Program whose CB
 * region is worked out (cb_bytes >= 0) and ends below the lowest live L1 buffer. Its steps are the Python launch's
 * (device_work._launch), in its order: the program-cache entry, a program id, then the listener (ttreport's
 * recorder during a capture) told ("program", Program) with the id, device id and CB base filled in, then the
 * check of the CBs against L1 once more (the listener may have allocated L1: then device_work._refuse raises the
 * Python launch's error). Every other call (a mesh of several chips, the pure allocator, a region that does not
 * fit) goes to the Python launch before any step is taken, which does all it does, the errors included. The
 * Python launch cost a 32x32 add 0.33 us of thread CPU, this one 0.13 (issue 33); a captured add's thread CPU is
 * 1.2-1.5 us less with its listener's call made here than through the Python launch (20,000 adds, min of 3). */
static PyObject *LaunchSpec = NULL, *ProgramHash = NULL, *ProgramIds = NULL, *Refuse = NULL;
static PyTypeObject *ProgramType = NULL;
static PyObject *S_config = NULL, *S_program_cache = NULL, *S_l1_unreserved_base = NULL, *S_l1_size = NULL;
static PyObject *S_program = NULL, *S_device_id = NULL;

/* obj.name as a long long; -1 with an error set when it is not an int. The attribute itself goes to *obj_out
 * (a new reference) when obj_out is not NULL. */
static int long_attr(PyObject *obj, PyObject *name, long long *out, PyObject **obj_out) {
    PyObject *v = PyObject_GetAttr(obj, name);
    if (v == NULL)
        return -1;
    *out = PyLong_AsLongLong(v);
    if (obj_out != NULL)
        *obj_out = v;
    else
        Py_DECREF(v);
    return *out == -1 && PyErr_Occurred() ? -1 : 0;
}

/* Whether a CB region ending at `end` reaches the lowest live buffer of L1 (Banks.lowest_occupied_address). */
static int clashes(Banks *l1, long long end) {
    if (PyDict_GET_SIZE(l1->live) == 0)
        return 0;
    long long lowest = l1->n > 0 && l1->blocks[0].start == l1->base ? l1->blocks[0].end : l1->base;
    return lowest < end;
}

/* The program as the listener hears it: tuple.__new__(Program, (name, factory, cbs, ranges, cb_bytes, program_id,
 * device_id, cb_base)), which is Program's tp_alloc filled item by item (tuple_subtype_new). New reference. */
static PyObject *heard_program(PyObject *program, PyObject *id, PyObject *device_id, PyObject *base) {
    PyObject *p = ProgramType->tp_alloc(ProgramType, 8);
    if (p == NULL)
        return NULL;
    PyObject *items[8] = {PyTuple_GET_ITEM(program, 0), PyTuple_GET_ITEM(program, 1), PyTuple_GET_ITEM(program, 2),
                          PyTuple_GET_ITEM(program, 3), PyTuple_GET_ITEM(program, 4), id, device_id, base};
    for (int i = 0; i < 8; i++)
        PyTuple_SET_ITEM(p, i, Py_NewRef(items[i]));
    return p;
}

static PyObject *launch(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    if (LaunchSpec == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "launch: configure_launch was not called");
        return NULL;
    }
    if ((nargs != 2 && nargs != 3) || args[0] == Py_None || Py_TYPE(args[1]) != ProgramType ||
        PyTuple_GET_SIZE(args[1]) != 8)
        return PyObject_Vectorcall(LaunchSpec, args, nargs, NULL);
    PyObject *device = args[0], *program = args[1], *key = nargs == 3 ? args[2] : Py_None;
    PyObject *memory = NULL, *config = NULL, *cache = NULL, *element = NULL, *base_obj = NULL;
    PyObject *id = NULL, *listener = NULL, *device_id = NULL, *heard = NULL, *result = NULL;
    long long cb_bytes, base, l1_size;
    /* the reads, none of which changes anything: a failed one is the Python launch's to report */
    memory = PyObject_GetAttr(device, S_memory);
    if (memory == NULL || !PyObject_TypeCheck(memory, &Memory_Type))
        goto python;
    Memory *m = (Memory *)memory;
    if (m->banks[1] == NULL) /* BufferType.L1 */
        goto python;
    cb_bytes = PyLong_AsLongLong(PyTuple_GET_ITEM(program, 4)); /* Program.cb_bytes */
    if ((cb_bytes == -1 && PyErr_Occurred()) || cb_bytes < 0)
        goto python;
    config = PyObject_GetAttr(device, S_config);
    if (config == NULL || long_attr(config, S_l1_unreserved_base, &base, &base_obj) < 0 ||
        long_attr(config, S_l1_size, &l1_size, NULL) < 0)
        goto python;
    if (base + cb_bytes > l1_size || clashes((Banks *)m->banks[1], base + cb_bytes))
        goto python;
    cache = PyObject_GetAttr(device, S_program_cache);
    if (cache == NULL || (cache != Py_None && !PySet_CheckExact(cache)))
        goto python;
    /* the steps */
    if (cache != Py_None) {
        if (key == Py_None)
            element = Py_NewRef(program);
        else if (Py_TYPE(key) == (PyTypeObject *)ProgramHash) /* the whole entry */
            element = Py_NewRef(key);
        else
            element = PyTuple_Pack(2, program, key);
        if (element == NULL || PySet_Add(cache, element) < 0)
            goto done;
    }
    id = PyIter_Next(ProgramIds);
    if (id == NULL) {
        if (!PyErr_Occurred())
            PyErr_SetString(PyExc_RuntimeError, "the program id counter is exhausted");
        goto done;
    }
    if (m->listener != NULL && m->listener != Py_None) { /* read now, as the Python launch reads it */
        listener = Py_NewRef(m->listener);
        device_id = PyObject_GetAttr(device, S_device_id);
        heard = device_id ? heard_program(program, id, device_id, base_obj) : NULL;
        PyObject *call[2] = {S_program, heard};
        PyObject *r = heard ? PyObject_Vectorcall(listener, call, 2, NULL) : NULL;
        if (r == NULL)
            goto done;
        Py_DECREF(r);
    }
    if (m->banks[1] != NULL && clashes((Banks *)m->banks[1], base + cb_bytes)) { /* L1 the listener took */
        PyObject *end = PyLong_FromLongLong(base + cb_bytes);
        PyObject *refuse[5] = {config, memory, program, id, end};
        PyObject *r = end ? PyObject_Vectorcall(Refuse, refuse, 5, NULL) : NULL;
        Py_XDECREF(end);
        if (r == NULL)
            goto done;
        Py_DECREF(r);
    }
    result = Py_NewRef(Py_None);
done:
    Py_XDECREF(memory);
    Py_XDECREF(config);
    Py_XDECREF(base_obj);
    Py_XDECREF(cache);
    Py_XDECREF(element); /* NULL: the cache is off */
    Py_XDECREF(id);
    Py_XDECREF(listener);
    Py_XDECREF(device_id);
    Py_XDECREF(heard);
    return result;
python:
    PyErr_Clear();
    Py_XDECREF(memory);
    Py_XDECREF(config);
    Py_XDECREF(base_obj);
    Py_XDECREF(cache);
    return PyObject_Vectorcall(LaunchSpec, args, nargs, NULL);
}

static PyObject *configure_launch(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 5 || !PyCallable_Check(args[0]) || !PyType_Check(args[1]) || !PyType_Check(args[2]) ||
        !PyType_IsSubtype((PyTypeObject *)args[1], &PyTuple_Type) || !PyCallable_Check(args[4])) {
        PyErr_SetString(PyExc_TypeError, "configure_launch(launch, Program, ProgramHash, program_ids, refuse)");
        return NULL;
    }
    Py_XSETREF(LaunchSpec, Py_NewRef(args[0]));
    Py_XSETREF(ProgramType, (PyTypeObject *)Py_NewRef(args[1]));
    Py_XSETREF(ProgramHash, Py_NewRef(args[2]));
    Py_XSETREF(ProgramIds, Py_NewRef(args[3]));
    Py_XSETREF(Refuse, Py_NewRef(args[4]));
    Py_RETURN_NONE;
}

static PyMethodDef module_methods[] = {
    {"launch", (PyCFunction)(void (*)(void))launch, METH_FASTCALL,
     "launch(device, program, cache_key=None): device_work.launch, the usual call in C (configure_launch first)."},
    {"configure_launch", (PyCFunction)(void (*)(void))configure_launch, METH_FASTCALL,
     "configure_launch(launch, Program, ProgramHash, program_ids, refuse): the Python launch and what it uses."},
    {"configure_tensor", (PyCFunction)(void (*)(void))configure_tensor, METH_FASTCALL,
     "configure_tensor(Tensor, DEFAULT_TILE, Layout.TILE, tensor_ids): what Memory.tensor_like builds."},
    {"configure", (PyCFunction)(void (*)(void))configure, METH_FASTCALL,
     "configure(OutOfMemoryError, Buffer, buffer_ids): the Python classes and counter this module uses."},
    {"tensor_finalizer", (PyCFunction)(void (*)(void))tensor_finalizer, METH_FASTCALL,
     "tensor_finalizer(views.SHARED, views.release): Tensor.__del__ in C (configure_tensor first)."},
    {"bf16_min_magnitude", (PyCFunction)(void (*)(void))bf16_min_magnitude, METH_FASTCALL,
     "bf16_min_magnitude(data_ptr, n): the least nonzero magnitude's 15 bits among n bfloat16, 0x8000 if none."},
    {NULL},
};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT, "device_sim._native",
    "The bank allocator's bookkeeping in C (see device_sim/allocator.py).", -1, module_methods,
};

PyMODINIT_FUNC PyInit__native(void) {
    S_alloc = PyUnicode_InternFromString("alloc");
    S_free = PyUnicode_InternFromString("free");
    S_raise_oom_like = PyUnicode_InternFromString("_raise_oom_like");
    S_allocate_like_in_lockstep = PyUnicode_InternFromString("_allocate_like_in_lockstep");
    S_inputs = PyUnicode_InternFromString("inputs");
    S_hook = PyUnicode_InternFromString("_hook");
    S_per_device = PyUnicode_InternFromString("_per_device");
    S_begin = PyUnicode_InternFromString("begin");
    S_end = PyUnicode_InternFromString("end");
    S_memory = PyUnicode_InternFromString("memory");
    S_output_keyword = PyUnicode_InternFromString("output_keyword");
    S_config = PyUnicode_InternFromString("config");
    S_program_cache = PyUnicode_InternFromString("program_cache");
    S_l1_unreserved_base = PyUnicode_InternFromString("l1_unreserved_base");
    S_l1_size = PyUnicode_InternFromString("l1_size");
    S_program = PyUnicode_InternFromString("program");
    S_device_id = PyUnicode_InternFromString("device_id");
    if (!S_config || !S_program_cache || !S_l1_unreserved_base || !S_l1_size || !S_program || !S_device_id)
        return NULL;
    if (!S_hook || !S_per_device || !S_begin || !S_end || !S_memory || !S_output_keyword || PyType_Ready(&Dispatch_Type) < 0)
        return NULL;
    if (!S_inputs || !S_alloc || !S_free || !S_raise_oom_like || !S_allocate_like_in_lockstep ||
        PyType_Ready(&Banks_Type) < 0 || PyType_Ready(&Memory_Type) < 0)
        return NULL;
    PyObject *m = PyModule_Create(&module_def);
    if (m == NULL)
        return NULL;
    Py_INCREF(&Banks_Type);
    Py_INCREF(&Memory_Type);
    Py_INCREF(&Dispatch_Type);
    if (PyModule_AddObject(m, "Dispatch", (PyObject *)&Dispatch_Type) < 0 ||
        PyModule_AddObject(m, "Banks", (PyObject *)&Banks_Type) < 0 ||
        PyModule_AddObject(m, "Memory", (PyObject *)&Memory_Type) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
